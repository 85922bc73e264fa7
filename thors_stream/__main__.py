"""``python -m thors_stream``: the ``thors`` command line (see :mod:`thors_stream.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
