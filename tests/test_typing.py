"""The package type-checks: ``mypy --strict`` (configured in pyproject.toml) passes on it.

The package ships ``py.typed``, so its annotations are a promise to every user's type
checker; this test keeps them true. Skipped only when mypy is not installed (it is in the
``test`` extra).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_mypy_strict_passes_on_the_package():
    pytest.importorskip("mypy", reason="mypy is in the test extra")
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "[tool.mypy]" in config and "strict = true" in config
    run = subprocess.run([sys.executable, "-m", "mypy", "thors_stream"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_the_package_ships_its_type_information():
    pkg = ROOT / "thors_stream"
    assert (pkg / "py.typed").exists() and (pkg / "_ctree.pyi").exists()
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"py.typed"' in config and '"_ctree.pyi"' in config
