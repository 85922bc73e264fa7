"""Misclassification costs: validation and reduction to ``(fn_cost, fp_cost)``.

THORS needs only two numbers: the cost of a false negative (a positive predicted
negative) and the cost of a false positive (a negative predicted positive). A full
2x2 cost matrix reduces to these two plus a constant that no threshold can change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ._validation import MAX_WEIGHTED_COST, MIN_WEIGHTED_COST, _show, real_number

__all__ = ["Costs", "class_coefficients", "resolve_costs"]


@dataclass(frozen=True)
class Costs:
    """A validated pair of effective costs.

    Attributes
    ----------
    fn_cost
        Cost of a false negative, ``C(1, 0)``: a positive predicted negative.
    fp_cost
        Cost of a false positive, ``C(0, 1)``: a negative predicted positive.
    constant
        Cost every event pays whatever the threshold (from the diagonal of a full
        matrix): ``C(0, 0)`` per negative and ``C(1, 1)`` per positive. It is kept for
        reference and never enters the choice of threshold.

    Examples
    --------
    >>> Costs.from_matrix([[1.0, 11.0], [101.0, 1.0]])
    Costs(fn_cost=100.0, fp_cost=10.0, constant=(1.0, 1.0))
    """

    fn_cost: float
    fp_cost: float
    constant: tuple[float, float] = (0.0, 0.0)

    @classmethod
    def from_matrix(cls, cost_matrix: Sequence[Sequence[float]]) -> Costs:
        """Reduce ``cost_matrix[y_true][y_pred]`` to effective costs.

        ``fp = C(0,1) - C(0,0)`` and ``fn = C(1,0) - C(1,1)``; a matrix where either is
        not strictly positive has no meaningful threshold and raises ``ValueError``.
        """
        rows = _matrix_rows(cost_matrix)
        (c00, c01), (c10, c11) = rows
        fn, fp = c10 - c11, c01 - c00
        if not (abs(fn) <= MAX_WEIGHTED_COST and abs(fp) <= MAX_WEIGHTED_COST):
            raise ValueError(f"cost_matrix effective costs must be at most 2**960 (MAX_WEIGHTED_COST), got "
                             f"fn = C(1,0) - C(1,1) = {fn!r} and fp = C(0,1) - C(0,0) = {fp!r}")
        if fn <= 0 or fp <= 0:
            raise ValueError(
                "cost_matrix has no meaningful threshold: effective costs "
                f"fn = C(1,0) - C(1,1) = {fn!r} and fp = C(0,1) - C(0,0) = {fp!r} must both be > 0"
            )
        if fn < MIN_WEIGHTED_COST or fp < MIN_WEIGHTED_COST:
            raise ValueError(f"cost_matrix effective costs must be at least 2**-960 (MIN_WEIGHTED_COST), got "
                             f"fn = C(1,0) - C(1,1) = {fn!r} and fp = C(0,1) - C(0,0) = {fp!r}; express the "
                             "costs in smaller units")
        return cls(fn, fp, (c00, c11))


def _matrix_rows(cost_matrix: object) -> list[list[float]]:
    """``cost_matrix`` as 2x2 floats: not 2x2 ``ValueError``; an entry that is not a real number
    (``"1"``, ``b"1"``, ``True``, ``None``) ``TypeError``; non-finite or too large for float64
    ``ValueError``; each naming the entry and its position."""
    shape_error = f"cost_matrix must be 2x2 ([[C00, C01], [C10, C11]]), got {_show(cost_matrix)}"
    if isinstance(cost_matrix, (str, bytes, bytearray)):
        raise TypeError(f"cost_matrix must be a 2x2 array of numbers, got {_show(cost_matrix)}")
    try:
        given = list(cost_matrix)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(shape_error) from None
    raw = []
    for row in given:
        if isinstance(row, (str, bytes, bytearray)):
            raise TypeError(f"cost_matrix must be a 2x2 array of numbers, got the row {_show(row)}")
        try:
            raw.append(list(row))
        except TypeError:
            raise ValueError(shape_error) from None
    if len(raw) != 2 or any(len(r) != 2 for r in raw):
        raise ValueError(shape_error)
    rows = []
    for i, row in enumerate(raw):
        out = []
        for j, c in enumerate(row):
            try:
                out.append(real_number(c, "cost_matrix entries", f" at [{i}][{j}]"))
            except TypeError:
                raise TypeError(f"cost_matrix entries must be real numbers, got {_show(c)} at [{i}][{j}]") from None
        rows.append(out)
    return rows


def _check_cost(name: str, value: object) -> float:
    """One cost: a real number (``TypeError`` otherwise), finite and in ``[2**-960, 2**960]``
    (``ValueError`` naming it otherwise)."""
    c = real_number(value, name)
    if not c > 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {_show(value)}")
    if c < MIN_WEIGHTED_COST:
        raise ValueError(f"{name} must be at least 2**-960 (MIN_WEIGHTED_COST: smaller products lose their "
                         f"precision), got {_show(value)}; express the costs in smaller units")
    if c > MAX_WEIGHTED_COST:
        raise ValueError(f"{name} must be at most 2**960 (MAX_WEIGHTED_COST, so that total costs stay finite), "
                         f"got {_show(value)}")
    return c


def resolve_costs(
    fn_cost: float | None = None,
    fp_cost: float | None = None,
    cost_matrix: Sequence[Sequence[float]] | None = None,
) -> Costs:
    """Validate ``fn_cost``/``fp_cost`` or a ``cost_matrix`` and return :class:`Costs`.

    Give either both keywords or the matrix, not both. Costs and matrix entries follow the
    number rule of :mod:`thors_stream._validation`: non-numbers (``"1"``, ``b"1"``, ``True``,
    ``None``) raise ``TypeError``; non-finite, zero, negative or too large (above
    :data:`~thors_stream._validation.MAX_WEIGHTED_COST` = 2**960, or beyond float64 like
    ``10**400``) effective costs raise ``ValueError`` naming the value.

    Examples
    --------
    >>> resolve_costs(fn_cost=100, fp_cost=10)
    Costs(fn_cost=100.0, fp_cost=10.0, constant=(0.0, 0.0))
    >>> resolve_costs(fn_cost=-1, fp_cost=1)
    Traceback (most recent call last):
    ...
    ValueError: fn_cost must be finite and > 0, got -1
    """
    if cost_matrix is not None:
        if fn_cost is not None or fp_cost is not None:
            raise ValueError("give either fn_cost/fp_cost or cost_matrix, not both")
        return Costs.from_matrix(cost_matrix)
    if fn_cost is None or fp_cost is None:
        raise TypeError("both fn_cost and fp_cost are required (or a cost_matrix)")
    return Costs(_check_cost("fn_cost", fn_cost), _check_cost("fp_cost", fp_cost))


def class_coefficients(
    fn_cost: float, fp_cost: float, n0: float, n1: float, class_prior: float | None
) -> tuple[float, float]:
    """Per-unit-weight cost of a false negative and of a false positive.

    Without a prior these are the costs themselves. With ``class_prior = pi1`` each
    class is rescaled so that it makes up ``pi1`` (resp. ``1 - pi1``) of the total
    weight ``n = n0 + n1``: a positive weighs ``pi1 * n / n1``, a negative
    ``(1 - pi1) * n / n0``. When a class is absent the prior cannot apply and the
    plain costs are returned. O(1).

    The products ``a * W1`` and ``b * W0`` (``W1 <= n1``, ``W0 <= n0``) stay below
    ``max(fn_cost, fp_cost) * n``, finite under the 2**960 limit; only a coefficient
    itself can leave float64, when one class's total weight is tiny against the other's
    (e.g. subnormal weights). Such totals are refused with a ``ValueError`` naming them
    rather than giving ``inf``/``nan`` costs. When ``fn_cost * pi1 * n`` would lose
    precision (below the smallest normal float) the ratio ``n / n1`` is formed first.

    Examples
    --------
    >>> class_coefficients(10.0, 1.0, n0=900.0, n1=100.0, class_prior=None)
    (10.0, 1.0)
    >>> class_coefficients(10.0, 1.0, n0=500.0, n1=500.0, class_prior=0.1)
    (2.0, 1.8)
    >>> class_coefficients(1.0, 1.0, n0=1.0, n1=5e-324, class_prior=0.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: class_prior=0.5 cannot rescale the positives: their total weight n1=5e-324 against the total n=1.0 ...
    """
    if class_prior is None or n0 <= 0 or n1 <= 0:
        return fn_cost, fp_cost
    n0, n1 = float(n0), float(n1)
    n = n0 + n1
    a = _rescaled(float(fn_cost), float(class_prior), n, n1)
    b = _rescaled(float(fp_cost), 1.0 - float(class_prior), n, n0)
    if 0.0 < a < math.inf and 0.0 < b < math.inf:
        return a, b
    for coef, cls, k, nk, cost, share in ((a, "positives", 1, n1, "fn_cost", "class_prior"),
                                          (b, "negatives", 0, n0, "fp_cost", "(1 - class_prior)")):
        if not 0.0 < coef < math.inf:
            raise ValueError(
                f"class_prior={class_prior!r} cannot rescale the {cls}: their total weight n{k}={nk!r} against "
                f"the total n={n!r} gives a per-unit cost {cost} * {share} * n / n{k} = {coef!r}, not a finite "
                "positive float64; express the weights in larger units (or drop class_prior)"
            )
    raise AssertionError("unreachable")  # pragma: no cover


_MIN_NORMAL = 2.0**-1022


def _rescaled(cost: float, share: float, n: float, nk: float) -> float:
    """``cost * share * n / nk``, rounded as before when the product is a normal float;
    with ``n / nk`` first when it is not (subnormal totals would lose their precision)."""
    x = cost * share * n
    if _MIN_NORMAL <= x < math.inf:
        return x / nk
    return cost * share * (n / nk)
