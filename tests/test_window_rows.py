"""A count window's large batch on a plain tree goes to the tree as count changes by key
(``wbatch.c``: one tagged radix sort of the added and expired events, then two threads over
the leaves, each level-1 node's aggregate settled in its thread). Checked against the same
core on one thread (the per-event sorted path), against the numpy backend, and with
``check()``'s invariants: scores that repeat, scores added and expired in one batch (their
changes cancel), both zeros, crowded leaves that split (left to the serial pass), reverted
events (cancelled ring records), explicit unit weights, and reads between batches or not.
"""

from __future__ import annotations

import numpy as np
import pytest
from core_threads import threads
from hypothesis import given, settings
from hypothesis import strategies as st

from thors_stream import StreamingThors
from thors_stream._backend import available_backends

pytestmark = pytest.mark.skipif("c" not in available_backends(), reason="compiled core not built")

W = 80_000  # a batch of up to 6,000 events changes 12,000 keys: well below W / 6, so no rebuild


def row_batches() -> int:
    from thors_stream._ctree import _path_counters

    return _path_counters()[2]


def exact_state(s: StreamingThors, zero_sign=True):
    """Everything held, bit for bit, and the answers. ``zero_sign=False``: a held zero as 0.0
    (the numpy backend stores every zero as 0.0; the compiled core keeps the sign of the first
    to arrive, as a sorted per-event batch does)."""
    if s.backend == "c":
        s._tree.check()
    held = list(s.held())
    if not zero_sign:
        held[0] = held[0] + 0.0
    return [a.tobytes() for a in held], s.get(), s.cost, len(s)


def scores(rng, n, ties, zeros):
    x = rng.random(n)
    if ties:  # a grid of 2**20 values: some keys repeat across the window, few within a batch
        x = np.floor(x * 2**20) / 2**20
    if zeros:
        z = rng.random(n) < zeros
        x[z] = np.where(rng.random(int(z.sum())) < 0.5, 0.0, -0.0)
    return x


def make_batches(rng, window_s, window_y, count, size, ties, zeros, crowd, echo):
    """Batches; ``echo``: the share of each batch that repeats the events it expires (same
    score and label: their changes cancel out), ``crowd``: the share squeezed into a few
    leaves (they overflow and split)."""
    held_s, held_y = list(window_s), list(window_y)
    out = []
    for _ in range(count):
        s = scores(rng, size, ties, zeros)
        y = rng.random(size) < 0.2
        k = int(size * echo)
        if k:
            s[:k], y[:k] = np.array(held_s[:k]), np.array(held_y[:k])
        if crowd:
            dense = rng.random(size) < crowd
            s[dense] = 0.25 + rng.integers(0, 300, int(dense.sum())) * 2.0**-40
        out.append((s, y))
        held_s = held_s[size:] + list(s)
        held_y = held_y[size:] + list(y)
    return out


def run(batches, base, backend="c", n_threads=2, reads=True, unit_weights=False, reverts=(), zero_sign=True):
    st_ = StreamingThors(fn_cost=4, fp_cost=1, window=W, backend=backend)
    st_.update_many(*base)
    for i, (s, y) in enumerate(batches):
        if i in reverts:  # a held event reverted: its ring record is cancelled
            st_.revert(float(base[0][-1 - i]), bool(base[1][-1 - i]))
        with threads(n_threads):
            if unit_weights:
                st_.update_many(s, y, np.ones(s.size))
            else:
                st_.update_many(s, y)
        if reads:
            st_.get()
    return exact_state(st_, zero_sign)


@settings(deadline=None, max_examples=40)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(2_100, 6_000),
    n_batches=st.integers(1, 3),
    ties=st.booleans(),
    zeros=st.sampled_from([0.0, 0.01]),
    crowd=st.sampled_from([0.0, 0.0, 0.6]),
    echo=st.sampled_from([0.0, 0.3]),
    reads=st.booleans(),
    unit_weights=st.booleans(),
    reverts=st.sampled_from([(), (0,), (1, 2)]),
)
def test_rows_path_equals_one_thread_and_the_numpy_backend(
    seed, size, n_batches, ties, zeros, crowd, echo, reads, unit_weights, reverts
):
    rng = np.random.default_rng(seed)
    base = (scores(rng, W, ties, zeros), rng.random(W) < 0.2)
    batches = make_batches(rng, *base, n_batches, size, ties, zeros, crowd, echo)
    before = row_batches()
    two = run(batches, base, reads=reads, unit_weights=unit_weights, reverts=reverts)
    if crowd == 0.0:  # (a batch crowded under one inner node may take the keyed or serial path)
        assert row_batches() - before == n_batches
    assert two == run(batches, base, n_threads=1, reads=reads, unit_weights=unit_weights, reverts=reverts)
    assert run(batches, base, reads=reads, reverts=reverts, zero_sign=False) == run(
        batches, base, backend="python", reads=reads, reverts=reverts, zero_sign=False
    )


@pytest.mark.parametrize("held_zero", [None, 0.0, -0.0])
def test_a_zero_keeps_its_sign_or_takes_the_first(held_zero):
    """A zero held before the batch keeps its sign whatever the batch brings (its events
    expire in the batch while others arrive: additions come first, so the key stays held); a
    zero not held takes the sign of the first to arrive. Both as event by event."""
    rng = np.random.default_rng(5)
    base_s = rng.random(W)
    if held_zero is not None:
        base_s[:10] = held_zero  # expired by the first batch
    base = (base_s, rng.random(W) < 0.2)
    s1 = rng.random(6_000)
    s1[[3, 9, 20]] = [-0.0, 0.0, -0.0]
    s2 = rng.random(6_000)
    s2[:4_000] = 0.5  # a key held 4,000 times, then expired 4,000 times while others come
    batches = [(s, rng.random(6_000) < 0.2) for s in (s1, s2, rng.random(6_000), rng.random(6_000))]
    before = row_batches()
    two = run(batches, base)
    assert row_batches() - before == len(batches)
    zero = np.frombuffer(two[0][0])[0]
    assert zero == 0.0 and np.signbit(zero) == (held_zero is None or np.signbit(held_zero))
    assert two == run(batches, base, n_threads=1)
    assert run(batches, base, zero_sign=False) == run(batches, base, backend="python", zero_sign=False)


def test_small_or_weighted_batches_keep_their_paths():
    """Below 4,096 changes, with a weight other than 1, or on one thread, the batch takes the
    per-event sorted path (the counter does not move); the results agree all the same."""
    rng = np.random.default_rng(9)
    base = (rng.random(W), rng.random(W) < 0.2)
    st_ = StreamingThors(fn_cost=4, fp_cost=1, window=W)
    st_.update_many(*base)
    before = row_batches()
    st_.update_many(rng.random(2_000), rng.random(2_000) < 0.2)  # 4,000 changes
    st_.update_many(rng.random(5_000), rng.random(5_000) < 0.2, np.full(5_000, 2.0))  # weights
    assert row_batches() == before


@pytest.mark.parametrize("made_plain", ["rebuild", "pickle"])
@pytest.mark.parametrize("scores_kind", ["spread", "repeated"])
def test_a_plain_tree_whose_ring_holds_other_weights(made_plain, scores_kind):
    """Found in review: a tree is plain again after a rebuild whose per-score sums equal the
    counts (weights 0.5 and 1.5 at one score), while its ring still holds those events with
    their own weights. A batch that expires the 0.5 event must remove 0.5, not 1: the count
    changes path (and the per-score path, for repeated scores) now check the expiring records'
    weights, not only the tree's plainness."""
    import pickle

    rng = np.random.default_rng(0)
    w_size = 40_000
    base_s = rng.random(w_size) + 1.0
    base_y, base_w = rng.random(w_size) < 0.3, np.ones(w_size)
    base_s[5_000], base_y[5_000], base_w[5_000] = 0.5, True, 0.5  # expires in the last batch
    base_s[-1], base_y[-1], base_w[-1] = 0.5, True, 1.5  # stays held
    b1 = (rng.random(4_000) + 3.0, rng.random(4_000) < 0.3)  # 8,000 changes > w_size / 6: rebuilt, plain
    s2 = rng.random(3_000) + 4.0
    if scores_kind == "repeated":
        s2 = 4.0 + rng.integers(0, 200, 3_000) / 200
    b2 = (s2, rng.random(3_000) < 0.3)
    out = []
    for backend, n_threads in (("c", 2), ("c", 1), ("python", 1)):
        st_ = StreamingThors(fn_cost=1, fp_cost=1, window=w_size, backend=backend)
        st_.update_many(base_s, base_y, base_w)
        with threads(n_threads):
            if made_plain == "rebuild":
                st_.update_many(*b1)
            else:
                st_ = pickle.loads(pickle.dumps(st_))
                st_.update_many(b1[0][:2_100], b1[1][:2_100])
            st_.update_many(*b2)
        held = dict(zip(*[a.tolist() for a in st_.held()[:2]]))
        assert held[0.5] == 1.5
        out.append((exact_state(st_, zero_sign=False)[1:], [a.tobytes() for a in st_.held()]))
    assert out[0] == out[1] == out[2]


def test_a_memory_error_before_the_threads_changes_nothing():
    """Found in review: the rows left to the serial pass were gathered in memory asked for
    after the threads had changed the tree, so a MemoryError there broke the summary. Every
    allocation of the path now comes before any change: failing each in turn (one leaf
    overflows, so the serial pass has rows, and needs no new memory) leaves the summary as it
    was and usable, or the batch goes through. (The core is called directly: numpy's own
    reductions in the validation may fail without an exception when memory runs out.)"""
    _testcapi = pytest.importorskip("_testcapi")
    if not hasattr(_testcapi, "set_nomemory"):
        pytest.skip("no _testcapi.set_nomemory")
    w_size = 60_000
    rng = np.random.default_rng(1)
    base = (rng.random(w_size), rng.random(w_size) < 0.3)
    keys = np.sort(base[0])
    lo, hi = keys[30_000], keys[30_001]
    batch = rng.random(2_100)
    batch[:12] = lo + (hi - lo) * (np.arange(1, 13) / 13)  # 12 new keys in one leaf of 24: it overflows
    y8 = np.ascontiguousarray(rng.random(2_100) < 0.3).view(np.uint8)
    outcomes = []
    for k in range(1, 45):
        st_ = StreamingThors(fn_cost=4, fp_cost=1, window=w_size)
        st_.update_many(*base)
        st_.get()
        before = exact_state(st_)
        rows_before = row_batches()
        _testcapi.set_nomemory(k - 1, k)
        try:
            st_._tree.window_push_many(batch, y8, None, w_size)
            result = "done"
        except MemoryError:
            result = "MemoryError"
        finally:
            _testcapi.remove_mem_hooks()
        if result == "MemoryError":
            assert exact_state(st_) == before  # unchanged, and usable
        else:
            assert row_batches() == rows_before + 1
        outcomes.append(result)
    assert "MemoryError" in outcomes and outcomes[-1] == "done"
