"""``update_many``'s paths, each against the per-event path, the batch function and the oracle.

On the compiled core a batch goes one of three ways:

- it **replaces the whole window** (a count window's batch at least as long as the window, or
  any batch into an empty window): the tree is rebuilt from the batch's events that stay;
- it **repeats few scores**: it is aggregated by key (one hash lookup per event) and reaches
  the tree as one row per score for its additions and one for its removals;
- otherwise its events are sorted and applied leaf by leaf (tests/test_batch_threads.py).

The numpy backend rebuilds too when a batch replaces its window. Every path must leave the
held rows (low parts of double-double weights included) exactly as the per-event path does,
and so the same threshold and cost, which equal ``thors_threshold`` on the held events and
the brute-force oracle: ties, dyadic weights, weights whose per-score sums need a low part,
windows, two threads, both backends.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_force

from thors_stream import StreamingThors, thors_threshold
from thors_stream._backend import available_backends, export_lo

HAS_C = "c" in available_backends()
needs_c = pytest.mark.skipif(not HAS_C, reason="compiled core not built")
FN, FP = 3.0, 2.0


def counters():
    from thors_stream._ctree import _path_counters

    return _path_counters()[:2]


@contextlib.contextmanager
def ctree_setting(name, value):
    from thors_stream import _ctree

    old = getattr(_ctree, name)(value)
    try:
        yield
    finally:
        getattr(_ctree, name)(old)


def state(s: StreamingThors, rows_only: bool = False):
    """Held rows with their low parts, events held, threshold and cost."""
    if hasattr(s._tree, "check"):
        s._tree.check()
    rows = [a.tolist() for a in s.held()] + export_lo(s._tree).tolist()
    return (rows, len(s)) if rows_only else (rows, len(s), s.get(), s.cost)


def per_event(s, y, w, window, backend="c"):
    ref = StreamingThors(fn_cost=FN, fp_cost=FP, window=window, backend=backend)
    for i in range(len(s)):
        ref.update(float(s[i]), bool(y[i]), 1.0 if w is None else float(w[i]))
    return ref


def batched(s, y, w, window, cuts, backend="c"):
    got = StreamingThors(fn_cost=FN, fp_cost=FP, window=window, backend=backend)
    lo = 0
    for c in [*cuts, len(s)]:
        got.update_many(s[lo:c], y[lo:c], None if w is None else w[lo:c])
        got.get()  # a read between batches
        lo = c
    return got


def check_against_the_batch_function_and_the_oracle(got, s, y, w, window, oracle=True):
    held = slice(max(0, len(s) - window), len(s)) if window else slice(0, len(s))
    hs, hy = s[held], y[held]
    hw = None if w is None else w[held]
    if not len(hs):
        assert got.get() is None
        return
    want = thors_threshold(hs, hy, fn_cost=FN, fp_cost=FP, sample_weight=hw)
    assert got.get() == want.threshold
    assert math.isclose(got.cost, want.cost, rel_tol=0, abs_tol=1e-9 * max(1.0, abs(want.cost)))
    if oracle:
        thr, cost, _ = brute_force(list(zip(hs.tolist(), hy.tolist(), [1.0] * len(hs) if hw is None else
                                            hw.tolist())), FN, FP)
        assert got.get() == thr and got.cost == float(cost)


# weights: none, dyadic (every sum exact in float64), or 1, 2**30 and 2**-30, whose per-score
# sums are exact only as double-doubles (the rows must still equal the per-event path's; the
# threshold is then outside the exactness condition and not compared)
weight_kind = st.sampled_from(["unit", "dyadic", "wide"])


def make_stream(seed, n, n_values, weights, zeros=False):
    rng = np.random.default_rng(seed)
    s = rng.integers(-(n_values // 3), n_values, n) / 8.0
    if zeros:
        s[rng.random(n) < 0.2] = -0.0
    y = rng.random(n) < rng.uniform(0.05, 0.95)
    if weights == "unit":
        w = None
    elif weights == "dyadic":
        w = rng.integers(1, 33, n) / 8.0
    else:  # 2**30 and 2**-30 at one score: per-score sums exact only as double-doubles
        w = rng.choice([1.0, 2.0**30, 2.0**-30], n)
    return s, y, w


@needs_c
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(300, 1500), n_values=st.integers(1, 40),
       weights=weight_kind, window=st.sampled_from([None, 37, 300, 900]),
       cuts=st.lists(st.integers(0, 1500), max_size=4))
def test_a_batch_of_few_scores_is_applied_by_key(seed, n, n_values, weights, window, cuts):
    s, y, w = make_stream(seed, n, n_values, weights)
    cuts = sorted(c for c in cuts if c < n)
    got = batched(s, y, w, window, cuts)
    wide = weights == "wide"
    assert state(got, wide) == state(per_event(s, y, w, window), wide)
    if not wide:
        check_against_the_batch_function_and_the_oracle(got, s, y, w, window, oracle=(window or n) <= 300)


@needs_c
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 1200), n_values=st.sampled_from([2, 30, 10**9]),
       weights=weight_kind, window=st.integers(1, 400), zeros=st.booleans(),
       cuts=st.lists(st.integers(0, 1200), max_size=5))
def test_a_batch_that_replaces_the_window_rebuilds_it(seed, n, n_values, weights, window, zeros, cuts):
    s, y, w = make_stream(seed, n, n_values, weights, zeros)
    cuts = sorted(c for c in cuts if c < n)
    got = batched(s, y, w, window, cuts)
    wide = weights == "wide"
    assert state(got, wide) == state(per_event(s, y, w, window), wide)
    if not wide:
        check_against_the_batch_function_and_the_oracle(got, s, y, w, window, oracle=window < 100)


@needs_c
def test_each_path_is_taken():
    """The three paths, told apart by the core's counters (keyed, rebuilt)."""
    rng = np.random.default_rng(0)
    st_ = StreamingThors(fn_cost=FN, fp_cost=FP, window=5_000)

    def step(s, expect):
        before = counters()
        st_.update_many(s, rng.random(s.size) < 0.1)
        st_.get()
        assert tuple(a - b for a, b in zip(counters(), before)) == expect

    step(np.round(rng.random(5_000), 2), (0, 1))  # into an empty window: rebuilt
    step(np.round(rng.random(2_000), 2), (1, 0))  # 101 scores, in and out: by key
    step(rng.random(2_000), (0, 0))  # distinct scores: sorted
    step(rng.random(9_000), (0, 1))  # longer than the window: rebuilt
    # few scores in, as many distinct ones out: more keys than half the events, sorted
    step(np.round(rng.random(1_000), 2), (0, 0))


@needs_c
@pytest.mark.parametrize("weights", ["unit", "dyadic"])
def test_rows_by_key_through_two_threads(weights):
    """A batch of few scores into a large tree, applied leaf by leaf (rebuilds off): its
    per-key rows take the two-thread path and give what one thread gives."""
    from thors_stream._ctree import _batch_counters

    rng = np.random.default_rng(1)
    n = 40_000
    s0 = np.arange(n) / n  # 40,000 distinct scores held
    y0 = rng.random(n) < 0.3
    vals = np.arange(3_000) / 3_000  # the batch: 3,000 of them, most repeated
    s1 = vals[rng.integers(0, 3_000, 20_000)]
    y1 = rng.random(20_000) < 0.3
    w0 = w1 = None
    if weights == "dyadic":
        w0, w1 = rng.integers(1, 17, n) / 4.0, rng.integers(1, 17, 20_000) / 4.0
    results = []
    for threads in (1, 2):
        a = StreamingThors(fn_cost=FN, fp_cost=FP, window=50_000)
        a.update_many(s0, y0, w0)
        before, keyed = _batch_counters()[0], counters()[0]
        with ctree_setting("_set_rebuild_ratio", 0), ctree_setting("_set_batch_threads", threads):
            a.update_many(s1, y1, w1)
        assert counters()[0] == keyed + 1
        assert _batch_counters()[0] - before == (threads == 2)
        results.append(state(a))
    assert results[0] == results[1]
    ref = per_event(np.concatenate([s0, s1]), np.concatenate([y0, y1]),
                    None if w0 is None else np.concatenate([w0, w1]), 50_000)
    assert results[0] == state(ref)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 600), n_values=st.sampled_from([3, 25, 10**9]),
       weights=st.sampled_from(["unit", "dyadic"]), window=st.integers(1, 250),
       cuts=st.lists(st.integers(0, 600), max_size=4))
def test_numpy_backend_rebuilds_a_replaced_window_too(seed, n, n_values, weights, window, cuts):
    s, y, w = make_stream(seed, n, n_values, weights)
    cuts = sorted(c for c in cuts if c < n)
    got = batched(s, y, w, window, cuts, backend="python")
    want = per_event(s, y, w, window, backend="python")
    assert state(got) == state(want)
    check_against_the_batch_function_and_the_oracle(got, s, y, w, window, oracle=window < 100)
    if HAS_C:  # the two backends hold the same rows
        assert state(got)[0][:5] == state(batched(s, y, w, window, cuts))[0][:5]


@pytest.mark.parametrize("backend", available_backends())
def test_history_independence_across_the_paths(backend):
    """Batches that rebuild, batches by key, sorted batches, single updates and reverts in
    any order: the summary equals a fresh one fed only the events it holds."""
    rng = np.random.default_rng(3)
    for trial in range(6):
        window = int(rng.choice([50, 400, 3_000]))
        st_ = StreamingThors(fn_cost=FN, fp_cost=FP, window=window, backend=backend)
        log = []
        for _ in range(12):
            kind = rng.integers(0, 4)
            m = int(rng.choice([1, 30, 300, 4_000]))
            s = (rng.integers(0, 20, m) / 4.0) if kind == 0 else rng.random(m)
            y = rng.random(m) < 0.4
            w = rng.integers(1, 9, m) / 2.0 if trial % 2 else None
            if kind == 3 and log:  # revert a held event: the oldest held copy of it leaves
                ev = log[int(rng.integers(max(0, len(log) - window), len(log)))]
                if ev is not None:
                    st_.revert(*ev)
                    log[log.index(ev, max(0, len(log) - window))] = None
                continue
            st_.update_many(s, y, w)
            log += list(zip(s.tolist(), y.tolist(), [1.0] * m if w is None else w.tolist()))
            st_.get()
        held = [e for e in log[-window:] if e is not None]
        fresh = StreamingThors(fn_cost=FN, fp_cost=FP, window=window, backend=backend)
        for e in held:
            fresh.update(*e)
        assert state(st_) == state(fresh)


@needs_c
def test_the_rebuild_leaves_a_tree_holding_other_events_to_the_update():
    """The core rebuilds only when its tree holds exactly the queued events; one holding an
    event the queue does not (possible through the raw core only) is updated instead, and
    keeps that event."""
    from thors_stream._ctree import CTree

    t = CTree(FN, FP, ring=1)
    t.add(0.5, True, 1.0)  # held, not queued
    _, r0 = counters()
    s = np.array([0.1, 0.2, 0.3])
    t.window_push_many(s, np.array([0, 1, 0], dtype=np.uint8), None, 3)
    assert counters()[1] == r0
    rows = np.frombuffer(t.export(), dtype=np.float64).reshape(5, -1)
    assert rows[0].tolist() == [0.1, 0.2, 0.3, 0.5] and rows[3].tolist() == [0.0, 1.0, 0.0, 1.0]
    t.check()


@needs_c
@pytest.mark.parametrize("bad", ["nan", "label", "weight", "dtype", "length"])
def test_raw_batch_entry_points_refuse_bad_input_and_change_nothing(bad):
    from thors_stream._ctree import CTree

    t = CTree(FN, FP, ring=1)
    rng = np.random.default_rng(0)
    t.window_push_many(np.round(rng.random(500), 2), (rng.random(500) < 0.5).astype(np.uint8), None, 400)
    before = (t.export(), t.export_lo(), t.q_len(), t.threshold())
    s, y, w = np.round(rng.random(600), 2), np.zeros(600, dtype=np.uint8), np.ones(600)
    if bad == "nan":
        s[300] = np.nan
    elif bad == "label":
        y[300] = 2
    elif bad == "weight":
        w[300] = -1.0
    elif bad == "dtype":
        y = y.astype(np.int64)
    else:
        w = w[:-1]
    with pytest.raises(TypeError if bad in ("dtype", "length") else ValueError):
        t.window_push_many(s, y, w, 400)
    with pytest.raises(TypeError if bad in ("dtype", "length") else ValueError):
        t.add_many(s, y, w)
    assert (t.export(), t.export_lo(), t.q_len(), t.threshold()) == before
    t.check()


@pytest.mark.parametrize("backend", available_backends())
def test_strided_and_integer_inputs_take_the_same_paths(backend):
    rng = np.random.default_rng(2)
    s = np.round(rng.random(4_000), 3)
    y = (rng.random(4_000) < 0.2).astype(np.int64)
    w = rng.integers(1, 5, 4_000).astype(np.float64)
    a = StreamingThors(fn_cost=FN, fp_cost=FP, window=700, backend=backend)
    b = StreamingThors(fn_cost=FN, fp_cost=FP, window=700, backend=backend)
    a.update_many(s[::2], y[::2], w[::2])
    b.update_many(np.ascontiguousarray(s[::2]), y[::2].astype(bool), np.ascontiguousarray(w[::2]))
    a.update_many(s[1::2].tolist(), y[1::2].tolist())
    b.update_many(np.ascontiguousarray(s[1::2]), y[1::2] == 1)
    assert state(a) == state(b)


@needs_c
@pytest.mark.parametrize("kind", ["unit", "weighted", "few scores"])
@pytest.mark.parametrize("held_zero", ["-0.0", "0.0", None])
def test_a_rebuilt_window_keeps_the_signed_zero_it_held(kind, held_zero):
    """-0.0 == 0.0 is one score. A zero held before and after a batch keeps the representation
    the summary held, as the leaf-by-leaf path does (here through a batch that replaces the
    window); a zero new to the summary is the first of the batch's zeros to arrive."""
    rng = np.random.default_rng(4)
    window = 1_500  # batches of 2,000: unit weights sorted by value, others in arrival order, few scores by key

    def scores(m, zero):  # zeros among the last `window` events (those held after the batch)
        s = np.round(rng.random(m), 2) if kind == "few scores" else rng.random(m) + 1.0
        s[s == 0.0] = 0.5
        s[rng.integers(m - window, m, 5)] = zero
        return s

    st_ = StreamingThors(fn_cost=FN, fp_cost=FP, window=window)
    s0 = scores(window, float(held_zero) if held_zero else 0.5)
    w0 = rng.integers(1, 5, window) / 2.0 if kind == "weighted" else None
    st_.update_many(s0, rng.random(window) < 0.5, w0)
    s1 = scores(2_000, 0.0)
    s1[int(np.flatnonzero(s1 == 0.0)[0])] = -0.0  # the first zero to arrive (and stay) is -0.0
    w1 = rng.integers(1, 5, 2_000) / 2.0 if kind == "weighted" else None
    k0, r0 = counters()
    st_.update_many(s1, rng.random(2_000) < 0.5, w1)
    assert counters() == (k0, r0 + 1)
    zeros = [k for k in st_.held()[0].tolist() if k == 0.0]
    assert [repr(k) for k in zeros] == [held_zero or "-0.0"]
