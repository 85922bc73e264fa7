"""The SQLite-backed DecisionLoop under interrupts and failed writes: an operation or a commit cut
part-way is never written half-done (the store comes back at its last commit, as after a crash,
with counters that agree with its pending decisions), and keys SQLite cannot hold as text."""

import sqlite3
import time
import types

import pytest

import thors_stream._store_pending as store_module
from thors_stream.store import DecisionLoop

KW = dict(fn_cost=10.0, fp_cost=1.0, window=100, warm_up=0, commit_every=10**6, commit_interval=1.0)


@pytest.fixture(autouse=True)
def no_timed_commits(monkeypatch):
    """Commits only when called (a slow machine's second must not commit in the middle of a test)."""
    monkeypatch.setattr(store_module, "time", types.SimpleNamespace(monotonic=lambda: 0.0, time=time.time))


def state(loop):
    return (loop.pending, loop.matched, loop.n_learned, loop.store.n_decided, loop.store.n_labels, loop.threshold,
            sorted(map(repr, loop.store.keys())))


def committed_prefix(path, ops):
    """The state a fresh loop reaches from the operations before the last commit."""
    ref = path.parent / "ref.sqlite"
    with DecisionLoop(ref, **KW) as loop:
        for op in ops:
            op(loop)
        return state(loop)


class FailingConnection:
    """The store's connection, raising ``exc`` at the ``at``-th statement from now."""

    def __init__(self, conn, at, exc):
        self.conn, self.left, self.exc = conn, at, exc

    def _tick(self):
        self.left -= 1
        if self.left == 0:
            raise self.exc

    def execute(self, *a):
        self._tick()
        return self.conn.execute(*a)

    def executemany(self, *a):
        self._tick()
        return self.conn.executemany(*a)

    def __getattr__(self, name):
        return getattr(self.conn, name)


def first_commit(path):
    """Three decisions and a label, committed (closed); the state they leave."""
    ops = [lambda lp: lp.decide("a", 0.9), lambda lp: lp.decide("b", 0.1), lambda lp: lp.decide("c", 0.5),
           lambda lp: lp.label("a", True)]
    with DecisionLoop(path, **KW) as loop:
        for op in ops:
            op(loop)
    return committed_prefix(path, ops)


def test_a_label_interrupted_after_its_decision_was_taken_is_not_written_half_done(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    want = first_commit(path)
    with pytest.raises(KeyboardInterrupt), DecisionLoop(path, **KW) as loop:
        loop.decide("d", 0.7)  # completed but not committed: lost, as in a crash

        def cut(*a, **k):  # the pending row is gone and counted; the label is not learned yet
            raise KeyboardInterrupt

        monkeypatch.setattr(loop, "_take_in", cut)
        try:
            loop.label("b", False)
        except KeyboardInterrupt:
            with pytest.raises(ValueError, match="interrupted part-way; close it"):
                loop.decide("e", 0.2)  # refused: the loop is between two states
            raise
    with DecisionLoop(path, **KW) as again:
        assert state(again) == want
        assert again.label("b", False) is True  # its decision is still pending


@pytest.mark.parametrize("at", range(1, 12))
def test_a_commit_interrupted_at_any_statement_leaves_the_last_commit(tmp_path, at):
    path = tmp_path / "s.sqlite"
    want = first_commit(path)
    loop = DecisionLoop(path, **KW)
    for k in range(30):
        loop.decide(f"n{k}", k / 30)
    loop.label("c", False)
    conn = loop.store._conn
    loop.store._conn = FailingConnection(conn, at, KeyboardInterrupt())
    try:
        loop.commit()
        completed = True
    except KeyboardInterrupt:
        completed = False
    loop.store._conn = conn
    loop.close()  # no error: an interrupted commit is rolled back
    with DecisionLoop(path, **KW) as again:
        s = state(again)
        after = (33, 31, 2)  # decided, pending, matched
        if completed:
            assert (s[3], s[0], s[1]) == after
        else:
            assert s == want or (s[3], s[0], s[1]) == after  # before, or (interrupted after its COMMIT) after
        assert s[0] == len(s[6])  # the pending counter agrees with the pending decisions
        for k in list(again.store.keys()):
            again.label(k, True)
        assert again.pending == 0


def test_a_failed_commit_refuses_further_operations_until_reopened(tmp_path):
    path = tmp_path / "s.sqlite"
    loop = DecisionLoop(path, **KW)
    loop.decide("a", 0.9)
    loop.commit()
    loop.decide("b", 0.1)
    loop.store._conn = FailingConnection(loop.store._conn, 1, sqlite3.OperationalError("disk I/O error"))
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        loop.commit()
    with pytest.raises(ValueError, match="a commit was interrupted or failed part-way"):
        loop.label("a", True)
    loop.close()
    with DecisionLoop(path, **KW) as again:
        assert (again.pending, again.store.n_decided, sorted(again.store.keys())) == (1, 1, ["a"])


def test_an_ordinary_error_in_an_operation_leaves_the_loop_usable(tmp_path):
    with DecisionLoop(tmp_path / "s.sqlite", **KW) as loop:
        loop.decide("a", 0.9)
        with pytest.raises(ValueError, match="label"):
            loop.label("a", 7)
        with pytest.raises(ValueError):
            loop.decide("b", float("nan"))
        assert loop.label("a", True) is True


@pytest.mark.parametrize("key", ["\ud800", "pay-\udfff-9", ("\ud800", 1)])
def test_a_key_with_a_lone_surrogate_is_stored_and_matched(tmp_path, key):
    path = tmp_path / "s.sqlite"
    with DecisionLoop(path, **KW) as loop:
        loop.decide("ok", 0.3)
        loop.decide(key, 0.5)
        loop.commit()
    with DecisionLoop(path, **KW) as again:
        assert again.pending == 2 and key in list(again.store.keys())
        assert again.label(key, True) is True and again.label("ok", False) is True
        assert again.pending == 0
    with DecisionLoop(path, **KW) as third:
        assert third.pending == 0 and third.matched == 2


class FixedModel:
    """A river-like model scoring x["s"]."""

    def predict_proba_one(self, x):
        return {True: x["s"], False: 1.0 - x["s"]}

    def learn_one(self, x, y, **kw):
        pass


def test_a_thors_classifier_interrupted_after_its_model_learned_rolls_its_store_back(tmp_path, monkeypatch):
    from thors_stream.river import ThorsClassifier

    path = tmp_path / "pending.sqlite"
    opts = dict(commit_every=10**6, commit_interval=1.0)
    tc = ThorsClassifier(FixedModel(), fn_cost=5.0, fp_cost=1.0, warm_up=0, store=path, store_options=opts)
    for k in range(4):
        tc.predict_one({"s": k / 4}, key=f"tx-{k}")
    tc.learn_one({"s": 0.0}, False, key="tx-0")
    tc.commit()
    tc.predict_one({"s": 0.9}, key="tx-9")  # not committed: lost with the rollback, as in a crash

    def cut(*a, **k):  # the decision is taken from the store; the thresholder has not learned it
        raise KeyboardInterrupt

    monkeypatch.setattr(tc, "_apply", cut)
    with pytest.raises(KeyboardInterrupt):
        tc.learn_one({"s": 0.25}, True, key="tx-1")
    with pytest.raises(ValueError, match="interrupted part-way"):
        tc.predict_one({"s": 0.5}, key="tx-5")
    tc.close()
    again = ThorsClassifier(FixedModel(), fn_cost=5.0, fp_cost=1.0, warm_up=0, store=path, store_options=opts)
    try:
        assert (again.n_pending, again.n_matched, len(again.thors)) == (3, 1, 1)
        again.learn_one({"s": 0.25}, True, key="tx-1")  # still pending: learned now
        assert (again.n_pending, again.n_matched, len(again.thors)) == (2, 2, 2)
    finally:
        again.close()


class CountingModel(FixedModel):
    def __init__(self):
        self.learned = 0

    def learn_one(self, x, y, **kw):
        self.learned += 1


@pytest.mark.parametrize("then", ["commit", "unknown keys", "learn"])
def test_after_an_interrupted_classifier_operation_nothing_reaches_the_store_or_the_model(tmp_path, monkeypatch,
                                                                                           then):
    from thors_stream.river import ThorsClassifier

    path = tmp_path / "pending.sqlite"
    opts = dict(commit_every=3, commit_interval=1.0)
    model = CountingModel()
    tc = ThorsClassifier(model, fn_cost=5.0, fp_cost=1.0, warm_up=0, store=path, store_options=opts)
    for k in range(4):
        tc.predict_one({"s": k / 4}, key=f"tx-{k}")
    tc.commit()

    def cut(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(tc, "_apply", cut)
    with pytest.raises(KeyboardInterrupt):
        tc.learn_one({"s": 0.25}, True, key="tx-1")  # the decision taken, the thresholder not updated
    monkeypatch.undo()
    learned = model.learned
    with pytest.raises(ValueError, match="interrupted part-way"):
        if then == "commit":
            tc.commit()
        elif then == "unknown keys":
            tc.learn_one({"s": 0.1}, False, key="nope")
        else:
            tc.learn_one({"s": 0.5}, True, key="tx-2")
    assert model.learned == learned  # the model did not learn what the store refused
    tc.close()
    again = ThorsClassifier(FixedModel(), fn_cost=5.0, fp_cost=1.0, warm_up=0, store=path, store_options=opts)
    try:
        assert (again.n_pending, again.n_matched, len(again.thors)) == (4, 0, 0)
    finally:
        again.close()
