"""Checkpoints: a versioned, self-checking file format, written atomically.

Layout of a checkpoint file (all integers little-endian)::

    offset  size  content
    0       8     magic b"THORSCKP"
    8       2     format version (uint16), currently 1
    10      2     reserved, 0
    12      4     header length H (uint32)
    16      H     header: UTF-8 JSON object (below)
    16+H    P     payload: the arrays' raw bytes, back to back, little-endian
    16+H+P  32    SHA-256 of every byte before it

The header holds ``kind`` (the class saved), ``library`` (the writer's version),
``params`` (constructor arguments), ``state`` (scalars), and ``arrays``: a list of
``{"name", "dtype", "shape", "offset", "nbytes"}`` locating each array in the payload.
Non-finite floats in ``params``/``state`` are written as the strings ``"inf"``,
``"-inf"`` and ``"nan"``. Readers reject an unknown magic, a newer version, a bad
checksum (truncated or corrupt file) or an inconsistent header with ``ValueError``.

Writes go to a temporary file in the same directory, are flushed and ``fsync``-ed,
then renamed over the target (atomic on POSIX) and the directory is ``fsync``-ed: a
crash at any moment leaves either the previous checkpoint or the new one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"THORSCKP"
VERSION = 1
_FIXED = struct.Struct("<8sHHI")
_DIGEST = 32

__all__ = ["MAGIC", "VERSION", "read_checkpoint", "write_checkpoint"]


def _encode(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def write_checkpoint(
    path: str | os.PathLike[str], kind: str, params: dict[str, Any], state: dict[str, Any],
    arrays: dict[str, np.ndarray],
) -> None:
    """Write one checkpoint file atomically (temporary file, fsync, rename, fsync dir)."""
    from . import __version__

    descr, offset, chunks = [], 0, []
    for name, arr in arrays.items():
        a = np.ascontiguousarray(arr)
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        b = a.tobytes()
        descr.append({"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "offset": offset, "nbytes": len(b)})
        chunks.append(b)
        offset += len(b)
    header = json.dumps(
        {"kind": kind, "library": f"thors_stream {__version__}", "params": _encode(params),
         "state": _encode(state), "arrays": descr},
        allow_nan=False, separators=(",", ":"),
    ).encode("utf-8")
    h = hashlib.sha256()
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            for part in (_FIXED.pack(MAGIC, VERSION, 0, len(header)), header, *chunks):
                h.update(part)
                f.write(part)
            f.write(h.digest())
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


def read_checkpoint(path: str | os.PathLike[str], kind: str) -> tuple[dict, dict, dict[str, np.ndarray]]:
    """Read and verify a checkpoint; return ``(params, state, arrays)``.

    Raises ``ValueError`` naming the file and the problem for anything that is not
    an intact checkpoint of ``kind`` written by a supported format version.
    """
    p = Path(path)
    data = p.read_bytes()
    where = f"checkpoint {str(p)!r}"
    if len(data) < _FIXED.size + _DIGEST or data[:8] != MAGIC:
        if data[:8] == MAGIC:
            raise ValueError(f"{where} is truncated ({len(data)} bytes)")
        raise ValueError(f"{where} is not a thors_stream checkpoint (bad magic {data[:8]!r})")
    _, version, _, hlen = _FIXED.unpack_from(data)
    if version > VERSION or version < 1:
        raise ValueError(f"{where} has format version {version}; this library reads versions 1 to {VERSION}")
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        raise ValueError(f"{where} is corrupt or truncated (SHA-256 mismatch)")
    try:
        header = json.loads(body[_FIXED.size : _FIXED.size + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{where} has an unreadable header: {exc}") from None
    if header.get("kind") != kind:
        raise ValueError(f"{where} holds a {header.get('kind')!r}, not a {kind!r}")
    payload = body[_FIXED.size + hlen :]
    arrays = {}
    for d in header["arrays"]:
        lo, n = int(d["offset"]), int(d["nbytes"])
        if lo < 0 or lo + n > len(payload):
            raise ValueError(f"{where} has an array {d['name']!r} outside its payload")
        a = np.frombuffer(payload, dtype=np.dtype(d["dtype"]), count=n // np.dtype(d["dtype"]).itemsize, offset=lo)
        arrays[d["name"]] = a.reshape(d["shape"]).copy()
    return _decode(header["params"]), _decode(header["state"]), arrays
