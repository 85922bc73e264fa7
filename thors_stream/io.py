"""Reading labelled scores from files, with errors that point at the line.

CSV is read with the standard library (no dependency). When ``pyarrow`` is
installed (the ``parquet`` extra) CSV parsing uses its multi-threaded reader and
Parquet files can be read; any problem found in that fast path is located again
with the standard-library reader so the error names the exact line.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Events", "InputError", "read_events"]

_TRUE = {"1", "1.0", "true", "t", "yes"}
_FALSE = {"0", "0.0", "false", "f", "no"}


class InputError(ValueError):
    """A problem in an input file; the message names the file and the line."""


@dataclass
class Events:
    """Columns read from a file: scores, labels (bool), optional weights and times (seconds)."""

    scores: np.ndarray
    labels: np.ndarray
    weights: np.ndarray | None = None
    times: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.scores.shape[0])


def _label(text: str) -> bool:
    t = text.strip().lower()
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    raise ValueError(f"label must be 0/1/true/false, got {text!r}")


def _number(text: str, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{what} is not a number: {text!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, got {text!r}")
    return v


def _time(text: str) -> float:
    try:
        return _number(text, "time")
    except ValueError:
        pass
    try:
        return dt.datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(f"time is neither seconds nor an ISO 8601 date-time: {text!r}") from None


def _columns(header: list[str], wanted: dict[str, str | None], path: str) -> dict[str, int]:
    idx = {}
    names = [h.strip() for h in header]
    for role, name in wanted.items():
        if name is None:
            continue
        if name not in names:
            raise InputError(f"{path}: no column {name!r} (the {role} column); columns are {names}")
        idx[role] = names.index(name)
    return idx


def _read_csv_stdlib(path: str, wanted: dict[str, str | None]) -> Events:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise InputError(f"{path}: the file is empty (no header line)") from None
        idx = _columns(header, wanted, path)
        si, yi = idx["score"], idx["label"]
        wi, ti = idx.get("weight"), idx.get("time")
        need = max(idx.values()) + 1
        s: list[float] = []
        y: list[bool] = []
        w: list[float] = []
        t: list[float] = []
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # blank line
            try:
                if len(row) < need:
                    raise ValueError(f"expected at least {need} fields, got {len(row)}")
                s.append(_number(row[si], "score"))
                y.append(_label(row[yi]))
                if wi is not None:
                    v = _number(row[wi], "weight")
                    if v <= 0:
                        raise ValueError(f"weight must be > 0, got {row[wi]!r}")
                    w.append(v)
                if ti is not None:
                    t.append(_time(row[ti]))
            except ValueError as exc:
                raise InputError(f"{path} line {reader.line_num}: {exc}") from None
    if not s:
        raise InputError(f"{path}: no data rows")
    return Events(
        np.array(s, dtype=np.float64), np.array(y, dtype=bool),
        np.array(w, dtype=np.float64) if wi is not None else None,
        np.array(t, dtype=np.float64) if ti is not None else None,
    )


def _read_arrow(path: str, wanted: dict[str, str | None], parquet: bool) -> Events:
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = [c for c in wanted.values() if c is not None]
    if parquet:
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path, columns=cols)
        except (pa.ArrowInvalid, KeyError, OSError) as exc:
            raise InputError(f"{path}: cannot read Parquet columns {cols}: {exc}") from None
    else:
        from pyarrow import csv as pacsv

        opts = pacsv.ConvertOptions(include_columns=cols, strings_can_be_null=False)
        table = pacsv.read_csv(path, convert_options=opts)  # errors are re-located by the caller

    def where(mask: np.ndarray, what: str) -> InputError:
        i = int(np.flatnonzero(mask)[0])
        return InputError(f"{path} row {i + 1}: {what}")

    def numbers(name: str, what: str) -> np.ndarray:
        col = table.column(name)
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise ValueError(f"{what} column {name!r} is not numeric ({col.type})")
        arr = col.to_numpy(zero_copy_only=False).astype(np.float64)
        bad = ~np.isfinite(arr)
        if bad.any():
            raise where(bad, f"{what} must be finite, got {arr[bad][0].item()!r}")
        return arr

    s = numbers(wanted["score"], "score")  # type: ignore[arg-type]
    lab = table.column(wanted["label"])
    if pa.types.is_boolean(lab.type):
        y = lab.to_numpy(zero_copy_only=False).astype(bool)
    elif pa.types.is_integer(lab.type) or pa.types.is_floating(lab.type):
        ya = lab.to_numpy(zero_copy_only=False).astype(np.float64)
        bad = (ya != 0) & (ya != 1)
        if bad.any():
            raise where(bad, f"label must be 0/1/true/false, got {ya[bad][0]!r}")
        y = ya == 1
    else:
        low = pc.utf8_lower(pc.utf8_trim_whitespace(lab.cast(pa.string()))).to_numpy(zero_copy_only=False)
        yt, yf = np.isin(low, list(_TRUE)), np.isin(low, list(_FALSE))
        if not (yt | yf).all():
            raise where(~(yt | yf), "label must be 0/1/true/false")
        y = yt
    w = None
    if wanted.get("weight"):
        w = numbers(wanted["weight"], "weight")  # type: ignore[arg-type]
        if (w <= 0).any():
            raise where(w <= 0, "weight must be > 0")
    t = None
    if wanted.get("time"):
        col = table.column(wanted["time"])
        if pa.types.is_timestamp(col.type):
            t = col.cast(pa.int64()).to_numpy(zero_copy_only=False) / {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}[
                col.type.unit]
        else:
            t = numbers(wanted["time"], "time")  # type: ignore[arg-type]
    if s.shape[0] == 0:
        raise InputError(f"{path}: no data rows")
    return Events(s, y, w, t)


def read_events(
    path: str | os.PathLike[str], *, score_col: str, label_col: str, weight_col: str | None = None,
    time_col: str | None = None, engine: str = "auto",
) -> Events:
    """Read scores, labels (and weights, times) from a CSV (with a header) or Parquet file.

    Labels may be 0/1/true/false (any case); times seconds or ISO 8601 date-times.
    ``engine``: ``"auto"`` (pyarrow when installed), ``"python"`` (standard library)
    or ``"pyarrow"``. Bad content raises :class:`InputError` naming the file and the
    line (CSV) or row (Parquet). O(rows).

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "v.csv")
    >>> _ = open(p, "w").write("score,fraud\\n0.9,1\\n0.2,0\\n0.4,yes\\n")
    >>> read_events(p, score_col="score", label_col="fraud", engine="python").labels.tolist()
    [True, False, True]
    >>> _ = open(p, "w").write("score,fraud\\n0.9,1\\n0.2,maybe\\n")
    >>> read_events(p, score_col="score", label_col="fraud", engine="python")
    Traceback (most recent call last):
    ...
    thors_stream.io.InputError: ... line 3: label must be 0/1/true/false, got 'maybe'
    """
    p = str(path)
    if not Path(p).exists():
        raise InputError(f"{p}: no such file")
    wanted = {"score": score_col, "label": label_col, "weight": weight_col, "time": time_col}
    parquet = p.endswith((".parquet", ".pq"))
    if engine not in ("auto", "python", "pyarrow"):
        raise ValueError(f"engine must be 'auto', 'python' or 'pyarrow', got {engine!r}")
    use_arrow = engine == "pyarrow" or parquet
    if engine == "auto" and not parquet:
        try:
            import pyarrow

            use_arrow = True
        except ImportError:
            use_arrow = False
    if use_arrow:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(
                f"{p}: reading {'Parquet' if parquet else 'with engine=pyarrow'} needs pyarrow: "
                "pip install 'thors_stream[parquet]'"
            ) from None
        if parquet:
            return _read_arrow(p, wanted, parquet=True)
        try:
            return _read_arrow(p, wanted, parquet=False)
        except Exception:  # locate the problem line with the exact reader
            return _read_csv_stdlib(p, wanted)
    return _read_csv_stdlib(p, wanted)
