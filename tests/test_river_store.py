"""ThorsClassifier with its pending decisions and thresholding state in a store (store=...)."""

from __future__ import annotations

import datetime as dt
import pickle
import random
import subprocess
import sys

import pytest
from river import base

from thors_stream import StreamingThors
from thors_stream.river import ThorsClassifier
from thors_stream.store import StoreLockedError


class Fixed(base.Classifier):
    """A model whose probability is the feature ``p``: scores known in advance; counts what it learns."""

    def __init__(self, pos=True, neg=False) -> None:
        self.n = 0
        self.pos, self.neg = pos, neg

    def learn_one(self, x, y, **kwargs):
        self.n += 1

    def predict_proba_one(self, x, **kwargs):
        p = x["p"]
        return {self.pos: p, self.neg: 1.0 - p}


def _stream(seed, n):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        y = rng.random() < 0.3
        p = round(min(1.0, max(0.0, rng.gauss(0.55 if y else 0.35, 0.2))), 3)
        out.append(({"p": p, "amount": round(rng.lognormvariate(3, 1), 2), "seg": rng.choice("ab")}, y))
    return out


MODES = {
    "score": dict(fn_cost=5.0, fp_cost=1.0, window=150, warm_up=20),
    "margin": dict(fn_cost="amount", fp_cost=3.0, window=150, warm_up=20, min_model_labels=30),
    "segments": dict(fn_cost=5.0, fp_cost=1.0, window=150, warm_up=20, segment="seg", min_per_class=5),
    "auto": dict(fn_cost=5.0, fp_cost=1.0, window="auto", windows=[50, 200], auto_choose="leader"),
    "period": dict(fn_cost=5.0, fp_cost=1.0, period=120.0, warm_up=20),
}


def _run(model, events, delay, start=0, stop=None):
    """Decide on each event with its key; its label comes ``delay`` events later. Returns the decisions."""
    out = []
    stop = len(events) if stop is None else stop
    for i in range(start, stop):
        x, _ = events[i]
        out.append(model.predict_one(x, key=i))
        if i >= delay:
            xo, yo = events[i - delay]
            model.learn_one(xo, yo, key=i - delay, t=float(i - delay))
    return out


def _state(model):
    return (model.threshold, model.n_pending, model.n_matched, model.n_unmatched, model.warmed_up,
            [a.tolist() for a in model.thors.held()])


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_store_decides_and_learns_exactly_as_memory_and_resumes_after_a_restart(tmp_path, mode):
    events = _stream(3, 420)
    memory = ThorsClassifier(Fixed(), **MODES[mode])
    want = _run(memory, events, 30)
    path = tmp_path / "p.sqlite"
    # the stored run is cut in three: closed (a checkpoint), then abandoned after a commit (the log replayed)
    first = ThorsClassifier(Fixed(), store=path, store_options={"checkpoint_every": 70}, **MODES[mode])
    got = _run(first, events, 30, 0, 150)
    first.close()
    second = ThorsClassifier(Fixed(), store=path, store_options={"checkpoint_every": 70}, **MODES[mode])
    got += _run(second, events, 30, 150, 300)
    second.commit()
    second.pending_store.abandon()
    with ThorsClassifier(Fixed(), store=path, **MODES[mode]) as third:
        got += _run(third, events, 30, 300, None)
        assert got == want
        assert _state(third) == _state(memory)
        assert third.n_evicted == 0 and third.pending_store.n_checkpoints >= 2
        if mode == "margin":
            assert (third.n_model_labels, third.n_cold_skipped) == (memory.n_model_labels, memory.n_cold_skipped)
        if mode == "segments":
            assert [third.segmented.get(g) for g in "ab"] == [memory.segmented.get(g) for g in "ab"]


def test_unknown_keys_follow_the_policy(tmp_path):
    events = _stream(5, 60)

    def fresh(policy, store):
        m = ThorsClassifier(Fixed(), fn_cost=5.0, fp_cost=1.0, window=100, warm_up=0, on_unknown=policy,
                            store=None if store is None else tmp_path / f"{policy}-{store}.sqlite")
        _run(m, events, 10)
        return m

    for store in (None, "disk"):
        count = fresh("count" if store is None else None, store)  # (None: count with a store)
        before, n = _state(count), count.classifier.n
        count.learn_one({"p": 0.9}, True, key="nope")
        count.learn_one(events[3][0], True, key=3)  # labelled already
        assert count.n_unmatched == 2 and _state(count)[2:] == (before[2], 2, *before[4:])
        assert count.threshold == before[0] and count.classifier.n == n  # neither the model nor the threshold

        raise_ = fresh("raise" if store is not None else None, store)  # (None: raise in memory)
        before, n = _state(raise_), raise_.classifier.n
        with pytest.raises(KeyError, match="unknown key 'nope'"):
            raise_.learn_one({"p": 0.9}, True, key="nope")
        assert _state(raise_) == before and raise_.classifier.n == n

        score = fresh("score", store)
        keyless = fresh("count", None)
        score.learn_one({"p": 0.77}, True, key="nope")  # learned as a label without a key: x scored now
        keyless.learn_one({"p": 0.77}, True)
        assert score.n_unmatched == 1 and score.threshold == keyless.threshold
        assert _state(score)[5] == _state(keyless)[5] and score.classifier.n == keyless.classifier.n
        for m in (count, raise_, score, keyless):
            m.close()


def test_the_horizon_evicts_old_decisions_and_their_labels_are_counted(tmp_path):
    with ThorsClassifier(Fixed(), fn_cost=5.0, fp_cost=1.0, warm_up=0, store=tmp_path / "h.sqlite",
                         max_pending_age=3) as m:
        for i in range(6):
            m.predict_one({"p": i / 10}, key=i)
        m.learn_one({"p": 0.0}, True, key=1)  # 4 decisions were made after it: past the horizon
        m.learn_one({"p": 0.0}, True, key=3)
        assert (m.n_matched, m.n_unmatched, m.n_evicted) == (1, 1, 1)
        assert m.thors.held()[0].tolist() == [0.3]
    with ThorsClassifier(Fixed(), fn_cost=5.0, fp_cost=1.0, warm_up=0, store=tmp_path / "t.sqlite",
                         max_pending_age=dt.timedelta(days=1)) as m:
        assert m.max_pending_age == dt.timedelta(days=1) and m.n_evicted == 0


def test_bad_input_raises_naming_it_and_changes_nothing(tmp_path):
    path = tmp_path / "b.sqlite"
    m = ThorsClassifier(Fixed(), fn_cost="amount", fp_cost=1.0, warm_up=0, min_model_labels=0, segment="seg",
                        store=path)
    events = _stream(9, 40)
    _run(m, events, 5)
    m.commit()

    def snapshot():
        return _state(m), m.pending_store.counters(), m.classifier.n, sorted(map(str, m.pending_store.keys()))

    before = snapshot()
    x, _ = events[36]
    assert x["amount"] > 1.0 and m.n_pending == 5
    cases = [
        (lambda: m.learn_one(x, 2, key=36), ValueError, "label"),
        (lambda: m.learn_one(x, True, key=36, w=-1.0), ValueError, "w"),
        (lambda: m.learn_one(x, True, key=36, w=2.0**960), ValueError, "weight"),  # times the stored cost: too large
        (lambda: m.learn_one({"p": 0.5, "amount": 3.0}, True, key=36), ValueError, "segment"),
        (lambda: m.learn_one({**x, "seg": object()}, True, key=36), TypeError, "segment"),
        (lambda: m.learn_one(x, True, key=[36]), TypeError, "key"),
        (lambda: m.learn_one(x, True, key=float("nan")), ValueError, "NaN key"),
        (lambda: m.predict_one({"p": 0.5, "seg": "a"}, key=99), ValueError, "amount"),
        (lambda: m.predict_one({**x, "p": 1.5}, key=99), ValueError, "1.5"),
        (lambda: m.predict_one(x, key=object()), TypeError, "key"),
    ]
    for call, exc, match in cases:
        with pytest.raises(exc, match=match):
            call()
        assert snapshot() == before
    plain = ThorsClassifier(Fixed(), fn_cost=5.0, fp_cost=1.0, store=tmp_path / "nan.sqlite")
    with pytest.raises(ValueError, match=r"nan.*not stored"):
        plain.predict_one({"p": float("nan")}, key=1)
    assert plain.n_pending == 0
    plain.close()
    m.close()


def test_the_store_is_refused_when_it_cannot_be_this_wrappers(tmp_path):
    path = tmp_path / "s.sqlite"
    settings = dict(fn_cost=5.0, fp_cost=1.0, window=100)
    m = ThorsClassifier(Fixed(), store=path, **settings)
    with pytest.raises(StoreLockedError, match=r"s\.sqlite"):
        ThorsClassifier(Fixed(), store=path, **settings)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(m)
    with pytest.raises(ValueError, match="resumes from its store"):
        m.load_thresholding(tmp_path / "x.ckpt")
    m.close()
    m.close()  # idempotent
    with pytest.raises(ValueError, match=r"other settings.*'window': \(100, 200\)"):
        ThorsClassifier(Fixed(), store=path, fn_cost=5.0, fp_cost=1.0, window=200)
    with pytest.raises(ValueError, match="not a thors_stream store"):
        (tmp_path / "junk").write_bytes(b"not a database" * 20)
        ThorsClassifier(Fixed(), store=tmp_path / "junk", **settings)
    with pytest.raises(ValueError, match=r"max_pending_age .* apply to a store"):
        ThorsClassifier(Fixed(), max_pending_age=10, **settings)
    with pytest.raises(ValueError, match="on_unknown"):
        ThorsClassifier(Fixed(), on_unknown="ignore", **settings)
    with pytest.raises(ValueError, match="store_options"):
        ThorsClassifier(Fixed(), store=tmp_path / "o.sqlite", store_options={"commit_evry": 3}, **settings)


def test_a_learned_negative_label_survives_a_crash(tmp_path):
    path = tmp_path / "n.sqlite"
    settings = dict(fn_cost=5.0, fp_cost=1.0, warm_up=0, pos_label="fraud")
    m = ThorsClassifier(Fixed("fraud", "legit"), store=path, **settings)
    m.learn_one({"p": 0.2}, "legit")
    m.learn_one({"p": 0.7}, "fraud")
    m.commit()
    m.pending_store.abandon()
    with ThorsClassifier(Fixed("fraud", "legit"), store=path, **settings) as again:
        assert again.predict_one({"p": 0.1}) == "legit" and again.predict_one({"p": 0.9}) == "fraud"
        assert again.threshold == 0.2 and len(again.thors) == 2


_FEEDER = """
import random, signal, sys
from river import base
from thors_stream.river import ThorsClassifier

class Fixed(base.Classifier):
    def learn_one(self, x, y, **kwargs):
        pass
    def predict_proba_one(self, x, **kwargs):
        return {True: x["p"], False: 1.0 - x["p"]}

path, n = sys.argv[1], int(sys.argv[2])
m = ThorsClassifier(Fixed(), fn_cost=5.0, fp_cost=1.0, window=200, warm_up=0, store=path,
                    store_options={"commit_every": 50, "commit_interval": 1.0, "checkpoint_every": 300})
rng = random.Random(11)
waiting = []
for i in range(n):
    y = rng.random() < 0.3
    m.predict_one({"p": round(rng.random() * 0.6 + (0.3 if y else 0.0), 3)}, key=i)
    waiting.append((i, y))
    if len(waiting) > 20:
        k, y = waiting.pop(rng.randrange(len(waiting)))
        m.learn_one({"p": 0.5}, y, key=k)
    if i == n // 2:
        print("half", flush=True)
        signal.pause()  # killed here, with an uncommitted tail
"""


def test_a_wrapper_killed_mid_stream_loses_only_its_uncommitted_tail(tmp_path):
    from test_store import _feed_reference  # the same stream, fed to a StreamingThors

    path = tmp_path / "fraud.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", _FEEDER, str(path), "3000"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "half"
    finally:
        proc.kill()  # SIGKILL
        proc.wait(timeout=30)
    assert proc.returncode == -9
    with ThorsClassifier(Fixed(), fn_cost=5.0, fp_cost=1.0, window=200, warm_up=0, store=path) as m:
        st = m.pending_store
        assert 1501 - 50 < st.n_decided <= 1501  # at most the last batch was lost
        ref, pending = _feed_reference(st.n_decided, st.n_labels)
        assert isinstance(ref, StreamingThors) and m.n_matched == st.n_labels and m.n_unmatched == 0
        assert m.threshold == ref.get()
        assert [a.tolist() for a in m.thors.held()] == [a.tolist() for a in ref.held()]
        assert sorted(st.keys()) == sorted(pending) and st.n_checkpoints >= 1
