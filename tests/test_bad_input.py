"""Bad input raises a clear error naming the bad value and changes nothing."""

import datetime as dt
import math
import pickle

import numpy as np
import pytest

from thors_stream import StreamingThors, resolve_costs, thors_threshold
from thors_stream._backend import available_backends

BACKENDS = available_backends()


def snapshot(st):
    q = st._queue.arrays() if st._queue is not None else ()
    return (
        len(st), st.get(), st.cost, st.result(), [a.tolist() for a in st.held()], [a.tolist() for a in q],
        st._w1, st._w0, st._last_t,
    )


def filled(backend, **kw):
    st = StreamingThors(fn_cost=5, fp_cost=1, backend=backend, **kw)
    rng = np.random.default_rng(0)
    for i, (s, y) in enumerate(zip(np.round(rng.random(50), 1), rng.random(50) < 0.3)):
        if kw.get("period"):
            st.update(float(s), bool(y), 1.0, t=float(i))
        else:
            st.update(float(s), bool(y), 1.0 + (i % 3))
    return st


BAD_UPDATES = [
    ((math.nan, 1), ValueError, "nan"),
    ((math.inf, 1), ValueError, "inf"),
    ((-math.inf, 0), ValueError, "-inf"),
    (("0.5", 1), TypeError, "'0.5'"),
    ((None, 1), TypeError, "None"),
    ((True, 1), TypeError, "True"),
    ((0.5, 2), ValueError, "got 2"),
    ((0.5, -1), ValueError, "got -1"),
    ((0.5, 0.5), ValueError, "got 0.5"),
    ((0.5, "1"), ValueError, "'1'"),
    ((0.5, None), ValueError, "None"),
    ((0.5, [1]), ValueError, "[1]"),
    ((0.5, 1, 0.0), ValueError, "got 0.0"),
    ((0.5, 1, -2.0), ValueError, "got -2.0"),
    ((0.5, 1, math.nan), ValueError, "nan"),
    ((0.5, 1, math.inf), ValueError, "inf"),
    ((0.5, 1, "2"), TypeError, "'2'"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("window", [None, 20])
@pytest.mark.parametrize(("args", "exc", "needle"), BAD_UPDATES)
def test_bad_update_raises_and_changes_nothing(backend, window, args, exc, needle):
    st = filled(backend, window=window)
    before = snapshot(st)
    with pytest.raises(exc, match=None) as info:
        st.update(*args)
    assert needle in str(info.value)
    assert snapshot(st) == before


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("window", [None, 20])
def test_revert_of_an_event_not_held(backend, window):
    st = filled(backend, window=window)
    held_s = st.held()[0][0]
    before = snapshot(st)
    with pytest.raises(KeyError, match=r"0\.123"):
        st.revert(0.123, 1)
    assert snapshot(st) == before
    # right score, label never seen at that score
    s, _, _, c1, c0 = (a[0] for a in st.held())
    missing_label = 1 if c1 == 0 else 0 if c0 == 0 else None
    if missing_label is not None:
        with pytest.raises(KeyError, match="label"):
            st.revert(float(s), missing_label)
        assert snapshot(st) == before
    # right score and label, weight not held
    with pytest.raises(KeyError, match=r"weight 99\.0"):
        st.revert(float(held_s), 1 if c1 else 0, 99.0)
    assert snapshot(st) == before
    for args, exc in [((math.nan, 1), ValueError), ((0.5, 3), ValueError), ((0.5, 1, -1.0), ValueError)]:
        with pytest.raises(exc):
            st.revert(*args)
        assert snapshot(st) == before


def test_revert_single_event_with_wrong_weight():
    st = StreamingThors(fn_cost=1, fp_cost=1)
    st.update(0.3, 1, 2.0)
    with pytest.raises(KeyError, match=r"weight 3.0.*1 event\(s\) of total weight 2.0"):
        st.revert(0.3, 1, 3.0)
    st.revert(0.3, 1, 2.0)
    assert len(st) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_batches_change_nothing(backend):
    st = filled(backend, window=30)
    before = snapshot(st)
    cases = [
        (([0.1, math.nan], [0, 1]), ValueError, "nan at position 1"),
        (([0.1, 0.2], [0, 1, 1]), ValueError, "length 3"),
        (([0.1, 0.2], [0, 2]), ValueError, "2 at position 1"),
        (([0.1, 0.2], [0, 1], [1.0, 0.0]), ValueError, "0.0 at position 1"),
        (([0.1, 0.2], [0, 1], [1.0]), ValueError, "length 1"),
        (([0.1, 0.2], ["a", 1]), ValueError, "'a'"),
        (([[0.1, 0.2]], [0]), ValueError, "1-dimensional"),
    ]
    for args, exc, needle in cases:
        with pytest.raises(exc) as info:
            st.update_many(*args)
        assert needle in str(info.value)
        assert snapshot(st) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_period_needs_times_and_changes_nothing(backend):
    st = filled(backend, period=10)
    before = snapshot(st)
    with pytest.raises(ValueError, match="required"):
        st.update(0.5, 1)
    with pytest.raises(TypeError, match="yesterday"):
        st.update(0.5, 1, t="yesterday")
    with pytest.raises(ValueError, match="nan"):
        st.update(0.5, 1, t=math.nan)
    with pytest.raises(ValueError, match="required"):
        st.update_many([0.5], [1])
    with pytest.raises(ValueError, match="ts must be finite"):
        st.update_many([0.5, 0.6], [1, 0], ts=[60.0, math.inf])
    # a late label already outside the window (newest t is 49, period 10) is not held
    st.update(0.5, 1, t=39.0)
    assert snapshot(st) == before


@pytest.mark.parametrize(
    ("kw", "exc", "needle"),
    [
        ({"fn_cost": 0, "fp_cost": 1}, ValueError, "fn_cost must be finite and > 0, got 0"),
        ({"fn_cost": 1, "fp_cost": -3}, ValueError, "got -3"),
        ({"fn_cost": math.nan, "fp_cost": 1}, ValueError, "nan"),
        ({"fn_cost": 1, "fp_cost": math.inf}, ValueError, "inf"),
        ({"fn_cost": "1", "fp_cost": 1}, TypeError, "'1'"),
        ({"fn_cost": 1}, TypeError, "both"),
        ({"cost_matrix": [[0, 1], [1, 1]]}, ValueError, "fn = C(1,0) - C(1,1) = 0.0"),
        ({"cost_matrix": [[2, 1], [5, 0]]}, ValueError, "fp = C(0,1) - C(0,0) = -1.0"),
        ({"cost_matrix": [[0, 1, 2], [1, 0, 3]]}, ValueError, "2x2"),
        ({"cost_matrix": [[0, 1], [math.nan, 0]]}, ValueError, "nan"),
        ({"cost_matrix": [[0, 1], [1, 0]], "fn_cost": 1}, ValueError, "not both"),
    ],
)
def test_bad_costs(kw, exc, needle):
    with pytest.raises(exc) as info:
        resolve_costs(**kw)
    assert needle in str(info.value)
    with pytest.raises(exc):
        StreamingThors(**kw)
    with pytest.raises(exc):
        thors_threshold([0.1, 0.2], [0, 1], **kw)


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"window": 0}, "window must be a positive integer, got 0"),
        ({"window": 2.5}, "got 2.5"),
        ({"window": True}, "got True"),
        ({"period": -1}, "period must be > 0, got -1"),
        ({"period": dt.timedelta(0)}, "period must be > 0"),
        ({"window": 5, "period": 5}, "not both"),
        ({"class_prior": 1.0}, "strictly between 0 and 1, got 1.0"),
        ({"class_prior": 0}, "got 0"),
        ({"backend": "gpu"}, "'gpu'"),
    ],
)
def test_bad_constructor_arguments(kw, needle):
    with pytest.raises(ValueError) as info:
        StreamingThors(fn_cost=1, fp_cost=1, **kw)
    assert needle in str(info.value)


def test_batch_bad_input_messages():
    with pytest.raises(ValueError, match="empty"):
        thors_threshold([], [], fn_cost=1, fp_cost=1)
    with pytest.raises(ValueError, match="nan at position 2"):
        thors_threshold([0.1, 0.2, math.nan], [0, 1, 1], fn_cost=1, fp_cost=1)
    with pytest.raises(ValueError, match="length 2 but scores have length 3"):
        thors_threshold([0.1, 0.2, 0.3], [0, 1], fn_cost=1, fp_cost=1)
    with pytest.raises(ValueError, match="got 7 at position 0"):
        thors_threshold([0.1], [7], fn_cost=1, fp_cost=1)
    with pytest.raises(ValueError, match=r"got -1\.0 at position 1"):
        thors_threshold([0.1, 0.2], [0, 1], fn_cost=1, fp_cost=1, sample_weight=[1.0, -1.0])
    with pytest.raises(ValueError, match="class_prior"):
        thors_threshold([0.1, 0.2], [0, 1], fn_cost=1, fp_cost=1, class_prior=1.5)
    with pytest.raises(ValueError, match="'x'"):
        thors_threshold([0.1, 0.2], ["x", 1], fn_cost=1, fp_cost=1)


def test_predict_one_before_any_label():
    st = StreamingThors(fn_cost=1, fp_cost=1)
    with pytest.raises(RuntimeError, match="default_threshold"):
        st.predict_one(0.3)
    st = StreamingThors(fn_cost=1, fp_cost=1, default_threshold=0.5)
    assert st.predict_one(0.6) and not st.predict_one(0.5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kw", [{}, {"window": 7}, {"period": 5.0}])
def test_pickle_round_trip_continues_identically(backend, kw):
    a = filled(backend, **kw)
    b = pickle.loads(pickle.dumps(a))
    assert snapshot(a) == snapshot(b)
    for i in range(30):
        args = (round(0.05 * i, 2), i % 4 == 0)
        t = {"t": 100.0 + i} if "period" in kw else {}
        a.update(*args, **t)
        b.update(*args, **t)
        assert a.get() == b.get() and a.result() == b.result()
