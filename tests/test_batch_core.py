"""The compiled core's batch path (``update_many``): one call that queues, expires, sorts
(radix) and applies the net change leaf by leaf.

Checked against the per-event path on the same events: the held rows (exact
double-double sums), the expiry queue, the threshold and the cost, with batches that
span both of the core's batch strategies (in-place runs per leaf below ~n/16 events, a
merge-and-rebuild above), dense keys that split and empty leaves, batches longer than
the window, and queue records cancelled by ``revert``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thors_stream import StreamingThors
from thors_stream._backend import available_backends

pytestmark = pytest.mark.skipif("c" not in available_backends(), reason="compiled core not built")

# dense keys (a few hundred distinct values: leaves of 32 fill, split and empty) or heavy ties
KEYS = st.integers(-300, 300).map(lambda k: k / 8) | st.sampled_from([0.0, -0.0, 0.5])
# weights whose per-score sums are exact in a double-double (so both paths agree bit for bit)
WEIGHTS = st.sampled_from([1.0, 1.0, 2.0, 0.5, 2.0**30, 2.0**-30, 3.0])
EVENTS = st.lists(st.tuples(KEYS, st.sampled_from([0, 1]), WEIGHTS), min_size=0, max_size=300)


def rows(stt: StreamingThors) -> list[list[float]]:
    return [a.tolist() for a in stt.held()]


def queue(stt: StreamingThors) -> list[tuple[float, float, int]]:
    q = stt._tree
    raw, ys = q.q_arrays(0, q.q_len())
    f = np.frombuffer(raw, dtype=np.float64).reshape(3, -1)
    return list(zip(f[0].tolist(), f[1].tolist(), list(ys)))


def same(a: StreamingThors, b: StreamingThors) -> None:
    a._tree.check()
    assert rows(a) == rows(b)
    assert a.get() == b.get()
    assert a.cost == b.cost
    assert len(a) == len(b)
    if a.window is not None:
        assert queue(a) == queue(b)


@settings(deadline=None)
@given(batches=st.lists(EVENTS, min_size=1, max_size=6), window=st.one_of(st.none(), st.integers(1, 400)),
       cancel=st.lists(st.integers(0, 10**6), max_size=3))
def test_batches_equal_the_per_event_path(batches, window, cancel):
    batched = StreamingThors(fn_cost=3, fp_cost=1, window=window)
    single = StreamingThors(fn_cost=3, fp_cost=1, window=window)
    for i, events in enumerate(batches):
        s = np.array([e[0] for e in events], dtype=float)
        y = np.array([e[1] for e in events])
        w = np.array([e[2] for e in events], dtype=float)
        batched.update_many(s, y, w)
        for e in events:
            single.update(*e)
        same(batched, single)
        if i < len(cancel) and len(single):
            # revert one held event in both: its queue record is cancelled (window) or
            # its weight leaves the ledger (no window); later batches must skip it
            held = [r for r in queue(single) if r[2] != 2] if window is not None else None  # 2: cancelled
            if held:
                sc, wt, lab = held[cancel[i] % len(held)]
                batched.revert(sc, int(lab), wt)
                single.revert(sc, int(lab), wt)
                same(batched, single)


@pytest.mark.parametrize("window", [64, 1_000, 20_000])
@pytest.mark.parametrize("batch", [1, 33, 500, 5_000])
def test_sliding_batches_match_a_fresh_summary(window, batch):
    rng = np.random.default_rng(window + batch)
    n = window + 6 * batch
    s = np.round(rng.normal(size=n), 2)  # ties
    y = rng.random(n) < 0.2
    st_ = StreamingThors(fn_cost=5, fp_cost=1, window=window)
    for lo in range(0, n, batch):
        st_.update_many(s[lo : lo + batch], y[lo : lo + batch])
    st_._tree.check()
    fresh = StreamingThors(fn_cost=5, fp_cost=1)
    fresh.update_many(s[-window:], y[-window:])
    assert rows(st_) == rows(fresh)
    assert st_.get() == fresh.get() and st_.cost == fresh.cost


def test_expiring_whole_leaves_rebalances():
    # the window holds 0..3999 in order; a batch of keys far above expires the 2,000 lowest
    # keys (about 60 whole leaves), then the next batch brings keys back inside the range
    st_ = StreamingThors(fn_cost=2, fp_cost=1, window=4_000)
    st_.update_many(np.arange(4_000.0), np.arange(4_000) % 3 == 0)
    st_.update_many(np.arange(10_000.0, 12_000.0), np.zeros(2_000))
    st_._tree.check()
    st_.update_many(np.arange(500.0, 700.0) + 0.5, np.ones(200))
    st_._tree.check()
    fresh = StreamingThors(fn_cost=2, fp_cost=1)
    keys = np.concatenate([np.arange(2_200.0, 4_000.0), np.arange(10_000.0, 12_000.0), np.arange(500.0, 700.0) + 0.5])
    labels = np.concatenate([np.arange(2_200, 4_000) % 3 == 0, np.zeros(2_000, bool), np.ones(200, bool)])
    fresh.update_many(keys, labels)
    assert rows(st_) == rows(fresh)
    assert st_.get() == fresh.get()


def test_radix_order_signs_zeros_and_magnitudes():
    vals = np.array([5e-324, -5e-324, 0.0, -0.0, 1e308, -1e308, 1.0, -1.0, 2.2250738585072014e-308, 3.5, -3.5] * 7)
    rng = np.random.default_rng(0)
    vals = np.concatenate([vals, rng.normal(size=200) * 10.0 ** rng.integers(-300, 300, 200)])
    rng.shuffle(vals)
    st_ = StreamingThors(fn_cost=1, fp_cost=1)
    st_.update_many(vals, rng.random(vals.size) < 0.5)
    keys = st_.held()[0]
    assert np.all(np.diff(keys) > 0)
    assert set(keys.tolist()) == set(vals.tolist())  # -0.0 == 0.0: one key
    st_._tree.check()


@pytest.mark.parametrize("m", [40, 3_000, 30_000])
@pytest.mark.parametrize("spread", ["crowded", "mixed"])
def test_radix_order_keys_that_share_their_top_bits(m, spread):
    """The sort orders keys by their top 31 bits, then by insertion; keys crowded within
    2**-19 of each other (here: neighbouring doubles above 1.0) exceed its move budget and
    take the full six-pass sort. Either way the order is exact, on both batch strategies
    (into a tree 16x the batch: leaf by leaf; into an empty one: merge and rebuild)."""
    rng = np.random.default_rng(m)
    vals = 1.0 + rng.integers(0, 4 * m if spread == "crowded" else 50, m) * 2.0**-52
    if spread == "mixed":
        vals[::3] = rng.normal(size=vals[::3].size)
    y = rng.random(m) < 0.5
    w = rng.choice([1.0, 2.0**30, 2.0**-30, 0.5], size=m)
    base = rng.random(16 * m + 1_000)
    base_y = rng.random(base.size) < 0.5
    into_tree, into_empty = StreamingThors(fn_cost=3, fp_cost=1), StreamingThors(fn_cost=3, fp_cost=1)
    ref_tree, ref_empty = (StreamingThors(fn_cost=3, fp_cost=1, backend="python") for _ in range(2))
    into_tree.update_many(base, base_y)
    ref_tree.update_many(base, base_y)
    into_tree.update_many(vals, y, w)
    into_empty.update_many(vals, y, w)
    for a, b, c in zip(vals.tolist(), y.tolist(), w.tolist()):
        ref_tree.update(a, b, c)
        ref_empty.update(a, b, c)
    for fast, ref in ((into_tree, ref_tree), (into_empty, ref_empty)):
        fast._tree.check()
        assert rows(fast) == rows(ref)
        assert fast.get() == ref.get()


@pytest.mark.parametrize(
    "args, exc",
    [
        ((np.zeros(2), np.array([0, 2], np.uint8), np.ones(2), 5), ValueError),  # label 2
        ((np.zeros(2), np.zeros(2), np.ones(2), 5), TypeError),  # labels not uint8
        ((np.zeros(2), np.zeros(3, np.uint8), np.ones(2), 5), TypeError),  # lengths differ
        ((np.zeros(2), np.zeros(2, np.uint8), np.ones(2), 0), ValueError),  # limit < 1
        ((np.zeros(2), np.zeros(2, np.uint8), np.ones(2)), TypeError),  # no limit
        ((np.array([0.0, np.nan]), np.zeros(2, np.uint8), np.ones(2), 5), ValueError),  # NaN score
        ((np.array([0.0, np.inf]), np.zeros(2, np.uint8), np.ones(2), 5), ValueError),  # infinite score
        ((np.zeros(2), np.zeros(2, np.uint8), np.array([1.0, np.nan]), 5), ValueError),  # NaN weight
        ((np.zeros(2), np.zeros(2, np.uint8), np.array([1.0, -1.0]), 5), ValueError),  # negative weight
    ],
)
def test_core_batch_entry_refuses_bad_buffers_and_changes_nothing(args, exc):
    st_ = StreamingThors(fn_cost=1, fp_cost=1, window=5)
    st_.update_many([0.1, 0.2, 0.3], [0, 1, 0])
    before = (rows(st_), queue(st_), st_.get())
    with pytest.raises(exc):
        st_._tree.window_push_many(*args)
    assert (rows(st_), queue(st_), st_.get()) == before


def test_core_entries_refuse_non_finite_keys():
    """The core's internal entries refuse keys of +-inf and NaN (the public API never sends
    them; a batch holding +inf used to loop forever) and change nothing."""
    from thors_stream._ctree import CTree

    t = CTree(1.0, 1.0)
    k = np.arange(2_000.0)
    t.apply_sorted(k, np.ones(k.size), np.zeros(k.size), np.ones(k.size), np.zeros(k.size))  # a rebuild
    before = t.export()
    for keys in ([np.inf] * 40, [-np.inf] * 3 + [5.5], [5.5, np.nan]):  # small: leaf runs
        kk = np.array(keys)
        with pytest.raises(ValueError, match="finite"):
            t.apply_sorted(kk, np.ones(kk.size), np.zeros(kk.size), np.ones(kk.size), np.zeros(kk.size))
    for bad in (np.inf, -np.inf, np.nan):
        with pytest.raises(ValueError, match="finite"):
            t.add(bad, True, 1.0)
    with pytest.raises(ValueError, match="finite"):
        t.apply_sorted(np.array([1.5]), np.array([np.inf]), np.zeros(1), np.ones(1), np.zeros(1))
    t.check()
    assert t.export() == before


def test_signed_zeros_keep_the_key_that_arrived_first():
    """-0.0 == 0.0 is one score; a batch keeps the one that arrived first, as per-event
    updates do (found in review: the radix order put -0.0 first whatever the arrival)."""
    s = np.array([0.0] + [-0.0] * 39 + [0.5] * 10)
    y = np.array([False] * 40 + [True] * 10)
    for first in (0.0, -0.0):
        s[0] = first
        a = StreamingThors(fn_cost=1, fp_cost=1, window=100)
        b = StreamingThors(fn_cost=1, fp_cost=1, window=100)
        a.update_many(s, y)
        for v, t in zip(s.tolist(), y.tolist()):
            b.update(v, t)
        assert repr(a.get()) == repr(b.get()) == repr(first)
        assert repr(a.held()[0].tolist()) == repr(b.held()[0].tolist())


@pytest.mark.parametrize("window", [20_000, None])
def test_memory_error_part_way_through_a_batch_poisons_the_summary(window):
    """A MemoryError after part of a batch went in (found in review with an injected
    allocation failure) must not leave a summary that answers from a tree out of step with
    its queue: every later call raises, naming what happened. One that fails before any
    change (the first allocation) changes nothing."""
    from thors_stream._ctree import _fail_reserve_after

    rng = np.random.default_rng(0)
    s0 = rng.random(20_000)
    st_ = StreamingThors(fn_cost=1, fp_cost=1, window=window)
    st_.update_many(s0, s0 > 0.5)
    before = (rows(st_), st_.get())
    s1 = rng.random(40)
    try:
        _fail_reserve_after(0)  # the very first reservation fails: nothing applied
        with pytest.raises(MemoryError):
            st_.update_many(s1, s1 > 0.5)
    finally:
        _fail_reserve_after(-1)
    assert (rows(st_), st_.get()) == before
    try:
        _fail_reserve_after(20)  # fails after 20 leaves of the batch went in
        with pytest.raises(MemoryError):
            st_.update_many(s1, s1 > 0.5)
    finally:
        _fail_reserve_after(-1)
    for call in (lambda: st_.get(), lambda: st_.update(0.3, True), lambda: st_.update_many([0.3], [1]),
                 lambda: st_.held(), lambda: st_.cost):
        with pytest.raises(RuntimeError, match="inconsistent"):
            call()
