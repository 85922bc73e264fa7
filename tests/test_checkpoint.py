"""Checkpoints: round trips, corrupt files, and SIGKILL during saves."""

import datetime as dt
import os
import random
import signal
import struct
import sys
import time

import numpy as np
import pytest

from thors_stream import StreamingThors
from thors_stream._backend import available_backends
from thors_stream.checkpoint import MAGIC

BACKENDS = available_backends()


def state_of(st):
    q = [a.tolist() for a in st._queue.arrays()] if st._queue is not None else []
    return (len(st), st.get(), st.cost, st.result(), [a.tolist() for a in st.held()], q, list(st._late),
            st.n_updates, st._last_t, st.window, st.period, st.class_prior)


def feed(st, n, seed=0, timed=False, late=False):
    rng = np.random.default_rng(seed)
    t = 0.0
    for i in range(n):
        s = float(np.round(rng.random(), 2)) if i % 2 else float(rng.random())
        kw = {}
        if timed:
            t += float(rng.integers(0, 3))
            kw["t"] = t - (float(rng.integers(0, 5)) if late and i % 5 == 0 else 0.0)
        st.update(s, bool(rng.random() < 0.3), float(rng.integers(1, 4)), **kw)


CASES = [
    ({}, False, False),
    ({"window": 40}, False, False),
    ({"period": 30.0}, True, True),
    ({"period": dt.timedelta(seconds=30)}, True, False),
    ({"class_prior": 0.2}, False, False),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("kw", "timed", "late"), CASES)
def test_round_trip_and_continue(tmp_path, backend, kw, timed, late):
    st = StreamingThors(fn_cost=4, fp_cost=1, backend=backend, **kw)
    feed(st, 300, timed=timed, late=late)
    if kw.get("window"):
        st.revert(*_some_held(st))  # leaves a cancelled slot in the queue
    path = tmp_path / "st.ckpt"
    st.save(path)
    back = StreamingThors.load(path, backend=backend)
    assert state_of(back) == state_of(st)
    rng = np.random.default_rng(9)
    for i in range(100):
        args = (float(np.round(rng.random(), 2)), i % 3 == 0)
        t = {"t": 1000.0 + i} if timed else {}
        st.update(*args, **t)
        back.update(*args, **t)
    assert state_of(back) == state_of(st)


def _some_held(st):
    s, y, w = (a.tolist() for a in st._queue.arrays())
    i = next(i for i, lab in enumerate(y) if lab != 2)
    return s[i], y[i], w[i]


def test_load_into_the_other_backend(tmp_path):
    st = StreamingThors(fn_cost=4, fp_cost=1, window=50, backend="python")
    feed(st, 200)
    st.save(tmp_path / "a.ckpt")
    for b in BACKENDS:
        assert state_of(StreamingThors.load(tmp_path / "a.ckpt", backend=b)) == state_of(st)


def test_corrupt_truncated_and_foreign_files(tmp_path):
    st = StreamingThors(fn_cost=4, fp_cost=1, window=50)
    feed(st, 200)
    good = tmp_path / "good.ckpt"
    st.save(good)
    data = good.read_bytes()
    cases = {
        "flipped": data[:100] + bytes([data[100] ^ 1]) + data[101:],
        "truncated": data[: len(data) // 2],
        "tiny": data[:20],
        "empty": b"",
        "foreign": b"PK\x03\x04 not a checkpoint" * 5,
        "version": data[:8] + struct.pack("<H", 99) + data[10:],
    }
    needles = {"flipped": "SHA-256", "truncated": "SHA-256", "tiny": "truncated", "empty": "not a thors_stream",
               "foreign": "bad magic", "version": "version 99"}
    for name, blob in cases.items():
        p = tmp_path / f"{name}.ckpt"
        p.write_bytes(blob)
        with pytest.raises(ValueError, match=needles[name]):
            StreamingThors.load(p)
    with pytest.raises(FileNotFoundError):
        StreamingThors.load(tmp_path / "missing.ckpt")
    assert data.startswith(MAGIC)


def test_save_failure_leaves_previous_file(tmp_path, monkeypatch):
    st = StreamingThors(fn_cost=4, fp_cost=1)
    feed(st, 50)
    path = tmp_path / "st.ckpt"
    st.save(path)
    before = path.read_bytes()
    feed(st, 10, seed=3)

    def boom(fd):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk on fire"):
        st.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["st.ckpt"]  # no temporary file left


def test_merge_equals_one_summary_of_all_events():
    rng = np.random.default_rng(2)
    shards = [StreamingThors(fn_cost=6, fp_cost=1, window=500) for _ in range(3)]
    alone = StreamingThors(fn_cost=6, fp_cost=1)
    for k in range(3000):
        s, y = float(np.round(rng.random(), 3)), bool(rng.random() < 0.2)
        shards[k % 3].update(s, y)
        if k >= 3000 - 1500:
            alone.update(s, y)
    hub = StreamingThors.merged(shards)
    assert hub.result() == alone.result()
    with pytest.raises(ValueError, match="different"):
        hub.merge(StreamingThors(fn_cost=5, fp_cost=1))
    with pytest.raises(ValueError, match="without window"):
        shards[0].merge(shards[1])
    with pytest.raises(TypeError):
        hub.merge("x")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_sigkill_while_saving_never_leaves_a_broken_checkpoint(tmp_path):
    """A child saves in a loop and is killed with SIGKILL at random moments, 200 times;
    every time, the file loads and equals the state after some prefix of the stream."""
    kills = int(os.environ.get("THORS_CRASH_KILLS", "200"))
    window, chunk = 2000, 40
    rng = np.random.default_rng(4)
    total = 400_000
    S = np.where(rng.random(total) < 0.5, np.round(rng.random(total), 3), rng.random(total))
    Y = rng.random(total) < 0.1
    path = tmp_path / "live.ckpt"
    StreamingThors(fn_cost=9, fp_cost=1, window=window).save(path)
    rnd = random.Random(1)
    seen_counts = set()
    mid_write = 0
    sl, yl = S.tolist(), Y.tolist()
    for _ in range(kills):
        start = StreamingThors.load(path).n_updates
        pid = os.fork()
        if pid == 0:  # child: continue the stream from the saved state, saving every chunk
            code = 0
            try:
                st = StreamingThors.load(path)
                k = st.n_updates
                while k + chunk <= total:
                    for i in range(k, k + chunk):
                        st.update(sl[i], yl[i])
                    k += chunk
                    st.save(path)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        time.sleep(rnd.uniform(0.0, 0.03))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) or os.WEXITSTATUS(status) == 0, "child failed on its own"
        got = StreamingThors.load(path)  # must never raise
        k = got.n_updates
        assert k >= start and k % chunk == 0
        ref = StreamingThors(fn_cost=9, fp_cost=1, window=window)
        if k:
            ref.update_many(S[:k], Y[:k])
        assert state_of(got)[:6] == state_of(ref)[:6]
        seen_counts.add(k)
        for p in tmp_path.iterdir():  # a writer killed mid-save leaves its temporary file
            if p.name != path.name:
                p.unlink()
                mid_write += 1
    assert len(seen_counts) > kills // 4, "the child hardly ever got to save"
    assert mid_write > 0, "no kill landed during a save"
    print(f"{kills} kills, {mid_write} during a save, {len(seen_counts)} distinct saved states", file=sys.stderr)


def test_thors_classifier_thresholding_checkpoint(tmp_path):
    from river import datasets, linear_model, preprocessing

    from thors_stream.river import ThorsClassifier

    def make():
        return ThorsClassifier(preprocessing.StandardScaler() | linear_model.LogisticRegression(),
                               fn_cost=20, fp_cost=1, window=500, warm_up=50)

    a = make()
    data = list(datasets.Phishing())
    for i, (x, _) in enumerate(data[:600]):
        a.predict_one(x, key=f"k{i}")
        if i >= 20:  # labels arrive 20 events late
            a.learn_one(data[i - 20][0], data[i - 20][1], key=f"k{i - 20}")
    path = tmp_path / "thr.ckpt"
    a.save_thresholding(path)
    b = make()
    b.classifier = a.classifier.clone()  # the model is saved separately in practice
    b.load_thresholding(path)
    assert b.threshold == a.threshold and b.n_pending == a.n_pending == 20
    assert state_of(b.thors) == state_of(a.thors)
    for i in range(580, 600):  # the delayed labels still find their decision scores
        b.learn_one(data[i][0], data[i][1], key=f"k{i}")
    assert b.n_pending == 0
    wrong = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=21, fp_cost=1, window=500, warm_up=50)
    with pytest.raises(ValueError, match="written with"):
        wrong.load_thresholding(path)
    a.predict_one(data[0][0], key=frozenset({1}))
    with pytest.raises(TypeError, match="stores keys that are str, int, float"):
        a.save_thresholding(tmp_path / "x.ckpt")
    assert not (tmp_path / "x.ckpt").exists()
