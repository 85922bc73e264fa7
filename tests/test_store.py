"""The pending store and the decision loop on disk (thors_stream.store, thors_stream._keys)."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
import struct
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_force

from thors_stream import MarginThors, StreamingThors
from thors_stream._keys import db_key, decode_db_key, decode_key, encode_key
from thors_stream.margin import cost_margin
from thors_stream.segments import SegmentedStreamingThors
from thors_stream.selection import WindowSelector
from thors_stream.store import DecisionLoop, PendingStore, StoreLockedError

# ---------------------------------------------------------------- keys
scalar_keys = st.one_of(
    st.text(max_size=6), st.integers(-2**70, 2**70), st.booleans(), st.none(), st.binary(max_size=4),
    st.floats(allow_nan=False), st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5]),
)
keys = st.recursive(scalar_keys, lambda inner: st.tuples(inner, inner) | st.tuples(inner), max_leaves=5)


@settings(max_examples=60, deadline=None)
@given(keys, keys)
def test_a_key_comes_back_with_its_type_and_equal_keys_are_one_key(a, b):
    v, tagged = db_key(a)
    back = decode_db_key(v, tagged, "here")
    assert back == a and repr(back) == repr(a)  # the type too (1.0 stays a float, True a bool)
    assert decode_key(encode_key(a), "key", "here") == a
    if a == b:  # as in a dict: 1 == 1.0 == True
        assert db_key(b)[0] == v
    elif type(v) is type(db_key(b)[0]):
        assert db_key(b)[0] != v


@settings(max_examples=40, deadline=None)
@given(keys)
def test_the_tagged_encoding_is_the_river_checkpoint_one(k):
    from thors_stream.river import _encode_pending_key

    assert encode_key(k) == _encode_pending_key(k)


def test_a_nan_key_or_an_unkeyable_one_is_refused():
    with pytest.raises(ValueError, match="NaN key"):
        db_key(float("nan"))
    with pytest.raises(ValueError, match="NaN key"):
        db_key(("a", float("nan")))
    with pytest.raises(TypeError, match=r"got \[1\]"):
        db_key([1])


# ---------------------------------------------------------------- the store against a dict
def _reference_take(ref, key):
    return ref.pop(key, None)


@pytest.mark.parametrize("seed", range(3))
def test_the_store_behaves_as_a_dict_of_pending_decisions(tmp_path, seed):
    rng = random.Random(seed)
    pool = ["a", 1, 1.0, True, ("t", 2), (("t", 2.0),), b"x", 7, "b", None, -0.0, 2**70]
    ops = [(rng.choice(["put", "put", "take", "many", "commit"]), rng.choices(pool, k=rng.randint(1, 4)))
           for _ in range(60)]
    commit_every = rng.randint(1, 5)
    path = tmp_path / "p.sqlite"
    ref: dict = {}
    matched = unmatched = 0
    score = 0.0
    with PendingStore(path, commit_every=commit_every) as store:
        for op, ks in ops:
            if op == "put":
                for k in ks:
                    score += 1.0
                    store.put(k, score, t=0.0)
                    ref[k] = score
            elif op == "commit":
                store.commit()
            else:
                got = [store.take(k) for k in ks] if op == "take" else store.take_many(ks)
                for k, g in zip(ks, got):
                    want = _reference_take(ref, k)
                    assert (None if g is None else g.score) == want
                    matched += want is not None
                    unmatched += want is None
            store.tick()
            assert (store.pending, store.matched, store.unmatched) == (len(ref), matched, unmatched)
    with PendingStore(path) as store:  # reopened: the same pending decisions, with their keys' types
        assert store.pending == len(ref)
        assert sorted(map(repr, store.keys())) == sorted(map(repr, ref))
        assert {k: store.peek(k).score for k in ref} == ref


def test_a_stored_decision_keeps_its_fields_and_an_unknown_key_can_raise(tmp_path):
    path = tmp_path / "p.sqlite"
    with PendingStore(path, on_unknown="raise") as store:
        store.put(("card", 7), 0.25, fn_cost=120.0, fp_cost=5.0, segment="FR", t=dt.datetime(2024, 1, 1),
                  model_labels=42)
        store.commit()
        before = store.counters()
        with pytest.raises(KeyError, match="unknown key 'nope'"):
            store.take("nope")
        with pytest.raises(KeyError, match="unknown key 'nope'"):
            store.take_many([("card", 7), "nope"])
        assert store.counters() == before  # nothing changed, not even the decision before the unknown key
        p = store.take(("card", 7.0))
    assert (p.score, p.fn_cost, p.fp_cost, p.segment, p.model_labels) == (0.25, 120.0, 5.0, "FR", 42)
    assert p.t == dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc).timestamp()


@pytest.mark.parametrize("bad, match", [
    (dict(score=float("nan")), "score"), (dict(score="0.5"), "score"), (dict(fn_cost=0.0), "costs"),
    (dict(fp_cost=float("inf")), "fp_cost"), (dict(t=float("nan")), "t"), (dict(model_labels=-1), "model_labels"),
    (dict(segment=[1]), "segment"), (dict(key=float("nan")), "NaN key"), (dict(key={"a": 1}), "keys must be"),
])
def test_a_bad_decision_is_refused_naming_the_value_and_nothing_changes(tmp_path, bad, match):
    with PendingStore(tmp_path / "p.sqlite") as store:
        store.put("kept", 0.5, t=0.0)
        args = {"key": "k", "score": 0.5, "t": 1.0, **bad}
        key = args.pop("key")
        score = args.pop("score")
        before = (store.counters(), store.newest_t, list(store.keys()))
        with pytest.raises((TypeError, ValueError), match=match):
            store.put(key, score, **args)
        assert (store.counters(), store.newest_t, list(store.keys())) == before


# ---------------------------------------------------------------- the horizon
@pytest.mark.parametrize("commit_every", [1, 3, 1000])
def test_the_count_horizon_evicts_old_decisions_whatever_the_commits(tmp_path, commit_every):
    with PendingStore(tmp_path / "p.sqlite", max_pending_age=3, commit_every=commit_every) as store:
        for i in range(10):
            store.put(i, float(i), t=0.0)
            store.tick()
        # decision 5 has 4 later decisions (6..9): past the horizon of 3; 6 has 3: kept
        assert store.take(5) is None and store.take(6).score == 6.0
        assert store.take(0) is None
        store.commit()
        assert (store.matched, store.unmatched) == (1, 2)
        assert store.evicted == 6  # 0..5: once each, swept or met by a label
        assert sorted(store.keys()) == [7, 8, 9] and store.pending == 3


def test_the_sweep_deletes_every_decision_past_the_horizon_in_passes_over_keys_of_every_type(tmp_path):
    rng = random.Random(5)
    kinds = [lambda i: i, lambda i: f"k{i}", lambda i: str(i).encode(), lambda i: ("t", i), lambda i: i + 0.5]
    order = [kinds[rng.randrange(len(kinds))](i) for i in range(3_000)]
    with PendingStore(tmp_path / "p.sqlite", max_pending_age=100, commit_every=7) as store:
        for i, k in enumerate(order):
            store.put(k, float(i), t=0.0)
            store.tick()
            if i % 500 == 499:  # the sweep has visited at least twice as many keys as there were decisions
                store.commit()
                held = set(map(repr, store.keys()))
                assert len(held) <= 101 + 2 * 100 and store.pending == len(held)
                assert {repr(k) for k in order[i - 100:i + 1]} <= held  # the horizon's decisions are all held
        for _ in range(100):
            store.commit()  # idle commits sweep on (64 keys each)
        assert sorted(map(repr, store.keys())) == sorted(map(repr, order[-101:]))
        assert store.evicted == 3_000 - 101 and store.pending == 101


def test_the_time_horizon_counts_from_the_newest_decision(tmp_path):
    day = 86_400.0
    with PendingStore(tmp_path / "p.sqlite", max_pending_age=dt.timedelta(days=90)) as store:
        store.put("old", 0.1, t=0.0)
        store.put("mid", 0.2, t=10 * day)
        store.put("new", 0.3, t=95 * day)  # "old" is now 95 days older than the newest decision
        assert store.peek("old") is None and store.take("old") is None
        assert store.take("mid").score == 0.2
        store.commit()
        assert (store.evicted, store.unmatched, store.pending) == (1, 1, 1)
    with pytest.raises(ValueError, match="timedelta"):
        PendingStore(tmp_path / "q.sqlite", max_pending_age=90.0)


# ---------------------------------------------------------------- refusals and the lock
def test_a_file_that_is_not_a_store_is_refused_naming_the_path(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_bytes(b"hello, this is not a database" * 10)
    with pytest.raises(ValueError, match=r"notes\.sqlite.*not an SQLite database"):
        PendingStore(text)
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE customers(id INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match=r"foreign\.sqlite.*another application"):
        PendingStore(foreign)
    with pytest.raises(ValueError, match="not a regular file"):
        PendingStore(tmp_path)
    truncated = tmp_path / "cut.sqlite"
    with PendingStore(truncated) as store:
        store.put("a", 1.0)
    truncated.write_bytes(truncated.read_bytes()[:150])
    with pytest.raises(ValueError, match=r"cut\.sqlite"):
        PendingStore(truncated)


def test_a_newer_format_other_settings_or_another_owner_are_refused(tmp_path):
    path = tmp_path / "p.sqlite"
    DecisionLoop(path, fn_cost=5, fp_cost=1, window=100).close()
    with pytest.raises(ValueError, match=r"p\.sqlite.*other settings.*'window': \(100, 200\)"):
        DecisionLoop(path, fn_cost=5, fp_cost=1, window=200)
    with pytest.raises(ValueError, match="belongs to a 'DecisionLoop'"):
        PendingStore(path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version=7")
    con.close()
    with pytest.raises(ValueError, match=r"store format 7.*newer"):
        DecisionLoop(path, fn_cost=5, fp_cost=1, window=100)
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version=1")
    con.close()
    with pytest.raises(ValueError, match=r"p\.sqlite' has store format 1.*older"):
        DecisionLoop(path, fn_cost=5, fp_cost=1, window=100)


def test_a_corrupt_checkpoint_or_log_is_refused_naming_the_store(tmp_path):
    path = tmp_path / "p.sqlite"
    with DecisionLoop(path, fn_cost=5, fp_cost=1, window=100, warm_up=0) as loop:
        for i in range(6):
            loop.decide(i, i / 10, t=0.0)
            loop.label(i, i % 2)
    con = sqlite3.connect(path)
    data = bytearray(con.execute("SELECT data FROM checkpoint").fetchone()[0])
    data[-40] ^= 1
    con.execute("UPDATE checkpoint SET data=?", (bytes(data),))
    con.commit()
    con.close()
    with pytest.raises(ValueError, match=r"p\.sqlite.*corrupt or truncated"):
        DecisionLoop(path, fn_cost=5, fp_cost=1, window=100, warm_up=0)
    path2 = tmp_path / "q.sqlite"
    loop = DecisionLoop(path2, fn_cost=5, fp_cost=1, window=100, warm_up=0)
    loop.decide("a", 0.5, t=0.0)
    loop.label("a", 1)
    loop.commit()
    loop.store.abandon()  # no checkpoint: the learned event is in the log
    good = sqlite3.connect(path2).execute("SELECT data FROM learned").fetchone()[0]
    for bad, match in [(good[:8] + b"\x05" + good[9:], r"learned event 0 is \(0\.5, 5,"),  # a label of 5
                       (good[:-1], "packed events"),
                       (good[:9] + struct.pack("<d", -1.0) + good[17:], r"0\.5, 1, -1\.0")]:  # a weight of -1
        con = sqlite3.connect(path2)
        con.execute("UPDATE learned SET data=?", (bad,))
        con.commit()
        con.close()
        with pytest.raises(ValueError, match=r"q\.sqlite.*" + match):
            DecisionLoop(path2, fn_cost=5, fp_cost=1, window=100, warm_up=0)


def test_one_writer_a_second_opening_is_refused_in_this_process_and_another(tmp_path):
    path = tmp_path / "p.sqlite"
    store = PendingStore(path)
    with pytest.raises(StoreLockedError, match=r"p\.sqlite.*open for writing"):
        PendingStore(path)
    code = textwrap.dedent(f"""
        from thors_stream.store import PendingStore, StoreLockedError
        try:
            PendingStore({str(path)!r})
        except StoreLockedError as exc:
            print("refused:", exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "refused:" in out.stdout and "open for writing" in out.stdout, out.stderr
    store.close()
    PendingStore(path).close()  # released


# ---------------------------------------------------------------- the loop: exact thresholds
def _stream(seed, n, n_keys=None):
    rng = random.Random(seed)
    waiting: list = []
    ops = []
    for i in range(n):
        y = rng.random() < 0.3
        p = round(min(1.0, max(0.0, rng.gauss(0.6 if y else 0.35, 0.2))), 2)  # ties
        ops.append(("decide", i, p, y, rng.choice([5.0, 40.0, 300.0]), rng.choice(["FR", "DE", 3])))
        waiting.append(i)
        while waiting and rng.random() < 0.6:
            j = waiting.pop(rng.randrange(len(waiting)))
            ops.append(("label", j))
        if rng.random() < 0.05:
            ops.append(("label", f"unknown-{i}"))
    return ops


def _run(loop, ops, reference, decide_on, segmented, *, check_each=True, events=None):
    events = {} if events is None else events
    for op in ops:
        if op[0] == "decide":
            _, k, p, y, amount, seg = op
            events[k] = (p, y, amount, seg)
            kw = {"fn_cost": amount} if decide_on == "margin" else {}
            loop.decide(k, p, segment=seg if segmented else None, t=0.0, **kw)
        else:
            k = op[1]
            y = events[k][1] if k in events else True
            matched = loop.label(k, y)
            assert matched == (k in events)
            if matched:
                p, y, amount, seg = events.pop(k)
                reference(p, y, amount, seg)
            if check_each:
                yield loop
    yield loop


@pytest.mark.parametrize("decide_on", ["score", "margin"])
def test_the_loop_thresholds_equal_a_summary_fed_the_matched_labels(tmp_path, decide_on):
    ops = _stream(1, 300)
    margin = decide_on == "margin"
    ref = MarginThors(window=50) if margin else StreamingThors(fn_cost=5, fp_cost=1, window=50)
    fed = []

    def feed(p, y, amount, seg):
        if margin:
            ref.update(p, y, fn_cost=amount, fp_cost=1.0)
        else:
            ref.update(p, y)
        fed.append((cost_margin(p, amount, 1.0) if margin else p, y, amount if (margin and y) else 1.0))

    loop = DecisionLoop(tmp_path / "p.sqlite", fn_cost=5 if not margin else 1, fp_cost=1, window=50, warm_up=0,
                        decide_on=decide_on, commit_every=7, checkpoint_every=13)
    for lp in _run(loop, ops, feed, decide_on, False):
        want = ref.get()
        if lp.warmed_up:
            assert lp.threshold == want
    # the brute force on the window's events (unit costs on margins, each event weighing its cost)
    window = fed[-50:]
    thr, _, _ = brute_force(window, 1 if margin else 5, 1)
    assert loop.threshold == thr
    loop.close()
    with DecisionLoop(tmp_path / "p.sqlite", fn_cost=5 if not margin else 1, fp_cost=1, window=50, warm_up=0,
                      decide_on=decide_on) as again:
        assert again.threshold == thr and again.thors.held()[0].tolist() == loop.thors.held()[0].tolist()


@pytest.mark.parametrize("window", [40, "auto"])
def test_segments_and_auto_windows_equal_their_summaries_across_reopenings(tmp_path, window):
    ops = _stream(2, 240)
    path = tmp_path / "p.sqlite"
    ref = SegmentedStreamingThors(fn_cost=5, fp_cost=1, window=window, min_per_class=3,
                                  default_threshold=1 / 6 if window == "auto" else None)

    def settings_():
        return dict(fn_cost=5, fp_cost=1, window=window, segmented=True, min_per_class=3, warm_up=0,
                    commit_every=5, checkpoint_every=11)

    def feed(p, y, amount, seg):
        ref.update(seg, p, y)

    loop = DecisionLoop(path, **settings_())
    cut, events = len(ops) // 2, {}
    for _ in _run(loop, ops[:cut], feed, "score", True, check_each=False, events=events):
        pass
    loop.close()
    loop = DecisionLoop(path, **settings_())  # resumed: checkpoint plus the replayed log
    assert loop.pending == len(events)
    for lp in _run(loop, ops[cut:], feed, "score", True, events=events):
        for seg in ("FR", "DE", 3, "never"):
            want = ref.get(seg)
            assert lp.threshold_of(seg) == (lp.default_threshold if want is None else want)
    loop.close()


def test_auto_window_without_segments_equals_a_window_selector(tmp_path):
    ops = _stream(3, 200)
    ref = WindowSelector(fn_cost=5, fp_cost=1, default_threshold=1 / 6)
    loop = DecisionLoop(tmp_path / "p.sqlite", fn_cost=5, fp_cost=1, window="auto", commit_every=3,
                        checkpoint_every=17)
    for lp in _run(loop, ops, lambda p, y, a, s: ref.update(p, y), "score", False):
        assert lp.threshold == ref.get()
    loop.close()


def test_batches_give_the_answers_of_calls_one_by_one(tmp_path):
    rng = random.Random(4)
    one = DecisionLoop(tmp_path / "a.sqlite", fn_cost=1, fp_cost=1, window=30, decide_on="margin", warm_up=0)
    many = DecisionLoop(tmp_path / "b.sqlite", fn_cost=1, fp_cost=1, window=30, decide_on="margin", warm_up=0)
    n = 0
    for _ in range(8):
        ks = [n + i for i in range(12)] + [n]  # a key decided twice in a batch: the newest decision counts
        ps = [rng.random() for _ in ks]
        amounts = [rng.choice([2.0, 50.0]) for _ in ks]
        flags = [one.decide(k, p, fn_cost=a, t=0.0) for k, p, a in zip(ks, ps, amounts)]
        got = many.decide_many(ks, ps, fn_cost=amounts, t=0.0)
        assert got.flags.tolist() == flags
        assert got.scores.tolist() == [cost_margin(p, a, 1.0) for p, a in zip(ps, amounts)]
        labels = rng.sample(range(n + 12), 8) + [n, "unknown"]
        ys = [rng.random() < 0.4 for _ in labels]
        assert many.label_many(labels, ys).tolist() == [one.label(k, y) for k, y in zip(labels, ys)]
        assert many.threshold == one.threshold
        assert (many.matched, many.unmatched, many.pending) == (one.matched, one.unmatched, one.pending)
        n += 12
    one.close()
    many.close()


# ---------------------------------------------------------------- bad input to the loop
def _snapshot(loop):
    return (loop.threshold, loop.store.counters(), sorted(map(repr, loop.store.keys())), loop.thors.held()[0].tolist(),
            loop.n_learned)


BAD_CALLS = [
    (lambda lp: lp.decide("n", float("nan")), "probability"),
    (lambda lp: lp.decide("n", 1.5), r"\[0, 1\], got 1\.5"),
    (lambda lp: lp.decide("n", 0.5, fn_cost=-3.0), "fn_cost.*-3.0"),
    (lambda lp: lp.decide("n", 0.5, fp_cost=float("inf")), "fp_cost"),
    (lambda lp: lp.decide(float("nan"), 0.5), "NaN key"),
    (lambda lp: lp.decide(["list"], 0.5), "keys must be"),
    (lambda lp: lp.decide("n", 0.5, segment="FR"), "no segments"),
    (lambda lp: lp.decide("n", 0.5, t="yesterday"), "t"),
    (lambda lp: lp.decide_many(["n", "m"], [0.5, 2.0]), "position 1"),
    (lambda lp: lp.decide_many(["n", float("nan")], [0.5, 0.5]), "position 1"),
    (lambda lp: lp.label("a", 2), "label"),
    (lambda lp: lp.label("a", "1"), "label"),
    (lambda lp: lp.label("a", True, w=-1.0), "w|weight"),
    (lambda lp: lp.label("a", True, w=2.0**1000), "weight"),
    (lambda lp: lp.label_many(["a", "b"], [True, None]), "position 1"),
]


def test_bad_input_raises_naming_it_and_changes_nothing(tmp_path):
    loop = DecisionLoop(tmp_path / "p.sqlite", fn_cost=1, fp_cost=1, decide_on="margin", window=20, warm_up=0)
    for i, k in enumerate("abcdef"):
        loop.decide(k, (i + 1) / 8, fn_cost=10.0, t=0.0)
    loop.label("c", True)
    loop.label("d", False)
    before = _snapshot(loop)
    for call, match in BAD_CALLS:
        with pytest.raises((TypeError, ValueError), match=match):
            call(loop)
        assert _snapshot(loop) == before
    loop.close()


def test_score_mode_refuses_per_event_costs_and_raise_mode_refuses_unknown_keys(tmp_path):
    with DecisionLoop(tmp_path / "p.sqlite", fn_cost=5, fp_cost=1, on_unknown="raise") as loop:
        with pytest.raises(ValueError, match="decide_on='margin'"):
            loop.decide("a", 0.5, fn_cost=3.0)
        loop.decide("a", 0.5)
        with pytest.raises(KeyError, match="'zz'"):
            loop.label_many(["a", "zz"], [1, 0])
        assert loop.pending == 1 and loop.matched == 0 and loop.label("a", 1)


def test_cold_margins_are_matched_but_not_learned(tmp_path):
    with DecisionLoop(tmp_path / "p.sqlite", fn_cost=1, fp_cost=1, decide_on="margin", min_model_labels=10,
                      warm_up=0) as loop:
        loop.decide("early", 0.9, model_labels=3)
        loop.decide("late", 0.9, model_labels=10)
        assert loop.label("early", 1) and loop.label("late", 0)
        assert (loop.n_cold_skipped, loop.n_learned, len(loop.thors)) == (1, 1, 1)


# ---------------------------------------------------------------- durability: SIGKILL mid-stream
_FEEDER = """
import os, random, signal, sys
from thors_stream.store import DecisionLoop
path, n = sys.argv[1], int(sys.argv[2])
loop = DecisionLoop(path, fn_cost=5, fp_cost=1, window=200, warm_up=0, commit_every=50, commit_interval=1.0,
                    checkpoint_every=300)
rng = random.Random(11)
waiting = []
for i in range(n):
    y = rng.random() < 0.3
    loop.decide(i, round(rng.random() * 0.6 + (0.3 if y else 0.0), 3), t=0.0)
    waiting.append((i, y))
    if len(waiting) > 20:
        k, y = waiting.pop(rng.randrange(len(waiting)))
        loop.label(k, y)
    if i == n // 2:
        print("half", flush=True)
        signal.pause()  # killed here, with an uncommitted tail
"""


def _feed_reference(n_decided, n_labels):
    """An uninterrupted run of the feeder's stream, stopped after the committed operations."""
    rng = random.Random(11)
    ops, waiting = [], []
    for i in range(3000):
        y = rng.random() < 0.3
        ops.append(("decide", i, round(rng.random() * 0.6 + (0.3 if y else 0.0), 3)))
        waiting.append((i, y))
        if len(waiting) > 20:
            ops.append(("label",) + waiting.pop(rng.randrange(len(waiting))))
    ref = StreamingThors(fn_cost=5, fp_cost=1, window=200)
    scores, decided, labelled = {}, 0, 0
    for op in ops:
        if (decided, labelled) == (n_decided, n_labels):
            break
        if op[0] == "decide":
            scores[op[1]] = op[2]
            decided += 1
        else:
            ref.update(scores.pop(op[1]), op[2])
            labelled += 1
    assert (decided, labelled) == (n_decided, n_labels)  # a prefix of the stream
    return ref, set(scores)


def test_a_process_killed_mid_stream_loses_only_its_uncommitted_tail(tmp_path):
    path = tmp_path / "fraud.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", _FEEDER, str(path), "3000"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "half"
    finally:
        proc.kill()  # SIGKILL
        proc.wait(timeout=30)
    assert proc.returncode == -9
    with DecisionLoop(path, fn_cost=5, fp_cost=1, window=200, warm_up=0) as loop:
        n_decided, n_labels = loop.store.n_decided, loop.store.n_labels
        assert 0 < n_decided <= 1501 and n_decided > 1501 - 50  # at most the last batch was lost
        ref, pending = _feed_reference(n_decided, n_labels)
        assert loop.matched == n_labels and loop.unmatched == 0
        assert loop.threshold == ref.get()
        assert [a.tolist() for a in loop.thors.held()] == [a.tolist() for a in ref.held()]
        assert sorted(loop.store.keys()) == sorted(pending)
        assert loop.store.n_checkpoints >= 1  # the state came from a checkpoint plus the replayed log


def test_the_replayed_log_takes_every_weight_a_label_may_carry(tmp_path):
    path = tmp_path / "p.sqlite"
    settings_ = dict(fn_cost=1e10, fp_cost=1e10, window=10, warm_up=0)
    loop = DecisionLoop(path, **settings_)
    for i, w in enumerate([1e-295, 1.0, 3.0]):  # 1e-295 is below 2**-960, its products with the costs are not
        loop.decide(i, i / 4, t=0.0)
        loop.label(i, i % 2, w=w)
    want = [a.tolist() for a in loop.thors.held()]
    loop.commit()
    loop.store.abandon()  # no checkpoint: the three events are replayed from the log
    with DecisionLoop(path, **settings_) as again:
        assert [a.tolist() for a in again.thors.held()] == want
