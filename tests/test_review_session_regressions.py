"""Regressions found reviewing the split of the package's modules by concern.

``ThorsClassifier`` is assembled from parts whose base class declares the attributes the
wrapper holds (class-level annotations, for type checkers). Before the split the class had
no such annotations and ``typing.get_type_hints(ThorsClassifier)`` answered ``{}``; after it,
the annotations named classes imported only for type checkers, and the call raised
``NameError: name 'StreamingThors' is not defined`` (tools that read a class's hints, such
as documentation generators and runtime type checkers, call it). The numpy core's parts had
the same fault in another form (``memoryview[float]`` is not subscriptable at run time before
Python 3.12). Also: a ``thors fit`` refusal did not survive a pickle round trip (its
constructor takes the exit code too), and the compiled core's raw ``window_push`` took a window
limit below 1 and expired from an empty queue, raising a ``KeyError`` about a score never held.
"""

from __future__ import annotations

import typing

import pytest


def test_the_river_wrappers_type_hints_resolve() -> None:
    pytest.importorskip("river")
    from thors_stream.river import ThorsClassifier

    typing.get_type_hints(ThorsClassifier)  # raises NameError when an annotation names an absent class


def test_the_numpy_cores_type_hints_resolve() -> None:
    from thors_stream._prefix import SortedPrefixMin

    hints = typing.get_type_hints(SortedPrefixMin)  # TypeError: 'memoryview' is not subscriptable
    assert "_mvs" in hints


def test_a_refusal_survives_a_pickle_round_trip() -> None:
    import pickle

    from thors_stream.cli import Refused

    r = pickle.loads(pickle.dumps(Refused("the new threshold costs more than the deployed one", 4)))
    assert (str(r), r.code) == ("the new threshold costs more than the deployed one", 4)


@pytest.mark.parametrize("limit", [0, -1])
def test_raw_window_push_refuses_a_limit_below_one(limit: int) -> None:
    from thors_stream._backend import available_backends

    if "c" not in available_backends():
        pytest.skip("compiled backend not built")
    from thors_stream import StreamingThors

    st = StreamingThors(fn_cost=1, fp_cost=1, window=3, backend="c")
    st.update(0.5, 1)
    before = (st.get(), st.cost, [a.tolist() for a in st.held()])
    with pytest.raises(ValueError, match="limit must be >= 1"):
        st._tree.window_push(0.7, True, 1.0, limit)
    assert (st.get(), st.cost, [a.tolist() for a in st.held()]) == before
