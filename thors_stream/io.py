"""Reading labelled scores from files, with errors that name the file and the line.

One set of rules, the same whichever reader runs (``engine``):

* **Input**: a regular file, or ``-`` for standard input (read to its end first).
  A directory, FIFO, device or socket is refused before it is opened (no blocking).
* **Compression**: gzip (magic bytes ``1f 8b``) and zstd (``28 b5 2f fd``; decompressed by
  pyarrow's codec, the ``parquet`` extra) are read transparently, found by their magic
  bytes whatever the file is called, from a file or standard input, by either engine; a
  corrupt or truncated stream is refused naming the file.
* **Format**: Parquet when the content starts with the magic bytes ``PAR1``, whatever
  the file is called; anything else is CSV with a header line. A file named
  ``*.parquet``/``*.pq`` without the magic is refused. Content that is neither is refused
  with what it looks like: another compression (bzip2, xz, LZ4, .Z), an archive (ZIP or
  .xlsx, 7-Zip, RAR, tar), an old .xls, Arrow/Feather, Avro, SQLite, HDF5, NumPy, PDF or
  image file, UTF-16 text, or binary data (NUL or control bytes in its first 4 KiB).
* **CSV**: UTF-8 (a byte-order mark is skipped); a used field that is not UTF-8 is
  refused, naming the line. No field may be longer than :data:`FIELD_LIMIT` characters
  (the standard library's limit), in any column. Blank lines are skipped; a row may have
  more fields than the header, not fewer.
* **Labels**: exactly ``0``, ``1``, ``true``, ``false`` (any case, surrounding spaces
  ignored), and ``0.0``/``1.0`` (also ``1.00``: what pandas writes for a float column);
  ``yes``, ``no``, ``t``, ``0.5``, ``1e0``, empty are refused. A Parquet label column may
  also be boolean, integer 0/1 or float 0.0/1.0 (any other value, NaN included, is refused
  naming the row).
* **Scores, weights, costs**: finite numbers; weights and per-event costs > 0 (an error
  names the column); with ``probability=True`` scores lie in ``[0, 1]``.
* **Times**: a number of seconds, or an ISO 8601 date or date-time. A date-time without a
  UTC offset is **UTC** (never the machine's local time zone, so ``TZ`` does not matter).
  Parquet timestamps (naive ones are UTC too), dates and numbers are read as such. When the
  file has date-times, every time must lie in the years 1 to 9999 once converted to UTC
  (:data:`TIME_MIN`, :data:`TIME_MAX`: what the outputs can write as a date-time);
  ``9999-12-31T23:00:00-05:00`` (year 10000 in UTC), a Parquet timestamp or date beyond
  those years, or a number of seconds beside date-times beyond them is refused when read,
  naming the file, the line or row, and the column.
* **Nulls** (empty Parquet values) are refused, naming the row.

The standard-library reader is the reference. When ``pyarrow`` is installed (the
``parquet`` extra) a CSV of :data:`AUTO_ARROW_BYTES` (2 MiB) or more is first read with its
multi-threaded reader (a smaller one is read by the reference before pyarrow would have
loaded; ``engine="pyarrow"`` always tries it first); whenever that fast
path meets anything it does not handle exactly like the reference (a bad value, an
over-long field, mixed time formats, a ragged row...), the file is read again with the
standard-library reader, which then gives the answer or the error with its line number.
So both engines accept the same files and return the same numbers.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import os
import re
import stat
import sys
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

__all__ = ["FIELD_LIMIT", "TIME_MAX", "TIME_MIN", "Events", "InputError", "read_events"]

AUTO_ARROW_BYTES = 2 << 20
"""``engine="auto"`` reads CSV with pyarrow from this size on (when installed): below it the
standard library is done before pyarrow would have loaded (same answers either way)."""

FIELD_LIMIT = 131_072
"""Longest CSV field accepted, in characters (Python's ``csv.field_size_limit()`` default)."""

_LABELS = {"0": False, "1": True, "false": False, "true": True, "0.0": False, "1.0": True}
_LABEL_RULE = "label must be 0/1/true/false"  # (0.0 and 1.0 are 0 and 1 written as floats)
_FLOAT_LABEL = re.compile(r"([01])\.0+")  # 1.0, 1.00: what pandas writes for a float column of 0/1
TIME_MIN = -62135596800.0
"""Earliest time the outputs can write as a date-time: 0001-01-01T00:00:00Z, in seconds since the epoch."""
TIME_MAX = 253402300799.999
"""Latest time the outputs can write as a date-time: 9999-12-31T23:59:59.999Z."""
_UTC = dt.timezone.utc
_PARQUET_MAGIC = b"PAR1"


class InputError(ValueError):
    """A problem in an input file; the message names the file and the line (CSV) or row (Parquet)."""


@dataclass
class Events:
    """Columns read from a file.

    ``scores`` (float64), ``labels`` (bool), optional ``weights`` (float64, > 0) and
    ``times`` (float64 seconds since the Unix epoch, UTC). ``datetimes`` is True when some
    time was written as a date or date-time (ISO 8601 text, a Parquet timestamp or date),
    False when every time was a plain number of seconds.

    Optional extra columns: ``fn_costs``/``fp_costs`` (float64, > 0: per-event costs of a
    missed positive / a false alarm), ``segments`` (object array of ``str``: the segment
    column's text, surrounding spaces removed). ``sha256`` is the hex SHA-256 of the input's
    bytes when asked for (``read_events(..., digest=True)``).
    """

    scores: np.ndarray
    labels: np.ndarray
    weights: np.ndarray | None = None
    times: np.ndarray | None = None
    datetimes: bool = False
    fn_costs: np.ndarray | None = None
    fp_costs: np.ndarray | None = None
    segments: np.ndarray | None = None
    sha256: str | None = None

    def __len__(self) -> int:
        return int(self.scores.shape[0])


class _Fallback(Exception):
    """The pyarrow CSV path met something only the reference reader handles exactly."""


_COMPRESSED = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd"}
"""Magic bytes of the compressions read transparently, and their names."""


def _compression(magic: bytes) -> str | None:
    """``"gzip"``, ``"zstd"`` or ``None``, from a file's first four bytes."""
    return _COMPRESSED.get(magic[:2]) or _COMPRESSED.get(magic[:4])


_SNIFF = 4096  # bytes of content looked at to recognise a format
_DECOMPRESS_FIRST = "decompress it first and read standard input: {tool} -dc FILE | thors ... -"
_NOT_CSV: list[tuple[bytes, str, str]] = [  # magic bytes, what the file looks like, what to do
    (b"BZh", "bzip2-compressed data", _DECOMPRESS_FIRST.format(tool="bzip2")),
    (b"\xfd7zXZ\x00", "xz-compressed data", _DECOMPRESS_FIRST.format(tool="xz")),
    (b"\x04\x22\x4d\x18", "LZ4-compressed data", _DECOMPRESS_FIRST.format(tool="lz4")),
    (b"\x1f\x9d", "compress (.Z) data", _DECOMPRESS_FIRST.format(tool="gzip")),
    (b"\x1f\x8b", "gzip data inside compressed data (compressed twice)", "decompress the outer layer first"),
    (b"\x28\xb5\x2f\xfd", "zstd data inside compressed data (compressed twice)", "decompress the outer layer first"),
    (b"PK\x03\x04", "a ZIP archive (an .xlsx workbook is one)",
     "extract the CSV (unzip -p FILE NAME | thors ... -) or export the sheet as CSV"),
    (b"PK\x05\x06", "an empty ZIP archive", "extract the CSV or export the sheet as CSV"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "extract the CSV first"),
    (b"Rar!\x1a\x07", "a RAR archive", "extract the CSV first"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an OLE2 document (an old .xls workbook?)", "export the sheet as CSV"),
    (b"ARROW1", "an Arrow IPC (Feather) file", "write it as Parquet or CSV"),
    (b"Obj\x01", "an Avro file", "write it as Parquet or CSV"),
    (b"SQLite format 3\x00", "an SQLite database", "export the table as CSV"),
    (b"%PDF-", "a PDF document", "give the data as CSV or Parquet"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file", "write the table as Parquet or CSV"),
    (b"\x93NUMPY", "a NumPy .npy array", "write it as CSV (numpy.savetxt) or Parquet"),
    (b"\x89PNG", "a PNG image", "give the data as CSV or Parquet"),
    (b"\xff\xd8\xff", "a JPEG image", "give the data as CSV or Parquet"),
    (b"\xff\xfe", "UTF-16 text (little-endian)", "save it as UTF-8 (iconv -f UTF-16 -t UTF-8 FILE | thors ... -)"),
    (b"\xfe\xff", "UTF-16 text (big-endian)", "save it as UTF-8 (iconv -f UTF-16 -t UTF-8 FILE | thors ... -)"),
]


def _check_text(name: str, head: bytes, compression: str | None) -> None:
    """Refuse content that is not CSV text (the first bytes of a file that is not Parquet): a
    known binary or compressed format named, or binary data (NUL or control bytes). O(len(head))."""
    inside = f"{compression}-compressed, and the content " if compression else ""
    start = repr(head[:16]) + ("..." if len(head) > 16 else "")
    for magic, what, todo in _NOT_CSV:
        if head.startswith(magic):
            if magic == b"BZh" and not head[3:4].isdigit():
                continue
            raise InputError(f"{name}: not CSV or Parquet: {inside}looks like {what} (it starts with {start}); {todo}")
    if head[257:262] == b"ustar":
        raise InputError(f"{name}: not CSV or Parquet: {inside}looks like a tar archive; extract the CSV first "
                         "(tar -xOf FILE NAME | thors ... -)")
    controls = sum(head.count(bytes([c])) for c in range(32) if c not in (9, 10, 12, 13))
    nul = b"\x00" in head
    if nul or controls > len(head) // 100:
        raise InputError(f"{name}: not CSV or Parquet: {inside}looks like binary data ({'NUL' if nul else 'control'} "
                         f"bytes; it starts with {start}); give the data as CSV text (UTF-8) or Parquet")


class _Decompressed(io.RawIOBase):
    """A decompressing byte stream whose corrupt or truncated data raises :class:`InputError`
    naming the file (instead of a decompressor's exception at some later read)."""

    def __init__(self, stream: Any, name: str, kind: str) -> None:
        super().__init__()
        self._f, self._name, self._kind = stream, name, kind

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        import zlib

        try:
            data = self._f.read(len(b))
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            raise InputError(f"{self._name}: {self._kind}-compressed, but the compressed data is corrupt or "
                             f"truncated ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
        n = len(data)
        b[:n] = data
        return n

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            super().close()


def _zstd_stream(raw: Any, name: str) -> Any:
    """A zstd-decompressing stream over ``raw`` (pyarrow's codec), or :class:`InputError` saying what is needed."""
    try:
        import pyarrow as pa
    except ImportError:
        raise InputError(f"{name}: zstd-compressed; reading zstd needs pyarrow: pip install 'thors_stream[parquet]' "
                         "(or decompress it first: zstd -dc FILE | thors ... -)") from None
    return pa.input_stream(pa.PythonFile(raw, mode="r"), compression="zstd")


@dataclass(frozen=True)
class _Source:
    """Where the bytes come from: a regular file (``path``) or standard input (``data``), and
    how they are compressed (``compression``: ``"gzip"``, ``"zstd"`` or ``None``, from the magic bytes)."""

    name: str
    path: str | None = None
    data: bytes | None = None
    compression: str | None = None

    def raw(self) -> IO[bytes]:
        """The bytes as given (compressed for a compressed file)."""
        return io.BytesIO(self.data) if self.data is not None else open(self.path, "rb")  # type: ignore[arg-type]

    def open(self) -> IO[bytes]:
        """The content (decompressed)."""
        raw = self.raw()
        if self.compression is None:
            return raw
        import gzip

        try:
            gz = self.compression == "gzip"
            inner = gzip.GzipFile(fileobj=raw, mode="rb") if gz else _zstd_stream(raw, self.name)
        except BaseException:
            raw.close()
            raise
        return io.BufferedReader(_Decompressed(inner, self.name, self.compression), 1 << 16)

    def size(self) -> int:
        """The content's size in bytes, estimated for a compressed input (four times the compressed size)."""
        raw = len(self.data) if self.data is not None else os.path.getsize(self.path)  # type: ignore[arg-type]
        return raw * 4 if self.compression else raw

    def head(self, n: int) -> bytes:
        if self.data is not None and self.compression is None:
            return self.data[:n]
        with self.open() as f:
            return f.read(n)

    def arrow(self) -> Any:
        """A pyarrow-readable stream of the content (decompressed by pyarrow's codecs)."""
        import pyarrow as pa

        base = pa.BufferReader(self.data) if self.data is not None else self.path
        if self.compression is None:
            return base
        return pa.input_stream(base, compression=self.compression)

    def arrow_file(self) -> Any:
        """A random-access pyarrow file of the content (a compressed input is decompressed into memory)."""
        import pyarrow as pa

        if self.compression is None:
            return self.arrow()
        with self.open() as f:
            return pa.BufferReader(f.read())


def _open_source(path: str) -> _Source:
    """Check the input without opening it (a FIFO would block), or read standard input for ``-``."""
    if path == "-":
        stdin = sys.stdin
        if stdin is None:
            raise InputError("-: there is no standard input")
        buf = getattr(stdin, "buffer", None)
        data = buf.read() if buf is not None else stdin.read().encode("utf-8", "surrogateescape")
        return _Source("<stdin>", data=data, compression=_compression(data[:4]))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file (a FIFO, device or socket); use - to read standard input")
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise InputError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    return _Source(path, path=path, compression=_compression(magic))


def _show(text: str, limit: int = 40) -> str:
    """``repr`` of a field, shortened for messages."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"... ({len(text):,} characters)"


def _not_utf8(text: str) -> bool:
    """Whether a field decoded with ``surrogateescape`` held bytes that are not UTF-8."""
    return any("\udc80" <= ch <= "\udcff" for ch in text)


def _bad(text: str, what: str, why: str) -> ValueError:
    if _not_utf8(text):
        raw = text.encode("utf-8", "surrogateescape")
        shown = repr(raw[:40]) + ("..." if len(raw) > 40 else "")
        return ValueError(f"{what} is not UTF-8 text: {shown}")
    return ValueError(why)


def _label(text: str) -> bool:
    t = text.strip().lower()
    v = _LABELS.get(t)
    if v is None and (m := _FLOAT_LABEL.fullmatch(t)) is not None:
        v = m.group(1) == "1"
    if v is None:
        raise _bad(text, "label", f"{_LABEL_RULE}, got {_show(text)}")
    return v


def _number(text: str, what: str) -> float:
    try:
        if not text.isascii() or "_" in text:  # Python-only syntax (1_000, Arabic-Indic digits): arrow refuses it
            raise ValueError
        v = float(text)
    except ValueError:
        raise _bad(text, what, f"{what} is not a number: {_show(text)}") from None
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, got {_show(text)}")
    return v


def _time(text: str) -> tuple[float, bool]:
    """Seconds since the epoch and whether ``text`` was a date-time (naive = UTC)."""
    try:
        return _number(text, "time"), False
    except ValueError:
        pass
    t = text.strip()
    if t[-1:] in ("Z", "z"):  # Python 3.10's fromisoformat does not know "Z"
        t = t[:-1] + "+00:00"
    try:
        d = dt.datetime.fromisoformat(t)
    except ValueError:
        raise _bad(text, "time", f"time is neither seconds nor an ISO 8601 date-time: {_show(text)}") from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=_UTC)
    ts = d.timestamp()
    if not TIME_MIN <= ts <= TIME_MAX:
        raise ValueError(f"time {_show(text)} is outside the years 1 to 9999 once converted to UTC, which the "
                         "outputs (UTC date-times) cannot write")
    return ts, True


def _far_message(shown: str) -> str:
    return (f"time {shown} is outside the years 1 to 9999 in UTC; the file has date-times, so every time is "
            "written as one, and this one cannot be")


def _columns(header: list[str], wanted: dict[str, str | None], name: str) -> dict[str, int]:
    idx = {}
    names = [h.strip() for h in header]
    for role, col in wanted.items():
        if col is None:
            continue
        if col not in names:
            raise InputError(f"{name}: no column {col!r} (the {role} column); columns are {names}")
        if names.count(col) > 1:  # which one is meant? (every reader refuses it alike)
            raise InputError(f"{name}: the column {col!r} appears {names.count(col)} times; name it once")
        idx[role] = names.index(col)
    return idx


def _csv_error(name: str, line: int, exc: csv.Error) -> InputError:
    msg = str(exc)
    if "field larger than field limit" in msg:
        msg = f"a field is longer than {FIELD_LIMIT:,} characters"
    return InputError(f"{name} line {line}: {msg}")


def _proba_message(shown: str, col: str | None) -> str:
    return f"score must be a probability in [0, 1] to decide on the cost margin, got {shown} (column {col!r})"


def _read_csv_stdlib(src: _Source, wanted: dict[str, str | None], probability: bool = False) -> Events:
    """The reference CSV reader (standard library). O(rows). The field limit is
    :data:`FIELD_LIMIT` whatever the process-wide ``csv.field_size_limit`` says (it is set
    for the read and put back after)."""
    old = csv.field_size_limit(FIELD_LIMIT)
    try:
        return _read_csv_stdlib_limited(src, wanted, probability)
    finally:
        csv.field_size_limit(old)


def _read_csv_stdlib_limited(src: _Source, wanted: dict[str, str | None], probability: bool) -> Events:
    name = src.name
    with src.open() as raw:
        f = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="surrogateescape", newline="")
        reader = csv.reader(f)
        try:
            try:
                header = next(reader)
            except StopIteration:
                raise InputError(f"{name}: the file is empty (no header line)") from None
            idx = _columns(header, wanted, name)
            si, yi = idx["score"], idx["label"]
            ti = idx.get("time")
            positive_cols: list[tuple[str, int, list[float]]] = [
                (role, idx[role], []) for role in ("weight", "fn_cost", "fp_cost") if role in idx]
            gi = idx.get("segment")
            g: list[str] = []
            need = len(header)  # a row may have more fields than the header, not fewer (as arrow's reader)
            s: list[float] = []
            y: list[bool] = []
            t: list[float] = []
            dates = False
            far: tuple[int, str] | None = None  # the first time in seconds that no date-time can write
            last = reader.line_num  # the line the previous row ended on
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    last = reader.line_num
                    continue  # blank line
                try:
                    if len(row) < need:
                        if reader.line_num > last + 1 and any("\n" in f or "\r" in f for f in row):
                            raise InputError(f"{name} line {last + 1}: a quoted field opened on this line runs to "
                                             f"line {reader.line_num} (a quote not closed?), leaving {len(row)} of "
                                             f"{need} fields")
                        raise ValueError(f"expected at least {need} fields, got {len(row)}")
                    sv = _number(row[si], "score")
                    if probability and not 0.0 <= sv <= 1.0:
                        raise ValueError(_proba_message(_show(row[si]), wanted["score"]))
                    s.append(sv)
                    y.append(_label(row[yi]))
                    for role, ci, vals in positive_cols:
                        try:
                            v = _number(row[ci], role.replace("_", " "))
                            if v <= 0:
                                raise ValueError(f"{role.replace('_', ' ')} must be > 0, got {_show(row[ci])}")
                        except ValueError as exc:
                            raise ValueError(f"{exc} (column {wanted[role]!r})") from None
                        vals.append(v)
                    if gi is not None:
                        if _not_utf8(row[gi]):
                            raise ValueError("the segment field is not valid UTF-8")
                        g.append(row[gi].strip())
                    if ti is not None:
                        try:
                            tv, isdate = _time(row[ti])
                        except ValueError as exc:
                            raise ValueError(f"{exc} (column {wanted['time']!r})") from None
                        t.append(tv)
                        dates = dates or isdate
                        if far is None and not TIME_MIN <= tv <= TIME_MAX:
                            far = (reader.line_num, row[ti])
                except InputError:
                    raise
                except ValueError as exc:
                    raise InputError(f"{name} line {reader.line_num}: {exc}") from None
                last = reader.line_num
        except csv.Error as exc:
            raise _csv_error(name, reader.line_num, exc) from None
    if not s:
        raise InputError(f"{name}: no data rows")
    if dates and far is not None:
        raise InputError(f"{name} line {far[0]}: {_far_message(_show(far[1]))} (column {wanted['time']!r})")
    extra = {role: np.array(vals, dtype=np.float64) for role, _, vals in positive_cols}
    return Events(
        np.array(s, dtype=np.float64), np.array(y, dtype=bool),
        extra.get("weight"),
        np.array(t, dtype=np.float64) if ti is not None else None,
        dates, extra.get("fn_cost"), extra.get("fp_cost"),
        np.array(g, dtype=object) if gi is not None else None,
    )


def _arrow_header(src: _Source) -> list[str]:
    """The header fields as the reference reader sees them (a single-line header only)."""
    with src.open() as f:
        line = f.readline(4 * FIELD_LIMIT + 2)
    if not line.endswith(b"\n"):
        raise _Fallback
    try:
        return next(csv.reader([line.decode("utf-8-sig")]))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        raise _Fallback from None


def _arrow_seconds(col: Any) -> tuple[np.ndarray, bool]:
    """Times from a column of CSV bytes: all numbers, all naive ISO (UTC) or all ISO with offsets."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), False
    except pa.ArrowException:
        pass
    text = pc.cast(col, pa.string())
    for typ in (pa.timestamp("us"), pa.timestamp("us", tz="UTC")):
        try:
            us = pc.cast(text, typ)
        except pa.ArrowException:
            continue
        return us.cast(pa.int64()).to_numpy(zero_copy_only=False) / 1e6, True
    raise _Fallback


def _read_csv_arrow(src: _Source, wanted: dict[str, str | None], probability: bool = False) -> Events:
    """The fast CSV path (pyarrow, streamed). Raises :class:`_Fallback` for anything the
    reference reader must decide; never an :class:`InputError` of its own. O(rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    header = _arrow_header(src)
    if len(set(header)) != len(header):
        raise _Fallback
    try:
        idx = _columns(header, wanted, src.name)
    except InputError:
        raise _Fallback from None
    si, yi, ti = idx["score"], idx["label"], idx.get("time")
    positive_cols = [(role, idx[role]) for role in ("weight", "fn_cost", "fp_cost") if role in idx]
    gi = idx.get("segment")
    label_keys = _arrow_strings(["0", "false", "0.0", "1", "true", "1.0"])  # (other spellings: the reference)
    convert = pacsv.ConvertOptions(column_types={h: pa.binary() for h in header}, strings_can_be_null=False)
    parts: dict[str, list[np.ndarray]] = {"s": [], "y": [], "t": [], "g": [], "weight": [], "fn_cost": [],
                                          "fp_cost": []}
    dates = False
    for batch in pacsv.open_csv(src.arrow(), convert_options=convert):
        if batch.schema.names != header:
            raise _Fallback
        for col in batch.columns:
            if col.null_count or (len(col) and pc.max(pc.binary_length(col)).as_py() > FIELD_LIMIT):
                raise _Fallback  # bytes >= characters: the reference reader decides
        s = pc.cast(batch.column(si), pa.float64()).to_numpy(zero_copy_only=False)
        if not np.isfinite(s).all() or (probability and not ((s >= 0.0) & (s <= 1.0)).all()):
            raise _Fallback
        pos = pc.index_in(pc.utf8_lower(pc.utf8_trim_whitespace(pc.cast(batch.column(yi), pa.string()))),
                          value_set=label_keys)
        if pos.null_count:
            raise _Fallback
        parts["s"].append(s)
        parts["y"].append(pos.to_numpy(zero_copy_only=False) >= 3)
        for role, ci in positive_cols:
            w = pc.cast(batch.column(ci), pa.float64()).to_numpy(zero_copy_only=False)
            if not (np.isfinite(w) & (w > 0)).all():
                raise _Fallback
            parts[role].append(w)
        if gi is not None:  # not UTF-8: the cast fails and the reference reader decides
            seg = pc.utf8_trim_whitespace(pc.cast(batch.column(gi), pa.string()))
            parts["g"].append(np.asarray(seg.to_pylist(), dtype=object))
        if ti is not None:
            t, isdate = _arrow_seconds(batch.column(ti))
            if not np.isfinite(t).all():
                raise _Fallback
            parts["t"].append(t)
            dates = dates or isdate
    if not parts["s"] or not sum(len(a) for a in parts["s"]):
        raise _Fallback
    if dates and any(((a < TIME_MIN) | (a > TIME_MAX)).any() for a in parts["t"]):
        raise _Fallback  # a time no date-time can write: the reference reader names its line

    def cat(key: str) -> np.ndarray:
        return np.concatenate(parts[key]).astype(np.float64, copy=False)

    have = {role for role, _ in positive_cols}
    return Events(cat("s"), np.concatenate(parts["y"]).astype(bool, copy=False),
                  cat("weight") if "weight" in have else None, cat("t") if ti is not None else None, dates,
                  cat("fn_cost") if "fn_cost" in have else None, cat("fp_cost") if "fp_cost" in have else None,
                  np.concatenate(parts["g"]) if gi is not None else None)


def _read_parquet(src: _Source, wanted: dict[str, str | None], probability: bool = False) -> Events:
    """Read a Parquet file (pyarrow); errors name the file and the row. O(rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    name = src.name
    cols = list(dict.fromkeys(c for c in wanted.values() if c is not None))
    try:
        pf = pq.ParquetFile(src.arrow_file())
        names = pf.schema_arrow.names
        _columns(names, wanted, name)
        table = pf.read(columns=cols)
    except InputError:
        raise
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        raise InputError(f"{name}: cannot read it as Parquet: {str(exc).splitlines()[0]}") from None

    def where(mask: np.ndarray, what: str) -> InputError:
        return InputError(f"{name} row {int(np.flatnonzero(mask)[0]) + 1}: {what}")

    def column(role: str) -> Any:
        col = table.column(wanted[role])
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if col.null_count:
            raise where(pc.is_null(col).to_numpy(zero_copy_only=False), f"{role} is null (empty)")
        return col

    def numeric(col: Any) -> bool:
        t = col.type
        return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))

    def wrong_type(role: str, col: Any, want: str) -> InputError:
        return InputError(f"{name}: the {role} column {wanted[role]!r} has type {col.type}; {want}")

    def numbers(role: str) -> np.ndarray:
        col = column(role)
        if not numeric(col):
            raise wrong_type(role, col, "it must be numeric")
        arr: np.ndarray
        if pa.types.is_decimal(col.type):
            # each decimal rounded correctly (arrow's cast multiplies by 10**-scale, which is
            # not: 0.3 became 0.30000000000000004), so a score reads as the CSV reader reads it
            arr = np.array([float(v) for v in col.to_pylist()], dtype=np.float64)
        else:
            # safe=False: an integer beyond 2**53 rounds to the nearest float64, as the CSV reader does
            arr = col.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)
        bad = ~np.isfinite(arr)
        if bad.any():
            raise where(bad, f"{role} must be finite, got {arr[bad][0].item()!r}")
        return arr

    s = numbers("score")
    if probability:
        out = ~((s >= 0.0) & (s <= 1.0))
        if out.any():
            raise where(out, _proba_message(repr(s[out][0].item()), wanted["score"]))
    lab = column("label")
    if pa.types.is_boolean(lab.type):
        y = lab.to_numpy(zero_copy_only=False).astype(bool)
    elif pa.types.is_integer(lab.type):
        ya = lab.to_numpy(zero_copy_only=False)
        bad = (ya != 0) & (ya != 1)
        if bad.any():
            raise where(bad, f"{_LABEL_RULE}, got {ya[bad][0].item()!r}")
        y = ya == 1
    elif pa.types.is_floating(lab.type):  # what pandas writes for a column of 0/1 with a missing value once
        yf = lab.to_numpy(zero_copy_only=False)
        bad = (yf != 0.0) & (yf != 1.0)
        if bad.any():
            raise where(bad, f"{_LABEL_RULE}, got {yf[bad][0].item()!r}")
        y = yf == 1.0
    elif pa.types.is_string(lab.type) or pa.types.is_large_string(lab.type):
        pos = pc.index_in(pc.utf8_lower(pc.utf8_trim_whitespace(lab)),
                          value_set=_arrow_strings(["0", "false", "0.0", "1", "true", "1.0"])).to_numpy(
                              zero_copy_only=False)
        y = pos >= 3
        for i in np.flatnonzero(np.isnan(pos.astype(np.float64))).tolist():  # other spellings (1.00): the CSV rule
            try:
                y[i] = _label(lab[i].as_py())
            except ValueError as exc:
                raise InputError(f"{name} row {i + 1}: {exc}") from None
    else:
        raise wrong_type("label", lab, "labels must be boolean, integer 0/1, float 0.0/1.0 or text 0/1/true/false")
    pos_cols: dict[str, np.ndarray] = {}
    for role in ("weight", "fn_cost", "fp_cost"):
        if wanted.get(role):
            try:
                w = numbers(role)
            except InputError as exc:
                named = repr(wanted[role]) in str(exc)
                raise InputError(str(exc) if named else f"{exc} (column {wanted[role]!r})") from None
            if (w <= 0).any():
                raise where(w <= 0, f"{role.replace('_', ' ')} must be > 0, got {w[w <= 0][0].item()!r} "
                                    f"(column {wanted[role]!r})")
            pos_cols[role] = w
    segs = None
    if wanted.get("segment"):
        gcol = column("segment")
        try:
            gtext = gcol if pa.types.is_string(gcol.type) or pa.types.is_large_string(gcol.type) else gcol.cast(
                pa.string())
        except pa.ArrowException:
            raise wrong_type("segment", gcol, "segments must be text, integers or booleans") from None
        segs = np.asarray(pc.utf8_trim_whitespace(gtext).to_pylist(), dtype=object)
    t, dates = None, False
    if wanted.get("time"):
        col = column("time")
        typ = col.type
        if pa.types.is_timestamp(typ) or pa.types.is_date(typ):  # a naive timestamp is taken as UTC
            if pa.types.is_timestamp(typ):
                raw = col.cast(pa.int64()).to_numpy(zero_copy_only=False)
                t = raw / {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}[typ.unit]
                unit = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}[typ.unit]
            else:
                raw = col.cast(pa.date32()).cast(pa.int32()).to_numpy(zero_copy_only=False)
                t, unit = raw * 86400.0, "days"
            dates = True
            far = (t < TIME_MIN) | (t > TIME_MAX)
            if far.any():
                i = int(np.flatnonzero(far)[0])
                raise InputError(f"{name} row {i + 1}: time {raw[i].item()} {unit} since 1970-01-01 ({typ}) is outside "
                                 f"the years 1 to 9999, which the outputs (UTC date-times) cannot write "
                                 f"(column {wanted['time']!r})")
        elif numeric(col):
            t = numbers("time")
        elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
            vals = []
            for i, text in enumerate(col.to_pylist()):
                try:
                    tv, isdate = _time(text)
                except ValueError as exc:
                    raise InputError(f"{name} row {i + 1}: {exc} (column {wanted['time']!r})") from None
                vals.append(tv)
                dates = dates or isdate
            t = np.array(vals, dtype=np.float64)
            far = (t < TIME_MIN) | (t > TIME_MAX)
            if dates and far.any():
                i = int(np.flatnonzero(far)[0])
                raise InputError(f"{name} row {i + 1}: {_far_message(_show(col[i].as_py()))} "
                                 f"(column {wanted['time']!r})")
        else:
            raise wrong_type("time", col, "times must be numbers of seconds, timestamps, dates or ISO 8601 text")
    if s.shape[0] == 0:
        raise InputError(f"{name}: no data rows")
    return Events(s, y, pos_cols.get("weight"), None if t is None else np.asarray(t, dtype=np.float64), dates,
                  pos_cols.get("fn_cost"), pos_cols.get("fp_cost"), segs)


def _arrow_strings(values: list[str]) -> Any:
    """A pyarrow string array of ``values``, built from its buffers (``pa.array`` of a list
    imports pandas when it is installed: 0.2 s of start-up for nothing)."""
    import pyarrow as pa

    data = [v.encode("utf-8") for v in values]
    offsets = np.cumsum([0] + [len(d) for d in data], dtype=np.int32)
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(data)))


def _have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def read_events(
    path: str | os.PathLike[str], *, score_col: str, label_col: str, weight_col: str | None = None,
    time_col: str | None = None, engine: str = "auto", fn_cost_col: str | None = None,
    fp_cost_col: str | None = None, segment_col: str | None = None, digest: bool = False,
    probability: bool = False,
) -> Events:
    """Read scores, labels (and weights, times) from a CSV (with a header) or Parquet file.

    ``path`` is a regular file or ``"-"`` for standard input, gzip- or zstd-compressed or not.
    The format is found from the content (Parquet starts with ``PAR1``; other formats are
    refused, named). Labels are exactly 0/1/true/false (any case) or 0.0/1.0;
    times seconds or ISO 8601 (a date-time without offset is UTC). ``engine``: ``"auto"``
    (pyarrow when installed, for inputs of 2 MiB or more), ``"python"`` (standard library) or
    ``"pyarrow"`` for CSV; both
    accept the same files and give the same numbers (see the module docstring for the
    rules); Parquet always needs pyarrow. ``fn_cost_col``/``fp_cost_col`` name optional
    columns of per-event costs (finite, > 0), ``segment_col`` a column of segment names
    (text; surrounding spaces removed); ``digest=True`` also computes the SHA-256 of the
    input's bytes (``Events.sha256``, one more pass over a file); ``probability=True`` requires
    every score to lie in ``[0, 1]`` (scores that are probabilities, to decide on the cost
    margin). Bad content raises :class:`InputError` naming the file and the line (CSV) or row
    (Parquet), and the column for a bad cost, weight or probability. O(rows).

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "v.csv")
    >>> _ = open(p, "w").write("score,fraud\\n0.9,1\\n0.2,0\\n0.4,TRUE\\n")
    >>> read_events(p, score_col="score", label_col="fraud", engine="python").labels.tolist()
    [True, False, True]
    >>> _ = open(p, "w").write("score,fraud\\n0.9,1\\n0.2,yes\\n")
    >>> read_events(p, score_col="score", label_col="fraud", engine="python")
    Traceback (most recent call last):
    ...
    thors_stream.io.InputError: ... line 3: label must be 0/1/true/false, got 'yes'
    """
    if engine not in ("auto", "python", "pyarrow"):
        raise ValueError(f"engine must be 'auto', 'python' or 'pyarrow', got {engine!r}")
    src = _open_source(os.fspath(path))
    wanted = {"score": score_col, "label": label_col, "weight": weight_col, "time": time_col,
              "fn_cost": fn_cost_col, "fp_cost": fp_cost_col, "segment": segment_col}
    ev = _read(src, wanted, engine, probability)
    if digest:
        ev.sha256 = _sha256(src)
    return ev


def _sha256(src: _Source) -> str:
    """Hex SHA-256 of the source's bytes (read in 1 MiB blocks). O(bytes)."""
    import hashlib

    h = hashlib.sha256()
    if src.data is not None:
        h.update(src.data)
    else:
        with src.raw() as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _read(src: _Source, wanted: dict[str, str | None], engine: str, probability: bool = False) -> Events:
    """Dispatch to the Parquet, pyarrow CSV or reference CSV reader (after refusing content that
    is neither: another format, compressed or not, or binary data)."""
    head = src.head(_SNIFF)
    parquet = head[: len(_PARQUET_MAGIC)] == _PARQUET_MAGIC
    if not parquet and src.name.lower().endswith((".parquet", ".pq")):
        raise InputError(f"{src.name}: not a Parquet file (it does not start with PAR1)")
    if not parquet:
        _check_text(src.name, head, src.compression)
    if parquet or engine == "pyarrow":
        if not _have_pyarrow():
            what = "Parquet" if parquet else "with engine=pyarrow"
            raise InputError(f"{src.name}: reading {what} needs pyarrow: pip install 'thors_stream[parquet]'")
        if parquet:
            return _read_parquet(src, wanted, probability)
    if engine == "pyarrow" or (engine == "auto" and src.size() >= AUTO_ARROW_BYTES and _have_pyarrow()):
        try:
            return _read_csv_arrow(src, wanted, probability)
        except Exception:  # anything unusual: the reference reader decides
            pass
    return _read_csv_stdlib(src, wanted, probability)
