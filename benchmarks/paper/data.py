"""The three case-study data sets, loaded and checked.

- ``adult``: UCI Adult (``adult.data.gz``), positive class ``>50K``; 6 numeric and
  8 categorical attributes (categoricals are target-encoded per round, see
  :mod:`benchmarks.paper.protocol`).
- ``magic``: UCI MAGIC Gamma Telescope (``magic04.data.gz``), positive class ``h``.
- ``shuttle``: ``river.datasets.Shuttle`` (ships inside river), the stand-in for the
  paper's APS Scania trucks data: every negative is kept and positives are drawn at
  random (once, with a fixed seed) so that negatives outnumber them 59:1.

The two UCI files are checked against the sha256 of their uncompressed bytes given in
the data directory's README; a missing directory or file raises :class:`DataMissingError`,
a file that is present but differs raises :class:`DataCorruptError`.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "DATASETS",
    "FILES",
    "DataCorruptError",
    "DataMissingError",
    "Dataset",
    "check_files",
    "default_data_dir",
    "load",
]

REPO_ROOT = Path(__file__).resolve().parents[2]

SHA256 = {
    "adult.data.gz": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "magic04.data.gz": "e9314b7ebd4b4b59a3b3d65f7316663963777b16a46786877651dbbaa640b36a",
}

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
]
ADULT_CATEGORICAL = {"workclass", "education", "marital-status", "occupation", "relationship", "race", "sex",
                     "native-country"}
MAGIC_COLUMNS = ["fLength", "fWidth", "fSize", "fConc", "fConc1", "fAsym", "fM3Long", "fM3Trans", "fAlpha", "fDist"]

#: Seed of the one-off positive subsample that turns Shuttle into a 59:1 data set.
SHUTTLE_SUBSAMPLE_SEED = 59
SHUTTLE_RATIO = 59


class DataMissingError(RuntimeError):
    """The data directory or one of its files is not there."""


class DataCorruptError(RuntimeError):
    """A data file is present but is not the file the README describes."""


@dataclass
class Dataset:
    """Features, labels and the attribute description of one data set.

    ``X`` is float64 (categoricals as integer codes, one column per attribute);
    ``categorical`` lists the indices of categorical columns and ``categories`` their
    level names (code ``i`` is ``categories[col][i]``); ``y`` is bool (True = positive).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    columns: list[str]
    categorical: list[int] = field(default_factory=list)
    categories: dict[int, list[str]] = field(default_factory=dict)
    note: str = ""

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.y.shape[0])

    @property
    def n_pos(self) -> int:
        """Number of positives."""
        return int(self.y.sum())

    def subset(self, idx: np.ndarray) -> Dataset:
        """The rows ``idx`` as a new :class:`Dataset` (same columns)."""
        return Dataset(self.name, self.X[idx], self.y[idx], self.columns, self.categorical, self.categories, self.note)


def default_data_dir() -> Path:
    """``$THORS_DATA_DIR`` if set, else ``../shared/datasets`` relative to the repository root."""
    env = os.environ.get("THORS_DATA_DIR")
    if env:
        return Path(env)
    return (REPO_ROOT / ".." / "shared" / "datasets").resolve()


def _read_checked(data_dir: Path, fname: str) -> str:
    path = Path(data_dir) / fname
    if not Path(data_dir).is_dir():
        raise DataMissingError(
            f"data directory {data_dir} does not exist; pass --data-dir or set THORS_DATA_DIR "
            f"to the directory holding {', '.join(SHA256)}"
        )
    if not path.is_file():
        raise DataMissingError(f"{path} is missing (expected the gzip file described in the data README)")
    try:
        raw = gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as e:
        raise DataCorruptError(f"{path} is not a readable gzip file: {e}") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SHA256[fname]:
        raise DataCorruptError(
            f"{path}: sha256 of the uncompressed content is {digest}, expected {SHA256[fname]}"
        )
    return raw.decode("ascii")


def load_adult(data_dir: Path) -> Dataset:
    """UCI Adult: 32,561 rows, 14 attributes, positive = ``>50K``."""
    text = _read_checked(data_dir, "adult.data.gz")
    rows = [[f.strip() for f in line.split(",")] for line in text.splitlines() if line.strip()]
    if len(rows) != 32561 or any(len(r) != 15 for r in rows):
        raise DataCorruptError("adult.data: expected 32,561 rows of 15 fields")
    labels = [r[14] for r in rows]
    bad = set(labels) - {"<=50K", ">50K"}
    if bad:
        raise DataCorruptError(f"adult.data: unexpected labels {sorted(bad)}")
    y = np.array([lab == ">50K" for lab in labels])
    X = np.empty((len(rows), 14))
    categorical, categories = [], {}
    for j, col in enumerate(ADULT_COLUMNS):
        vals = [r[j] for r in rows]
        if col in ADULT_CATEGORICAL:
            levels = sorted(set(vals))  # "?" (missing) is a level of its own
            code = {v: i for i, v in enumerate(levels)}
            X[:, j] = [code[v] for v in vals]
            categorical.append(j)
            categories[j] = levels
        else:
            X[:, j] = [float(v) for v in vals]
    return Dataset("adult", X, y, list(ADULT_COLUMNS), categorical, categories,
                   note="UCI Adult, positive = >50K")


def load_magic(data_dir: Path) -> Dataset:
    """UCI MAGIC Gamma Telescope: 19,020 rows, 10 attributes, positive = ``h`` (hadron)."""
    text = _read_checked(data_dir, "magic04.data.gz")
    rows = [line.split(",") for line in text.splitlines() if line.strip()]
    if len(rows) != 19020 or any(len(r) != 11 for r in rows):
        raise DataCorruptError("magic04.data: expected 19,020 rows of 11 fields")
    labels = [r[10] for r in rows]
    bad = set(labels) - {"g", "h"}
    if bad:
        raise DataCorruptError(f"magic04.data: unexpected labels {sorted(bad)}")
    X = np.array([[float(v) for v in r[:10]] for r in rows])
    y = np.array([lab == "h" for lab in labels])
    return Dataset("magic", X, y, list(MAGIC_COLUMNS), note="UCI MAGIC Gamma Telescope, positive = h")


def load_shuttle() -> Dataset:
    """river's Shuttle with positives subsampled (seed :data:`SHUTTLE_SUBSAMPLE_SEED`) to 59:1."""
    try:
        from river import datasets
    except ImportError as e:  # river is a core dependency, so this is unusual
        raise DataMissingError(f"river is needed for the Shuttle data set: {e}") from None
    ds = datasets.Shuttle()
    xs, ys = [], []
    for x, label in ds:
        xs.append([float(x[k]) for k in sorted(x, key=lambda s: int(s[1:]))])
        ys.append(bool(label))
    X, y = np.array(xs), np.array(ys)
    if X.shape != (49097, 9) or int(y.sum()) != 3511:
        raise DataCorruptError(f"river Shuttle: expected 49,097 x 9 with 3,511 positives, got {X.shape}, {y.sum()}")
    neg = np.flatnonzero(~y)
    pos = np.flatnonzero(y)
    n_pos = round(neg.shape[0] / SHUTTLE_RATIO)
    rng = np.random.default_rng(SHUTTLE_SUBSAMPLE_SEED)
    keep = np.sort(np.concatenate([neg, rng.choice(pos, n_pos, replace=False)]))
    cols = [f"f{i}" for i in range(1, 10)]
    return Dataset(
        "shuttle", X[keep], y[keep], cols,
        note=f"river Shuttle, all {neg.shape[0]:,} negatives + {n_pos} of 3,511 positives "
             f"(seed {SHUTTLE_SUBSAMPLE_SEED}), {neg.shape[0] / n_pos:.2f}:1",
    )


DATASETS = ("shuttle", "adult", "magic")
FILES = {"adult": "adult.data.gz", "magic": "magic04.data.gz"}


def check_files(datasets: list[str] | tuple[str, ...], data_dir: Path | None = None) -> None:
    """Raise :class:`DataMissingError` / :class:`DataCorruptError` before any work starts.

    Checks that every file the ``datasets`` need exists and has the README's sha256
    (Shuttle ships with river and needs no file).
    """
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    for name in dict.fromkeys(datasets):
        if name in FILES:
            _read_checked(data_dir, FILES[name])


def load(name: str, data_dir: Path | None = None) -> Dataset:
    """Load one of :data:`DATASETS` (``data_dir`` defaults to :func:`default_data_dir`)."""
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    if name == "adult":
        return load_adult(data_dir)
    if name == "magic":
        return load_magic(data_dir)
    if name == "shuttle":
        return load_shuttle()
    raise ValueError(f"unknown data set {name!r}; expected one of {DATASETS}")
