"""The examples run and print what they promise (reduced sizes where they take long)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(name, env=None, timeout=300):
    return subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, check=False)


def test_quickstart():
    p = run("quickstart.py")
    assert p.returncode == 0, p.stderr
    assert "river.utils.Rolling agrees: True" in p.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="uses SIGKILL")
def test_fraud_loop_survives_a_kill():
    p = run("fraud_loop.py", env={"THORS_FRAUD_PER_DAY": "80", "THORS_FRAUD_PAUSE": "0.2",
                                           "THORS_FRAUD_RELEASE_EVERY": "10"})
    assert p.returncode == 0, p.stderr
    assert "worker killed with SIGKILL" in p.stdout
    assert "identical to an uninterrupted run: True" in p.stdout
    assert "| THORS (streaming) |" in p.stdout
    assert "| nightly release (segments, guard rails) |" in p.stdout
    assert "release job nights: published" in p.stdout and "refused: too few labels" in p.stdout
    assert "last release file (schema-valid): domestic:" in p.stdout
    assert "under progressive_money" in p.stdout and "| online logistic regression | re-scored" in p.stdout
