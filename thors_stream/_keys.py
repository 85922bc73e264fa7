"""Typed keys: how a user's key (a payment id, a segment) is written down and read back.

Two encodings, one for each place keys go:

- :func:`encode_key` / :func:`decode_key`: ``[tag, value]`` lists for JSON headers (the
  checkpoint rules): the key's type survives exactly (``1``, ``1.0`` and ``True`` come back
  as they were given).
- :func:`db_key`: the value a key is *looked up by* in the pending store, as SQLite holds it,
  plus its tagged form when the type would not survive the column. Keys that are equal in
  Python (``1 == 1.0 == True``, ``(1, "a") == (1.0, "a")``) are one key, as in a ``dict``:
  they get the same lookup value.

>>> encode_key(("tx", 7, b"\\x01"))
['t', [['s', 'tx'], ['i', 7], ['y', '01']]]
>>> decode_key(encode_key(("tx", 7, b"\\x01")), "key", "here")
('tx', 7, b'\\x01')
>>> db_key("tx-1"), db_key(7), db_key(7.0), db_key(True)
(('tx-1', None), (7, None), (7, '["f",7.0]'), (1, '["b",true]'))
"""

from __future__ import annotations

import json
import math
import numbers
from typing import Any

import numpy as np

__all__ = ["KEY_DEPTH", "db_key", "decode_db_key", "decode_key", "encode_key"]

KEY_DEPTH = 32  # tuples nested deeper are not stored
_I64 = 2**63


def encode_key(k: Any, depth: int = 0) -> list[Any]:
    """A key as ``[tag, value]``: its type survives a JSON header exactly.

    Tags: ``"s"`` str, ``"i"`` int, ``"f"`` float (non-finite ones are tagged again by
    the checkpoint writer), ``"b"`` bool, ``"y"`` bytes (hex), ``"n"`` None, ``"t"``
    tuple (a list of tagged items). Anything else raises ``TypeError``. O(size of the key).
    """
    if isinstance(k, str):
        return ["s", str(k)]
    if isinstance(k, (bool, np.bool_)):
        return ["b", bool(k)]
    if isinstance(k, numbers.Integral):
        return ["i", int(k)]
    if isinstance(k, numbers.Real):
        return ["f", float(k)]
    if isinstance(k, bytes):
        return ["y", k.hex()]
    if k is None:
        return ["n", None]
    if isinstance(k, tuple) and depth < KEY_DEPTH:
        return ["t", [encode_key(v, depth + 1) for v in k]]
    raise TypeError(
        f"save_thresholding stores keys that are str, int, float, bool, bytes, None or tuples of these "
        f"(nested at most {KEY_DEPTH} deep), got {k!r}"[:400]
    )


def decode_key(v: Any, field: str, where: str, depth: int = 0) -> Any:
    """Undo :func:`encode_key`; ``ValueError`` naming ``where`` and ``field`` for anything
    else. O(size of the key)."""
    if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str):
        tag, x = v
        if tag == "s" and type(x) is str:
            return x
        if tag == "i" and type(x) is int:
            return x
        if tag == "f" and type(x) is float:
            return x
        if tag == "b" and type(x) is bool:
            return x
        if tag == "n" and x is None:
            return None
        if tag == "y" and type(x) is str:
            try:
                return bytes.fromhex(x)
            except ValueError:
                pass
        if tag == "t" and type(x) is list and depth < KEY_DEPTH:
            return tuple(decode_key(e, f"{field}[{i}]", where, depth + 1) for i, e in enumerate(x))
    raise ValueError(f"{where} is invalid: {field} must be a tagged key [tag, value], got {v!r}"[:400])


def _canonical(k: Any, depth: int) -> list[Any]:
    """The tagged form of the *equality class* of ``k``: numbers equal in Python get one form
    (an integral number is ``["i", n]``, bools included), tuples element by element."""
    if isinstance(k, str):
        return ["s", str(k)]
    if isinstance(k, (bool, np.bool_, numbers.Integral)):
        return ["i", int(k)]
    if isinstance(k, numbers.Real):
        f = float(k)
        if math.isnan(f):
            raise ValueError("a NaN key is never equal to itself, so its label could not be matched")
        if math.isfinite(f) and f == math.floor(f):
            return ["i", int(f)]
        return ["f", f]
    if isinstance(k, bytes):
        return ["y", k.hex()]
    if k is None:
        return ["n", None]
    if isinstance(k, tuple) and depth < KEY_DEPTH:
        return ["t", [_canonical(v, depth + 1) for v in k]]
    raise TypeError(f"keys must be str, int, float, bool, bytes, None or tuples of these (nested at most "
                    f"{KEY_DEPTH} deep), got {k!r}"[:400])


def _utf8(s: str) -> bool:
    """Whether SQLite can hold ``s`` as TEXT: UTF-8 has no form for a lone surrogate
    (``"\\ud800"``), which JSON escapes instead."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def db_key(k: Any) -> tuple[Any, str | None]:
    """``(lookup value, tagged form or None)`` of the key ``k`` for an SQLite column without
    type affinity: a ``str`` is itself (TEXT; one with a lone surrogate, which UTF-8 cannot
    encode, a BLOB as below), an integral number in the int64 range an
    INTEGER, any other finite or infinite float a REAL, and everything else (bytes, None,
    tuples, larger integers) a BLOB ``b"j"`` + the canonical tagged JSON (its own type, so it
    can never equal a TEXT, INTEGER or REAL). The tagged form (:func:`encode_key`, as JSON) is
    kept when the lookup value would not give the key back with its type. A NaN key raises
    ``ValueError``; a key of another type ``TypeError``. O(size of the key)."""
    t = type(k)
    if t is str and (k.isascii() or _utf8(k)):
        return k, None
    if t is int and -_I64 <= k < _I64:
        return k, None
    c = _canonical(k, 0)
    if c[0] == "s" and _utf8(c[1]):
        v: Any = c[1]
    elif c[0] == "i" and -_I64 <= c[1] < _I64:
        v = c[1]
    elif c[0] == "f":
        v = c[1]
    else:
        v = b"j" + json.dumps(c, separators=(",", ":"), allow_nan=True).encode()
    tagged = encode_key(k)
    return v, None if tagged == c else json.dumps(tagged, separators=(",", ":"), allow_nan=True)


def decode_db_key(v: Any, tagged: str | None, where: str) -> Any:
    """The key :func:`db_key` stored as ``(v, tagged)``; ``ValueError`` naming ``where`` for a
    value no key gives. O(size of the key)."""
    if tagged is not None:
        try:
            raw = json.loads(tagged)
        except ValueError:
            raise ValueError(f"{where} is invalid: a stored key's type tag is not JSON: {tagged[:80]!r}") from None
        return decode_key(raw, "key", where)
    if type(v) in (str, int, float):
        return v
    if type(v) is bytes and v[:1] == b"j":
        try:
            raw = json.loads(v[1:])
        except ValueError:
            raise ValueError(f"{where} is invalid: a stored key is not JSON: {v[:80]!r}") from None
        if isinstance(raw, list) and raw[:1] == ["i"] and type(raw[1]) is int:
            return raw[1]
        return decode_key(raw, "key", where)
    raise ValueError(f"{where} is invalid: a stored key {v!r} has no type tag"[:400])
