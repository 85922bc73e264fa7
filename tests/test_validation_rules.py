"""Issue 13 item 5: one rule for scores, weights, costs and times, everywhere; overflow refused."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from thors_stream import StreamingThors, thors_threshold
from thors_stream._validation import MAX_WEIGHTED_COST, MIN_WEIGHTED_COST
from thors_stream.costs import resolve_costs


def state(st):
    return (len(st), st.n_updates, [a.tolist() for a in st.held()])


@pytest.mark.parametrize("bad", ["0.5", b"0.5", np.str_("0.5"), True, np.bool_(True), None])
def test_numeric_strings_bytes_and_bools_are_refused_everywhere(bad):
    """update, update_many and thors_threshold refuse the same things (TypeError)."""
    st = StreamingThors(fn_cost=1, fp_cost=1)
    st.update(0.2, 0)
    before = state(st)
    with pytest.raises(TypeError):
        st.update(bad, 1)
    with pytest.raises(TypeError):
        st.update_many([0.1, bad], [0, 1])
    with pytest.raises(TypeError):
        thors_threshold([0.1, bad], [0, 1], fn_cost=1, fp_cost=1)
    if bad is not None:
        with pytest.raises(TypeError):
            st.update(0.3, 1, w=bad)
        with pytest.raises(TypeError):
            st.update_many([0.1, 0.2], [0, 1], ws=[1.0, bad])
        with pytest.raises(TypeError):
            thors_threshold([0.1, 0.2], [0, 1], sample_weight=[1.0, bad], fn_cost=1, fp_cost=1)
    assert state(st) == before


def test_numeric_string_arrays_are_refused():
    with pytest.raises(TypeError, match="real numbers"):
        thors_threshold(np.array(["0.1", "0.9"]), [0, 1], fn_cost=1, fp_cost=1)
    with pytest.raises(TypeError):
        StreamingThors(fn_cost=1, fp_cost=1).update_many(np.array([b"0.1"]), [0])


@pytest.mark.parametrize("huge", [10**400, Fraction(10**400, 3), Decimal("1e400"), -(10**400)])
def test_huge_ints_fractions_decimals_are_value_errors(huge):
    """They raised OverflowError; now ValueError naming the value, state unchanged."""
    st = StreamingThors(fn_cost=1, fp_cost=1, window=4)
    st.update(0.2, 0)
    before = state(st)
    for call in (lambda: st.update(huge, 1), lambda: st.update(0.5, 1, w=huge),
                 lambda: st.update_many([huge], [1]), lambda: st.update_many([0.5], [1], ws=[huge]),
                 lambda: thors_threshold([huge, 0.1], [1, 0], fn_cost=1, fp_cost=1),
                 lambda: resolve_costs(fn_cost=huge, fp_cost=1),
                 lambda: resolve_costs(cost_matrix=[[0, 1], [huge, 0]]),
                 lambda: StreamingThors(fn_cost=1, fp_cost=huge)):
        with pytest.raises(ValueError):
            call()
    assert state(st) == before


def test_weights_times_costs_that_overflow_are_refused():
    """Finite weights and costs whose products overflow gave nan costs and backends that
    disagreed; now they are refused, naming the value; the limit is documented."""
    big = 1e280
    st = StreamingThors(fn_cost=big, fp_cost=1, window=3)
    st.update(0.5, 0, 1.0)
    before = state(st)
    with pytest.raises(ValueError, match="2\\*\\*960"):
        st.update(0.6, 1, w=1e10)
    with pytest.raises(ValueError, match="2\\*\\*960"):
        st.update_many([0.6], [1], ws=[1e10])
    with pytest.raises(ValueError, match="2\\*\\*960"):
        thors_threshold([0.1, 0.6], [0, 1], sample_weight=[1.0, 1e10], fn_cost=big, fp_cost=1)
    with pytest.raises(ValueError, match="2\\*\\*960"):
        StreamingThors(fn_cost=1e300, fp_cost=1)  # over the limit itself
    assert state(st) == before
    # at the limit everything is finite: the largest accepted weight * cost, many of them
    w = MAX_WEIGHTED_COST / 2.0**600
    st2 = StreamingThors(fn_cost=2.0**600, fp_cost=2.0**600, window=50)
    for i in range(50):
        st2.update(i / 50, i % 2, w)
    assert math.isfinite(st2.cost)
    r = thors_threshold(np.arange(50) / 50, np.arange(50) % 2, sample_weight=np.full(50, w), fn_cost=2.0**600,
                        fp_cost=2.0**600)
    assert math.isfinite(r.cost) and r.threshold == st2.get()


def test_numpy_scalars_of_every_real_dtype_are_accepted():
    st = StreamingThors(fn_cost=np.float32(2), fp_cost=np.int64(1))
    for s in (np.float16(0.25), np.float32(0.5), np.int8(1), np.uint64(2), Fraction(1, 3), Decimal("0.75")):
        st.update(s, np.int64(1), np.float32(1.5))
    assert len(st) == 6


# ---------------------------------------------------------------------------------------------
# One rule, scalar and array validators alike (issue 13 item 5, validation helpers)
import datetime as dt  # noqa: E402

from thors_stream import cost_curve  # noqa: E402
from thors_stream._validation import (  # noqa: E402
    check_class_prior,
    check_label,
    check_labels,
    check_score,
    check_scores,
    check_time,
    check_times,
    check_weight,
    check_weighted_cost,
    check_weighted_costs,
    check_weights,
)
from thors_stream.batch import class_coefficients  # noqa: E402

HUGE = [10**400, -(10**400), Fraction(10**400, 3), Decimal("1e400"), np.longdouble(2.0) ** 2000]
NOT_NUMBERS = ["0.5", "1", b"1", bytearray(b"1"), np.str_("0.5"), np.bytes_(b"1"), True, False, np.bool_(True),
               None, 1 + 0j, np.complex128(1.0), dt.datetime(2020, 1, 1), dt.timedelta(1), np.datetime64("2020-01-01"),
               np.timedelta64(5, "s"), object()]
REAL_DTYPES = [np.float16, np.float32, np.float64, np.longdouble, np.int8, np.int16, np.int32, np.int64, np.uint8,
               np.uint16, np.uint32, np.uint64]
GOOD_NUMBERS = [0.5, 1, Fraction(1, 3), Decimal("0.75"), np.array(0.5), *(t(1) for t in REAL_DTYPES), 5e-324]


def outcome(fn, *args):
    try:
        fn(*args)
    except (TypeError, ValueError) as exc:
        return type(exc)
    return "ok"


def is_huge(v):
    try:
        return not math.isfinite(float(v))
    except OverflowError:
        return True


NON_FINITE = [math.nan, -math.inf, np.float32("inf"), Decimal("nan"), Decimal("snan"), Decimal("-inf")]


@pytest.mark.parametrize("v", NOT_NUMBERS + HUGE + GOOD_NUMBERS + NON_FINITE, ids=lambda v: repr(v)[:40])
def test_scalar_and_array_validators_apply_one_rule(v):
    """check_score/check_weight and check_scores/check_weights (lists, tuples, object arrays,
    and with other values around) give the same outcome for every value: TypeError for
    non-numbers (numeric strings, bytes, bools, complex, dates included), ValueError for
    non-finite or too large ones, never OverflowError."""
    want = outcome(check_score, v)
    assert want == (TypeError if any(v is b for b in NOT_NUMBERS) else
                    ValueError if any(v is b for b in HUGE + NON_FINITE) else "ok")
    containers = [[v], (v,), [0.25, v, 0.75], np.array([0.25, v], dtype=object)]
    for c in containers:
        assert outcome(check_scores, c) == want, c
    if want == "ok":
        assert outcome(check_weight, v) == outcome(check_weights, [v], 1) == "ok"
    else:
        assert outcome(check_weight, v) == want
        for c in containers:
            assert outcome(check_weights, c, len(c)) == want, c
    # the costs and class_prior follow the same rule, but a cost must also be at least
    # 2**-960 (MIN_WEIGHTED_COST), which a valid score or weight need not be
    cost_want = ValueError if want == "ok" and 0 < float(v) < MIN_WEIGHTED_COST else want
    assert outcome(resolve_costs, v, 1.0) == cost_want
    assert outcome(resolve_costs, None, None, [[0, v], [1, 0]]) == cost_want


@pytest.mark.parametrize("arr", [np.array(["0.5", "0.7"]), np.array([b"0.5", b"1"]), np.array([True, False]),
                                 np.array([0.5 + 0j, 1]), np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
                                 np.array([1, 2], dtype="timedelta64[s]"), "0.5", b"01", memoryview(b"01")],
                         ids=repr)
def test_arrays_of_strings_bytes_bools_complex_dates_are_type_errors(arr):
    assert outcome(check_score, arr if isinstance(arr, (str, bytes, memoryview)) else arr[0]) is TypeError
    """Arrays numpy would happily cast to float (bools, byte buffers, datetime64) are refused
    like their elements, naming the parameter and the first value."""
    for call in (lambda: check_scores(arr), lambda: check_weights(arr, len(arr)),
                 lambda: thors_threshold(arr, [0, 1][: len(arr)], fn_cost=1, fp_cost=1),
                 lambda: thors_threshold([0.1, 0.2][: len(arr)], [0, 1][: len(arr)], sample_weight=arr,
                                         fn_cost=1, fp_cost=1),
                 lambda: cost_curve(arr, [0, 1][: len(arr)], fn_cost=1, fp_cost=1)):
        with pytest.raises(TypeError, match=r"^(scores|sample_weight) ") as info:
            call()
        assert "real numbers" in str(info.value)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=lambda t: t.__name__)
def test_numpy_scalars_and_arrays_of_every_real_dtype_are_accepted(dtype):
    one = dtype(1)
    assert check_score(one) == 1.0 and check_weight(one) == 1.0 and check_label(one) == 1
    assert check_class_prior(dtype(0.5) if dtype in (np.float16, np.float32, np.float64, np.longdouble) else 0.5)
    assert check_time(one) == 1.0
    arr = np.array([0, 1, 2], dtype=dtype)
    assert check_scores(arr).tolist() == [0.0, 1.0, 2.0]
    assert check_scores(list(arr)).tolist() == [0.0, 1.0, 2.0]
    assert check_weights(arr + 1, 3).tolist() == [1.0, 2.0, 3.0]
    assert check_labels(arr[:2], 2).tolist() == [False, True]
    assert check_times(arr, 3).tolist() == [0.0, 1.0, 2.0]
    assert resolve_costs(fn_cost=dtype(2), fp_cost=one).fn_cost == 2.0
    r = thors_threshold(arr, [0, 1, 1], sample_weight=arr + 1, fn_cost=one, fp_cost=one)
    assert r.threshold == 0.0


@pytest.mark.parametrize("huge", HUGE, ids=lambda v: repr(v)[:30])
def test_huge_numbers_are_value_errors_naming_the_value_in_every_entry_point(huge):
    """Ints, Fractions, Decimals and long doubles beyond float64: ValueError naming the value
    (its first digits and length) and the parameter, never OverflowError."""
    calls = [
        ("score", lambda: check_score(huge)),
        ("weight", lambda: check_weight(huge)),
        ("scores", lambda: thors_threshold([0.1, huge], [0, 1], fn_cost=1, fp_cost=1)),
        ("scores", lambda: thors_threshold(np.array([0.1, huge], dtype=object), [0, 1], fn_cost=1, fp_cost=1)),
        ("scores", lambda: cost_curve((0.1, huge), [0, 1], fn_cost=1, fp_cost=1)),
        ("sample_weight", lambda: thors_threshold([0.1, 0.2], [0, 1], sample_weight=[1, huge], fn_cost=1, fp_cost=1)),
        ("fn_cost", lambda: thors_threshold([0.1, 0.2], [0, 1], fn_cost=huge, fp_cost=1)),
        ("fp_cost", lambda: cost_curve([0.1, 0.2], [0, 1], fn_cost=1, fp_cost=huge)),
        ("cost_matrix entries", lambda: thors_threshold([0.1, 0.2], [0, 1], cost_matrix=[[0, 1], [huge, 0]])),
        ("class_prior", lambda: thors_threshold([0.1, 0.2], [0, 1], fn_cost=1, fp_cost=1, class_prior=huge)),
        ("t", lambda: check_time(huge)),
        ("ts", lambda: check_times([0.0, huge], 2)),
    ]
    shown = str(huge)[:10] if isinstance(huge, int) else None
    for name, call in calls:
        with pytest.raises(ValueError) as info:
            call()
        msg = str(info.value)
        assert msg.startswith(f"{name} must be finite"), (name, msg)
        assert "too large for float64" in msg, msg
        if shown:
            assert shown in msg and "(401 digits)" in msg, msg
    for name in ("max_fpr", "confidence"):  # parameters in (0, 1): ValueError for any bad value, as before
        with pytest.raises(ValueError, match=rf"^{name} must be"):
            thors_threshold([0.1, 0.2], [0, 1], fn_cost=1, fp_cost=1, **{name: huge})
    for call in (lambda: check_scores([huge]), lambda: check_weights([huge], 1), lambda: check_label(huge),
                 lambda: check_labels([1, huge], 2), lambda: check_times(np.array([huge], dtype=object), 1)):
        with pytest.raises(ValueError):
            call()


def test_numeric_strings_as_labels_are_value_errors_everywhere():
    """Labels are categories: "1" and b"1" are refused with ValueError by check_label,
    check_labels (lists and arrays), thors_threshold, update and update_many alike;
    numbers equal to 0/1 of any real type are accepted by all."""
    st = StreamingThors(fn_cost=1, fp_cost=1)
    st.update(0.2, 0)
    before = state(st)
    for bad in ("1", b"1", np.str_("0"), 2, 0.5, math.nan, None, 1 + 0j):
        for call in (lambda b: check_label(b), lambda b: check_labels([0, b], 2),
                     lambda b: check_labels(np.array([b]), 1),
                     lambda b: thors_threshold([0.1, 0.2], [0, b], fn_cost=1, fp_cost=1),
                     lambda b: st.update_many([0.3, 0.4], [1, b])):
            with pytest.raises(ValueError, match=r"0/1|0, 1"):
                call(bad)
        if not isinstance(bad, complex):  # StreamingThors.update's own label lookup takes 1+0j (stream.py)
            with pytest.raises(ValueError, match="0, 1"):
                st.update(0.3, bad)
    assert state(st) == before
    for good in (Fraction(1), Decimal(1), np.float16(1), np.uint8(1), True, np.bool_(True), 1.0):
        assert check_label(good) == 1 and check_labels([0, good], 2).tolist() == [False, True]
        assert thors_threshold([0.1, 0.2], [0, good], fn_cost=1, fp_cost=1).threshold == 0.1


def test_weights_costs_and_their_products_are_capped_at_max_weighted_cost():
    """One documented limit, 2**960: any weight, any cost, any weight * max(fn, fp) above it is
    a ValueError naming the value (and position); at the limit, sums over many events stay
    finite; subnormal weights stay allowed."""
    assert MAX_WEIGHTED_COST == 2.0**960
    above = math.nextafter(MAX_WEIGHTED_COST, math.inf)
    assert check_weight(MAX_WEIGHTED_COST) == MAX_WEIGHTED_COST
    with pytest.raises(ValueError, match=r"weight must be at most 2\*\*960.*1\.9490628"):
        check_weight(2.0**961)
    with pytest.raises(ValueError, match=r"at most 2\*\*960"):
        check_weight(above)
    with pytest.raises(ValueError, match=r"sample_weight must be at most 2\*\*960 \(MAX_WEIGHTED_COST\), got 9\.7453.* "
                                         r"at position 1"):
        check_weights([1.0, above], 2)
    for name in ("fn_cost", "fp_cost"):
        with pytest.raises(ValueError, match=rf"{name} must be at most 2\*\*960"):
            resolve_costs(**{"fn_cost": 1.0, "fp_cost": 1.0, name: above})
    with pytest.raises(ValueError, match=r"effective costs must be at most 2\*\*960"):
        resolve_costs(cost_matrix=[[0, 1], [1e300, -1e300]])
    assert resolve_costs(fn_cost=MAX_WEIGHTED_COST, fp_cost=MAX_WEIGHTED_COST).fn_cost == MAX_WEIGHTED_COST
    # the product: scalar and array helpers agree, at the boundary too
    w = 2.0**900
    assert check_weighted_cost(w, 2.0**60, 1.0) == w
    check_weighted_costs(np.array([1.0, w]), 1.0, 2.0**60)
    check_weighted_costs(w, 2.0**60, 2.0**60)
    for fn, fp in ((2.0**61, 1.0), (1.0, 2.0**61), (3.0**38, 3.0**38)):
        for call in (check_weighted_cost, check_weighted_costs,
                     lambda w, fn, fp: check_weighted_costs(np.array([1.0, w]), fn, fp, "ws")):
            with pytest.raises(ValueError, match=r"8\.4527\d*e\+270.*exceeds 2\*\*960"):
                call(w, fn, fp)
    with pytest.raises(ValueError, match=r"ws 8\.45.* at position 1"):
        check_weighted_costs(np.array([1.0, w]), 2.0**61, 1.0, "ws")
    # batch entry points: refused, naming the weight and the cost; at the limit, finite
    for fn in (thors_threshold, cost_curve):
        with pytest.raises(ValueError, match=r"sample_weight 1e\+200 at position 1 times the cost 1e\+200"):
            fn([0.1, 0.2], [0, 1], sample_weight=[1.0, 1e200], fn_cost=1e200, fp_cost=1.0)
    n = 1000
    s, y = np.arange(n) / n, np.arange(n) % 2 == 0
    ws = np.full(n, 2.0**460)
    r = thors_threshold(s, y, sample_weight=ws, fn_cost=2.0**500, fp_cost=2.0**500)
    _, curve = cost_curve(s, y, sample_weight=ws, fn_cost=2.0**500, fp_cost=2.0**500)
    assert np.isfinite(curve).all() and math.isfinite(r.cost) and r.cost == curve.min()
    r = thors_threshold(s, y, sample_weight=ws, fn_cost=2.0**500, fp_cost=2.0**500, class_prior=0.9)
    assert math.isfinite(r.cost)
    # a subnormal weight is allowed when the costs lift its products to 2**-960 (equal
    # weights then give the unweighted answer exactly), refused otherwise
    tiny = 5e-324
    r = thors_threshold([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], sample_weight=[tiny] * 4, fn_cost=2.0**120,
                        fp_cost=2.0**115)
    u = thors_threshold([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], fn_cost=2.0**120, fp_cost=2.0**115)
    assert r.threshold == u.threshold and r.cost == u.cost * tiny
    with pytest.raises(ValueError, match=r"sample_weight 5e-324 at position 0 times the cost 1\.0 is below 2\*\*-960"):
        thors_threshold([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], sample_weight=[tiny] * 4, fn_cost=3, fp_cost=1)


def test_class_prior_rescaling_with_tiny_totals_is_refused_or_right():
    """A class whose total weight is tiny against the other's made class_coefficients
    return inf (then nan costs); now a ValueError naming the totals. Subnormal totals the
    rescaling can represent are computed to full precision (ratio first)."""
    with pytest.raises(ValueError, match=r"cannot rescale the positives: their total weight n1=5e-324.*n=1\.0"):
        class_coefficients(1.0, 1.0, n0=1.0, n1=5e-324, class_prior=0.5)
    with pytest.raises(ValueError, match=r"cannot rescale the negatives: their total weight n0=1e-323"):
        class_coefficients(1.0, 1.0, n0=1e-323, n1=1.0, class_prior=0.5)
    for fn in (thors_threshold, cost_curve):
        with pytest.raises(ValueError, match=r"class_prior=0\.5 cannot rescale the negatives.*n0=1e-323"):
            fn([0.1, 0.2, 0.3], [0, 1, 0], sample_weight=[5e-324, 1.0, 5e-324], class_prior=0.5, fn_cost=2.0**120,
               fp_cost=2.0**120)
    # representable: all-subnormal totals (3 and 1 units of 2**-1074) rescale like 3 and 1
    u = 2.0**-1074
    a, b = class_coefficients(1.0, 1.0, n0=3 * u, n1=u, class_prior=0.3)
    a1, b1 = class_coefficients(1.0, 1.0, n0=3.0, n1=1.0, class_prior=0.3)
    assert math.isclose(a, a1, rel_tol=1e-15) and math.isclose(b, b1, rel_tol=1e-15)
    # tiny but normal weights: the prior answer is scale-invariant
    s, y = [0.1, 0.2, 0.3, 0.4, 0.5], [0, 1, 0, 1, 1]
    ws = np.array([1.0, 2.0, 3.0, 1.0, 5.0])
    big = thors_threshold(s, y, sample_weight=ws, class_prior=0.2, fn_cost=4, fp_cost=1)
    small = thors_threshold(s, y, sample_weight=ws * 2.0**-900, class_prior=0.2, fn_cost=4, fp_cost=1)
    assert small.threshold == big.threshold and small.cost == big.cost * 2.0**-900
    # coefficients are finite wherever they are returned
    for n0, n1 in ((1.0, 1e-300), (1e-300, 1.0), (2.0**900, 1.0), (u, u)):
        try:
            a, b = class_coefficients(2.0**50, 1.0, n0=n0, n1=n1, class_prior=0.5)
        except ValueError as exc:
            assert "cannot rescale" in str(exc)
        else:
            assert math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0


TIME_VALUES = [1.5, 7, np.float32(2.5), np.int64(3), Fraction(1, 2), Decimal("2.5"), dt.datetime(1970, 1, 2),
               dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), dt.timedelta(seconds=4),
               np.datetime64("1970-01-01T00:00:05"), np.datetime64("1970-01-01T00:00:00.5", "ns"),
               np.timedelta64(3, "ms"),
               "1", b"1", np.str_("1"), True, np.bool_(False), None, 1 + 0j, dt.date(2020, 1, 1), object(),
               math.nan, math.inf, 10**400, Fraction(10**400, 3), Decimal("1e400"), np.datetime64("NaT")]


def short_id(v):
    return repr(v)[:40]


@pytest.mark.parametrize("v", TIME_VALUES, ids=short_id)
def test_check_times_follows_the_check_time_rule(v):
    """check_times (for update_many's ts, with or without a period) and check_time give the
    same outcome and the same seconds: numbers, datetimes (naive = UTC), timedeltas and numpy
    datetime64/timedelta64 accepted; strings, bytes, bools, None refused with TypeError;
    NaT, nan, inf and too-large values with ValueError naming the value and position."""
    want = outcome(check_time, v)
    i = next(i for i, x in enumerate(TIME_VALUES) if x is v)
    assert want == ("ok" if i < 12 else TypeError if i < 21 else ValueError)
    for c in ([v], [0.0, v], (v,), np.array([0.0, v], dtype=object)):
        got = outcome(check_times, c, len(c))
        assert got == want, c
        if want != "ok":
            with pytest.raises(want, match=rf"ts .*at position {len(c) - 1}"):
                check_times(c, len(c))
        else:
            assert check_times(c, len(c))[-1] == check_time(v)
    assert check_time(dt.datetime(1970, 1, 2)) == 86400.0  # naive read as UTC, whatever TZ says


def test_check_times_arrays():
    d = np.array(["1970-01-01T00:00:01", "1970-01-02"], dtype="datetime64[s]")
    assert check_times(d, 2).tolist() == [1.0, 86400.0]
    for unit in ("D", "h", "ms", "us", "ns"):
        assert check_times(d.astype(f"datetime64[{unit}]"), 2)[1] == 86400.0
    assert check_times(np.array(["1970-02"], dtype="datetime64[M]"), 1).tolist() == [31 * 86400.0]
    assert check_times(np.array([1, 2], dtype="timedelta64[ms]"), 2).tolist() == [0.001, 0.002]
    assert check_times(np.array([1.0, 2.0]), 2).tolist() == [1.0, 2.0]
    for bad, exc, needle in [(np.array(["1", "2"]), TypeError, "dtype <U1"), (np.array([b"1", b"2"]), TypeError, "|S1"),
                             (np.array([True, False]), TypeError, "bool"), ("12", TypeError, "'12'"),
                             (b"12", TypeError, "b'12'"), (np.array([1.0, np.nan]), ValueError, "nan at position 1"),
                             (np.array(["NaT", "2020-01-01"], dtype="datetime64[D]"), ValueError, "NaT at position 0"),
                             ([1.0, 2.0, 3.0], ValueError, "ts has length 3 but scores have length 2"),
                             (np.zeros((2, 1)), ValueError, "1-dimensional"),
                             (np.array([1e300], dtype=np.longdouble) ** 2, ValueError, "too large")]:
        with pytest.raises(exc) as info:
            check_times(bad, 2 if len(bad) != 1 else 1)
        assert needle in str(info.value) and str(info.value).startswith("ts"), str(info.value)
    with pytest.raises(TypeError, match=r"^when "):
        check_times([1.0, "x"], 2, name="when")


def test_cost_matrix_entries_follow_the_number_rule():
    for bad, where in (([["0", 1], [1, 0]], r"'0' at \[0\]\[0\]"), ([[0, b"1"], [1, 0]], r"b'1' at \[0\]\[1\]"),
                       ([[0, 1], [True, 0]], r"True at \[1\]\[0\]"), ([[0, 1], [1, None]], r"None at \[1\]\[1\]"),
                       (np.array([["0", "1"], ["1", "0"]]), r"np.str_\('0'\) at \[0\]\[0\]"),
                       (["01", "10"], "row '01'")):
        with pytest.raises(TypeError, match=where):
            resolve_costs(cost_matrix=bad)
    with pytest.raises(ValueError, match=r"1000000000\.\.\.0 \(401 digits\) \(too large for float64\) at \[1\]\[0\]"):
        resolve_costs(cost_matrix=[[0, 1], [10**400, 0]])
    with pytest.raises(ValueError, match=r"nan at \[0\]\[1\]"):
        resolve_costs(cost_matrix=[[0, math.nan], [1, 0]])
    for bad in (5, [1, 2], [[0, 1]], [[0, 1], [1, 0], [1, 1]]):
        with pytest.raises(ValueError, match="2x2"):
            resolve_costs(cost_matrix=bad)
    assert resolve_costs(cost_matrix=np.array([[0, 1], [5, 0]], dtype=np.int8)).fn_cost == 5.0
    assert resolve_costs(cost_matrix=[[Fraction(1, 2), 1], [Decimal(3), 0]]).fp_cost == 0.5


def test_validation_errors_leave_the_stream_unchanged():
    """The validators run before any change: a refused batch (huge numbers, complex, dates,
    byte buffers, products over the limit) leaves a StreamingThors exactly as it was."""
    st = StreamingThors(fn_cost=2.0**500, fp_cost=1.0, window=10)
    for i in range(12):
        st.update(i / 12, i % 2, 1.0 + i)
    before = state(st)
    for scores, ws in (([0.5, 10**400], None), (np.array([0.5 + 1j, 0.2]), None),
                       (np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"), None),
                       (memoryview(b"01"), None), ([0.5, 0.6], [1.0, 2.0**461]), ([0.5, 0.6], [1.0, Decimal("1e400")]),
                       ([0.5, 0.6], np.array([1, 2], dtype=np.complex128))):
        with pytest.raises((TypeError, ValueError)):
            st.update_many(scores, [0, 1], ws=ws)
        assert state(st) == before
