"""Exact THORS thresholds for data that lives on a Dask cluster.

:func:`thors_threshold` takes a ``dask.dataframe.DataFrame`` (or 1-d dask arrays) of
labelled scores and returns the same :class:`~thors_stream.ThresholdResult` as the
single-machine :func:`thors_stream.thors_threshold` on the same rows, without ever
collecting the rows in one place.

Strategy (exact; cut points only balance the work)
---------------------------------------------------
1. *Aggregate* (one task per input partition, the only pass over the rows): validate
   the partition, sort it and merge equal scores into one key ``score -> (w1, w0,
   c1, c0)``; keep a small evenly spaced sample of the keys and the partition totals.
2. *Plan* (one small task): from the samples choose cut points at approximate
   quantiles of the keys, so that every score range holds about as many keys; add
   up the class totals ``n0, n1`` (they fix the class-prior coefficients).
3. *Exchange* (one all-to-all shuffle of the aggregates, never of the rows): every
   aggregated partition is sorted, so its piece for range ``r`` is one slice; range
   ``r`` receives its slice from every partition. A score lives in exactly one range,
   so ties across partitions become one candidate when the range merges its pieces.
4. *Offsets* (one small task): the per-range totals, in score order, give each range
   the weighted counts of everything below it.
5. *Ranges* (one task per range): merge the pieces, prefix-sum from the range's
   offset and evaluate every candidate with the very formula of the single-machine
   version, ``a * W1(<= t) + b * (n0 - W0(<= t))``; keep the first minimum.
6. *Driver*: scan the per-range minima in score order (``-inf`` first, strict ``<``):
   the first global minimum, i.e. the smallest threshold among equal costs.

Everything is one dask graph built with ``dask.delayed`` and run by one
``dask.compute`` call (the active ``distributed`` client when there is one): the
rows are read once, and one shuffle moves the per-partition aggregates (one key per
distinct score per partition: few when scores repeat, as many as the rows when every
score is distinct). ``dask.dataframe``'s own range shuffle (``set_index`` /
``sort_values``) was not used: it computes its divisions in a separate pass before
the shuffle, which would read the data twice; here the cut points are a task inside
the same graph.

Exactness: with integer (or dyadic) weights and costs every sum is exact, so the
threshold, the cost and the counts are bit-identical to the single-machine answer,
``class_prior`` included (the coefficients come from the same exact totals). With
arbitrary float weights the sums are added in another order, so costs agree up to
summation rounding (``~ n * eps * total cost``) and candidates whose costs differ by
less than that may be interchanged, as in the single-machine version.

Streams: for labelled events arriving on several machines, keep one (windowed)
:class:`~thors_stream.StreamingThors` per shard and combine their pickled summaries
with :meth:`StreamingThors.merged <thors_stream.StreamingThors.merged>`; see
``examples/dask_shards.py`` (dask actors on a ``LocalCluster``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._validation import check_class_prior, check_labels, check_scores, check_weighted_costs, check_weights
from .costs import class_coefficients, resolve_costs
from .result import ThresholdResult
from .rows import rows_by_score

__all__ = ["thors_threshold", "thors_threshold_by_segment"]

_EXTRA = "pip install 'thors_stream[dask]'"

# An aggregate: (keys, w1, w0, c1, c0) with keys sorted and distinct; float64 weights,
# int32 counts (int64 for a partition of 2**31 rows or more). Without weights w1/w0 are
# None (the counts are the weights).
Agg = tuple[np.ndarray, Any, Any, np.ndarray, np.ndarray]


def _require_dask() -> Any:
    try:
        import dask  # the real package: absolute import, this module is thors_stream.dask
        import dask.array
        import dask.dataframe
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"thors_stream.dask needs dask and distributed: {_EXTRA} ({exc})") from exc
    return dask


# ---------------------------------------------------------------- per-partition work
def _aggregate(scores: Any, labels: Any, weights: Any, names: tuple[str, str, str], where: str,
               costs: tuple[float, float]) -> Agg:
    """Validate one partition and merge equal scores: O(m log m) for m rows."""
    s = check_scores(scores, f"{names[0]} ({where})")
    m = s.shape[0]
    y = check_labels(labels, m, f"{names[1]} ({where})")
    w = check_weights(weights, m, f"{names[2]} ({where})")
    if w is not None:  # the single-machine limit: weight * cost <= 2**960
        check_weighted_costs(w, costs[0], costs[1], f"{names[2]} ({where})")
    cdt = np.int32 if m < 2**31 else np.int64  # per-partition counts: 16-byte keys when unweighted
    if m == 0:
        e = np.empty(0)
        ei = np.empty(0, dtype=cdt)
        return (e, None if w is None else e, None if w is None else e, ei, ei)
    if w is None:
        ss = np.sort(s)
        new_key = ss[1:] != ss[:-1]
        at = np.searchsorted(ss, np.sort(s[y]), side="left")  # first row of each positive's score
        if new_key.all():  # all distinct (continuous scores): no grouping needed
            c1 = np.zeros(m, dtype=cdt)
            c1[at] = 1
            return ss, None, None, c1, (1 - c1).astype(cdt)
        starts = np.flatnonzero(np.concatenate([[True], new_key]))
        c1 = np.bincount(np.searchsorted(starts, at, side="right") - 1, minlength=starts.shape[0]).astype(cdt)
        count = np.diff(np.append(starts, m)).astype(cdt)
        return ss[starts], None, None, c1, count - c1
    keys, w1, w0, c1, c0 = rows_by_score(s, y, w)
    return keys, w1, w0, c1.astype(cdt), c0.astype(cdt)


def _aggregate_frame(df: Any, score_col: str, label_col: str, weight_col: str | None, part: int,
                     costs: tuple[float, float]) -> Agg:
    names = (f"column {score_col!r}", f"column {label_col!r}", f"column {weight_col!r}")
    where = f"partition {part}"
    w = None if weight_col is None else df[weight_col].to_numpy()
    return _aggregate(df[score_col].to_numpy(), df[label_col].to_numpy(), w, names, where, costs)


def _aggregate_blocks(s: Any, y: Any, w: Any, part: int, costs: tuple[float, float]) -> Agg:
    return _aggregate(s, y, w, ("scores", "labels", "weights"), f"block {part}", costs)


def _totals(agg: Agg) -> np.ndarray:
    _, w1, w0, c1, c0 = agg
    tc1, tc0 = int(c1.sum()), int(c0.sum())
    tw1 = float(tc1) if w1 is None else float(w1.sum())
    tw0 = float(tc0) if w0 is None else float(w0.sum())
    return np.array([tw1, tw0, tc1, tc0], dtype=object)


def _sketch(agg: Agg, k: int) -> tuple[np.ndarray, float, np.ndarray]:
    """Up to ``k`` evenly spaced keys of a partition, each standing for ``len/k`` keys; and the totals."""
    keys = agg[0]
    n = keys.shape[0]
    if n <= k:
        sample = keys
    else:
        sample = keys[np.linspace(0, n - 1, k).round().astype(np.int64)]
    return sample, (n / sample.shape[0] if sample.shape[0] else 0.0), _totals(agg)


def _plan(sketches: Sequence[tuple[np.ndarray, float, np.ndarray]], n_ranges: int) -> tuple[np.ndarray, np.ndarray]:
    """Cut points (approximate key quantiles) and the exact global totals (w1, w0, c1, c0)."""
    tot = np.array([0.0, 0.0, 0, 0], dtype=object)
    for _, _, t in sketches:
        tot = tot + t
    if tot[2] + tot[3] == 0:
        raise ValueError("the data has no rows: no threshold can be chosen from no events")
    samples = [s for s, _, _ in sketches if s.shape[0]]
    vals = np.concatenate(samples)
    wts = np.concatenate([np.full(s.shape[0], f) for s, f, _ in sketches if s.shape[0]])
    order = np.argsort(vals, kind="stable")
    vals, cw = vals[order], np.cumsum(wts[order])
    targets = cw[-1] * np.arange(1, n_ranges) / n_ranges
    cuts = np.unique(vals[np.minimum(np.searchsorted(cw, targets, side="left"), vals.shape[0] - 1)])
    return cuts, tot


def _split(agg: Agg, plan: tuple[np.ndarray, np.ndarray], n_ranges: int) -> tuple[Any, ...]:
    """Slice a sorted aggregate into ``n_ranges`` pieces; last item: per-range totals. O(R log m).

    Range ``r`` holds the keys in ``[cuts[r-1], cuts[r])``; when the plan merged equal
    cut points the last ranges are empty.
    """
    cuts = plan[0]
    keys = agg[0]
    edges = np.concatenate([[0], np.searchsorted(keys, cuts, side="left"), np.full(n_ranges - cuts.shape[0],
                                                                                      keys.shape[0])])
    pieces: list[tuple[Any, ...]] = []
    sums = np.zeros((n_ranges, 4))
    for r in range(n_ranges):
        lo, hi = int(edges[r]), int(edges[r + 1])
        piece: tuple[Any, ...] = tuple(None if a is None else a[lo:hi] for a in agg)
        pieces.append(piece)
        _, w1, w0, c1, c0 = piece
        if hi > lo:
            sc1, sc0 = c1.sum(), c0.sum()
            sums[r] = (sc1 if w1 is None else w1.sum(), sc0 if w0 is None else w0.sum(), sc1, sc0)
    return (*pieces, sums)


def _offsets(range_sums: Sequence[np.ndarray]) -> np.ndarray:
    """Weighted counts strictly below each range (rows: ranges; cols: W1, W0, C1, C0)."""
    total = np.sum(range_sums, axis=0)
    below: np.ndarray = np.zeros_like(total)
    below[1:] = np.cumsum(total[:-1], axis=0)
    return below


def _range_best(
    pieces: Sequence[Agg], offsets: np.ndarray, plan: tuple[np.ndarray, np.ndarray], r: int,
    fn: float, fp: float, prior: float | None,
) -> tuple[float, float, float, float, int, int]:
    """Merge one range's pieces and return its first minimum of ``a * W1 - b * W0`` (the cost
    less ``b * n0``): (that value, score, W1, W0, C1, C0) at it."""
    pieces = [p for p in pieces if p[0].shape[0]]
    if not pieces:
        return (math.inf, math.nan, 0.0, 0.0, 0, 0)
    tot = plan[1]
    n1, n0 = float(tot[0]), float(tot[1])
    a, b = class_coefficients(fn, fp, n0, n1, prior)
    if pieces[0][1] is None and all((p[3] + p[4] == 1).all() for p in pieces):
        _, _, offc1, offc0 = offsets[r]
        keys, cc1, cc0 = _merge_single_rows(pieces)
        cc1 += int(offc1)
        cc0 += int(offc0)
        W1, W0 = cc1.astype(np.float64), cc0.astype(np.float64)
    else:
        keys, W1, W0, cc1, cc0 = _merge_general(pieces, offsets[r])
    # the first minimum of a * W1 - b * W0 (the single-machine path's quantity), not of the
    # absolute cost b * n0 + that, which can round where the prefix sums are exact
    gain = a * W1 - b * W0
    j = int(np.argmin(gain))
    return (float(gain[j]), float(keys[j]), float(W1[j]), float(W0[j]), int(cc1[j]), int(cc0[j]))


def _merge_single_rows(pieces: Sequence[Agg]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unweighted pieces whose keys each stand for one row (continuous scores): merge by one sort.

    Returns the distinct keys and the positives / negatives at or below each, like the
    single-machine unweighted path: one ``np.sort`` of the keys, the positives located by
    binary search. O(k log k).
    """
    ss = np.sort(np.concatenate([p[0] for p in pieces]))
    pos = np.sort(np.concatenate([p[0][p[3] == 1] for p in pieces]))
    first = np.searchsorted(ss, pos, side="left")  # each positive counted at its score's first slot
    cum1 = np.cumsum(np.bincount(first, minlength=ss.shape[0]))
    new_key = ss[1:] != ss[:-1]
    if new_key.all():
        return ss, cum1, np.arange(1, ss.shape[0] + 1) - cum1
    ends = np.flatnonzero(np.append(new_key, True))  # equal scores from several partitions: one candidate
    return ss[ends], cum1[ends], ends + 1 - cum1[ends]


def _merge_general(pieces: Sequence[Agg], offset: np.ndarray) -> tuple[np.ndarray, ...]:
    """Merge weighted (or tied) pieces: a stable argsort of the sorted runs, then per-key sums. O(k log k)."""
    keys = np.concatenate([p[0] for p in pieces])
    order = np.argsort(keys, kind="stable")  # timsort: the pieces are sorted runs
    keys = keys[order]
    new_key = keys[1:] != keys[:-1]
    starts = None if new_key.all() else np.flatnonzero(np.concatenate([[True], new_key]))

    def prefix(col: int, offset: float, dtype: Any) -> np.ndarray:
        v = np.concatenate([p[col] for p in pieces])[order]
        if starts is not None:  # equal scores from several partitions: one candidate
            v = np.add.reduceat(v, starts, dtype=dtype)
        return offset + np.cumsum(v, dtype=dtype)

    if starts is not None:
        keys = keys[starts]
    off1, off0, offc1, offc0 = offset
    cc1 = prefix(3, int(offc1), np.int64)
    cc0 = prefix(4, int(offc0), np.int64)
    if pieces[0][1] is not None:
        W1, W0 = prefix(1, off1, np.float64), prefix(2, off0, np.float64)
    else:
        W1, W0 = cc1.astype(np.float64), cc0.astype(np.float64)
    return keys, W1, W0, cc1, cc0


# ---------------------------------------------------------------- public entry point
def thors_threshold(
    data: Any,
    labels: Any = None,
    weights: Any = None,
    *,
    score_col: str | None = None,
    label_col: str | None = None,
    weight_col: str | None = None,
    fn_cost: float | None = None,
    fp_cost: float | None = None,
    cost_matrix: Sequence[Sequence[float]] | None = None,
    class_prior: float | None = None,
    n_ranges: int | None = None,
) -> ThresholdResult:
    """The exact THORS threshold of labelled scores held in a dask collection.

    Same semantics and same answer as :func:`thors_stream.thors_threshold` on the same
    rows: predict positive iff ``score > threshold``; candidates are every distinct
    score and ``-inf``; equal scores move together (also across partitions); among
    equal costs the smallest threshold wins. The result's ``.bounds()`` works as usual.

    Two call forms:

    - ``thors_threshold(ddf, score_col="s", label_col="y", weight_col=None, ...)`` for a
      ``dask.dataframe.DataFrame``;
    - ``thors_threshold(scores, labels, weights=None, ...)`` for 1-d dask arrays (labels
      and weights may also be numpy arrays; they are rechunked like ``scores``).

    Cost in passes and shuffles (see the module docstring for the strategy): the rows
    are read **once**; there is **one** all-to-all shuffle, of per-partition aggregates
    (one ``(score, w1, w0, c1, c0)`` key per distinct score per partition: 16 bytes
    unweighted, 32 weighted), not of rows; everything runs as one ``dask.compute``.
    Tasks: ``4P + P*R + R + 2`` for ``P`` partitions and ``R`` ranges (``P*(R+1)`` of
    them are tiny slice look-ups). Time O(m log m) per partition of m rows plus O(k log k)
    per range of k keys. Memory per worker: the partition being aggregated plus the
    aggregates, i.e. bounded by the distinct scores of its partitions and ranges, not
    by the total number of rows; the client receives O(P * R) numbers. Continuous
    scores (every value distinct) are handled exactly; they only make the shuffle as
    large as the data.

    Parameters
    ----------
    data
        A ``dask.dataframe.DataFrame``, or a 1-d dask array of finite scores.
    labels, weights
        With an array ``data``: the labels (0/1 or bools) and optional weights (> 0).
    score_col, label_col, weight_col
        With a DataFrame ``data``: the column names (``weight_col`` optional).
    fn_cost, fp_cost, cost_matrix, class_prior
        As in :func:`thors_stream.thors_threshold`.
    n_ranges
        Number of score ranges the aggregates are shuffled into (default: the number
        of partitions, at most 128). Only balances the work; the answer does not depend
        on it. More ranges mean smaller range tasks but ``P * R`` slice tasks for the
        scheduler; near the number of worker threads (or a few times it) is a good choice.

    Raises
    ------
    KeyError
        A named column is missing.
    TypeError
        ``data`` is not a dask DataFrame or array.
    ValueError
        No rows; a non-finite score, a label other than 0/1 or a weight <= 0 (the message
        names the value, the column and the partition); bad costs or prior.

    Examples
    --------
    >>> import dask, dask.dataframe as dd, pandas as pd
    >>> df = pd.DataFrame({"s": [0.2, 0.9, 0.4, 0.7, 0.4], "y": [0, 1, 0, 1, 1]})
    >>> ddf = dd.from_pandas(df, npartitions=2)
    >>> with dask.config.set(scheduler="synchronous"):
    ...     r = thors_threshold(ddf, score_col="s", label_col="y", fn_cost=5, fp_cost=1)
    >>> r.threshold, r.cost, r.count_k0
    (0.2, 1.0, 1)
    """
    dask = _require_dask()
    import dask.array as da
    import dask.dataframe as dd

    costs = resolve_costs(fn_cost, fp_cost, cost_matrix)
    prior = check_class_prior(class_prior)
    delayed = dask.delayed

    if isinstance(data, dd.DataFrame):
        if labels is not None or weights is not None:
            raise TypeError("with a DataFrame, name the columns (label_col=, weight_col=) instead of passing arrays")
        if score_col is None or label_col is None:
            raise TypeError("score_col and label_col are required with a DataFrame")
        cols = [score_col, label_col] + ([] if weight_col is None else [weight_col])
        for c in cols:
            if c not in data.columns:
                raise KeyError(f"column {c!r} is not in the DataFrame (columns: {list(data.columns)})")
        parts = data[cols].to_delayed()
        aggs = [delayed(_aggregate_frame, pure=True)(p, score_col, label_col, weight_col, i,
                                                     (costs.fn_cost, costs.fp_cost))
                for i, p in enumerate(parts)]
    elif isinstance(data, da.Array):
        if score_col is not None or label_col is not None or weight_col is not None:
            raise TypeError("with arrays, pass labels (and weights) positionally, not column names")
        if labels is None:
            raise TypeError("labels are required with a scores array")
        aggs = _array_aggregates(da, delayed, data, labels, weights, (costs.fn_cost, costs.fp_cost))
    else:
        raise TypeError(
            f"data must be a dask.dataframe.DataFrame or a dask array, got {type(data).__name__}; "
            "for in-memory data use thors_stream.thors_threshold"
        )

    n_parts = len(aggs)
    if n_ranges is None:
        n_ranges = max(1, min(n_parts, 128))
    if isinstance(n_ranges, bool) or not isinstance(n_ranges, (int, np.integer)) or n_ranges < 1:
        raise ValueError(f"n_ranges must be a positive integer, got {n_ranges!r}")
    n_ranges = int(n_ranges)
    k = 4 * n_ranges + 16
    plan = delayed(_plan, pure=True)([delayed(_sketch, pure=True)(a, k) for a in aggs], n_ranges)
    # the plan may merge equal cut points: ranges beyond the last cut simply stay empty
    splits = [delayed(_split, pure=True, nout=n_ranges + 1)(a, plan, n_ranges) for a in aggs]
    offsets = delayed(_offsets, pure=True)([s[n_ranges] for s in splits])
    fn, fp = costs.fn_cost, costs.fp_cost
    bests = [
        delayed(_range_best, pure=True)([s[r] for s in splits], offsets, plan, r, fn, fp, prior)
        for r in range(n_ranges)
    ]
    plan_v, *best_v = dask.compute(plan, *bests)
    return _finish(plan_v[1], best_v, fn, fp, prior)


def _array_aggregates(da: Any, delayed: Any, scores: Any, labels: Any, weights: Any,
                      costs: tuple[float, float]) -> list[Any]:
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-dimensional, got shape {scores.shape}")
    if any(math.isnan(c) for c in scores.chunks[0]):
        raise ValueError("scores has unknown chunk sizes; call scores.compute_chunk_sizes() first")
    n = scores.shape[0]

    def like_scores(x: Any, name: str) -> Any:
        if not isinstance(x, da.Array):
            x = np.asarray(x)
        if x.ndim != 1 or x.shape[0] != n:
            raise ValueError(f"{name} has shape {x.shape} but scores have shape {scores.shape}")
        return x.rechunk(scores.chunks) if isinstance(x, da.Array) else da.from_array(x, chunks=scores.chunks)

    y = like_scores(labels, "labels")
    w = None if weights is None else like_scores(weights, "weights")
    sb, yb = scores.to_delayed().ravel(), y.to_delayed().ravel()
    wb = [None] * len(sb) if w is None else w.to_delayed().ravel()
    return [delayed(_aggregate_blocks, pure=True)(s, yy, ww, i, costs) for i, (s, yy, ww) in enumerate(zip(sb, yb, wb))]


def _finish(
    tot: np.ndarray, bests: Sequence[tuple[float, float, float, float, int, int]], fn: float, fp: float,
    prior: float | None,
) -> ThresholdResult:
    n1, n0, count1, count0 = float(tot[0]), float(tot[1]), int(tot[2]), int(tot[3])
    a, b = class_coefficients(fn, fp, n0, n1, prior)
    best = (0.0, -math.inf, 0.0, 0.0, 0, 0)  # the -inf candidate (everything positive): gain 0
    for cand in bests:  # ranges in ascending score order; strict < keeps the smallest threshold
        if cand[0] < best[0]:
            best = cand
    _, thr, k1, k0, ck1, ck0 = best
    cost = b * n0 if thr == -math.inf else a * k1 + b * (n0 - k0)  # as the single-machine path reports it
    return ThresholdResult(
        threshold=float(thr), cost=float(cost), n0=n0, n1=n1, k0=float(k0), k1=float(k1),
        count0=count0, count1=count1, count_k0=int(ck0), count_k1=int(ck1), fn_cost=fn, fp_cost=fp,
        class_prior=prior,
    )


def _segment_partition(pdf: Any, score_col: str, label_col: str, segment_col: str, weight_col: str | None,
                       fn_cost: float, fp_cost: float, class_prior: float | None) -> dict[Any, ThresholdResult]:
    """THORS per segment of one shuffled partition (every segment lies in one partition)."""
    from .segments import thors_by_segment

    if len(pdf) == 0:
        return {}
    # raw columns: thors_by_segment applies the package's rules (a string score is refused)
    w = None if weight_col is None else pdf[weight_col].to_numpy()
    return thors_by_segment(pdf[score_col].to_numpy(), pdf[label_col].to_numpy(),
                            pdf[segment_col].to_numpy(), fn_cost=fn_cost, fp_cost=fp_cost, sample_weight=w,
                            class_prior=class_prior)


def thors_threshold_by_segment(
    ddf: Any, *, score_col: str, label_col: str, segment_col: str, weight_col: str | None = None,
    fn_cost: float, fp_cost: float, class_prior: float | None = None,
) -> dict[Any, ThresholdResult]:
    """Exact THORS threshold per segment of a ``dask.dataframe.DataFrame``: ``{segment: ThresholdResult}``.

    The same answer as :func:`thors_stream.segments.thors_by_segment` on the collected
    rows. One hash shuffle of the rows on ``segment_col`` (so each segment's rows meet in
    one partition), then one task per partition running the single-machine per-segment
    search; everything in one ``dask.compute``. Time O(m log m) per partition of m rows;
    memory per worker bounded by its partition, i.e. by the largest segments it holds
    (a single segment must fit in one worker's memory). For segments whose fallback or
    pooling needs the global threshold, combine with :func:`thors_threshold`.

    >>> import pandas as pd, dask.dataframe as dd
    >>> pdf = pd.DataFrame({"s": [0.1, 0.9, 0.2, 0.3, 0.7, 0.8], "y": [0, 1, 1, 0, 0, 1],
    ...                     "g": ["a", "a", "a", "b", "b", "b"]})
    >>> r = thors_threshold_by_segment(dd.from_pandas(pdf, npartitions=2), score_col="s", label_col="y",
    ...                                segment_col="g", fn_cost=1, fp_cost=1)
    >>> {k: v.threshold for k, v in sorted(r.items())}
    {'a': 0.1, 'b': 0.7}
    """
    dask = _require_dask()
    costs = resolve_costs(fn_cost, fp_cost, None)
    prior = check_class_prior(class_prior)
    cols = [c for c in dict.fromkeys([score_col, label_col, segment_col, weight_col]) if c is not None]
    shuffled = ddf[cols].shuffle(on=segment_col)
    parts = [dask.delayed(_segment_partition)(p, score_col, label_col, segment_col, weight_col, costs.fn_cost,
                                              costs.fp_cost, prior) for p in shuffled.to_delayed()]
    out: dict[Any, ThresholdResult] = {}
    for d in dask.compute(*parts):
        out.update(d)
    return out
