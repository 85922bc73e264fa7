"""thors_stream.dask.thors_threshold on a real two-process LocalCluster against the single-machine answer.

The reference is thors_stream.thors_threshold (itself checked against the exact oracle in
test_batch_exact.py) and, for the unweighted and weighted cases without a prior, the Fraction
brute-force oracle directly. Weights are dyadic, so every sum is exact and the dask answer must be
bit-identical (dataclass equality), class_prior included.
"""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_force
from strategies import costs, events

from thors_stream import StreamingThors
from thors_stream import thors_threshold as single

pytest.importorskip("dask.dataframe", reason="needs the dask extra: pip install 'thors_stream[dask]'")
distributed = pytest.importorskip("distributed", reason="needs the dask extra: pip install 'thors_stream[dask]'")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

from thors_stream.dask import thors_threshold  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cl:
        with distributed.Client(cl) as c:
            yield c


def frame(pieces, weighted=True):
    """A dask DataFrame whose partitions are exactly ``pieces`` (lists of (score, y, w)), empty ones included."""
    cols = ["score", "label", "w"]
    dfs = [pd.DataFrame(list(p) if p else None, columns=cols).astype({"score": float, "label": int, "w": float})
           for p in pieces]
    if not weighted:
        dfs = [d.drop(columns="w") for d in dfs]
    return dd.from_delayed([dask.delayed(d) for d in dfs], meta=dfs[0].iloc[:0])


def run(pieces, weighted=True, **kw):
    kw.setdefault("fn_cost", 5.0)
    kw.setdefault("fp_cost", 1.0)
    ddf = frame(pieces, weighted)
    return thors_threshold(ddf, score_col="score", label_col="label", weight_col="w" if weighted else None, **kw)


def reference(pieces, weighted=True, **kw):
    kw.setdefault("fn_cost", 5.0)
    kw.setdefault("fp_cost", 1.0)
    rows = [e for p in pieces for e in p]
    s, y, w = (np.array([e[i] for e in rows]) for i in range(3))
    return single(s, y, sample_weight=w if weighted else None, **kw)


def split(evs, parts):
    """Deal events into partitions by the drawn partition ids (some partitions stay empty)."""
    n = max(parts) + 2
    out = [[] for _ in range(n)]
    for e, p in zip(evs, parts):
        out[p].append(e)
    return out


def check_oracle(r, pieces, weighted, fn, fp):
    evs = [(s, y, w if weighted else 1.0) for p in pieces for s, y, w in p]
    thr, best, _ = brute_force(evs, fn, fp)
    assert r.threshold == thr
    assert Fraction(r.cost) == best
    assert r.count_k1 == sum(1 for s, y, _ in evs if y and s <= thr)
    assert r.count_k0 == sum(1 for s, y, _ in evs if not y and s <= thr)


# ------------------------------------------------------------------ property tests on the cluster
@settings(max_examples=25)
@given(
    st.data(), events, costs, costs, st.booleans(), st.one_of(st.none(), st.floats(0.01, 0.99)), st.integers(1, 6)
)
def test_equals_single_machine(client, data, evs, fn, fp, weighted, prior, n_ranges):
    parts = data.draw(st.lists(st.integers(0, 4), min_size=len(evs), max_size=len(evs)))
    pieces = split(evs, parts)
    r = run(pieces, weighted, fn_cost=fn, fp_cost=fp, class_prior=prior, n_ranges=n_ranges)
    assert r == reference(pieces, weighted, fn_cost=fn, fp_cost=fp, class_prior=prior)
    if prior is None:
        check_oracle(r, pieces, weighted, fn, fp)


# ------------------------------------------------------------------ named cases
def test_heavy_ties_across_partitions(client):
    rng = np.random.default_rng(0)
    pieces = [[(float(rng.integers(0, 4)), int(rng.random() < 0.4), 1.0) for _ in range(300)] for _ in range(5)]
    r = run(pieces, weighted=False, fn_cost=3, fp_cost=2)
    assert r == reference(pieces, weighted=False, fn_cost=3, fp_cost=2)
    check_oracle(r, pieces, False, 3, 2)
    # every distinct score is in every partition: the per-partition optima are not the answer
    assert r.count0 + r.count1 == 1500


def test_distinct_within_partitions_tied_across(client):
    """Each partition holds distinct scores, the partitions share them: one candidate per shared score."""
    grid = [round(0.05 * i, 2) for i in range(40)]
    rng = np.random.default_rng(7)
    pieces = [[(s, int(rng.random() < 0.3 + 0.1 * k), 1.0) for s in grid] for k in range(4)]
    r = run(pieces, weighted=False, fn_cost=2, fp_cost=1, n_ranges=3)
    assert r == reference(pieces, weighted=False, fn_cost=2, fp_cost=1)
    check_oracle(r, pieces, False, 2, 1)


def test_weights_and_class_prior(client):
    rng = np.random.default_rng(1)
    pieces = [[(float(rng.integers(0, 20)) / 4, int(rng.random() < 0.2), float(rng.integers(1, 9)) / 8)
               for _ in range(200)] for _ in range(4)]
    for prior in (None, 0.5, 0.05):
        r = run(pieces, fn_cost=7, fp_cost=1, class_prior=prior)
        assert r == reference(pieces, fn_cost=7, fp_cost=1, class_prior=prior)


def test_classes_in_separate_partitions(client):
    neg = [(float(s), 0, 1.0) for s in np.linspace(0, 1, 50)]
    pos = [(float(s), 1, 1.0) for s in np.linspace(0.5, 1.5, 50)]
    for pieces in ([neg, pos], [pos, [], neg]):
        r = run(pieces, weighted=False)
        assert r == reference(pieces, weighted=False)
        check_oracle(r, pieces, False, 5.0, 1.0)


def test_empty_partitions(client):
    pieces = [[], [(0.3, 1, 1.0), (0.1, 0, 1.0)], [], [], [(0.2, 0, 2.0), (0.3, 0, 1.0)], []]
    r = run(pieces, fn_cost=1, fp_cost=1)
    assert r == reference(pieces, fn_cost=1, fp_cost=1)
    check_oracle(r, pieces, True, 1, 1)


def test_continuous_all_distinct_scores(client):
    rng = np.random.default_rng(2)
    n = 40_000
    y = rng.random(n) < 0.1
    s = rng.normal(size=n) + 1.2 * y
    assert np.unique(s).shape[0] == n
    ddf = dd.from_pandas(pd.DataFrame({"s": s, "y": y}), npartitions=7)
    ref = single(s, y, fn_cost=10, fp_cost=1)
    for n_ranges in (1, 3, 16):
        r = thors_threshold(ddf, score_col="s", label_col="y", fn_cost=10, fp_cost=1, n_ranges=n_ranges)
        assert r == ref


def test_one_row(client):
    for label in (0, 1):
        pieces = [[(0.25, label, 1.0)]]
        r = run(pieces, weighted=False)
        assert r == reference(pieces, weighted=False)
        check_oracle(r, pieces, False, 5.0, 1.0)


def test_dask_arrays(client):
    rng = np.random.default_rng(3)
    n = 5_000
    s = np.round(rng.normal(size=n), 2)
    y = rng.random(n) < 0.3
    w = rng.integers(1, 16, n) / 4
    sd = da.from_array(s, chunks=700)
    ref = single(s, y, sample_weight=w, fn_cost=4, fp_cost=1, class_prior=0.2)
    # labels as numpy, weights as a dask array with other chunks: both are rechunked like the scores
    r = thors_threshold(sd, y, da.from_array(w, chunks=1_000), fn_cost=4, fp_cost=1, class_prior=0.2)
    assert r == ref
    r2 = thors_threshold(sd, da.from_array(y.astype(int), chunks=300), fn_cost=4, fp_cost=1)
    assert r2 == single(s, y, fn_cost=4, fp_cost=1)


def test_exact_where_only_the_prefix_sums_are_representable(client):
    """Costs b * n0 + prefix round (2**53 + 5 is not a float64) although every prefix sum of
    fn * w1 - fp * w0 is exact: the ranges' argmin over the rounded costs returned 0.11 (true
    cost 2**53 + 5) where the single machine and the optimum give 0.21 (2**53 + 4)."""
    big = 2.0**53
    s, y, w = [0.5, 0.5, 0.11, 0.21, 0.21], [1, 0, 0, 1, 0], [big, big, 3.0, 4.0, 5.0]

    def true_cost(t):
        return (sum(Fraction(wi) for si, yi, wi in zip(s, y, w) if yi and si <= t)
                + sum(Fraction(wi) for si, yi, wi in zip(s, y, w) if not yi and si > t))

    ref = single(s, y, sample_weight=w, fn_cost=1, fp_cost=1)
    for chunks, n_ranges in ((5, 1), (2, 2), (1, 3)):
        r = thors_threshold(da.from_array(np.array(s), chunks=chunks), np.array(y),
                            da.from_array(np.array(w), chunks=chunks), fn_cost=1, fp_cost=1, n_ranges=n_ranges)
        assert r == ref and r.threshold == 0.21
    assert true_cost(0.21) == min(true_cost(t) for t in [-math.inf, *s])


def test_bounds_work_unchanged(client):
    rng = np.random.default_rng(4)
    y = rng.random(3_000) < 0.2
    s = np.round(rng.normal(size=3_000) + y, 1)
    ddf = dd.from_pandas(pd.DataFrame({"s": s, "y": y}), npartitions=3)
    r = thors_threshold(ddf, score_col="s", label_col="y", fn_cost=5, fp_cost=1)
    assert r.bounds(0.95, n_test=1000) == single(s, y, fn_cost=5, fp_cost=1).bounds(0.95, n_test=1000)


def test_rows_read_once():
    """One pass: each input partition is produced exactly once (synchronous scheduler, in-process counter)."""
    calls = []

    def part(i):
        calls.append(i)
        return pd.DataFrame({"s": [0.1 * i, 0.5, 0.9], "y": [0, i % 2, 1]})

    meta = pd.DataFrame({"s": pd.Series(dtype=float), "y": pd.Series(dtype=int)})
    ddf = dd.from_map(part, range(4), meta=meta)
    with dask.config.set(scheduler="synchronous"):
        r = thors_threshold(ddf, score_col="s", label_col="y", fn_cost=2, fp_cost=1)
    assert sorted(calls) == [0, 1, 2, 3]
    s = np.concatenate([[0.1 * i, 0.5, 0.9] for i in range(4)])
    y = np.concatenate([[0, i % 2, 1] for i in range(4)])
    assert r == single(s, y, fn_cost=2, fp_cost=1)


# ------------------------------------------------------------------ bad input
def test_missing_column(client):
    ddf = frame([[(0.1, 0, 1.0)]])
    with pytest.raises(KeyError, match="'nope'"):
        thors_threshold(ddf, score_col="nope", label_col="label", fn_cost=1, fp_cost=1)
    with pytest.raises(KeyError, match="'wt'"):
        thors_threshold(ddf, score_col="score", label_col="label", weight_col="wt", fn_cost=1, fp_cost=1)


@pytest.mark.parametrize(
    ("bad", "col", "pattern"),
    [
        ((float("nan"), 0, 1.0), "score", r"column 'score' \(partition 1\) must be finite, got nan"),
        ((float("inf"), 0, 1.0), "score", r"must be finite, got inf"),
        ((0.5, 2, 1.0), "label", r"column 'label' \(partition 1\) must hold only 0/1/False/True, got 2"),
        ((0.5, 1, -1.5), "w", r"column 'w' \(partition 1\) must be finite and > 0, got -1.5"),
        ((0.5, 1, 0.0), "w", r"must be finite and > 0, got 0.0"),
    ],
)
def test_bad_values_name_the_value(client, bad, col, pattern):
    pieces = [[(0.1, 0, 1.0), (0.2, 1, 1.0)], [(0.3, 1, 1.0), bad]]
    with pytest.raises(ValueError, match=pattern):
        run(pieces)


def test_bad_array_input(client):
    s = da.from_array(np.array([0.1, np.nan, 0.3]), chunks=2)
    with pytest.raises(ValueError, match=r"scores \(block 0\) must be finite, got nan at position 1"):
        thors_threshold(s, np.array([0, 1, 0]), fn_cost=1, fp_cost=1)
    good = da.from_array(np.array([0.1, 0.2, 0.3]), chunks=2)
    with pytest.raises(ValueError, match=r"labels \(block 1\) must hold only 0/1/False/True, got 7"):
        thors_threshold(good, np.array([0, 1, 7]), fn_cost=1, fp_cost=1)
    with pytest.raises(ValueError, match="labels has shape"):
        thors_threshold(good, np.array([0, 1]), fn_cost=1, fp_cost=1)
    with pytest.raises(TypeError, match="labels are required"):
        thors_threshold(good, fn_cost=1, fp_cost=1)


def test_bad_arguments():
    ddf = frame([[(0.1, 0, 1.0)]])
    with pytest.raises(TypeError, match="list"):
        thors_threshold([0.1, 0.2], [0, 1], fn_cost=1, fp_cost=1)
    with pytest.raises(ValueError, match="fn_cost must be finite and > 0, got -1"):
        thors_threshold(ddf, score_col="score", label_col="label", fn_cost=-1, fp_cost=1)
    with pytest.raises(ValueError, match=r"class_prior must be strictly between 0 and 1, got 1\.5"):
        thors_threshold(ddf, score_col="score", label_col="label", fn_cost=1, fp_cost=1, class_prior=1.5)
    with pytest.raises(ValueError, match="n_ranges must be a positive integer, got 0"):
        thors_threshold(ddf, score_col="score", label_col="label", fn_cost=1, fp_cost=1, n_ranges=0)
    with pytest.raises(TypeError, match="score_col and label_col are required"):
        thors_threshold(ddf, fn_cost=1, fp_cost=1)


def test_no_rows(client):
    with pytest.raises(ValueError, match="no rows"):
        run([[], []])


def test_cost_is_the_empirical_cost(client):
    """Independent of both implementations: recompute the cost at the returned threshold by hand."""
    rng = np.random.default_rng(5)
    s = rng.integers(0, 50, 2_000) / 10
    y = rng.random(2_000) < 0.3
    ddf = dd.from_pandas(pd.DataFrame({"s": s, "y": y}), npartitions=4)
    r = thors_threshold(ddf, score_col="s", label_col="y", fn_cost=3, fp_cost=1)
    pred = s > r.threshold
    assert math.isclose(r.cost, 3 * np.sum(y & ~pred) + np.sum(~y & pred))
    # and no candidate is cheaper
    for t in np.unique(s):
        p = s > t
        assert 3 * np.sum(y & ~p) + np.sum(~y & p) >= r.cost


# ------------------------------------------------------------------ sharded streams
def test_merged_shard_summaries_equal_the_union(client):
    """Windowed shard summaries built in the worker processes, pickled back and merged = one summary of the union."""
    rng = np.random.default_rng(6)
    streams = [(np.round(rng.normal(size=700) + 0.3 * k, 1), rng.random(700) < 0.2 + 0.1 * k) for k in range(3)]

    def consume(s, y, window):  # runs in a worker process
        st = StreamingThors(fn_cost=4, fp_cost=1, window=window)
        for a, b in zip(s, y):
            st.update(float(a), bool(b))
        return st

    futures = [client.submit(consume, s, y, 250) for s, y in streams]
    hub = StreamingThors.merged(client.gather(futures))
    us = np.concatenate([s[-250:] for s, _ in streams])
    uy = np.concatenate([y[-250:] for _, y in streams])
    assert hub.result() == single(us, uy, fn_cost=4, fp_cost=1)
    assert len(hub) == 750


def test_shards_example_quick(client):
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, str(root / "examples" / "dask_shards.py"), "--quick", "--address", client.scheduler.address]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "at every tick: True" in p.stdout
