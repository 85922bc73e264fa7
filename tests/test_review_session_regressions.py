"""Regressions found reviewing the split of the package's modules by concern.

``ThorsClassifier`` is assembled from parts whose base class declares the attributes the
wrapper holds (class-level annotations, for type checkers). Before the split the class had
no such annotations and ``typing.get_type_hints(ThorsClassifier)`` answered ``{}``; after it,
the annotations named classes imported only for type checkers, and the call raised
``NameError: name 'StreamingThors' is not defined`` (tools that read a class's hints, such
as documentation generators and runtime type checkers, call it).
"""

from __future__ import annotations

import typing

import pytest


def test_the_river_wrappers_type_hints_resolve() -> None:
    pytest.importorskip("river")
    from thors_stream.river import ThorsClassifier

    typing.get_type_hints(ThorsClassifier)  # raises NameError when an annotation names an absent class
