"""The parts StreamingThors is assembled from, each on its own: the lock protocol, windows
and late labels (:mod:`thors_stream._stream_windows`), the Neyman-Pearson read path
(:mod:`thors_stream._stream_np`), checkpoints, pickling and merging
(:mod:`thors_stream._stream_store`)."""

from __future__ import annotations

import copy
import datetime as dt
import math
import pickle
import random

import numpy as np
import pytest
from oracle import brute_force

from thors_stream import StreamingThors, thors_threshold
from thors_stream._backend import available_backends
from thors_stream._stream_np import _rank_table
from thors_stream._stream_windows import _label
from thors_stream._validation import check_time as _seconds
from thors_stream.neyman_pearson import min_rank

BACKENDS = available_backends()


def held_events(st: StreamingThors) -> list[tuple[float, int, float]]:
    """The held multiset as sorted (score, label, count) from the tree's rows."""
    keys, _, _, c1, c0 = st.held()
    return sorted([(k, 1, n) for k, n in zip(keys.tolist(), c1.tolist()) if n]
                  + [(k, 0, n) for k, n in zip(keys.tolist(), c0.tolist()) if n])


def as_rows(events: list[tuple[float, int]]) -> list[tuple[float, int, float]]:
    count: dict[tuple[float, int], int] = {}
    for s, y in events:
        count[(s, y)] = count.get((s, y), 0) + 1
    return sorted((s, y, float(n)) for (s, y), n in count.items())


# ---------------------------------------------------------------- the lock
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refused_call_releases_the_lock_and_the_core_flag(backend):
    st = StreamingThors(fn_cost=2, fp_cost=1, window=10, backend=backend)
    with pytest.raises(ValueError, match="ys must hold only"):
        st.update_many([0.1, 0.2], [1, 7])
    assert getattr(st._tree, "busy", 0) == 0
    assert st._lock.acquire(blocking=False)
    st._lock.release()
    st.update(0.3, 1)  # the fast path is served again
    assert len(st) == 1


# ---------------------------------------------------------------- windows and late labels
def test_times_and_labels_follow_one_rule():
    assert _seconds(dt.datetime(1970, 1, 1, 0, 1), "t") == 60.0  # naive: UTC
    assert _seconds(dt.timedelta(minutes=2), "period") == 120.0
    assert _seconds(7, "t") == 7.0
    for bad in (True, "3", b"3", None):
        with pytest.raises(TypeError, match="t must be"):
            _seconds(bad, "t")
    for bad in (math.inf, math.nan, 10**400):
        with pytest.raises(ValueError, match="finite"):
            _seconds(bad, "t")
    assert [_label(v) for v in (0, 1, True, False, 1.0)] == [False, True, True, False, True]
    for bad in ("1", 2, None, [1]):
        with pytest.raises(ValueError, match="label"):
            _label(bad)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(4))
def test_a_time_window_holds_exactly_the_events_newer_than_the_newest_time_less_the_period(backend, seed):
    rng = random.Random(seed)
    period = 20.0
    st = StreamingThors(fn_cost=3, fp_cost=1, period=period, backend=backend)
    seen: list[tuple[float, int, float]] = []
    newest = -math.inf
    for i in range(400):
        t = i + rng.choice([0, 0, 0, -5, -19, -25, 3])  # late labels, some beyond the period
        s, y = rng.randrange(12) / 4, int(rng.random() < 0.4)
        st.update(s, y, t=t)
        seen.append((s, y, t))
        newest = max(newest, t)
        expect = [(a, b) for a, b, c in seen if c > newest - period]
        assert held_events(st) == as_rows(expect)
        if i % 50 == 49:
            ss = np.array([a for a, _ in expect])
            yy = np.array([b for _, b in expect])
            assert st.get() == thors_threshold(ss, yy, fn_cost=3, fp_cost=1).threshold


@pytest.mark.parametrize("backend", BACKENDS)
def test_revert_in_a_time_window_removes_the_oldest_identical_copy(backend):
    st = StreamingThors(fn_cost=1, fp_cost=1, period=100, backend=backend)
    st.update(0.5, 1, t=50)
    st.update(0.5, 1, t=60)
    st.update(0.5, 1, t=40)  # late, and the oldest copy
    st.revert(0.5, 1)
    st.update(0.2, 0, t=145)  # cutoff 45: had the t=40 copy stayed, nothing would change
    assert held_events(st) == [(0.2, 0, 1.0), (0.5, 1, 2.0)]
    st.update(0.2, 0, t=155)  # cutoff 55: the t=50 copy leaves
    assert held_events(st) == [(0.2, 0, 2.0), (0.5, 1, 1.0)]
    with pytest.raises(KeyError):
        st.revert(0.9, 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_update_many_with_late_times_equals_updates_one_by_one(backend):
    rng = np.random.default_rng(3)
    s = rng.integers(0, 30, 600) / 8
    y = rng.random(600) < 0.3
    t = np.arange(600.0) - rng.choice([0, 0, 4, 30], 600)
    a = StreamingThors(fn_cost=4, fp_cost=1, period=50, backend=backend)
    b = StreamingThors(fn_cost=4, fp_cost=1, period=50, backend=backend)
    for lo in range(0, 600, 97):
        a.update_many(s[lo:lo + 97], y[lo:lo + 97], ts=t[lo:lo + 97])
    for u, v, w in zip(s.tolist(), y.tolist(), t.tolist()):
        b.update(u, v, t=w)
    assert held_events(a) == held_events(b) and a.get() == b.get() and a.n_updates == b.n_updates == 600


# ---------------------------------------------------------------- the Neyman-Pearson read path
@pytest.mark.parametrize("alpha, delta", [(0.1, 0.1), (0.05, 0.05), (0.2, 0.01)])
def test_rank_tables_equal_the_umbrella_rank(alpha, delta):
    for base in (0, 17, 250):
        table = _rank_table(base, 80, alpha, delta)
        for i, k in enumerate(table.tolist()):
            expect = min_rank(base + i, alpha, delta)
            assert k == (-1 if expect is None else expect)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("max_fpr, max_fnr", [(0.1, None), (None, 0.15), (0.1, 0.2)])
def test_np_reads_equal_the_exact_selection_while_counts_move_past_the_tables(backend, max_fpr, max_fnr):
    rng = np.random.default_rng(5)
    n = 1500
    s = rng.integers(0, 200, n) / 16
    y = rng.random(n) < 0.35
    st = StreamingThors(fn_cost=3, fp_cost=1, window=700, max_fpr=max_fpr, max_fnr=max_fnr, confidence=0.9,
                        backend=backend)
    for i in range(n):
        st.update(float(s[i]), bool(y[i]))
        if i % 37 == 0 or i == n - 1:
            lo = max(0, i + 1 - 700)
            try:
                expect = thors_threshold(s[lo:i + 1], y[lo:i + 1], fn_cost=3, fp_cost=1, max_fpr=max_fpr,
                                         max_fnr=max_fnr, confidence=0.9)
            except ValueError:
                expect = None
            if expect is None:
                with pytest.raises(ValueError):
                    st.get()
            else:
                assert st.get() == expect.threshold
                assert st.cost == expect.cost
                assert st._np_result().threshold == expect.threshold


# ---------------------------------------------------------------- checkpoints, pickling, merging
def _filled(kind: str, backend: str) -> StreamingThors:
    kw = {"window": {"window": 50}, "period": {"period": 30.0}, "none": {}}[kind]
    st = StreamingThors(fn_cost=5, fp_cost=1, backend=backend, **kw)
    rng = random.Random(1)
    for i in range(120):
        t = float(i - rng.choice([0, 0, 7]))
        w = rng.choice([1.0, 0.5, 2.0])
        st.update(rng.randrange(20) / 5, int(rng.random() < 0.3), w, t=t if kind == "period" else None)
    return st


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["window", "period", "none"])
def test_pickle_deepcopy_and_checkpoint_keep_the_whole_state(backend, kind, tmp_path):
    st = _filled(kind, backend)
    path = tmp_path / "st.ckpt"
    st.save(path, key=b"k")
    for back in (pickle.loads(pickle.dumps(st)), copy.deepcopy(st), StreamingThors.load(path, key=b"k")):
        assert held_events(back) == held_events(st)
        assert back.get() == st.get() and back.cost == st.cost and back.n_updates == st.n_updates
        assert list(back._late) == list(st._late) and len(back._ledger) == len(st._ledger)
        if st._queue is not None:
            assert [a.tolist() for a in back._queue.arrays()] == [a.tolist() for a in st._queue.arrays()]
        # and it goes on the same way
        t = 500.0 if kind == "period" else None
        back.update(0.3, 1, 2.0, t=t)
        st2 = copy.deepcopy(st)
        st2.update(0.3, 1, 2.0, t=t)
        assert held_events(back) == held_events(st2) and back.get() == st2.get()


@pytest.mark.parametrize("backend", BACKENDS)
def test_merge_is_the_multiset_union(backend):
    shards = [_filled(k, backend) for k in ("window", "period", "none")]
    hub = StreamingThors.merged(shards, backend=backend)
    events = [(s, y, 1.0) for sh in shards for (s, y, n) in held_events(sh) for _ in range(int(n))]
    assert len(hub) == len(events)
    rows = {}
    for sh in shards:
        for s, y, n in held_events(sh):
            rows[(s, y)] = rows.get((s, y), 0.0) + n
    assert held_events(hub) == sorted((s, y, n) for (s, y), n in rows.items())
    k, w1, w0, _, _ = hub.held()
    expect = brute_force([(s, 1, a) for s, a in zip(k.tolist(), w1.tolist()) if a]
                         + [(s, 0, b) for s, b in zip(k.tolist(), w0.tolist()) if b], 5, 1)
    assert hub.get() == expect[0]
    with pytest.raises(ValueError, match="different"):
        hub.merge(StreamingThors(fn_cost=4, fp_cost=1))
    with pytest.raises(ValueError, match="window"):
        shards[0].merge(hub)
    with pytest.raises(TypeError):
        hub.merge("not a summary")


# ---------------------------------------------------------------- one rule for labels and times
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("label", [1 + 0j, np.complex128(1), "1", 2, None])
def test_update_and_revert_refuse_the_labels_update_many_refuses(backend, label):
    st = StreamingThors(fn_cost=1, fp_cost=1, backend=backend)
    with pytest.raises(ValueError, match=r"ys must hold only|label must be"):
        st.update_many([0.5], [label])
    with pytest.raises(ValueError, match="label must be"):
        st.update(0.5, label)
    st.update(0.5, 1)
    with pytest.raises(ValueError, match="label must be"):
        st.revert(0.5, label)
    assert len(st) == 1 and st.n_updates == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_times_are_taken_by_update_and_update_many_alike(backend):
    t64 = np.array(["2024-01-01T00:00:00", "2024-01-01T00:00:30", "2024-01-01T00:01:10"], dtype="datetime64[ns]")
    a = StreamingThors(fn_cost=2, fp_cost=1, period=dt.timedelta(minutes=1), backend=backend)
    b = StreamingThors(fn_cost=2, fp_cost=1, period=60, backend=backend)
    a.update_many([0.1, 0.5, 0.9], [0, 1, 0], ts=t64)
    for s, y, t in zip([0.1, 0.5, 0.9], [0, 1, 0], t64):
        b.update(s, y, t=t)  # np.datetime64 scalars
    assert held_events(a) == held_events(b) == [(0.5, 1, 1.0), (0.9, 0, 1.0)]
    # without a period the times are validated by the same rule, not used
    c = StreamingThors(fn_cost=2, fp_cost=1, backend=backend)
    c.update_many([0.1, 0.5], [0, 1], ts=t64[:2])
    with pytest.raises(TypeError, match="ts must be"):
        c.update_many([0.1, 0.5], [0, 1], ts=["2024-01-01", "2024-01-02"])
    with pytest.raises(ValueError, match="ts has length"):
        c.update_many([0.1, 0.5], [0, 1], ts=t64)
    assert len(c) == 2
