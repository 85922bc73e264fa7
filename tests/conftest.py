import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

# One BLAS thread for the whole suite (and the subprocesses it starts), set before numpy or scipy
# load their BLAS: the tests' matrices are small, and on a 2-core machine OpenBLAS's threads
# competing with each other and with pytest made a small scikit-learn fit 10-20x slower
# (tests/test_sklearn.py: 26 s with the default threads, 7 s with one).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from hypothesis import HealthCheck, settings  # noqa: E402 - after the BLAS limits above

sys.path.insert(0, os.path.dirname(__file__))

settings.register_profile(
    "default", deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# a BLAS already loaded before this file ran (by a plugin importing numpy) is limited as well;
# threadpoolctl comes with scikit-learn (the test extra installs it)
try:
    from threadpoolctl import threadpool_limits as _threadpool_limits
except ImportError:  # pragma: no cover - the test extra installs it
    _threadpool_limits = None
if _threadpool_limits is not None:
    _BLAS_LIMIT = _threadpool_limits(limits=1, user_api="blas")


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The documentation site, built once per test run (``mkdocs build --strict``, several seconds)
    for the tests that need it (tests/test_docs.py, tests/test_user_pages.py): ``proc`` (the
    finished build), ``site`` (its directory) and ``seconds`` (its wall time)."""
    site = tmp_path_factory.mktemp("docs_site") / "site"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    return SimpleNamespace(proc=proc, site=site, seconds=time.perf_counter() - t0)
