"""Checkpoints: a versioned, self-checking file format, written atomically.

Layout of a checkpoint file (all integers little-endian)::

    offset  size  content
    0       8     magic b"THORSCKP"
    8       2     format version (uint16), currently 1
    10      2     flags (uint16): bit 0 set = the trailer is an HMAC-SHA256; other bits 0
    12      4     header length H (uint32)
    16      H     header: UTF-8 JSON object (below)
    16+H    P     payload: the arrays' raw bytes, back to back, little-endian
    16+H+P  32    SHA-256 of every byte before it (flag bit 0: HMAC-SHA256 with the key)

The header holds ``kind`` (the class saved), ``library`` (the writer's version),
``revision`` (the header conventions, currently 2; absent in files written before
it), ``params`` (constructor arguments), ``state`` (scalars), and ``arrays``: a list
of ``{"name", "dtype", "shape", "offset", "nbytes"}`` locating each array in the
payload, in payload order, with no gap and nothing after the last one.

Non-finite floats in ``params``/``state`` are written as ``{"$float": "inf"}``
(``"-inf"``, ``"nan"``): a string is always a string. Files without ``revision``
wrote them as the bare strings ``"inf"``, ``"-inf"``, ``"nan"``; those are still read.

Reading checks, in this order, and raises ``ValueError`` naming the file for any
failure: the path is a regular file (a FIFO, directory, device or socket is refused
before anything is read; at most the file's size is read); the magic; the format
version; the flags; the SHA-256 (or, with ``key``, the HMAC) of everything before the
trailer, so a truncated or corrupt file is caught before its header is parsed; then
the header itself (strict JSON: no ``NaN`` literals, no repeated names), its fields and
types, and every array's name, dtype, shape and position against the payload's length,
*before* any array is built. The classes that read checkpoints then validate every
invariant of their state before building an object (see
:mod:`thors_stream._checkpoint_check`): a checksum only proves the file is intact, not
that whoever computed it wrote a consistent state.

Authenticity: anybody can recompute a SHA-256. Pass ``key=`` (bytes) to
:func:`write_checkpoint` and :func:`read_checkpoint` (and the ``save``/``load``
methods that take it) to use an HMAC-SHA256 trailer instead; a keyed file does not
load without the key, and with a key an unkeyed file is refused.

Writes go to a temporary file in the same directory, are flushed and ``fsync``-ed,
then renamed over the checkpoint's path (atomic on POSIX) and the directory is ``fsync``-ed: a
crash at any moment leaves either the previous checkpoint or the new one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import stat
import struct
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ._checkpoint_check import check_array_table
from ._files import replace_target

MAGIC = b"THORSCKP"
VERSION = 1
REVISION = 2
FLAG_HMAC = 1
_FIXED = struct.Struct("<8sHHI")
_DIGEST = 32
_FLOAT_TAG = "$float"
_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}

__all__ = ["MAGIC", "REVISION", "VERSION", "Checkpoint", "checkpoint_bytes", "parse_checkpoint", "read_checkpoint",
           "read_checkpoint_full", "write_checkpoint"]


class Checkpoint(NamedTuple):
    """A checkpoint read and verified by :func:`read_checkpoint_full`."""

    params: dict[str, Any]
    state: dict[str, Any]
    arrays: dict[str, np.ndarray]
    revision: int  # 1 for files written before the ``revision`` header field
    where: str  # "checkpoint '<path>'", for error messages


def _encode(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {_FLOAT_TAG: "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any, legacy: bool) -> Any:
    """Undo :func:`_encode`; ``legacy`` (files without ``revision``): bare "inf"/"-inf"/"nan"
    strings are floats too."""
    if isinstance(value, dict):
        if len(value) == 1 and _FLOAT_TAG in value:
            tag = value[_FLOAT_TAG]
            if not isinstance(tag, str) or tag not in _NONFINITE:
                raise ValueError(f"bad non-finite float tag {value!r}")
            return _NONFINITE[tag]
        return {k: _decode(v, legacy) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, legacy) for v in value]
    if legacy and isinstance(value, str) and value in _NONFINITE:
        return _NONFINITE[value]
    return value


def _check_key(key: Any) -> bytes | None:
    if key is None:
        return None
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"key must be bytes (an HMAC-SHA256 secret), got {type(key).__name__}")
    raw = bytes(key)
    if not raw:
        raise ValueError("key must not be empty")
    return raw


def _hasher(key: bytes | None) -> Any:
    return hmac.new(key, digestmod=hashlib.sha256) if key is not None else hashlib.sha256()


def checkpoint_bytes(
    kind: str, params: dict[str, Any], state: dict[str, Any], arrays: dict[str, np.ndarray], *,
    key: bytes | None = None,
) -> bytes:
    """One checkpoint of ``kind`` as bytes, in the file format above (what
    :func:`write_checkpoint` writes; :func:`parse_checkpoint` reads it back). O(size).

    >>> import numpy as np
    >>> data = checkpoint_bytes("demo", {"a": 1}, {"b": float("inf")}, {"x": np.arange(3.0)})
    >>> ck = parse_checkpoint(data, "demo", "checkpoint 'demo'")
    >>> ck.params, ck.state, ck.arrays["x"].tolist()
    ({'a': 1}, {'b': inf}, [0.0, 1.0, 2.0])
    """
    return b"".join(_checkpoint_chunks(kind, params, state, arrays, _check_key(key)))


def _checkpoint_chunks(kind: str, params: dict[str, Any], state: dict[str, Any], arrays: dict[str, np.ndarray],
                       key: bytes | None) -> list[bytes]:
    from ._version import __version__

    descr, offset, chunks = [], 0, []
    for name, arr in arrays.items():
        a = np.ascontiguousarray(arr)
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        b = a.tobytes()
        descr.append({"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "offset": offset, "nbytes": len(b)})
        chunks.append(b)
        offset += len(b)
    header = json.dumps(
        {"kind": kind, "library": f"thors_stream {__version__}", "revision": REVISION, "params": _encode(params),
         "state": _encode(state), "arrays": descr},
        allow_nan=False, separators=(",", ":"),
    ).encode("utf-8")
    h = _hasher(key)
    parts = [_FIXED.pack(MAGIC, VERSION, FLAG_HMAC if key is not None else 0, len(header)), header, *chunks]
    for part in parts:
        h.update(part)
    parts.append(h.digest())
    return parts


def write_checkpoint(
    path: str | os.PathLike[str], kind: str, params: dict[str, Any], state: dict[str, Any],
    arrays: dict[str, np.ndarray], *, key: bytes | None = None,
) -> None:
    """Write one checkpoint file atomically (temporary file, fsync, rename, fsync dir).

    ``key``: bytes; the trailer is then an HMAC-SHA256 of the file with this key
    instead of a SHA-256, and :func:`read_checkpoint` needs the same key. Nothing is
    written (the previous file stays) when the header cannot be encoded or any write,
    flush, ``fsync`` or rename fails.
    """
    key = _check_key(key)
    parts = _checkpoint_chunks(kind, params, state, arrays, key)
    target = Path(replace_target(path))  # a symlink's target; never a FIFO or device
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            for part in parts:
                f.write(part)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _FILE_TYPES if test(mode)), "not a regular file")


def _read_regular_file(p: Path, where: str) -> bytearray:
    """The bytes of the regular file ``p``: anything else is refused before it is opened for
    reading (and checked again on the open descriptor); at most its size is read."""
    what = _not_regular(os.stat(p).st_mode)  # FileNotFoundError, PermissionError... pass through
    if what is not None:
        raise ValueError(f"{where} is {what}, not a regular file; refusing to read it")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(p, flags)  # O_NONBLOCK: a FIFO swapped in meanwhile cannot block the open
    try:
        st = os.fstat(fd)
        what = _not_regular(st.st_mode)
        if what is not None:
            raise ValueError(f"{where} is {what}, not a regular file; refusing to read it")
        size = st.st_size
        try:
            buf = bytearray(size)
        except MemoryError:
            raise ValueError(f"{where} is {size} bytes, too large to read into memory") from None
        view, got = memoryview(buf), 0
        while got < size:
            k = os.readv(fd, [view[got:]]) if hasattr(os, "readv") else _read_into(fd, view[got:])
            if k <= 0:
                break  # the file shrank: the checksum will say so
            got += k
        view.release()
        del buf[got:]
        return buf
    finally:
        os.close(fd)


def _read_into(fd: int, view: memoryview) -> int:  # pragma: no cover - platforms without os.readv
    b = os.read(fd, len(view))
    view[: len(b)] = b
    return len(b)


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"repeated name {k!r}")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def read_checkpoint_full(
    path: str | os.PathLike[str], kind: str, *, key: bytes | None = None, literal: tuple[str, ...] = (),
) -> Checkpoint:
    """Read and verify a checkpoint of ``kind``: a :class:`Checkpoint`.

    Raises ``ValueError`` naming the file and the problem for anything that is not an
    intact checkpoint of ``kind`` written by a supported format version (see the module
    docstring for what is checked, and in which order). ``key``: the HMAC-SHA256 key the
    file was written with (then required). ``literal``: top-level ``state`` fields whose
    strings are kept as they are in files without ``revision`` (which wrote non-finite
    floats as bare strings). ``FileNotFoundError``/``PermissionError`` pass through.
    """
    key = _check_key(key)
    p = Path(path)
    where = f"checkpoint {str(p)!r}"
    data = _read_regular_file(p, where)
    return _parse(data, kind, where, key, literal)


def parse_checkpoint(
    data: bytes | bytearray | memoryview, kind: str, where: str, *, key: bytes | None = None,
    literal: tuple[str, ...] = (),
) -> Checkpoint:
    """Verify and read checkpoint bytes (as :func:`checkpoint_bytes` makes them) of ``kind``:
    the checks of :func:`read_checkpoint_full`, with ``where`` naming the bytes' origin in every
    error (e.g. ``"store 'fraud.sqlite' (checkpoint 3)"``). O(size)."""
    return _parse(bytearray(data), kind, where, _check_key(key), literal)


def _parse(data: bytearray, kind: str, where: str, key: bytes | None, literal: tuple[str, ...]) -> Checkpoint:
    if len(data) < _FIXED.size + _DIGEST or data[:8] != MAGIC:
        if data[:8] == MAGIC:
            raise ValueError(f"{where} is truncated ({len(data)} bytes)")
        raise ValueError(f"{where} is not a thors_stream checkpoint (bad magic {bytes(data[:8])!r})")
    _, version, flags, hlen = _FIXED.unpack_from(data)
    if version > VERSION or version < 1:
        raise ValueError(f"{where} has format version {version}; this library reads versions 1 to {VERSION}")
    if flags & ~FLAG_HMAC:
        raise ValueError(f"{where} has unknown flags {flags:#06x}; this library knows only {FLAG_HMAC:#06x} (HMAC)")
    keyed = bool(flags & FLAG_HMAC)
    if keyed and key is None:
        raise ValueError(f"{where} is authenticated with a key (HMAC-SHA256); pass key= to read it")
    if not keyed and key is not None:
        raise ValueError(f"{where} is not authenticated (written without a key), but a key was given; "
                         "refusing an unauthenticated file")
    body, digest = memoryview(data)[:-_DIGEST], bytes(data[-_DIGEST:])
    h = _hasher(key)
    h.update(body)
    if not hmac.compare_digest(h.digest(), digest):
        if keyed:
            raise ValueError(f"{where} fails authentication (HMAC-SHA256 mismatch: wrong key, or a corrupt, "
                             "truncated or forged file)")
        raise ValueError(f"{where} is corrupt or truncated (SHA-256 mismatch)")
    if hlen > len(body) - _FIXED.size:
        raise ValueError(f"{where} has a header length {hlen} beyond its {len(body) - _FIXED.size} bytes")
    try:
        text = bytes(body[_FIXED.size : _FIXED.size + hlen]).decode("utf-8")
        header = json.loads(text, object_pairs_hook=_strict_object, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"{where} has an unreadable header: {exc}") from None
    if not isinstance(header, dict):
        raise ValueError(f"{where} has a header that is not a JSON object ({type(header).__name__})")
    if header.get("kind") != kind:
        raise ValueError(f"{where} holds a {str(header.get('kind'))[:80]!r}, not a {kind!r}")
    known = {"kind", "library", "revision", "params", "state", "arrays"}
    extra = sorted(set(header) - known)
    if extra:
        raise ValueError(f"{where} has unknown header fields {extra}")
    for name, typ in (("library", str), ("params", dict), ("state", dict), ("arrays", list)):
        if name not in header:
            raise ValueError(f"{where} has no header field {name!r}")
        if not isinstance(header[name], typ):
            raise ValueError(f"{where} has a header field {name!r} of type {type(header[name]).__name__}, "
                             f"not {typ.__name__}")
    revision = header.get("revision", 1)  # absent: written before the field existed
    if "revision" in header and (type(revision) is not int or not 2 <= revision <= REVISION):
        raise ValueError(f"{where} has header revision {revision!r}; this library reads 2 to {REVISION}")
    payload = memoryview(body)[_FIXED.size + hlen :]
    table = check_array_table(header["arrays"], kind, len(payload), where)
    arrays = {}
    for name, dtype, shape, offset, nbytes in table:  # sizes checked against the payload above
        a = np.frombuffer(payload, dtype=dtype, count=nbytes // dtype.itemsize, offset=offset)
        arrays[name] = a.reshape(shape).astype(dtype.newbyteorder("="), copy=True)
    legacy = revision < 2
    try:
        params = _decode(header["params"], legacy)
        state = {k: (v if legacy and k in literal else _decode(v, legacy)) for k, v in header["state"].items()}
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{where} has an unreadable header: {exc}") from None
    return Checkpoint(params, state, arrays, revision, where)


def read_checkpoint(
    path: str | os.PathLike[str], kind: str, *, key: bytes | None = None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
    """Read and verify a checkpoint; return ``(params, state, arrays)``.

    Raises ``ValueError`` naming the file and the problem for anything that is not
    an intact checkpoint of ``kind`` written by a supported format version
    (see :func:`read_checkpoint_full`).
    """
    ck = read_checkpoint_full(path, kind, key=key)
    return ck.params, ck.state, ck.arrays
