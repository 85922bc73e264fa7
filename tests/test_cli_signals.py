"""`thors replay` and `thors fit` stopped by SIGTERM or SIGHUP (a `timeout`, a scheduler's stop, a
closed terminal): exit 128 + the signal, one line, the outputs of an earlier run untouched and no
staged file left beside them."""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_stopped_replay_leaves_no_staged_files(tmp_path, sig):
    rng = np.random.default_rng(0)
    n = 400_000
    data = tmp_path / "e.csv"
    with open(data, "w") as f:
        f.write("score,label\n")
        f.writelines(f"{s:.6f},{int(y)}\n" for s, y in zip(rng.random(n), rng.random(n) < 0.1))
    out = tmp_path / "traj.csv"
    out.write_text("an earlier run's trajectory\n")
    proc = subprocess.Popen([sys.executable, "-m", "thors_stream", "replay", str(data), "--score-col", "score",
                             "--label-col", "label", "--fn-cost", "10", "--fp-cost", "1", "--window", "1000",
                             "--out", str(out), "--no-progress"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(".traj") for p in tmp_path.iterdir()):  # writing has begun
        assert proc.poll() is None and time.monotonic() < deadline, "the replay ended before it was stopped"
        time.sleep(0.02)
    proc.send_signal(getattr(signal, sig))
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 128 + getattr(signal, sig)
    assert err.strip().splitlines()[-1] == f"thors: stopped by {sig}"
    assert out.read_text() == "an earlier run's trajectory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.csv", "traj.csv"]
