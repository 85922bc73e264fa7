"""The compiled core keeps no class counts while every event weighs 1 ("plain" mode:
each score's weights are its counts). The first event whose weight is not 1 makes it
store counts beside the leaves, before anything else changes.

Checked here: the switch on every path an event can take (one update, a batch in place,
a batch rebuilt, a revert, a merge, a checkpoint), counts that the weights alone could not
give (two events of weight 0.5 at one score), a MemoryError at the switch (nothing
changes), and the return to plain mode when a rebuild finds only unit rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from thors_stream import StreamingThors
from thors_stream._backend import available_backends

pytestmark = pytest.mark.skipif("c" not in available_backends(), reason="compiled core not built")


def plain(st: StreamingThors) -> bool:
    return bool(st._tree.stats()["plain"])


def state(st: StreamingThors):
    return [a.tolist() for a in st.held()], st.get(), st.cost, len(st)


def unit_summary(window=None, n=3_000, seed=0, backend="c") -> StreamingThors:
    rng = np.random.default_rng(seed)
    st = StreamingThors(fn_cost=5, fp_cost=1, window=window, backend=backend)
    s = np.round(rng.normal(size=n), 2)  # ties: several events per score
    st.update_many(s, rng.random(n) < 0.3)
    return st


def one_update(st):
    st.update(0.125, 1, 0.5)
    st.update(0.125, 1, 0.5)  # weight 1.0 from two events: count 2


def batch_in_place(st):
    st.update_many([0.125, 0.125, 7.0], [1, 1, 0], [0.5, 0.5, 3.0])


def batch_rebuilt(st):
    rng = np.random.default_rng(1)
    s = np.round(rng.normal(size=2_000), 2)
    st.update_many(np.r_[s, 0.125, 0.125], np.r_[rng.random(2_000) < 0.3, 1, 1], np.r_[np.ones(2_000), 0.5, 0.5])


def merged(st):
    other = StreamingThors(fn_cost=5, fp_cost=1, backend=st.backend)
    other.update(0.125, 1, 0.5)
    other.update(0.125, 1, 0.5)
    st.merge(other)


@pytest.mark.parametrize("apply", [one_update, batch_in_place, batch_rebuilt, merged])
def test_the_first_weighted_event_switches_to_stored_counts(apply):
    st, ref = unit_summary(), unit_summary(backend="python")
    assert plain(st) and st._tree.stats()["weight_slots"] == 0
    apply(st)
    apply(ref)
    assert not plain(st)
    stats = st._tree.stats()
    assert stats["weight_slots"] >= stats["leaf_slots"]
    st._tree.check()
    # the counts are the events', not the weights': two events of weight 0.5 at 0.125
    assert st._tree.held_at(0.125) == (1.0, 0.0, 2, 0)
    assert state(st) == state(ref)


@pytest.mark.parametrize("window", [None, 500])
def test_counts_survive_reverts_and_expiry_after_the_switch(window):
    st, ref = unit_summary(window=window), unit_summary(window=window, backend="python")
    rng = np.random.default_rng(5)
    for x in (st, ref):
        x.update(0.125, 1, 2.0)
        x.update(0.125, 1)
        x.revert(0.125, 1, 2.0)
    assert not plain(st)
    assert st._tree.held_at(0.125) == (1.0, 0.0, 1, 0)  # one unit event left at 0.125
    for _ in range(20):
        s = np.round(rng.normal(size=50), 2)
        y, w = rng.random(50) < 0.3, rng.choice([1.0, 0.25, 3.0], size=50)
        st.update_many(s, y, w)
        ref.update_many(s, y, w)
        st._tree.check()
        assert state(st) == state(ref)


def test_memory_error_at_the_switch_changes_nothing():
    from thors_stream._ctree import _fail_reserve_after

    for apply in (lambda st: st.update(0.3, 1, 2.0), lambda st: st.update_many([0.3, 0.4], [1, 0], [2.0, 1.0])):
        st = unit_summary(window=1_000)
        before = state(st)
        try:
            _fail_reserve_after(0)
            with pytest.raises(MemoryError):
                apply(st)
        finally:
            _fail_reserve_after(-1)
        assert state(st) == before and plain(st)
        st._tree.check()
        apply(st)  # and the same change goes through afterwards
        assert not plain(st)
        st._tree.check()


def test_a_rebuild_of_unit_rows_returns_to_plain_mode():
    st = StreamingThors(fn_cost=5, fp_cost=1, window=100, backend="c")
    rng = np.random.default_rng(3)
    st.update_many(rng.random(100), rng.random(100) < 0.5, np.full(100, 2.5))
    assert not plain(st)
    s = rng.random(5_000)
    st.update_many(s, s > 0.7)  # the weighted events expire inside this batch; the core rebuilds
    assert plain(st) and st._tree.stats()["weight_slots"] == 0
    st._tree.check()
    fresh = StreamingThors(fn_cost=5, fp_cost=1, window=100, backend="c")
    fresh.update_many(s[-100:], s[-100:] > 0.7)
    assert state(st) == state(fresh)


def test_plain_mode_stores_about_half_the_bytes_per_leaf():
    unit = unit_summary(n=20_000)
    weighted = StreamingThors(fn_cost=5, fp_cost=1, backend="c")
    rng = np.random.default_rng(0)
    s = np.round(rng.normal(size=20_000), 2)
    weighted.update_many(s, rng.random(20_000) < 0.3, np.full(20_000, 2.0))
    a, b = unit._tree.stats(), weighted._tree.stats()
    assert a["plain"] and not b["plain"]
    per_leaf_unit = a["leaf_bytes"]
    per_leaf_weighted = b["leaf_bytes"] + b["weight_bytes"]
    assert per_leaf_unit <= 0.51 * per_leaf_weighted
    assert b["weight_slots"] >= b["leaf_slots"] and a["weight_slots"] == 0
