"""Core v2: history independence, worst-case shape, no crash, thread safety (issue 12/13).

The property: a summary's threshold, cost and held rows are a function of the events
it holds. Checked against (a) the exact oracle whenever every per-score sum, class
total and prefix sum is exactly representable in float64, and (b) a fresh summary fed
only the held events, for both backends, across random interleavings of update,
update_many, revert, merge and window expiry.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_force

from thors_stream import StreamingThors, _backend
from thors_stream._backend import available_backends

HAS_C = "c" in available_backends()
BACKENDS = [{"backend": "python", "load": 4}, {"backend": "python", "load": 7}] + (
    [{"backend": "c"}] if HAS_C else []
)
needs_c = pytest.mark.skipif(not HAS_C, reason="compiled core not built")

# heavy ties (three scores) or a spread
SCORES = st.sampled_from([0.0, 0.5, 1.0]) | st.integers(-40, 40).map(lambda k: k / 16)
# weights whose sums can be wide (2**30 + 2**-30 needs 61 bits) while the held ones are exact
WIDE = st.sampled_from([1.0, 3.0, 0.5, 0.25]) | st.sampled_from([2.0**30, 2.0**-30, 2.0**-20, 2.0**20, 2.0**40])
LABELS = st.sampled_from([0, 1])
EVENT = st.tuples(SCORES, LABELS, WIDE)


def exact_domain(held, fn, fp):
    """Every per-score class sum, class total and sum of VAL over consecutive scores (so
    every prefix sum) exactly representable: the documented exactness condition (the tree
    adds consecutive scores' values in blocks, then joins the blocks)."""

    def rep(x: Fraction) -> bool:
        return Fraction(float(x)) == x

    per: dict[float, list[Fraction]] = {}
    for s, y, w in held:
        per.setdefault(s, [Fraction(0), Fraction(0)])[y] += Fraction(w)
    tot = [sum(v[1] for v in per.values()), sum(v[0] for v in per.values())]
    if not all(rep(x) for v in per.values() for x in v) or not all(rep(x) for x in tot):
        return False
    vals = []
    for s in sorted(per):
        w0, w1 = per[s]
        if not (rep(Fraction(fn) * w1) and rep(Fraction(fp) * w0)):
            return False
        vals.append(Fraction(fn) * w1 - Fraction(fp) * w0)
    for i in range(len(vals)):
        acc = Fraction(0)
        for v in vals[i:]:
            acc += v
            if not rep(acc):
                return False
    return rep(Fraction(fp) * tot[1])


def rows_of(stt):
    return [a.tolist() for a in stt.held()]


def fresh_from(held, fn, fp, cfg):
    f = StreamingThors(fn_cost=fn, fp_cost=fp, **cfg)
    for s, y, w in held:
        f.update(s, y, w)
    return f


def check_state(stt, held, fn, fp, cfg):
    assert len(stt) == len(held)
    if not held:
        assert stt.get() is None and stt.cost is None
        return
    fresh = fresh_from(held, fn, fp, cfg)
    if exact_domain(held, fn, fp):
        thr, best, _ = brute_force(held, fn, fp)
        assert stt.get() == thr
        assert Fraction(stt.cost) == best
        assert rows_of(stt) == rows_of(fresh)
        assert stt.get() == fresh.get() and stt.cost == fresh.cost
    if isinstance(stt._tree, _backend.PyCore):
        return
    stt._tree.check()


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("update"), EVENT),
        st.tuples(st.just("many"), st.lists(EVENT, min_size=1, max_size=12)),
        st.tuples(st.just("revert"), st.integers(0, 10**6)),
        st.tuples(st.just("merge"), st.lists(EVENT, max_size=6)),
    ),
    max_size=40,
)


@pytest.mark.parametrize("cfg", BACKENDS)
@given(seq=OPS, fn=st.sampled_from([1.0, 3.0, 10.0]), fp=st.sampled_from([1.0, 2.0]),
       window=st.one_of(st.none(), st.integers(1, 9)))
def test_history_independence_random_interleavings(cfg, seq, fn, fp, window):
    """After every step the summary answers as the oracle and as a fresh summary of the held events."""
    stt = StreamingThors(fn_cost=fn, fp_cost=fp, window=window, **cfg)
    # the last `window` updates, oldest first, as [event, live]: a reverted update keeps its
    # place in the count window (the README: "window=N keeps the last N updates")
    queue: list[list] = []
    for op, arg in seq:
        if op == "update":
            stt.update(*arg)
            queue.append([arg, True])
        elif op == "many":
            s, y, w = zip(*arg)
            stt.update_many(list(s), list(y), list(w))
            queue.extend([e, True] for e in arg)
        elif op == "revert":
            live = [q for q in queue if q[1]]
            if live:
                e = live[arg % len(live)][0]
                stt.revert(*e)
                next(q for q in queue if q[1] and q[0] == e)[1] = False  # the oldest identical copy
        elif op == "merge" and window is None and arg:
            other = StreamingThors(fn_cost=fn, fp_cost=fp, window=50, **cfg)
            for e in arg:
                other.update(*e)
            stt.merge(other)
            queue.extend([e, True] for e in arg)
        if window is not None:
            del queue[: max(0, len(queue) - window)]
        check_state(stt, [q[0] for q in queue if q[1]], fn, fp, cfg)


@pytest.mark.parametrize("cfg", BACKENDS)
def test_regression_merged_low_parts_reach_the_class_totals(cfg):
    """Found by hypothesis (numpy backend): a merge brings a per-score sum that needs a
    double-double (2**30 + 3 + 2**-30); its low part reached the score's row but not the
    class total, so after the 2**30 event was reverted the cost read -2**-30 instead of 0."""
    stt = StreamingThors(fn_cost=1, fp_cost=1, **cfg)
    stt.update(0.0, 0, 1.0)
    other = StreamingThors(fn_cost=1, fp_cost=1, **cfg)
    for w in (1.0, 2.0**-30, 2.0**30, 1.0, 1.0):
        other.update(0.0, 0, w)
    stt.merge(other)
    stt.revert(0.0, 0, 2.0**30)
    assert stt.cost == 0.0
    assert stt.held()[2].tolist() == [4.0 + 2.0**-30]
    assert stt._tree.totals()[1] == 4.0 + 2.0**-30


@pytest.mark.parametrize("cfg", BACKENDS)
def test_regression_window2_departed_wide_sum(cfg):
    """Issue 12: weights 2**30 then 2**-30 at one score, then 2**-32 at another, window 2.

    The departed 2**30 must leave no rounding behind: w1 = 2**-30 is held at 0.9, and the
    answer is the oracle's on the two held events."""
    stt = StreamingThors(fn_cost=1, fp_cost=1, window=2, **cfg)
    stt.update(0.9, 1, 2.0**30)
    stt.update(0.9, 1, 2.0**-30)
    stt.update(0.5, 0, 2.0**-32)
    held = [(0.9, 1, 2.0**-30), (0.5, 0, 2.0**-32)]
    keys, w1, _, c1, _ = rows_of(stt)
    assert keys == [0.5, 0.9] and w1 == [0.0, 2.0**-30] and c1 == [0.0, 1.0]
    thr, best, _ = brute_force(held, 1, 1)
    assert stt.get() == thr
    assert Fraction(stt.cost) == best


@pytest.mark.parametrize("cfg", BACKENDS)
def test_regression_departed_amount_leaves_no_error(cfg):
    """Issue 12: amounts 1e6 and 0.01 at one score; after the 1e6 leaves, the held rows are
    exactly those of a fresh summary and the threshold is optimal within the documented
    margin computed on the held events alone."""
    fn, fp = 1.0, 1.0
    stt = StreamingThors(fn_cost=fn, fp_cost=fp, window=4, **cfg)
    events = [(0.5, 1, 1e6), (0.5, 1, 0.01), (0.7, 0, 0.01), (0.3, 0, 0.02), (0.6, 1, 0.03)]
    for e in events:
        stt.update(*e)
    held = events[1:]
    fresh = fresh_from(held, fn, fp, cfg)
    assert rows_of(stt) == rows_of(fresh)
    assert rows_of(stt)[1][1] == 0.01  # w1 at 0.5: exactly the held amount
    _, best, costs = brute_force(held, fn, fp)
    w_tot = sum(Fraction(w) for _, _, w in held)
    margin = 4 * len(held) * Fraction(2.0**-52) * w_tot
    assert costs[stt.get()] <= best + margin
    assert abs(Fraction(stt.cost) - best) <= margin


@needs_c
@pytest.mark.parametrize("pattern", ["ascending", "descending", "zigzag", "clustered"])
def test_adversarial_orders_keep_the_tree_shallow(pattern):
    """Deterministic balance: whatever the order of the scores, every leaf is at one depth,
    nodes are at least a third full (two edge leaves excepted) and the height is logarithmic."""
    n = 60_000
    k = np.arange(n, dtype=np.float64)
    s = {"ascending": k, "descending": -k, "zigzag": np.where(k % 2 == 0, k, -k),
         "clustered": np.sin(k) * 1e-9 + (k % 7)}[pattern]
    stt = StreamingThors(fn_cost=3, fp_cost=1, window=20_000)
    y = (k % 5 == 0).astype(int)
    for a, b in zip(s.tolist(), y.tolist()):
        stt.update(a, b)
    core = stt._tree
    core.check()
    info = core.stats()
    assert info["height"] <= math.ceil(math.log(max(info["n_keys"], 2) / 10, 10)) + 2
    # the threshold is the oracle's on the held events (a fresh batch computation)
    held_s, held_y = s[-20_000:], y[-20_000:]
    from thors_stream import thors_threshold

    assert stt.get() == thors_threshold(held_s, held_y, fn_cost=3, fp_cost=1).threshold


@needs_c
def test_deep_walks_in_a_small_stack_thread():
    """No walk recurses with n: 200k keys handled in a thread with a 1 MiB stack (a crash
    here would kill the test process)."""
    out: dict[str, object] = {}

    def work():
        stt = StreamingThors(fn_cost=5, fp_cost=1)
        k = np.arange(200_000, dtype=np.float64)
        stt.update_many(k, (k % 3 == 0).astype(int))
        for a in range(1, 5001):
            stt.update(float(-a), a % 2)
        hub = StreamingThors.merged([stt])
        out["rows"] = len(hub.held()[0])
        out["result"] = hub.result()
        out["get"] = hub.get()
        stt._tree.check()

    old = threading.stack_size(1 << 20)
    try:
        th = threading.Thread(target=work)
        th.start()
        th.join()
    finally:
        threading.stack_size(old)
    assert out["rows"] == 205_000 and out["result"] is not None


@needs_c
def test_memory_per_distinct_score_is_bounded():
    """The tree's own memory stays under 64 bytes per distinct score on a sliding window
    (the expiry queue adds 17 bytes per held event)."""
    rng = np.random.default_rng(1)
    n = 50_000
    s = rng.random(3 * n)
    stt = StreamingThors(fn_cost=10, fp_cost=1, window=n)
    for a, b in zip(s.tolist(), (rng.random(3 * n) < 0.05).tolist()):
        stt.update(a, b)
    info = stt._tree.stats()
    tree = (info["leaf_slots"] * info["leaf_bytes"] + info["inner_slots"] * info["inner_bytes"]
            + info["lo_slots"] * info["lo_bytes"])
    assert tree / info["n_keys"] <= 64
    assert info["ring_capacity"] <= n + 1


@needs_c
def test_bulk_load_leaves_room_for_a_sliding_window():
    """A bulk load builds leaves 3/4 full (24 of 32 keys), about the fill a window under
    random inserts and expiries settles at, so the batches after it split few leaves; the
    answer is the oracle's after the load and after the batches."""
    from thors_stream import thors_threshold

    rng = np.random.default_rng(5)
    n, batch = 48_000, 4_000
    s, y = rng.random(n + 5 * batch), rng.random(n + 5 * batch) < 0.05
    stt = StreamingThors(fn_cost=10, fp_cost=1, window=n)
    stt.update_many(s[:n], y[:n])
    info = stt._tree.stats()
    assert info["leaves"] == math.ceil(n / 24)
    assert stt.get() == thors_threshold(s[:n], y[:n], fn_cost=10, fp_cost=1).threshold
    for lo in range(n, n + 5 * batch, batch):
        stt.update_many(s[lo : lo + batch], y[lo : lo + batch])
    stt._tree.check()
    assert stt._tree.stats()["leaves"] < math.ceil(n / 24) * 1.1  # few leaves split
    assert stt.get() == thors_threshold(s[-n:], y[-n:], fn_cost=10, fp_cost=1).threshold


def _update_from_another_thread(stt, score, y, w=1.0):
    """Start ``stt.update`` in a thread and give it half a second: whether it finished (an
    update that ran beside the caller, as the compiled fast path does when it is not told
    that the object is busy). The thread is returned to be joined later."""
    th = threading.Thread(target=stt.update, args=(score, y, w))
    th.start()
    th.join(0.5)
    return th, not th.is_alive()


@pytest.mark.parametrize("cfg", BACKENDS)
def test_pickle_snapshot_is_not_interleaved_with_a_fast_update(cfg, monkeypatch):
    """Found by an adversarial review: __getstate__ took the lock without telling the
    compiled core, so a fast-path update from another thread landed between the reads of
    the tree and of the queue; the copy held one window of keys and another of queued
    events, and its next update raised KeyError. Now an update from another thread waits."""
    stt = StreamingThors(fn_cost=4, fp_cost=1, window=3, **cfg)
    stt.update_many([0.1, 0.2, 0.3], [0, 1, 0])
    ran = []
    original = type(stt)._core_arrays

    def snapshot_with_a_concurrent_update(self):
        rows = original(self)
        th, finished = _update_from_another_thread(self, 0.9, 1, 2.0)
        ran.append((th, finished))
        return rows

    monkeypatch.setattr(type(stt), "_core_arrays", snapshot_with_a_concurrent_update)
    state = stt.__getstate__()
    monkeypatch.undo()
    th, finished = ran[0]
    th.join()
    assert not finished  # it waited for the snapshot
    copy = StreamingThors.__new__(StreamingThors)
    copy.__setstate__(state)
    copy.update(0.5, 0)  # expires 0.1, which its tree holds
    fresh = StreamingThors(fn_cost=4, fp_cost=1, window=3)
    fresh.update_many([0.2, 0.3, 0.5], [1, 0, 0])
    assert all(np.array_equal(a, b) for a, b in zip(copy.held(), fresh.held())) and copy.get() == fresh.get()
    assert len(stt) == 3 and 0.9 in stt.held()[0].tolist()  # the waiting update went in after


@pytest.mark.parametrize("cfg", BACKENDS)
def test_merge_snapshot_is_not_interleaved_with_a_fast_update(cfg, monkeypatch):
    """Found by the same review: merge read the other summary's tree, then its queue (for the
    weight ledger), under its lock but with its core not told: an update of a weighted
    event between the two left the union's ledger and tree apart (a revert of that weight
    was accepted for an event weighing another, and save() wrote a file load() refused)."""
    import thors_stream._stream_store as store

    other = StreamingThors(fn_cost=4, fp_cost=1, window=3, **cfg)
    other.update_many([0.1, 0.2, 0.3], [0, 1, 0], [2.0, 2.0, 2.0])
    ran = []
    original = store.export_lo

    def export_with_a_concurrent_update(tree):
        th, finished = _update_from_another_thread(other, 0.9, 1, 2.0)
        ran.append((th, finished))
        return original(tree)

    monkeypatch.setattr(store, "export_lo", export_with_a_concurrent_update)
    hub = StreamingThors(fn_cost=4, fp_cost=1, **cfg)
    hub.merge(other)
    monkeypatch.undo()
    th, finished = ran[0]
    th.join()
    assert not finished
    with pytest.raises(KeyError):
        hub.revert(0.2, 1, 1.0)  # the held event at 0.2 weighs 2.0
    hub.revert(0.2, 1, 2.0)
    assert len(hub) == 2


@pytest.mark.parametrize("cfg", BACKENDS)
def test_two_threads_on_one_summary(cfg):
    """Issue 13: concurrent update / update_many / revert / get on one object keep it
    consistent: the window holds exactly its size, and the held rows are those of the
    events in the queue."""
    stt = StreamingThors(fn_cost=4, fp_cost=1, window=100, **cfg)
    errors: list[BaseException] = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(1500):
                r = rng.random()
                if r < 0.6:
                    stt.update(float(rng.integers(0, 50)) / 10, int(rng.random() < 0.3))
                elif r < 0.8:
                    m = int(rng.integers(1, 20))
                    stt.update_many(rng.integers(0, 50, m) / 10, (rng.random(m) < 0.3).astype(int))
                else:
                    stt.get()
                    _ = stt.cost
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(stt) == 100
    s, y, w = stt._queue.arrays()[:3]
    live = y != 2
    ref = StreamingThors(fn_cost=4, fp_cost=1)
    ref.update_many(s[live], y[live], w[live])
    assert rows_of(stt) == rows_of(ref)
    assert stt.get() == ref.get()


def test_revert_without_window_refuses_unheld_weight():
    """Issue 13: two weight-1 events at one score do not hold one of weight 0.25."""
    for cfg in BACKENDS:
        stt = StreamingThors(fn_cost=2, fp_cost=1, **cfg)
        stt.update(0.5, 1)
        stt.update(0.5, 1)
        before = rows_of(stt)
        with pytest.raises(KeyError, match=r"weight 0\.25"):
            stt.revert(0.5, 1, 0.25)
        assert rows_of(stt) == before
        stt.update(0.5, 1, 0.25)
        stt.revert(0.5, 1, 0.25)  # now it is held
        stt.revert(0.5, 1)
        with pytest.raises(KeyError):
            stt.revert(0.5, 1, 3.0)
        assert len(stt) == 1


def test_period_revert_removes_the_oldest_identical_copy():
    """Issue 13: in a period window, revert takes the identical event with the earliest time,
    also when that copy is a late one."""
    for cfg in BACKENDS:
        stt = StreamingThors(fn_cost=2, fp_cost=1, period=100, **cfg)
        stt.update(0.5, 1, 1.0, t=50.0)
        stt.update(0.5, 1, 1.0, t=10.0)  # late: older than the queued copy
        stt.revert(0.5, 1, 1.0)
        assert [e[0] for e in stt._late] == []  # the late copy (t=10) left
        stt.update(0.9, 0, t=140.0)  # t=50 is still held, would expire after 150
        assert len(stt) == 2


def test_missing_compiled_core_warns_once(monkeypatch):
    """Issue 12: without the compiled core, say so once (naming how to get it)."""
    monkeypatch.setattr(_backend, "CTree", None)
    monkeypatch.setattr(_backend, "_warned", False)
    monkeypatch.delenv("THORS_STREAM_BACKEND", raising=False)
    with pytest.warns(RuntimeWarning, match="C compiler"):
        StreamingThors(fn_cost=1, fp_cost=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        StreamingThors(fn_cost=1, fp_cost=1)  # once only


@needs_c
@settings(max_examples=60)
@given(st.lists(st.tuples(st.floats(-1e300, 1e300, allow_nan=False), LABELS,
                          st.floats(1e-300, 1e300)), min_size=1, max_size=40))
def test_edges_of_float64_never_crash(evs):
    """Scores and weights at the edges of float64: the answer is a held score or -inf, never
    a crash; invariants hold."""
    stt = StreamingThors(fn_cost=1, fp_cost=1, window=16)
    for s, y, w in evs:
        try:
            stt.update(s, y, w)
        except ValueError:
            pass  # refused (e.g. weight * cost beyond the documented limit): state unchanged
    thr = stt.get()
    assert thr is None or thr == -math.inf or thr in set(stt.held()[0].tolist())
    stt._tree.check()


@pytest.mark.parametrize("cfg", BACKENDS)
@given(events=st.lists(st.tuples(st.sampled_from([0.0, 1.0]), LABELS,
                                 st.sampled_from([1.0, 2.0**30, 2.0**-30, 2.0**40, 2.0**-12])), max_size=30),
       window=st.integers(1, 4), reverts=st.lists(st.integers(0, 100), max_size=3))
def test_history_independence_wide_transients(cfg, events, window, reverts):
    """Dense in the case that breaks running float sums: a large weight shares a score with
    small ones and leaves; the held small ones must be exactly what is left."""
    stt = StreamingThors(fn_cost=1, fp_cost=1, window=window, **cfg)
    queue: list[list] = []
    for i, e in enumerate(events):
        stt.update(*e)
        queue.append([e, True])
        del queue[: max(0, len(queue) - window)]
        if i in reverts:
            live = [q for q in queue if q[1]]
            if live:
                stt.revert(*live[0][0])
                live[0][1] = False
        check_state(stt, [q[0] for q in queue if q[1]], 1.0, 1.0, cfg)


@pytest.mark.parametrize("cfg", BACKENDS)
@pytest.mark.parametrize("window", [None, 4])
def test_checkpoint_of_drifted_sums_loads_with_exact_weights(tmp_path, cfg, window):
    """Outside the exactness condition (weights at one score spanning 10^60) the running
    sums may drift; the checkpoint writes the exact sums of the held events, so it loads
    (validated strictly) and holds exactly what the events add up to."""
    stt = StreamingThors(fn_cost=1, fp_cost=1, window=window, **cfg)
    events = [(0.5, 1, 1e30), (0.5, 1, 1.0), (0.5, 1, 1e-30), (0.2, 0, 2.0)]
    for e in events:
        stt.update(*e)
    stt.revert(0.5, 1, 1e30)
    held = [e for e in events if e[2] != 1e30]
    path = tmp_path / "drift.ckpt"
    stt.save(path, key=b"secret")
    back = StreamingThors.load(path, key=b"secret")
    keys, w1 = back.held()[0].tolist(), back.held()[1].tolist()
    want = {s: math.fsum(w for t, y, w in held if t == s and y == 1) for s, _, _ in held}
    assert {k: v for k, v in zip(keys, w1)} == want
    assert len(back) == len(held)


@pytest.mark.parametrize("load", [3, 65537, 10**9, 2.5, True, "64"])
def test_load_out_of_range_is_refused_at_construction(load):
    """A block size the checkpoint reader would refuse is refused up front."""
    with pytest.raises(ValueError, match=r"load must be an integer in 4\.\.65536"):
        StreamingThors(fn_cost=1, fp_cost=1, load=load)


@pytest.mark.parametrize("t", [b"1", bytearray(b"1"), "1", np.str_("1"), 10**400, float("inf"), True])
def test_times_follow_one_rule(t):
    """Issue 13: t=b"1" was accepted by update where scores refuse bytes; a huge int raised
    OverflowError. Now bytes/strings are TypeError, non-finite or huge values ValueError, and
    nothing changes."""
    stt = StreamingThors(fn_cost=1, fp_cost=1, period=100)
    stt.update(0.5, 1, t=10.0)
    before = (rows_of(stt), stt.n_updates)
    with pytest.raises((TypeError, ValueError)) as info:
        stt.update(0.6, 0, t=t)
    assert type(info.value) is (TypeError if isinstance(t, (bytes, bytearray, str, bool)) else ValueError)
    with pytest.raises((TypeError, ValueError)):
        stt.update_many([0.6], [0], ts=[t])
    unwindowed = StreamingThors(fn_cost=1, fp_cost=1)
    with pytest.raises((TypeError, ValueError)):
        unwindowed.update_many([0.6], [0], ts=[t])  # validated even without a period
    assert len(unwindowed) == 0
    assert (rows_of(stt), stt.n_updates) == before


def test_naive_datetimes_are_utc_whatever_tz():
    """A naive datetime is read as UTC, so a time window does not depend on TZ."""
    import subprocess
    import sys

    code = ("import datetime as dt; from thors_stream import StreamingThors; "
            "st = StreamingThors(fn_cost=1, fp_cost=1, period=dt.timedelta(hours=1)); "
            "st.update(0.5, 1, t=dt.datetime(2026, 3, 29, 0, 30)); "
            "st.update(0.7, 0, t=dt.datetime(2026, 3, 29, 1, 29)); "
            "print(len(st), st._last_t)")
    outs = {tz: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env={**__import__("os").environ, "TZ": tz}, check=True).stdout
            for tz in ("UTC", "Europe/Berlin", "America/New_York")}
    assert len(set(outs.values())) == 1, outs
    assert outs["UTC"].split()[1] == str(dt.datetime(2026, 3, 29, 1, 29, tzinfo=dt.timezone.utc).timestamp())


BAD_SCORES = [math.nan, math.inf, -math.inf, "0.5", b"0.5", None, [0.5], True, complex(1, 1)]
BAD_LABELS = [2, -1, "1", b"1", 0.5, None, [1], math.nan]
BAD_WEIGHTS = [0.0, -1.0, math.nan, math.inf, "1", b"1", None, True, [1.0]]


def snapshot(stt):
    q = stt._queue.arrays() if stt._queue is not None else ()
    return (len(stt), stt.n_updates, rows_of(stt), [a.tolist() for a in q], stt.get())


@pytest.mark.parametrize("cfg", BACKENDS)
@pytest.mark.parametrize("window", [None, 5])
@settings(max_examples=40)
@given(calls=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20), SCORES, LABELS, st.sampled_from([1.0, 2.0])),
                      max_size=40))
def test_hostile_calls_through_the_fast_paths_change_nothing(cfg, window, calls):
    """Random mixes of valid and invalid calls (through the compiled fast paths and their
    Python fallbacks): an invalid call raises ValueError/TypeError/KeyError and leaves every
    byte of state as it was; valid calls keep matching the oracle."""
    stt = StreamingThors(fn_cost=3, fp_cost=1, window=window, **cfg)
    queue: list[list] = []
    for kind, k, s, y, w in calls:
        before = snapshot(stt)
        bad = None
        if kind == 0:
            bad = ("update", (BAD_SCORES[k % len(BAD_SCORES)], y, w))
        elif kind == 1:
            bad = ("update", (s, BAD_LABELS[k % len(BAD_LABELS)], w))
        elif kind == 2:
            bad = ("update", (s, y, BAD_WEIGHTS[k % len(BAD_WEIGHTS)]))
        if bad is not None:
            with pytest.raises((ValueError, TypeError, KeyError)):
                getattr(stt, bad[0])(*bad[1])
            assert snapshot(stt) == before
            with pytest.raises((ValueError, TypeError, KeyError)):
                stt.revert(s + 1000.0, y, w)  # never held
            assert snapshot(stt) == before
            continue
        stt.update(s, y, w)
        queue.append([(s, y, w), True])
        if window is not None:
            del queue[: max(0, len(queue) - window)]
        held = [q[0] for q in queue if q[1]]
        thr, best, _ = brute_force(held, 3, 1)
        assert stt.get() == thr and Fraction(stt.cost) == best


def test_reverts_in_and_out_of_arrival_order():
    """Reverts mostly oldest-first (river.utils.Rolling's order), some of a random held
    event, and unknown reverts (refused): the answer is exactly a fresh summary's of what is
    held. (Until 2026-11-25 the compiled core had a "revert predictor" here, a queue of
    keys meant to prefetch the next Rolling-order revert; it never predicted one, see the
    changelog, and is gone.)"""
    rng = np.random.default_rng(11)
    s = rng.integers(0, 40, 6000) / 8.0  # heavy ties
    y = rng.random(6000) < 0.3
    st_ = StreamingThors(fn_cost=4, fp_cost=1)
    held: list[tuple[float, int]] = []
    for k in range(6000):
        st_.update(float(s[k]), int(y[k]))
        held.append((float(s[k]), int(y[k])))
        if k >= 500:
            # mostly oldest-first (the predicted order), sometimes a random held event
            j = 0 if rng.random() < 0.8 else int(rng.integers(len(held)))
            st_.revert(*held.pop(j))
        if k % 700 == 0:
            with pytest.raises(KeyError):
                st_.revert(99.0, 1)  # not held: refused, nothing changes
        if k % 1000 == 999:
            fresh = StreamingThors(fn_cost=4, fp_cost=1)
            for a, b in held:
                fresh.update(a, b)
            assert st_.get() == fresh.get() == brute_force([(a, b, 1) for a, b in held], 4, 1)[0]
            assert st_.cost == fresh.cost
