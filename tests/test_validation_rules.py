"""Issue 13 item 5: one rule for scores, weights, costs and times, everywhere; overflow refused."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from thors_stream import StreamingThors, thors_threshold
from thors_stream._validation import MAX_WEIGHTED_COST
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
