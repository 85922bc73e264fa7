"""Large batches on the compiled core use two threads (``apply_runs_two``): each changes
the leaves under its own inner nodes in place; leaves whose shape would change (splits,
merges, a new lo block) and the stale marks above are left to a serial pass.

Checked against the same core forced to one thread (``_set_batch_threads(1)``), against
the numpy backend, and with ``check()``'s invariants, on batches that spread over the tree,
batches crowded into a few leaves (most runs deferred to the serial pass), weights that
need double-double low parts, and a failing batch.
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

BIG = 200_000  # distinct keys: a batch of up to 12,500 changes stays below n/16, so it goes leaf by leaf


def state(s: StreamingThors):
    s._tree.check()
    return [a.tolist() for a in s.held()], s.get(), s.cost, len(s)


def counters():
    from thors_stream._ctree import _batch_counters

    return _batch_counters()


def feed(s: StreamingThors, batches, n_threads):
    """Feed the batches; return how many used two threads and how many leaf runs those
    left to the serial pass."""
    before = counters()
    with threads(n_threads):
        for b in batches:
            s.update_many(*b)
            s.get()  # a read between batches: the next one must mark what it leaves stale
    after = counters()
    return after[0] - before[0], after[1] - before[1]


def make_batches(rng, count, size, crowd, weights):
    out = []
    for _ in range(count):
        k = rng.random(size)
        if crowd:  # most of the batch inside a few leaves: they overflow, split, and are deferred
            dense = rng.random(size) < crowd
            k[dense] = 0.5 + rng.integers(0, 400, int(dense.sum())) * 2.0**-40
        w = rng.choice([1.0, 2.0**-30, 3.0, 2.0**30], size=size) if weights else np.ones(size)
        out.append((k, rng.random(size) < 0.3, w))
    return out


@pytest.mark.parametrize("window", [None, BIG])
@pytest.mark.parametrize("crowd", [0.0, 0.3, 0.9])
@pytest.mark.parametrize("weights", [False, True])
def test_two_threads_equal_one(window, crowd, weights):
    rng = np.random.default_rng(int(crowd * 10) + 7 * weights + (window or 1))
    base = (rng.random(BIG), rng.random(BIG) < 0.3, np.ones(BIG))
    batches = [base] + make_batches(rng, 3, 6_000, crowd, weights)
    one, two = (StreamingThors(fn_cost=7, fp_cost=1, window=window) for _ in range(2))
    assert feed(one, batches, 1) == (0, 0)
    used, deferred = feed(two, batches, 2)
    # every batch after the first (which builds the tree) splits between two threads (one
    # crowded under a single inner node may not: then one thread does it all)
    if crowd < 0.9:
        assert used == len(batches) - 1
    if used and (crowd or (weights and window)):  # crowded leaves overflow; low parts need lo blocks
        assert deferred > 0
    assert state(two) == state(one)
    if window is None and not weights:
        ref = StreamingThors(fn_cost=7, fp_cost=1, backend="python")
        for b in batches:
            ref.update_many(*b)
        assert state(two)[0] == [a.tolist() for a in ref.held()]
        assert two.get() == ref.get()


@settings(deadline=None, max_examples=15)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(2_100, 6_000), crowd=st.sampled_from([0.0, 0.5, 0.97]),
       n_batches=st.integers(1, 3), weights=st.booleans())
def test_two_threads_equal_one_random(seed, size, crowd, n_batches, weights):
    rng = np.random.default_rng(seed)
    base = (rng.random(BIG), rng.random(BIG) < 0.3, np.ones(BIG))
    batches = [base] + make_batches(rng, n_batches, size, crowd, weights)
    one, two = (StreamingThors(fn_cost=3, fp_cost=2, window=BIG) for _ in range(2))
    feed(one, batches, 1)
    used = feed(two, batches, 2)[0]
    if crowd < 0.9:
        assert used == n_batches
    assert state(two) == state(one)


def test_two_threads_equal_the_per_event_path():
    rng = np.random.default_rng(11)
    base = (rng.random(BIG), rng.random(BIG) < 0.3, np.ones(BIG))
    batch = make_batches(rng, 1, 6_000, 0.3, True)[0]
    two = StreamingThors(fn_cost=5, fp_cost=1, window=BIG)
    single = StreamingThors(fn_cost=5, fp_cost=1, window=BIG)
    assert feed(two, [base, batch], 2)[0] == 1
    single.update_many(*base)
    for a, b, c in zip(*[x.tolist() for x in batch]):
        single.update(a, b, c)
    assert state(two) == state(single)


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("bad", ["first", "last"])
def test_internal_deltas_with_a_bad_removal_fail_as_one_thread_does(n_threads, bad):
    """``apply_sorted`` (merges, restores) may carry removals of what is not held: it stays
    on one thread, which raises at the first bad key with the keys before it applied. A bad
    first key changes nothing; a bad last key leaves a summary that refuses every call
    (found in review: on two threads, a bad first key broke the summary too)."""
    rng = np.random.default_rng(3)
    s = StreamingThors(fn_cost=1, fp_cost=1)
    s.update_many(rng.random(BIG), rng.random(BIG) < 0.5)
    s.get()
    before = state(s)
    keys = np.sort(rng.random(6_000))  # below n/16: leaf by leaf (above: a rebuild, which checks first)
    ones, zeros = np.ones(keys.size), np.zeros(keys.size)
    d1 = ones.copy()
    d1[0 if bad == "first" else -1] = -1.0  # a new key: removing it is an error
    used = counters()[0]
    with threads(n_threads), pytest.raises(KeyError):
        s._tree.apply_sorted(keys, d1, zeros, d1, zeros)
    assert counters()[0] == used
    if bad == "first":
        assert state(s) == before
    else:
        with pytest.raises(RuntimeError, match="inconsistent"):
            s.get()


def test_memory_error_before_the_threads_start_changes_nothing():
    """Found in review: a large batch whose first allocation failed was applied in part by
    the two threads before the failure surfaced, and broke the summary; one thread leaves it
    unchanged. The memory the serial pass starts with is now had before the threads start."""
    from thors_stream._ctree import _fail_reserve_after

    rng = np.random.default_rng(4)
    base = (rng.random(BIG), rng.random(BIG) < 0.3)
    s = StreamingThors(fn_cost=2, fp_cost=1, window=BIG)
    s.update_many(*base)
    s.get()
    before = state(s)
    batch = (rng.random(6_000), rng.random(6_000) < 0.3)
    used = counters()[0]
    try:
        _fail_reserve_after(0)
        with pytest.raises(MemoryError):
            s.update_many(*batch)
    finally:
        _fail_reserve_after(-1)
    assert state(s) == before
    s.update_many(*batch)  # and it goes through afterwards, on two threads
    assert counters()[0] == used + 1
    ref = StreamingThors(fn_cost=2, fp_cost=1, window=BIG)
    with threads(1):
        ref.update_many(*base)
        ref.update_many(*batch)
    assert state(s) == state(ref)


@pytest.mark.parametrize("extra", [1.0, 2.0**-60])
def test_changes_at_held_scores_only(extra):
    """A batch that only adds weight at scores already held changes no leaf's shape: with
    unit weights every leaf is changed in place by the two threads (the marks above them
    must then come from the serial pass); a weight of 2**-60 on top of 1 needs a low part,
    so a new lo block, which only the serial pass may allocate."""
    rng = np.random.default_rng(5)
    base_keys = rng.random(BIG)
    base = (base_keys, rng.random(BIG) < 0.3, np.ones(BIG))
    at = rng.choice(base_keys, 6_000, replace=False)
    batch = (at, rng.random(at.size) < 0.3, np.full(at.size, extra))
    one, two = StreamingThors(fn_cost=7, fp_cost=1), StreamingThors(fn_cost=7, fp_cost=1)
    feed(one, [base, batch], 1)
    used, deferred = feed(two, [base, batch], 2)
    assert used == 1
    assert (deferred > 0) == (extra != 1.0)
    assert state(two) == state(one)


def _two_cpus() -> bool:
    import os

    return len(os.sched_getaffinity(0)) >= 2 if hasattr(os, "sched_getaffinity") else True


@pytest.mark.parametrize("env, expected", [("1", 1), ("2", 2), (None, 2 if _two_cpus() else 1)])
def test_environment_variable_keeps_batches_in_one_thread(env, expected):
    import os
    import subprocess
    import sys

    code = "from thors_stream._ctree import _set_batch_threads; print(_set_batch_threads(1))"
    environ = {k: v for k, v in os.environ.items() if k != "THORS_STREAM_BATCH_THREADS"}
    if env is not None:
        environ["THORS_STREAM_BATCH_THREADS"] = env
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True)
    assert int(out.stdout) == expected


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity"), reason="no CPU affinity on this platform")
@pytest.mark.parametrize("env, expected", [(None, 1), ("2", 2)])
def test_one_cpu_keeps_batches_in_one_thread(env, expected):
    """A process that may run on one CPU only applies every batch in the calling thread (a
    second thread would only take turns with it, while it spins waiting for that thread),
    unless THORS_STREAM_BATCH_THREADS=2 asks for two; its batches give the same answers."""
    import os
    import subprocess
    import sys

    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "import numpy as np\n"
        "from thors_stream import StreamingThors\n"
        "from thors_stream._ctree import _set_batch_threads, _batch_counters\n"
        "rng = np.random.default_rng(2); s = StreamingThors(fn_cost=3, fp_cost=1, window=100_000)\n"
        "s.update_many(rng.random(100_000), rng.random(100_000) < 0.3)\n"
        "s.update_many(rng.random(8_000), rng.random(8_000) < 0.3)\n"
        "print(_batch_counters()[0], s.get(), len(s))\n"
        "print(_set_batch_threads(1))\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != "THORS_STREAM_BATCH_THREADS"}
    if env is not None:
        environ["THORS_STREAM_BATCH_THREADS"] = env
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True)
    first, second = out.stdout.split("\n")[:2]
    used, threshold, held = first.split()
    assert int(second) == expected
    assert int(used) == (expected == 2)
    rng = np.random.default_rng(2)
    ref = StreamingThors(fn_cost=3, fp_cost=1, window=100_000)
    ref.update_many(rng.random(100_000), rng.random(100_000) < 0.3)
    with threads(1):
        ref.update_many(rng.random(8_000), rng.random(8_000) < 0.3)
    assert (float(threshold), int(held)) == (ref.get(), len(ref))


def mixed_leaf_batches(rng, width, weights, n_batches=2):
    """A window of W events whose oldest lie in [0, width), then batches in that range that
    each leaf there sees several times over: keys that expire and are not seen again (a
    slot closes), keys that expire and come back (a slot rewritten), new keys between held
    ones (a slot opens) and more events at held keys (a slot rewritten), in one leaf."""
    w_size, b = 50_000, 2_500  # 5,000 changes a batch: two threads, and below n / 6 (no rebuild)
    assert width * w_size >= b * (n_batches + 2)  # room for the keys that expire and the held ones
    grid = np.arange(w_size) / w_size
    low = grid[grid < width]
    old = rng.permutation(low)[: b * (n_batches + 1)]
    rest = np.setdiff1d(grid, old)
    base_keys = np.concatenate([old, rng.permutation(rest)])  # the oldest first
    wt = (lambda m: rng.choice([1.0, 3.0, 0.5], m)) if weights else np.ones
    base = (base_keys, rng.random(w_size) < 0.3, wt(w_size))
    batches = [base]
    for j in range(n_batches):
        expiring = old[j * b : (j + 1) * b]
        held = low[~np.isin(low, old[: (j + 1) * b])]
        keys = np.concatenate([
            rng.choice(expiring, b // 3, replace=False),  # expire and come back
            rng.choice(held, b // 3),  # one more event at a held key (some twice)
            rng.choice(low, b - 2 * (b // 3)) + 0.5 / w_size,  # between held keys
        ])
        keys = rng.permutation(keys)
        batches.append((keys, rng.random(b) < 0.3, wt(b)))
    return w_size, batches


@pytest.mark.parametrize("width", [0.25, 0.5])
@pytest.mark.parametrize("weights", [False, True])
def test_leaves_changed_at_many_keys_in_place(width, weights):
    """The two threads plan each leaf's keys in one pass (a slot per key: closes, opens and
    rewrites) before changing it; the plan is carried out with the slots moved by the keys
    that left or came in on their left. Leaves that take many keys of each kind in one
    batch, against one thread, the per-event path and the python backend."""
    rng = np.random.default_rng(int(width * 10) + 2 * weights)
    w_size, batches = mixed_leaf_batches(rng, width, weights)
    one, two = (StreamingThors(fn_cost=5, fp_cost=1, window=w_size) for _ in range(2))
    feed(one, batches, 1)
    before = counters()
    assert feed(two, batches, 2)[0] == len(batches) - 1
    multi = counters()[2] - before[2]
    assert multi >= 50  # leaves changed in place at two keys or more
    assert state(two) == state(one)
    ref = StreamingThors(fn_cost=5, fp_cost=1, window=w_size, backend="python")
    for b in batches:
        ref.update_many(*b)
    assert [a.tolist() for a in two.held()] == [a.tolist() for a in ref.held()]
    assert (two.get(), two.cost) == (ref.get(), ref.cost)
    single = StreamingThors(fn_cost=5, fp_cost=1, window=w_size)
    single.update_many(*batches[0])
    for b in batches[1:]:
        for a, y, w in zip(*[x.tolist() for x in b]):
            single.update(a, y, w)
    assert state(two) == state(single)


@settings(deadline=None, max_examples=10)
@given(seed=st.integers(0, 2**32 - 1), width=st.floats(0.15, 0.6), weights=st.booleans())
def test_leaves_changed_at_many_keys_in_place_random(seed, width, weights):
    rng = np.random.default_rng(seed)
    w_size, batches = mixed_leaf_batches(rng, width, weights, n_batches=1)
    one, two = (StreamingThors(fn_cost=2, fp_cost=3, window=w_size) for _ in range(2))
    feed(one, batches, 1)
    assert feed(two, batches, 2)[0] == 1
    assert state(two) == state(one)
