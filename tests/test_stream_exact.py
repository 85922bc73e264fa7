"""StreamingThors against the brute-force oracle on random operation sequences."""

import datetime as dt
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import brute_force
from strategies import costs, event, tied_event

from thors_stream import StreamingThors, thors_threshold
from thors_stream._backend import available_backends

CONFIGS = [{"backend": "python", "load": k} for k in (4, 5, 8, 512)] + [
    {"backend": b} for b in available_backends() if b != "python"
]
LOADS = st.sampled_from(CONFIGS)


def assert_matches(stt, held, fn, fp, prior=None):
    assert len(stt) == len(held)
    if not held:
        assert stt.get() is None and stt.cost is None and stt.result() is None
        return
    thr, best, all_costs = brute_force(held, fn, fp, prior)
    got = stt.get()
    r = stt.result()
    if prior is None:
        assert got == thr
        assert Fraction(stt.cost) == best
        assert Fraction(r.cost) == best
    else:
        tol = Fraction(1e-9) * (abs(best) + max(all_costs.values()))
        assert all_costs[got] <= best + tol
        assert all(c >= all_costs[got] - tol for t, c in all_costs.items() if t < got)
    hs, hy, hw = zip(*held)
    ref = thors_threshold(hs, hy, sample_weight=hw, fn_cost=fn, fp_cost=fp, class_prior=prior)
    assert r.threshold == got
    assert (r.count0, r.count1) == (ref.count0, ref.count1)
    assert (r.n0, r.n1) == (ref.n0, ref.n1)
    if prior is None:
        assert r == ref


ops = st.lists(
    st.one_of(
        st.tuples(st.just("update"), st.one_of(event, tied_event)),
        st.tuples(st.just("revert"), st.integers(0, 10**6)),
        st.tuples(st.just("get"), st.just(None)),
    ),
    max_size=120,
)


@given(ops, costs, costs, st.one_of(st.none(), st.integers(1, 12)), LOADS)
def test_random_updates_reverts_windows(seq, fn, fp, window, load):
    """Model: a queue of [event, live] in update order; a count window drops the
    oldest queue entry once more than `window` updates are queued; revert cancels
    the oldest live equal event."""
    stt = StreamingThors(fn_cost=fn, fp_cost=fp, window=window, **load)
    queue = []
    for op, arg in seq:
        held = [e for e, live in queue if live]
        if op == "update":
            stt.update(*arg)
            queue.append([(arg[0], int(arg[1]), arg[2]), True])
            if window is not None and len(queue) > window:
                queue.pop(0)
        elif op == "revert" and held:
            e = held[arg % len(held)]
            stt.revert(*e)
            next(q for q in queue if q[1] and q[0] == e)[1] = False
            if window is None:
                queue = [q for q in queue if q[1]]
        else:
            assert_matches(stt, held, fn, fp)
    assert_matches(stt, [e for e, live in queue if live], fn, fp)


@given(st.lists(st.one_of(event, tied_event), max_size=200), costs, costs, st.integers(1, 30), LOADS)
def test_count_window_is_last_n(evs, fn, fp, window, load):
    stt = StreamingThors(fn_cost=fn, fp_cost=fp, window=window, **load)
    for i, (s, y, w) in enumerate(evs):
        stt.update(s, y, w)
        held = [(a, int(b), c) for a, b, c in evs[max(0, i + 1 - window) : i + 1]]
        if i % 7 == 0 or i == len(evs) - 1:
            assert_matches(stt, held, fn, fp)


@given(
    st.lists(st.tuples(st.one_of(event, tied_event), st.integers(0, 3)), max_size=80),
    costs,
    costs,
    st.integers(1, 10),
    LOADS,
)
def test_period_window_keeps_recent_events(evs, fn, fp, period, cfg):
    stt = StreamingThors(fn_cost=fn, fp_cost=fp, period=period, **cfg)
    t = 0
    hist = []
    for (s, y, w), gap in evs:
        t += gap
        stt.update(s, y, w, t=t)
        hist.append((t, (s, int(y), w)))
        held = [e for ti, e in hist if ti > t - period]
        assert_matches(stt, held, fn, fp)


@given(
    st.lists(st.tuples(st.one_of(event, tied_event), st.integers(-4, 3)), max_size=80),
    costs,
    costs,
    st.integers(1, 6),
    st.booleans(),
    LOADS,
)
def test_period_with_late_events(evs, fn, fp, period, batched, cfg):
    """Labels may arrive out of time order: held = events with t > newest t - period."""
    stt = StreamingThors(fn_cost=fn, fp_cost=fp, period=period, **cfg)
    clock, newest, hist, batch = 0, -math.inf, [], []
    for (s, y, w), jump in evs:
        clock += max(jump, 0)
        t = clock + min(jump, 0)  # negative jumps: a late event, before the clock
        hist.append((t, (s, int(y), w)))
        newest = max(newest, t)
        if batched:
            batch.append((s, y, w, t))
            continue
        stt.update(s, y, w, t=t)
        assert_matches(stt, [e for ti, e in hist if ti > newest - period], fn, fp)
    if batched and batch:
        s, y, w, t = zip(*batch)
        stt.update_many(s, y, w, ts=t)
        assert_matches(stt, [e for ti, e in hist if ti > newest - period], fn, fp)
    held = [e for ti, e in hist if ti > newest - period]
    for e in held[::3]:  # held events, late ones included, can be reverted
        stt.revert(*e)
    remaining = list(held)
    for e in held[::3]:
        remaining.remove(e)
    assert_matches(stt, remaining, fn, fp)


@given(st.lists(st.one_of(event, tied_event), max_size=60), costs, costs, st.floats(0.05, 0.95), LOADS)
def test_class_prior_stream(evs, fn, fp, prior, cfg):
    stt = StreamingThors(fn_cost=fn, fp_cost=fp, class_prior=prior, **cfg)
    held = []
    for s, y, w in evs:
        stt.update(s, y, w)
        held.append((s, int(y), w))
        assert_matches(stt, held, fn, fp, prior)


@given(
    st.lists(st.lists(st.one_of(event, tied_event), max_size=40), max_size=6),
    costs,
    costs,
    st.one_of(st.none(), st.integers(1, 25)),
    LOADS,
)
def test_update_many_equals_sequential_updates(batches, fn, fp, window, load):
    a = StreamingThors(fn_cost=fn, fp_cost=fp, window=window, **load)
    b = StreamingThors(fn_cost=fn, fp_cost=fp, window=window, **load)
    allev = []
    for batch in batches:
        if batch:
            s, y, w = zip(*batch)
            a.update_many(s, y, w)
        for e in batch:
            b.update(*e)
        allev += [(s, int(y), w) for s, y, w in batch]
        held = allev[-window:] if window else allev
        assert_matches(a, held, fn, fp)
        assert len(a) == len(b) and a.get() == b.get() and a.result() == b.result()


@given(st.lists(st.tuples(st.one_of(event, tied_event), st.integers(0, 2)), max_size=60), costs, costs, LOADS)
def test_update_many_with_period(evs, fn, fp, cfg):
    a = StreamingThors(fn_cost=fn, fp_cost=fp, period=3, **cfg)
    t, hist, ts = 0, [], []
    for (s, y, w), gap in evs:
        t += gap
        ts.append(t)
        hist.append((s, int(y), w))
    if hist:
        s, y, w = zip(*hist)
        a.update_many(s, y, w, ts=ts)
    held = [e for ti, e in zip(ts, hist) if ti > t - 3]
    assert_matches(a, held, fn, fp)


def test_river_rolling_and_time_rolling():
    from river import utils

    rng = np.random.default_rng(3)
    s = np.round(rng.random(400), 2).tolist()
    y = (rng.random(400) < 0.3).tolist()
    roll = utils.Rolling(StreamingThors, window_size=50, fn_cost=7, fp_cost=2)
    own = StreamingThors(fn_cost=7, fp_cost=2, window=50)
    for i, (a, b) in enumerate(zip(s, y)):
        roll.update(a, b)
        own.update(a, b)
        assert roll.get() == own.get()
        assert roll.obj.result() == own.result()
        if i % 50 == 0:
            ref = thors_threshold(s[max(0, i - 49) : i + 1], y[max(0, i - 49) : i + 1], fn_cost=7, fp_cost=2)
            assert ref.threshold == roll.get()
    troll = utils.TimeRolling(StreamingThors, period=dt.timedelta(seconds=30), fn_cost=7, fp_cost=2)
    towned = StreamingThors(fn_cost=7, fp_cost=2, period=dt.timedelta(seconds=30))
    t0 = dt.datetime(2026, 1, 1)
    for i, (a, b) in enumerate(zip(s, y)):
        t = t0 + dt.timedelta(seconds=i)
        troll.update(a, b, t=t)
        towned.update(a, b, t=t)
        assert troll.get() == towned.get()
        assert len(troll.obj) == len(towned) == min(i + 1, 30)


@pytest.mark.parametrize("cfg", CONFIGS)
def test_revert_everything_leaves_an_empty_object(cfg):
    stt = StreamingThors(fn_cost=3, fp_cost=1, **cfg)
    rng = np.random.default_rng(0)
    keys, labs, ws = rng.integers(0, 20, 300), rng.random(300) < 0.4, rng.integers(1, 4, 300)
    evs = [(float(a), int(b), float(c)) for a, b, c in zip(keys, labs, ws)]
    for e in evs:
        stt.update(*e)
    for e in reversed(evs):
        stt.revert(*e)
    assert len(stt) == 0 and stt.get() is None and stt._tree.n_keys == 0
    stt.update(0.5, 1)
    assert stt.get() == -math.inf


@pytest.mark.parametrize("backend", available_backends())
@pytest.mark.parametrize("w", [1.0, 2.5])
def test_large_stream_agrees_with_batch(w, backend):
    rng = np.random.default_rng(11)
    n, window = 30000, 5000
    s = np.where(rng.random(n) < 0.5, np.round(rng.random(n), 3), rng.random(n))
    y = rng.random(n) < 0.05
    stt = StreamingThors(fn_cost=20, fp_cost=1, window=window, load=64, backend=backend)
    for i in range(n):
        stt.update(float(s[i]), bool(y[i]), w)
        if i % 997 == 0 or i == n - 1:
            lo = max(0, i + 1 - window)
            wts = np.full(i + 1 - lo, w)
            ref = thors_threshold(s[lo : i + 1], y[lo : i + 1], fn_cost=20, fp_cost=1, sample_weight=wts)
            assert stt.result() == ref


@pytest.mark.parametrize("backend", available_backends())
@pytest.mark.parametrize("window", [None, 700, 5000])
def test_large_batches_match_batch_oracle(backend, window):
    """Batches big enough for the compiled backend's bulk merge path (m > 64, m * 64 > n),
    interleaved with single updates (which leave its arena unordered) and reverts."""
    rng = np.random.default_rng(5)
    st_ = StreamingThors(fn_cost=7, fp_cost=2, window=window, backend=backend)
    events = []
    for rnd in range(12):
        m = int(rng.integers(65, 3000))
        s = np.where(rng.random(m) < 0.5, np.round(rng.random(m), 2), rng.random(m))
        y = rng.random(m) < 0.2
        w = rng.integers(1, 5, m) / 4
        st_.update_many(s, y, w)
        events += list(zip(s.tolist(), y.tolist(), w.tolist()))
        for k in range(int(rng.integers(0, 50))):
            e = (float(rng.integers(0, 100)) / 100, bool(k % 3 == 0), 0.5)
            st_.update(*e)
            events.append(e)
        held = events[-window:] if window else events
        if window is None and rnd % 3 == 2:
            for e in held[::7]:
                st_.revert(*e)
            gone = set(range(0, len(held), 7))
            events = [e for i, e in enumerate(held) if i not in gone]
            held = events
        hs, hy, hw = zip(*held)
        ref = thors_threshold(hs, hy, fn_cost=7, fp_cost=2, sample_weight=hw)
        assert st_.result() == ref
        assert st_.get() == ref.threshold and st_.cost == ref.cost


@pytest.mark.parametrize("backend", available_backends())
def test_consecutive_bulk_merges_match_batch_oracle(backend):
    """Many bulk merges in a row (the compiled arena's block drifts up and is moved back to
    the start when it reaches the end, and grows), then single updates, then merges again."""
    rng = np.random.default_rng(8)
    window = 3000
    st_ = StreamingThors(fn_cost=5, fp_cost=1, window=window, backend=backend)
    events: list = []
    for rnd in range(45):
        m = int(rng.integers(65, 2500)) if rnd % 9 else 4000
        s = np.where(rng.random(m) < 0.3, np.round(rng.random(m), 2), rng.random(m))
        y = rng.random(m) < 0.3
        st_.update_many(s, y)
        events += list(zip(s.tolist(), y.tolist()))
        if rnd == 30:
            for k in range(200):
                e = (float(rng.random()), bool(k % 4 == 0))
                st_.update(*e)
                events.append(e)
        held = events[-window:]
        hs, hy = zip(*held)
        ref = thors_threshold(hs, hy, fn_cost=5, fp_cost=1)
        assert st_.result() == ref, rnd
        assert len(st_) == len(held)
