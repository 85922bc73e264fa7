"""The AVX2 aggregate of a plain leaf equals the scalar one, bit for bit.

Where the CPU has AVX2, the compiled core aggregates plain leaves (every event weighing 1)
with vector code: the leaf's four quarters are the four lanes, each doing the scalar
body's operations in its order. ``_ctree._set_simd`` switches between the two; the core's
own ``check()`` recomputes every stored aggregate (with whichever is switched on) and
compares sums, counts, minima and argmins exactly, so a tree built with one and checked
with the other is a bit-for-bit comparison. Counts of 2**31 or more at a key take the
scalar body inside the vector path (its conversion is signed).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thors_stream._backend import available_backends

pytestmark = pytest.mark.skipif("c" not in available_backends(), reason="compiled backend not built")


def _ctree():
    from thors_stream import _ctree

    return _ctree


def _simd_available() -> bool:
    m = _ctree()
    old = m._set_simd(True)
    on = m._set_simd(old)
    return bool(on)


needs_simd = pytest.mark.skipif("c" not in available_backends() or not _simd_available(),
                                reason="no AVX2 on this CPU: only the scalar body runs")


def answers(t) -> tuple:
    """Everything a tree answers, as exact bits (NaN compares equal to NaN)."""
    best = t.best()
    out = [t.threshold(), t.cost(), *t.totals(), *best, t.n_events(), t.export()]
    return tuple(x.hex() if isinstance(x, float) else x for x in out)


def build(ops, a, b, simd: bool):
    m = _ctree()
    old = m._set_simd(simd)
    try:
        t = m.CTree(a, b)
        for key, pos, add in ops:
            if add:
                t.add(key, pos, 1.0)
            else:
                try:
                    t.remove(key, pos, 1.0)
                except KeyError:
                    pass  # not held: refused, nothing changed
        t.threshold()  # the stale inner aggregates computed under the same setting
        return t
    finally:
        m._set_simd(old)


keys = st.one_of(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),  # heavy ties
                 st.floats(-1e6, 1e6, allow_nan=False), st.integers(-50, 50).map(float))
mixed_ops = st.lists(st.tuples(keys, st.booleans(), st.sampled_from([True, True, True, False])), max_size=600)
coefs = st.one_of(st.integers(1, 3).map(float),  # equal coefficients: prefix sums tie, the lower key wins
                  st.sampled_from([10.0, 0.1, 1 / 3, 7.25, 1e-3, 1e10, 2.0**-500, 2.0**500]),
                  st.floats(1e-6, 1e6))


@needs_simd
@settings(max_examples=150, deadline=None)
@given(mixed_ops, coefs, coefs)
def test_vector_and_scalar_aggregates_are_identical(ops_, a, b):
    m = _ctree()
    vec = build(ops_, a, b, simd=True)
    sca = build(ops_, a, b, simd=False)
    assert answers(vec) == answers(sca)
    # each tree's stored aggregates, recomputed by the other body, compare exactly
    old = m._set_simd(False)
    try:
        vec.check()
    finally:
        m._set_simd(old)
    old = m._set_simd(True)
    try:
        sca.check()
    finally:
        m._set_simd(old)


@needs_simd
@pytest.mark.parametrize("seed", range(4))
def test_leaves_of_every_size(seed):
    """Leaves from the minimum fill to full (every quarter length, masked tails), inexact
    coefficients: the two bodies agree at every step."""
    m = _ctree()
    rng = np.random.default_rng(seed)
    a, b = float(rng.uniform(0.01, 10)), float(rng.uniform(0.01, 10))
    s = rng.random(3_000)
    y = rng.random(3_000) < 0.3
    trees = {}
    for simd in (True, False):
        old = m._set_simd(simd)
        try:
            t = m.CTree(a, b)
            seen = []
            for k, (key, pos) in enumerate(zip(s.tolist(), y.tolist())):
                t.add(key, pos, 1.0)
                if k >= 700:  # a sliding window: leaves fill, split, drain and merge
                    t.remove(float(s[k - 700]), bool(y[k - 700]), 1.0)
                if k % 97 == 0:
                    seen.append(answers(t))
            trees[simd] = (t, seen)
        finally:
            m._set_simd(old)
    assert trees[True][1] == trees[False][1]
    old = m._set_simd(False)
    try:
        trees[True][0].check()
    finally:
        m._set_simd(old)


@pytest.mark.parametrize("simd", [True, False])
def test_counts_beyond_2_31_take_the_exact_path(simd):
    """A count of 3e9 at one key (reachable through apply_sorted, e.g. a restored summary):
    the vector body's signed conversion cannot take it, the scalar body does; the answer
    equals the exact one either way."""
    m = _ctree()
    old = m._set_simd(simd)
    try:
        t = m.CTree(1.0, 2.0)
        big = 3_000_000_000.0
        keys_ = np.array([0.1, 0.2, 0.3, 0.4])
        c1 = np.array([0.0, big, 0.0, 5.0])
        c0 = np.array([big, 0.0, 2.0, 0.0])
        t.apply_sorted(keys_, c1.copy(), c0.copy(), c1.copy(), c0.copy())
        assert t.export()  # the tree is plain: weights equal counts
        # prefix of 1 * c1 - 2 * c0: -6e9, -3e9, -3e9 - 4, -3e9 - 4 + 5: least at 0.1
        assert t.best() == (-2 * big, 0.1)
        assert t.totals() == (big + 5, big + 2, big + 5, big + 2)
        assert t.cost() == 2 * (big + 2) - 2 * big
        t.check()
    finally:
        m._set_simd(old)


def test_set_simd_reports_the_previous_setting():
    m = _ctree()
    first = m._set_simd(False)
    try:
        assert m._set_simd(False) is False
        on = m._set_simd(True)
        assert on is False
        assert m._set_simd(True) is _simd_available()
    finally:
        m._set_simd(first)
