"""Hostile checkpoints (issue 13, items 1 and 2): every broken case is refused with a
``ValueError`` naming the file and the field, before any object is built.

Each hostile file is crafted the way an attacker would: save a valid checkpoint,
decode it, change the header or an array, and write it back with a correct SHA-256
(:func:`forge`). The checksum then proves nothing; only validation stands between the
file and a summary that answers wrongly later.
"""

from __future__ import annotations

import copy
import datetime as dt
import errno
import hashlib
import hmac
import json
import math
import os
import socket
import stat
import struct
import tempfile
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst
from strategies import dyadic_weights, labels, tied_scores

from thors_stream import StreamingThors
from thors_stream._backend import available_backends
from thors_stream.checkpoint import MAGIC, read_checkpoint, write_checkpoint

FIXED = struct.Struct("<8sHHI")
KEY = b"a secret shared by the writer and the reader"


# ---------------------------------------------------------------- crafting helpers
def parse(path):
    """``(header, arrays, flags)`` of a checkpoint, read without the library's reader."""
    data = Path(path).read_bytes()
    _, _, flags, hlen = FIXED.unpack_from(data)
    header = json.loads(data[FIXED.size : FIXED.size + hlen])
    payload = data[FIXED.size + hlen : -32]
    arrays = {}
    for d in header["arrays"]:
        dtype = np.dtype(d["dtype"])
        a = np.frombuffer(payload, dtype=dtype, count=d["nbytes"] // dtype.itemsize, offset=d["offset"])
        arrays[d["name"]] = a.reshape(d["shape"]).copy()
    return header, arrays, flags


def forge(path, header, arrays=None, *, table=None, payload=None, version=1, flags=0, key=None, hlen=None):
    """Write ``header`` and ``arrays`` as a checkpoint with a correct SHA-256 (or, with
    ``key``, HMAC): the array table is rebuilt from ``arrays`` unless ``table`` is given;
    ``payload`` (bytes) replaces the arrays' bytes; ``hlen`` lies about the header length."""
    header = dict(header)
    if payload is None:
        descr, chunks, off = [], [], 0
        for name, a in (arrays or {}).items():
            b = np.ascontiguousarray(a).tobytes()
            descr.append({"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "offset": off, "nbytes": len(b)})
            chunks.append(b)
            off += len(b)
        header["arrays"] = descr if table is None else table
        payload = b"".join(chunks)
    elif table is not None:
        header["arrays"] = table
    return forge_bytes(path, json.dumps(header).encode(), payload, version=version, flags=flags, key=key, hlen=hlen)


def forge_bytes(path, header_bytes, payload=b"", *, version=1, flags=0, key=None, hlen=None):
    body = FIXED.pack(MAGIC, version, flags, len(header_bytes) if hlen is None else hlen) + header_bytes + payload
    digest = hmac.new(key, body, hashlib.sha256).digest() if key is not None else hashlib.sha256(body).digest()
    Path(path).write_bytes(body + digest)
    return Path(path)


def feed(st, n, seed=0, timed=False, late=False, weighted=True):
    rng = np.random.default_rng(seed)
    t = 0.0
    for i in range(n):
        s = float(np.round(rng.random(), 2))
        kw = {}
        if timed:
            t += float(rng.integers(0, 3))
            kw["t"] = t - (float(rng.integers(0, 5)) if late and i % 5 == 0 else 0.0)
        w = float(rng.integers(1, 4)) if weighted else 1.0
        st.update(s, bool(rng.random() < 0.3), w, **kw)
    return st


def make(kind, backend="auto"):
    """A valid summary of each shape: unwindowed (weighted: a ledger), windowed (with a
    cancelled record), period (with late events), class prior, Neyman-Pearson."""
    if kind == "plain":
        return feed(StreamingThors(fn_cost=4, fp_cost=1, backend=backend), 120)
    if kind == "window":
        st = feed(StreamingThors(fn_cost=4, fp_cost=1, window=40, backend=backend), 120)
        s, y, w = (a.tolist() for a in st._queue.arrays())
        i = next(i for i, lab in enumerate(y) if lab != 2)
        st.revert(s[i], y[i], w[i])
        return st
    if kind == "period":
        st = feed(StreamingThors(fn_cost=4, fp_cost=1, period=30.0, backend=backend), 200, timed=True, late=True)
        assert len(st._late) > 0
        return st
    if kind == "prior":
        st = feed(StreamingThors(fn_cost=4, fp_cost=1, class_prior=0.2, backend=backend), 120)
        st.get()  # the tree's coefficients are now the rescaled ones
        return st
    if kind == "np":
        return feed(StreamingThors(fn_cost=4, fp_cost=1, window=200, max_fpr=0.2, backend=backend), 150)
    raise AssertionError(kind)


def tamper(tmp_path, kind, edit, name="hostile.ckpt"):
    """Save a valid ``kind`` summary, let ``edit(header, arrays)`` change it, re-forge it."""
    good = tmp_path / f"good-{kind}.ckpt"
    make(kind).save(good)
    StreamingThors.load(good)  # the original is valid
    header, arrays, _ = parse(good)
    edit(header, arrays)
    return forge(tmp_path / name, header, arrays)


def refused(path, *needles, key=None, backend="auto"):
    """Loading ``path`` raises ``ValueError`` naming the file and every needle."""
    with pytest.raises(ValueError) as info:
        StreamingThors.load(path, backend=backend, key=key)
    msg = str(info.value)
    assert str(path) in msg, msg
    for needle in needles:
        assert needle in msg, msg
    return msg


def set_param(name, value):
    def edit(h, a):
        h["params"][name] = value
    return edit


def set_state(name, value):
    def edit(h, a):
        h["state"][name] = value
    return edit


# ---------------------------------------------------------------- coefficients, counts, totals
def test_hostile_swapped_coefficients(tmp_path):
    p = tamper(tmp_path, "plain", lambda h, a: h["state"].update(tree_coefs=h["state"]["tree_coefs"][::-1]))
    refused(p, "state.tree_coefs", "(4.0, 1.0)")


def test_hostile_coefficients_inconsistent_with_prior(tmp_path):
    p = tamper(tmp_path, "prior", set_state("tree_coefs", [4.0, 4.0]))
    refused(p, "state.tree_coefs", "class_prior=0.2")


def test_hostile_coefficients_nonpositive(tmp_path):
    refused(tamper(tmp_path, "plain", set_state("tree_coefs", [4.0, -1.0])), "state.tree_coefs[1]")


def test_hostile_n_disagrees_with_counts(tmp_path):
    p = tamper(tmp_path, "plain", lambda h, a: h["state"].update(n=h["state"]["n"] + 1))
    refused(p, "state.n", "sum of the counts")


def test_hostile_class_total_disagrees(tmp_path):
    p = tamper(tmp_path, "plain", lambda h, a: h["state"].update(w1=h["state"]["w1"] * 2))
    refused(p, "state.w1", "class weight total")


def test_hostile_huge_n_out_of_range(tmp_path):
    refused(tamper(tmp_path, "plain", set_state("n", 10**30)), "state.n", "integer")


def test_hostile_n_updates_infinite(tmp_path):  # was OverflowError from int(inf)
    p = tamper(tmp_path, "plain", set_state("n_updates", {"$float": "inf"}))
    refused(p, "state.n_updates")


def test_hostile_n_updates_negative(tmp_path):
    refused(tamper(tmp_path, "plain", set_state("n_updates", -1)), "state.n_updates")


def test_hostile_n_updates_bool(tmp_path):
    refused(tamper(tmp_path, "plain", set_state("n_updates", True)), "state.n_updates")


def test_hostile_arrivals_negative(tmp_path):
    refused(tamper(tmp_path, "period", set_state("arrivals", -3)), "state.arrivals")


def test_hostile_last_t_without_period(tmp_path):
    refused(tamper(tmp_path, "window", set_state("last_t", 5.0)), "state.last_t")


def test_hostile_last_t_nan(tmp_path):
    refused(tamper(tmp_path, "period", set_state("last_t", {"$float": "nan"})), "state.last_t")


def test_hostile_state_not_object(tmp_path):  # was AttributeError / TypeError
    def edit(h, a):
        h["state"] = [1, 2, 3]
    refused(tamper(tmp_path, "plain", edit), "'state'")


def test_hostile_params_not_object(tmp_path):
    def edit(h, a):
        h["params"] = "fn_cost=4"
    refused(tamper(tmp_path, "plain", edit), "'params'")


def test_hostile_missing_param(tmp_path):  # was KeyError
    refused(tamper(tmp_path, "plain", lambda h, a: h["params"].pop("fn_cost")), "params", "fn_cost")


def test_hostile_unknown_param(tmp_path):
    refused(tamper(tmp_path, "plain", set_param("evil", 1)), "params", "evil")


def test_hostile_missing_state_field(tmp_path):
    refused(tamper(tmp_path, "plain", lambda h, a: h["state"].pop("tree_coefs")), "state", "tree_coefs")


# ---------------------------------------------------------------- parameters
def test_hostile_load_1e9_no_huge_allocation(tmp_path):
    p = tamper(tmp_path, "plain", set_param("load", 1e9))
    assert p.stat().st_size < 10_000
    tracemalloc.start()
    try:
        refused(p, "params.load", "1000000000.0", backend="python")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20, f"{peak} bytes allocated to refuse a {p.stat().st_size}-byte file"


def test_hostile_load_int_1e9(tmp_path):
    refused(tamper(tmp_path, "plain", set_param("load", 10**9)), "params.load", "4..65536", backend="python")


def test_hostile_load_too_small(tmp_path):
    refused(tamper(tmp_path, "plain", set_param("load", 1)), "params.load")


@pytest.mark.parametrize("value", [0, -4.0, {"$float": "inf"}, {"$float": "nan"}, "4", None, [4], True, 10**400])
def test_hostile_fn_cost_bad(tmp_path, value):
    refused(tamper(tmp_path, "plain", set_param("fn_cost", value)), "params.fn_cost")


def test_hostile_json_number_overflows_to_inf(tmp_path):
    """``1e400`` in the JSON text parses as ``inf``: refused as a cost."""
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
    text = json.dumps(header).replace('"fn_cost": 4.0', '"fn_cost": 1e400').encode()
    assert b"1e400" in text
    refused(forge_bytes(tmp_path / "h.ckpt", text, payload), "params.fn_cost", "finite")


def test_hostile_fp_cost_zero(tmp_path):
    refused(tamper(tmp_path, "plain", set_param("fp_cost", 0.0)), "params.fp_cost")


@pytest.mark.parametrize("value", [0, -1, 2.5, 40.0, "40", True, 2**70])
def test_hostile_window_bad(tmp_path, value):
    refused(tamper(tmp_path, "window", set_param("window", value)), "params.window")


def test_hostile_window_and_period(tmp_path):
    refused(tamper(tmp_path, "window", set_param("period_seconds", 5.0)), "window or period")


@pytest.mark.parametrize("value", [0.0, -30.0, {"$float": "inf"}, "30"])
def test_hostile_period_bad(tmp_path, value):
    refused(tamper(tmp_path, "period", set_param("period_seconds", value)), "params.period_seconds")


def test_hostile_timedelta_period_overflow(tmp_path):  # was OverflowError from timedelta()
    def edit(h, a):
        h["params"].update(period_seconds=1e300, period_is_timedelta=True)
    refused(tamper(tmp_path, "period", edit), "params.period_seconds", "timedelta")


def test_hostile_period_is_timedelta_not_bool(tmp_path):
    refused(tamper(tmp_path, "period", set_param("period_is_timedelta", "yes")), "params.period_is_timedelta")


@pytest.mark.parametrize("value", [0.0, 1.0, 1.5, -0.2, "0.2"])
def test_hostile_class_prior_out_of_range(tmp_path, value):
    refused(tamper(tmp_path, "prior", set_param("class_prior", value)), "params.class_prior")


@pytest.mark.parametrize("name", ["confidence", "max_fpr", "max_fnr"])
def test_hostile_np_params_out_of_range(tmp_path, name):
    refused(tamper(tmp_path, "np", set_param(name, 1.5)), f"params.{name}")


def test_hostile_default_threshold_nonfinite(tmp_path):
    refused(tamper(tmp_path, "plain", set_param("default_threshold", {"$float": "nan"})), "params.default_threshold")


# ---------------------------------------------------------------- per-score rows
def test_hostile_unsorted_keys(tmp_path):
    def edit(h, a):
        for k in ("keys", "w1", "w0", "c1", "c0"):
            a[k] = a[k][::-1].copy()
    refused(tamper(tmp_path, "plain", edit), "'keys'", "strictly increasing")


def test_hostile_duplicate_keys(tmp_path):
    def edit(h, a):
        a["keys"][1] = a["keys"][0]
    refused(tamper(tmp_path, "plain", edit), "'keys'", "strictly increasing")


def test_hostile_nan_key(tmp_path):
    def edit(h, a):
        a["keys"][3] = np.nan
    refused(tamper(tmp_path, "plain", edit), "'keys'", "finite", "nan")


def test_hostile_infinite_key(tmp_path):
    def edit(h, a):
        a["keys"][-1] = np.inf
    refused(tamper(tmp_path, "plain", edit), "'keys'", "finite")


def test_hostile_float32_keys(tmp_path):
    def edit(h, a):
        a["keys"] = a["keys"].astype(np.float32)
    refused(tamper(tmp_path, "plain", edit), "'keys'", "dtype", "'<f8'", "'<f4'")


def test_hostile_int64_counts(tmp_path):
    def edit(h, a):
        a["c1"] = a["c1"].astype(np.int64)
    refused(tamper(tmp_path, "plain", edit), "'c1'", "dtype")


def test_hostile_big_endian_weights(tmp_path):
    def edit(h, a):
        a["w1"] = a["w1"].astype(">f8")
    refused(tamper(tmp_path, "plain", edit), "'w1'", "dtype")


def test_hostile_negative_count(tmp_path):
    def edit(h, a):
        a["c0"][0] = -1.0
    refused(tamper(tmp_path, "plain", edit), "'c0'", "integers")


def test_hostile_fractional_count(tmp_path):
    def edit(h, a):
        a["c1"][0] += 0.5
    refused(tamper(tmp_path, "plain", edit), "'c1'", "integers")


def test_hostile_row_without_events(tmp_path):
    def edit(h, a):
        a["c1"][0] = a["c0"][0] = a["w1"][0] = a["w0"][0] = 0.0
    refused(tamper(tmp_path, "plain", edit), "c1 + c0", ">= 1")


def test_hostile_weight_zero_with_count(tmp_path):
    def edit(h, a):
        i = int(np.flatnonzero(a["c1"] > 0)[0])
        a["w1"][i] = 0.0
    refused(tamper(tmp_path, "plain", edit), "'w1'", "> 0 exactly where c1 > 0")


def test_hostile_weight_without_count(tmp_path):
    def edit(h, a):
        i = int(np.flatnonzero(a["c1"] == 0)[0])
        a["w1"][i] = 2.0
    refused(tamper(tmp_path, "plain", edit), "'w1'", "> 0 exactly where c1 > 0")


def test_hostile_negative_weight(tmp_path):
    def edit(h, a):
        a["w0"][0] = -1.0
    refused(tamper(tmp_path, "plain", edit), "'w0'", ">= 0")


def test_hostile_infinite_weight(tmp_path):
    def edit(h, a):
        a["w0"][0] = np.inf
    refused(tamper(tmp_path, "plain", edit), "'w0'", "finite")


def test_hostile_rows_of_different_lengths(tmp_path):
    def edit(h, a):
        a["w0"] = a["w0"][:-1].copy()
    refused(tamper(tmp_path, "plain", edit), "'w0'", "length")


def test_low_parts_accepted_when_valid(tmp_path):
    """``w1_lo``/``w0_lo`` (double-double low parts) load when they are consistent."""
    def edit(h, a):
        n = a["keys"].shape[0]
        a["w1_lo"], a["w0_lo"] = np.zeros(n), np.zeros(n)
        h["state"]["n_updates"] += 0
    st = StreamingThors.load(tamper(tmp_path, "plain", edit))
    assert len(st) == len(make("plain"))


def test_hostile_low_part_too_large(tmp_path):
    def edit(h, a):
        n = a["keys"].shape[0]
        a["w1_lo"], a["w0_lo"] = np.zeros(n), np.zeros(n)
        i = int(np.flatnonzero(a["c1"] > 0)[0])
        a["w1_lo"][i] = 0.5
    refused(tamper(tmp_path, "plain", edit), "'w1_lo'", "double-double")


def test_hostile_low_part_where_weight_is_zero(tmp_path):
    def edit(h, a):
        n = a["keys"].shape[0]
        a["w1_lo"], a["w0_lo"] = np.zeros(n), np.zeros(n)
        a["w1_lo"][int(np.flatnonzero(a["c1"] == 0)[0])] = 5e-324
    refused(tamper(tmp_path, "plain", edit), "'w1_lo'", "0 where it is")


def test_hostile_low_part_nonfinite(tmp_path):
    def edit(h, a):
        n = a["keys"].shape[0]
        a["w1_lo"], a["w0_lo"] = np.zeros(n), np.zeros(n)
        a["w0_lo"][0] = np.nan
    refused(tamper(tmp_path, "plain", edit), "'w0_lo'", "finite")


def test_hostile_low_part_alone(tmp_path):
    def edit(h, a):
        a["w1_lo"] = np.zeros(a["keys"].shape[0])
    refused(tamper(tmp_path, "plain", edit), "all or none", "w0_lo")


def test_hostile_low_part_float32(tmp_path):
    def edit(h, a):
        n = a["keys"].shape[0]
        a["w1_lo"], a["w0_lo"] = np.zeros(n, np.float32), np.zeros(n, np.float32)
    refused(tamper(tmp_path, "plain", edit), "'w1_lo'", "dtype")


# ---------------------------------------------------------------- arrays: names and table
def test_hostile_unknown_array(tmp_path):
    def edit(h, a):
        a["payload_of_doom"] = np.zeros(3)
    refused(tamper(tmp_path, "plain", edit), "'payload_of_doom'", "unknown")


def test_hostile_missing_array(tmp_path):  # was KeyError
    refused(tamper(tmp_path, "plain", lambda h, a: a.pop("c0")), "lack", "c0")


def test_hostile_queue_arrays_without_window(tmp_path):
    def edit(h, a):
        a["queue_s"], a["queue_y"], a["queue_w"] = np.zeros(0), np.zeros(0, np.uint8), np.zeros(0)
    refused(tamper(tmp_path, "plain", edit), "queue_s", "no window")


def test_hostile_array_outside_payload(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    table = copy.deepcopy(header["arrays"])
    table[0]["offset"] = 10**12
    p = forge(tmp_path / "h.ckpt", header, arrays, table=table)
    refused(p, "'keys'", "offset")


def test_hostile_array_claims_huge_size(tmp_path):
    """A table claiming 2**40 keys in a small payload: refused before any allocation."""
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    table = copy.deepcopy(header["arrays"])
    table[0]["shape"], table[0]["nbytes"] = [2**40], 2**43
    p = forge(tmp_path / "h.ckpt", header, arrays, table=table)
    tracemalloc.start()
    try:
        refused(p, "'keys'", "beyond")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20


def test_hostile_nbytes_disagrees_with_shape(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    table = copy.deepcopy(header["arrays"])
    table[1]["nbytes"] -= 8
    refused(forge(tmp_path / "h.ckpt", header, arrays, table=table), "'w1'", "nbytes")


def test_hostile_two_dimensional_array(tmp_path):
    def edit(h, a):
        a["keys"] = np.stack([a["keys"], a["keys"]])
    refused(tamper(tmp_path, "plain", edit), "'keys'", "dimensions")


def test_hostile_overlapping_arrays(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    table = copy.deepcopy(header["arrays"])
    table[1]["offset"] = 0  # w1 read from keys' bytes
    refused(forge(tmp_path / "h.ckpt", header, arrays, table=table), "'w1'", "offset")


def test_hostile_trailing_payload(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values()) + b"\0" * 64
    refused(forge(tmp_path / "h.ckpt", header, payload=payload), "payload", "64 bytes")


def test_hostile_duplicate_array_name(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    table = copy.deepcopy(header["arrays"])
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
    table[1]["name"] = "keys"
    refused(forge(tmp_path / "h.ckpt", header, payload=payload, table=table), "'keys'", "twice")


def test_hostile_table_entry_not_object(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header = parse(good)[0]
    refused(forge(tmp_path / "h.ckpt", header, payload=b"", table=[["keys", "<f8"]]), "arrays[0]")


def test_hostile_object_dtype(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    table = copy.deepcopy(header["arrays"])
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
    table[0]["dtype"] = "|O"
    refused(forge(tmp_path / "h.ckpt", header, payload=payload, table=table), "'keys'", "dtype")


# ---------------------------------------------------------------- header
def test_hostile_header_length_beyond_file(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    p = forge(tmp_path / "h.ckpt", header, arrays, hlen=2**31)
    refused(p, "header length")


def test_hostile_header_not_json_object(tmp_path):
    refused(forge_bytes(tmp_path / "h.ckpt", b"[1, 2, 3]"), "not a JSON object")


def test_hostile_header_not_utf8(tmp_path):
    refused(forge_bytes(tmp_path / "h.ckpt", b"\xff\xfe{}"), "unreadable header")


def test_hostile_header_nan_literal(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
    text = json.dumps(header).replace('"fn_cost": 4.0', '"fn_cost": NaN').encode()
    assert b"NaN" in text
    refused(forge_bytes(tmp_path / "h.ckpt", text, payload), "unreadable header", "NaN")


def test_hostile_header_repeated_name(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
    text = json.dumps(header).replace('"fn_cost": 4.0', '"fn_cost": 4.0, "fn_cost": 1.0').encode()
    refused(forge_bytes(tmp_path / "h.ckpt", text, payload), "repeated name", "fn_cost")


def test_hostile_header_deeply_nested(tmp_path):  # was RecursionError
    text = b'{"kind": "StreamingThors", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    refused(forge_bytes(tmp_path / "h.ckpt", text), "unreadable header")


def test_hostile_header_huge_integer(tmp_path):  # int() digit limit
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
    text = json.dumps(header).replace('"n_updates": ', '"n_updates": ' + "9" * 5000 + ', "x": ').encode()
    refused(forge_bytes(tmp_path / "h.ckpt", text, payload), "header")


def test_hostile_wrong_kind(tmp_path):
    refused(tamper(tmp_path, "plain", lambda h, a: h.update(kind="ThorsClassifier.thresholding")), "not a")


def test_hostile_unknown_header_field(tmp_path):
    refused(tamper(tmp_path, "plain", lambda h, a: h.update(exec="rm -rf /")), "unknown header fields")


def test_hostile_header_revision_unknown(tmp_path):
    refused(tamper(tmp_path, "plain", lambda h, a: h.update(revision=99)), "revision 99")


def test_hostile_unknown_flags(tmp_path):
    good = tmp_path / "good.ckpt"
    make("plain").save(good)
    header, arrays, _ = parse(good)
    refused(forge(tmp_path / "h.ckpt", header, arrays, flags=0x8), "unknown flags")


def test_hostile_library_not_string(tmp_path):
    refused(tamper(tmp_path, "plain", lambda h, a: h.update(library=7)), "'library'")


# ---------------------------------------------------------------- labels
def test_hostile_queue_label_7(tmp_path):
    def edit(h, a):
        a["queue_y"][0] = 7
    refused(tamper(tmp_path, "window", edit), "'queue_y'", "7")


def test_hostile_late_label_9(tmp_path):
    def edit(h, a):
        a["late_y"][0] = 9
    refused(tamper(tmp_path, "period", edit), "'late_y'", "9")


def test_hostile_late_label_cancelled(tmp_path):
    """2 (cancelled) is a queue marker only: a late event is never cancelled in place."""
    def edit(h, a):
        a["late_y"][0] = 2
    refused(tamper(tmp_path, "period", edit), "'late_y'")


def test_hostile_ledger_label_2(tmp_path):
    def edit(h, a):
        a["ledger_y"][0] = 2
    refused(tamper(tmp_path, "plain", edit), "'ledger_y'")


def test_hostile_queue_labels_float(tmp_path):
    def edit(h, a):
        a["queue_y"] = a["queue_y"].astype(np.float64)
    refused(tamper(tmp_path, "window", edit), "'queue_y'", "dtype")


# ---------------------------------------------------------------- queue vs tree
def test_hostile_queue_does_not_match_tree(tmp_path):
    def edit(h, a):  # relabel one live queued event: the tree still holds the old label
        i = int(np.flatnonzero(a["queue_y"] == 0)[0])
        a["queue_y"][i] = 1
    refused(tamper(tmp_path, "window", edit), "expiry queue", "event(s) of label")


def test_hostile_queue_weight_does_not_match_tree(tmp_path):
    def edit(h, a):
        i = int(np.flatnonzero(a["queue_y"] != 2)[0])
        a["queue_w"][i] *= 1.5
    refused(tamper(tmp_path, "window", edit), "expiry queue", "weight")


def test_hostile_queue_score_not_in_tree(tmp_path):
    def edit(h, a):
        i = int(np.flatnonzero(a["queue_y"] != 2)[0])
        a["queue_s"][i] = 12345.5
    refused(tamper(tmp_path, "window", edit), "expiry queue", "12345.5")


def test_hostile_cancelled_record_revived(tmp_path):
    def edit(h, a):
        a["queue_y"][a["queue_y"] == 2] = 0
    refused(tamper(tmp_path, "window", edit), "expiry queue")


def test_hostile_queue_longer_than_window(tmp_path):
    refused(tamper(tmp_path, "window", set_param("window", 10)), "'queue_s'", "more than window=10")


def test_hostile_queue_weight_zero(tmp_path):
    def edit(h, a):
        a["queue_w"][0] = 0.0
    refused(tamper(tmp_path, "window", edit), "'queue_w'", "> 0")


def test_hostile_queue_times_decreasing(tmp_path):
    def edit(h, a):
        a["queue_t"][[0, -1]] = a["queue_t"][[-1, 0]]
    refused(tamper(tmp_path, "period", edit), "'queue_t'", "non-decreasing")


def test_hostile_queue_time_after_last_t(tmp_path):
    refused(tamper(tmp_path, "period", lambda h, a: h["state"].update(last_t=h["state"]["last_t"] - 1.0)),
            "'queue_t'", "after state.last_t")


def test_hostile_queue_time_expired(tmp_path):
    refused(tamper(tmp_path, "period", lambda h, a: h["state"].update(last_t=h["state"]["last_t"] + 1000.0)),
            "queue_t")


def test_hostile_queue_time_missing(tmp_path):
    refused(tamper(tmp_path, "period", lambda h, a: a.pop("queue_t")), "lack", "queue_t")


def test_hostile_late_event_not_in_tree(tmp_path):
    def edit(h, a):
        a["late_s"][0] = 777.25
    refused(tamper(tmp_path, "period", edit), "late events", "777.25")


def test_hostile_late_event_after_last_t(tmp_path):
    def edit(h, a):
        a["late_t"][-1] = h["state"]["last_t"] + 1.0
    refused(tamper(tmp_path, "period", edit), "'late_t'", "before state.last_t")


def test_hostile_late_seq_duplicate(tmp_path):
    def edit(h, a):
        if a["late_seq"].shape[0] < 2:
            pytest.skip("needs two late events")
        a["late_seq"][1] = a["late_seq"][0]
    refused(tamper(tmp_path, "period", edit), "late")


def test_hostile_late_seq_beyond_arrivals(tmp_path):
    refused(tamper(tmp_path, "period", set_state("arrivals", 0)), "'late_seq'", "1..0")


def test_hostile_late_events_without_period(tmp_path):
    def edit(h, a):
        a["late_t"], a["late_seq"], a["late_s"] = np.array([1.0]), np.array([1]), a["keys"][:1].copy()
        a["late_y"], a["late_w"] = np.array([0], np.uint8), np.array([1.0])
    refused(tamper(tmp_path, "window", edit), "'late_t'", "without a period")


# ---------------------------------------------------------------- weight ledger (no window)
def test_hostile_ledger_count_exceeds_tree(tmp_path):
    def edit(h, a):
        a["ledger_c"][0] += 10**6
    refused(tamper(tmp_path, "plain", edit), "ledger", "the tree holds")


def test_hostile_ledger_weight_mismatch(tmp_path):
    def edit(h, a):
        a["ledger_w"][0] *= 1.25
    refused(tamper(tmp_path, "plain", edit), "ledger")


def test_hostile_ledger_score_not_in_tree(tmp_path):
    def edit(h, a):
        a["ledger_s"][-1] = 1e6
    refused(tamper(tmp_path, "plain", edit), "ledger", "does not hold")


def test_hostile_ledger_unit_weight(tmp_path):
    def edit(h, a):
        a["ledger_w"][0] = 1.0
    refused(tamper(tmp_path, "plain", edit), "'ledger_w'", "other than 1")


def test_hostile_ledger_dropped(tmp_path):
    """A current file whose ledger is removed: the weights no longer add up."""
    def edit(h, a):
        for k in ("ledger_s", "ledger_y", "ledger_w", "ledger_c"):
            a.pop(k)
    refused(tamper(tmp_path, "plain", edit), "ledger", "unit events")


def test_hostile_ledger_with_window(tmp_path):
    def edit(h, a):
        a["ledger_s"], a["ledger_y"] = a["keys"][:1].copy(), np.array([0], np.uint8)
        a["ledger_w"], a["ledger_c"] = np.array([2.0]), np.array([1])
    refused(tamper(tmp_path, "window", edit), "ledger_s", "a window or period")


# ---------------------------------------------------------------- not a regular file
def _load_in_thread(path, timeout=10.0):
    out = {}

    def run():
        try:
            StreamingThors.load(path)
        except BaseException as exc:  # reported to the test
            out["exc"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout)
    return th.is_alive(), out.get("exc")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_hostile_fifo_refused_without_blocking(tmp_path):
    fifo = tmp_path / "st.ckpt"
    os.mkfifo(fifo)
    blocked, exc = _load_in_thread(fifo)
    if blocked:  # unblock the reader so the test run can end, then fail
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("load() blocked on a FIFO")
    assert isinstance(exc, ValueError) and "FIFO" in str(exc) and str(fifo) in str(exc), exc


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_hostile_dev_zero(tmp_path):
    link = tmp_path / "zero.ckpt"
    link.symlink_to("/dev/zero")
    for p in (Path("/dev/zero"), link):
        blocked, exc = _load_in_thread(p)
        assert not blocked, "load() kept reading /dev/zero"
        assert isinstance(exc, ValueError) and "character device" in str(exc), exc


def test_hostile_directory(tmp_path):  # was IsADirectoryError
    d = tmp_path / "st.ckpt"
    d.mkdir()
    refused(d, "directory")


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="needs unix sockets")
def test_hostile_socket():
    d = tempfile.mkdtemp(prefix="thk", dir="/tmp")
    path = os.path.join(d, "s.ckpt")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        srv.bind(path)
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        refused(Path(path), "socket")
    finally:
        srv.close()
        os.unlink(path)
        os.rmdir(d)


def test_missing_file_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        StreamingThors.load(tmp_path / "nope.ckpt")


# ---------------------------------------------------------------- random mutations: ValueError only
def _leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    yield path


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


@pytest.mark.parametrize("kind", ["plain", "window", "period", "prior", "np"])
def test_hostile_random_header_mutations_only_value_error(tmp_path, kind):
    """500 random replacements of a header value: each file loads into a consistent
    summary or is refused with ValueError; no other exception gets out."""
    good = tmp_path / "good.ckpt"
    make(kind).save(good)
    header, arrays, _ = parse(good)
    rng = np.random.default_rng(13)
    spots = [p for p in _leaves(header) if p and p[0] in ("params", "state", "arrays")]
    values = [None, True, False, 0, -1, 1, 3, 2**64, 10**400, 0.5, -0.0, 1e308, 1e400, "x", "inf", "nan", [], {},
              [1, 2], {"$float": "inf"}, {"$float": "bogus"}, {"a": 1}, "StreamingThors", 4.0, 1.0, 65536, 65537]
    refusals = 0
    for i in range(500):
        h = copy.deepcopy(header)
        path = spots[rng.integers(len(spots))]
        _set(h, path, values[rng.integers(len(values))])
        table = h.pop("arrays")
        payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
        p = forge(tmp_path / f"m{i % 4}.ckpt", h, payload=payload, table=table)
        try:
            st = StreamingThors.load(p)
        except ValueError as exc:
            assert str(p) in str(exc)
            refusals += 1
            continue
        st.update(0.5, 1, 1.0, **({"t": 1e9} if kind == "period" else {}))  # still usable
    assert refusals > 200


# ---------------------------------------------------------------- HMAC
def _keyed(tmp_path, kind="window", key=KEY):
    st = make(kind)
    p = tmp_path / "keyed.ckpt"
    write_checkpoint(p, "StreamingThors", *st._checkpoint_parts(), key=key)
    return st, p


def test_hmac_round_trip(tmp_path):
    st, p = _keyed(tmp_path)
    back = StreamingThors.load(p, key=KEY)
    assert back.get() == st.get() and [a.tolist() for a in back.held()] == [a.tolist() for a in st.held()]
    params, _, _ = read_checkpoint(p, "StreamingThors", key=bytearray(KEY))
    assert params["window"] == 40


def test_hmac_wrong_key(tmp_path):
    _, p = _keyed(tmp_path)
    refused(p, "HMAC-SHA256 mismatch", key=b"guess")


def test_hmac_keyed_file_needs_the_key(tmp_path):
    _, p = _keyed(tmp_path)
    refused(p, "pass key=")


def test_hmac_unkeyed_file_refused_with_a_key(tmp_path):
    """An attacker rewrites a keyed file as an unkeyed one with a fresh SHA-256: a reader
    that holds the key refuses it."""
    _, p = _keyed(tmp_path)
    header, arrays, flags = parse(p)
    assert flags == 1
    header["state"]["tree_coefs"] = header["state"]["tree_coefs"][::-1]
    forged = forge(tmp_path / "forged.ckpt", header, arrays, flags=0)
    refused(forged, "not authenticated", key=KEY)


def test_hmac_tampered_payload(tmp_path):
    _, p = _keyed(tmp_path)
    data = bytearray(p.read_bytes())
    data[-40] ^= 1
    p.write_bytes(bytes(data))
    refused(p, "HMAC-SHA256 mismatch", key=KEY)


def test_hmac_key_must_be_bytes(tmp_path):
    _, p = _keyed(tmp_path)
    with pytest.raises(TypeError, match="key must be bytes"):
        StreamingThors.load(p, key="a string")
    with pytest.raises(ValueError, match="empty"):
        StreamingThors.load(p, key=b"")


def test_unkeyed_files_still_load_without_key(tmp_path):
    st = make("period")
    st.save(tmp_path / "a.ckpt")
    assert StreamingThors.load(tmp_path / "a.ckpt").held()[0].tolist() == st.held()[0].tolist()


# ---------------------------------------------------------------- files from before this format revision
def _to_legacy(header, arrays, drop_ledger=True):
    """What the writer produced before ``revision``: bare "inf" strings, no header
    ``revision``, and (before the weight ledger) no ledger arrays."""
    def undo(v):
        if isinstance(v, dict):
            return v["$float"] if set(v) == {"$float"} else {k: undo(x) for k, x in v.items()}
        if isinstance(v, list):
            return [undo(x) for x in v]
        return v
    h = undo(header)
    h.pop("revision", None)
    if drop_ledger:
        for k in ("ledger_s", "ledger_y", "ledger_w", "ledger_c"):
            arrays.pop(k, None)
    return h, arrays


def test_legacy_file_loads_and_reconstructs_ledger(tmp_path):
    st = StreamingThors(fn_cost=4, fp_cost=1, period=None)
    st.update_many([0.1, 0.1, 0.5, 0.5, 0.9], [1, 1, 0, 0, 1], [2.0, 2.0, 3.0, 1.0, 1.0])
    st.save(tmp_path / "new.ckpt")
    header, arrays, _ = parse(tmp_path / "new.ckpt")
    h, a = _to_legacy(header, arrays)
    p = forge(tmp_path / "old.ckpt", h, a)
    back = StreamingThors.load(p)
    assert back.get() == st.get() and [x.tolist() for x in back.held()] == [x.tolist() for x in st.held()]
    back.revert(0.1, 1, 2.0)  # all events at 0.1 weigh 2: the mean weight is exact
    with pytest.raises(KeyError):
        back.revert(0.1, 1, 1.0)  # never held
    with pytest.raises(KeyError):
        back.revert(0.5, 0, 1.0)  # 3 + 1 at 0.5: only the mean weight 2 is known; unit weights refused
    back.save(tmp_path / "again.ckpt")  # and the re-saved file passes the strict checks
    assert StreamingThors.load(tmp_path / "again.ckpt").get() == back.get()


def test_legacy_period_file_with_bare_inf_strings(tmp_path):
    st = StreamingThors(fn_cost=4, fp_cost=1, period=dt.timedelta(seconds=30))
    st.save(tmp_path / "empty.ckpt")  # last_t is -inf
    header, arrays, _ = parse(tmp_path / "empty.ckpt")
    h, a = _to_legacy(header, arrays)
    assert h["state"]["last_t"] == "-inf"
    back = StreamingThors.load(forge(tmp_path / "old.ckpt", h, a))
    assert back._last_t == -math.inf and back.period == dt.timedelta(seconds=30)


def test_current_file_bare_inf_string_refused(tmp_path):
    """With ``revision`` a string is a string: a bare "-inf" where a float belongs is refused."""
    st = StreamingThors(fn_cost=4, fp_cost=1, period=30.0)
    st.save(tmp_path / "a.ckpt")
    header, arrays, _ = parse(tmp_path / "a.ckpt")
    header["state"]["last_t"] = "-inf"
    refused(forge(tmp_path / "b.ckpt", header, arrays), "state.last_t", "'-inf'")


# ---------------------------------------------------------------- river: keys round-trip by type
def _classifier(**kw):
    from river import linear_model

    from thors_stream.river import ThorsClassifier

    return ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, warm_up=0, **kw)


def _trained(keys, **kw):
    m = _classifier(**kw)
    m.learn_one({"x": 1.0}, True)
    m.learn_one({"x": -1.0}, False)
    for i, k in enumerate(keys):
        m.predict_one({"x": i / 10}, key=k)
    return m


def test_river_pending_key_strings_roundtrip(tmp_path):
    """Keys "inf", "-inf", "nan" (and a string that looks like the float tag) stay strings."""
    keys = ["inf", "-inf", "nan", "$float", "Infinity", "NaN"]
    m = _trained(keys)
    m.save_thresholding(tmp_path / "a.ckpt")
    m2 = _classifier()
    m2.load_thresholding(tmp_path / "a.ckpt")
    assert list(m2._pending) == keys and all(type(k) is str for k in m2._pending)
    m2.save_thresholding(tmp_path / "b.ckpt")  # was TypeError
    for i, k in enumerate(keys):  # was KeyError: every label finds its score
        m2.learn_one({"x": i / 10}, i % 2 == 0, key=k)
    assert m2.n_pending == 0


def test_river_pending_key_types_roundtrip(tmp_path):
    keys = [7, -(2**80), 1.5, math.inf, -math.inf, math.nan, "7", True, b"\x00\xff", ("a", 1, 2.5, None, ("b",)),
            (), 0.0]
    m = _trained(keys)
    m.save_thresholding(tmp_path / "a.ckpt")
    m2 = _classifier()
    m2.load_thresholding(tmp_path / "a.ckpt")
    got = list(m2._pending)
    assert len(got) == len(keys)
    for k, g in zip(keys, got):
        assert type(g) is type(k)
        if isinstance(k, float) and math.isnan(k):
            assert math.isnan(g)
        else:
            assert g == k
    assert list(m2._pending.values()) == list(m._pending.values())
    m2.save_thresholding(tmp_path / "b.ckpt")
    m3 = _classifier()
    m3.load_thresholding(tmp_path / "b.ckpt")
    assert [type(k) for k in m3._pending] == [type(k) for k in keys]


def test_river_unsupported_key_type_refused_before_writing(tmp_path):
    m = _trained([frozenset({1})])
    with pytest.raises(TypeError, match="stores keys that are"):
        m.save_thresholding(tmp_path / "a.ckpt")
    assert not (tmp_path / "a.ckpt").exists()


def test_river_legacy_file_string_inf_key_stays_string(tmp_path):
    """A file written before tagged keys (bare str/int keys, bare "inf" floats): the key
    "inf" is a string, as it was when saved."""
    m = _trained(["inf", 3, "k"])
    m.save_thresholding(tmp_path / "a.ckpt")
    header, arrays, _ = parse(tmp_path / "a.ckpt")
    h, a = _to_legacy(header, arrays)
    h["state"]["pending_keys"] = ["inf", 3, "k"]
    p = forge(tmp_path / "old.ckpt", h, a)
    m2 = _classifier()
    m2.load_thresholding(p)
    assert list(m2._pending) == ["inf", 3, "k"]
    m2.learn_one({"x": 0.0}, True, key="inf")


def test_river_hmac(tmp_path):
    m = _trained(["a", 1])
    m.save_thresholding(tmp_path / "a.ckpt", key=KEY)
    m2 = _classifier()
    with pytest.raises(ValueError, match="pass key="):
        m2.load_thresholding(tmp_path / "a.ckpt")
    m2.load_thresholding(tmp_path / "a.ckpt", key=KEY)
    assert list(m2._pending) == ["a", 1]


def _river_tamper(tmp_path, edit, **kw):
    m = _trained(["a", "b", "c"], **kw)
    m.save_thresholding(tmp_path / "good.ckpt")
    header, arrays, _ = parse(tmp_path / "good.ckpt")
    edit(header, arrays)
    return forge(tmp_path / "h.ckpt", header, arrays)


def _river_refused(p, *needles, **kw):
    m = _classifier(**kw)
    before = (m.threshold, m.n_pending)
    with pytest.raises(ValueError) as info:
        m.load_thresholding(p)
    assert str(p) in str(info.value)
    for n in needles:
        assert n in str(info.value), str(info.value)
    assert (m.threshold, m.n_pending) == before  # nothing changed


def test_river_hostile_duplicate_pending_key(tmp_path):
    def edit(h, a):
        h["state"]["pending_keys"][1] = h["state"]["pending_keys"][0]
    _river_refused(_river_tamper(tmp_path, edit), "twice")


def test_river_hostile_untagged_key(tmp_path):
    def edit(h, a):
        h["state"]["pending_keys"][0] = "a"
    _river_refused(_river_tamper(tmp_path, edit), "pending_keys[0]", "tagged")


def test_river_hostile_bad_tag(tmp_path):
    def edit(h, a):
        h["state"]["pending_keys"][0] = ["f", "inf"]  # a float tag around a string
    _river_refused(_river_tamper(tmp_path, edit), "pending_keys[0]")


def test_river_hostile_pending_scores_length(tmp_path):
    def edit(h, a):
        a["pending_scores"] = a["pending_scores"][:2].copy()
    _river_refused(_river_tamper(tmp_path, edit), "pending_scores")


def test_river_hostile_more_pending_than_max(tmp_path):
    _river_refused(_river_tamper(tmp_path, lambda h, a: h["params"].update(max_pending=2)), "max_pending")


def test_river_hostile_ready_inconsistent(tmp_path):
    def edit(h, a):
        h["state"]["ready"] = False
    _river_refused(_river_tamper(tmp_path, edit), "state.ready")


def test_river_hostile_n_pos_exceeds_n_learned(tmp_path):
    def edit(h, a):
        h["state"]["n_pos"] = h["state"]["n_learned"] + 5
    _river_refused(_river_tamper(tmp_path, edit), "n_pos")


def test_river_hostile_counter_not_int(tmp_path):
    def edit(h, a):
        h["state"]["n_learned"] = "2"
    _river_refused(_river_tamper(tmp_path, edit), "state.n_learned")


def test_river_hostile_unknown_state_field(tmp_path):
    def edit(h, a):
        h["state"]["sneaky"] = 1
    _river_refused(_river_tamper(tmp_path, edit), "state")


def test_river_hostile_thors_state_swapped_coefficients(tmp_path):
    def edit(h, a):
        h["state"]["thors"]["tree_coefs"] = h["state"]["thors"]["tree_coefs"][::-1]
    _river_refused(_river_tamper(tmp_path, edit), "tree_coefs")


def test_river_hostile_fifo(tmp_path):
    fifo = tmp_path / "thr.ckpt"
    os.mkfifo(fifo)
    _river_refused(fifo, "FIFO")


# ---------------------------------------------------------------- save failures keep the previous file
@pytest.mark.parametrize("failure", ["enospc", "replace", "interrupt"])
def test_save_failure_leaves_previous_checkpoint(tmp_path, monkeypatch, failure):
    st = make("window")
    path = tmp_path / "st.ckpt"
    st.save(path)
    before = path.read_bytes()
    feed(st, 10, seed=5)
    real_fdopen = os.fdopen

    class Failing:
        def __init__(self, f, exc):
            self.f, self.exc = f, exc

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

        def write(self, b):
            raise self.exc

        def __getattr__(self, name):
            return getattr(self.f, name)

    if failure == "enospc":
        monkeypatch.setattr(os, "fdopen", lambda fd, mode: Failing(real_fdopen(fd, mode),
                                                                      OSError(errno.ENOSPC, "No space left")))
        expected = OSError
    elif failure == "interrupt":
        monkeypatch.setattr(os, "fdopen", lambda fd, mode: Failing(real_fdopen(fd, mode), KeyboardInterrupt()))
        expected = KeyboardInterrupt
    else:
        def boom(a, b):
            raise OSError(errno.EXDEV, "cross-device")
        monkeypatch.setattr(os, "replace", boom)
        expected = OSError
    with pytest.raises(expected):
        st.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["st.ckpt"]
    StreamingThors.load(path)


def test_concurrent_savers_leave_a_valid_checkpoint(tmp_path):
    path = tmp_path / "st.ckpt"
    summaries = [make(k) for k in ("plain", "window", "period")]
    errors = []

    def saver(st):
        try:
            for _ in range(15):
                st.save(path)
                StreamingThors.load(path)  # whatever is there is one whole checkpoint
        except Exception as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=saver, args=(s,)) for s in summaries]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    got = StreamingThors.load(path)
    assert any(got.held()[0].tolist() == s.held()[0].tolist() for s in summaries)
    assert [p.name for p in tmp_path.iterdir()] == ["st.ckpt"]


# ---------------------------------------------------------------- every valid state round-trips
BACKENDS = ["python", "auto"] if "c" in available_backends() else ["python"]


@hst.composite
def summaries(draw):
    mode = draw(hst.sampled_from(["plain", "window", "period", "prior", "np"]))
    backend = draw(hst.sampled_from(BACKENDS))
    kw = {"window": draw(hst.integers(1, 12))} if mode in ("window", "np") else {}
    if mode == "period":
        kw["period"] = draw(hst.sampled_from([3.0, 7.5, dt.timedelta(seconds=5)]))
    if mode == "prior":
        kw["class_prior"] = draw(hst.sampled_from([0.1, 0.5, 0.9]))
    if mode == "np":
        kw["max_fpr"] = 0.3
    st = StreamingThors(fn_cost=draw(hst.sampled_from([1.0, 3.0, 0.5])), fp_cost=1.0, backend=backend, **kw)
    ops = draw(hst.lists(hst.tuples(tied_scores, labels, dyadic_weights | hst.sampled_from([0.1, 1.0, 1e-3]),
                                    hst.integers(-3, 3), hst.booleans()), max_size=50))
    t = 0.0
    for s, y, w, dt_, revert in ops:
        if revert and len(st):
            keys, w1, w0, c1, c0 = st.held()
            if st._queue is not None:
                qs, qy, qw = (a.tolist() for a in st._queue.arrays()[:3])
                live = [(a, b, c) for a, b, c in zip(qs, qy, qw) if b != 2]
                cand = live + [(e[2], e[3], e[4]) for e in st._late]
            else:
                cand = [(k, int(c1[i] > 0), w1[i] / c1[i] if c1[i] else w0[i] / c0[i]) for i, k in
                        enumerate(keys.tolist())]
            a, b, c = cand[len(cand) // 2]
            try:
                st.revert(a, b, c)
            except KeyError:
                pass
            continue
        if mode == "period":
            t += max(dt_, 0)
            st.update(s, y, w, t=t + min(dt_, 0))
        else:
            st.update(s, y, w)
        if mode == "prior" and dt_ == 0:
            st.get()
    return st, backend


def _snapshot(st):
    q = [a.tolist() for a in st._queue.arrays()] if st._queue is not None else None
    try:
        thr = st.get()
    except ValueError as exc:  # Neyman-Pearson infeasible
        thr = str(exc)
    return (thr, [a.tolist() for a in st.held()], len(st), q, list(st._late), st.n_updates, st._last_t)


@given(summaries())
def test_valid_states_round_trip(pair):
    st, backend = pair
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "st.ckpt")
        st.save(p)
        for b in (backend, "python"):
            back = StreamingThors.load(p, backend=b)
            assert _snapshot(back) == _snapshot(st)
        back = StreamingThors.load(p, backend=backend)
        back.save(p)  # and a second generation
        assert _snapshot(StreamingThors.load(p, backend=backend)) == _snapshot(st)
