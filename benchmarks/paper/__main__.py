"""Entry point: ``python -m benchmarks.paper`` (see :mod:`benchmarks.paper.cli`)."""

import os
import sys

# single-threaded BLAS: the machine is shared, and threaded BLAS only adds contention
# for these small problems (must be set before numpy is imported)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __name__ == "__main__":
    from .cli import main

    sys.exit(main())
