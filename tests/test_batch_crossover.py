"""update_many's two paths (merge-and-rebuild, leaf by leaf) give the same summary.

The core rebuilds a tree of n keys for a batch of m changes when n < REBUILD_RATIO * m
(6; it was 16 until benchmarks/batch_crossover.py showed leaf by leaf faster from n ~ 5m).
Forcing either path through ``_set_rebuild_ratio`` must not change any answer.
"""

from __future__ import annotations

import numpy as np
import pytest

from thors_stream import StreamingThors
from thors_stream._backend import available_backends

pytestmark = pytest.mark.skipif("c" not in available_backends(), reason="compiled backend not built")


def summary(st: StreamingThors) -> tuple:
    return st.get(), st.cost, tuple(a.tolist() for a in st.held())


@pytest.mark.parametrize("seed", range(6))
def test_rebuild_and_leaf_by_leaf_agree(seed):
    from thors_stream import _ctree

    rng = np.random.default_rng(seed)
    window = int(rng.integers(200, 3_000))
    weighted = seed % 2 == 1
    objs = {}
    old = _ctree._set_rebuild_ratio(6)
    try:
        for name, ratio in (("never", 0), ("always", 2**40), ("default", old)):
            _ctree._set_rebuild_ratio(ratio)
            st = StreamingThors(fn_cost=3, fp_cost=1, window=window, backend="c")
            r = np.random.default_rng(seed + 100)
            for _ in range(12):
                b = int(r.integers(1, 2_000))
                s = np.round(r.random(b), int(r.integers(1, 4)))  # heavy ties
                y = r.random(b) < 0.3
                w = r.integers(1, 5, b).astype(float) if weighted else None
                st.update_many(s, y, w)
                st._tree.check()
            objs[name] = st
    finally:
        _ctree._set_rebuild_ratio(old)
    assert old == 6
    assert summary(objs["never"]) == summary(objs["always"]) == summary(objs["default"])


def test_rebuild_ratio_refuses_bad_values():
    from thors_stream import _ctree

    old = _ctree._set_rebuild_ratio(6)
    try:
        with pytest.raises(ValueError, match=r"0\.\.2\*\*40"):
            _ctree._set_rebuild_ratio(-1)
        assert _ctree._set_rebuild_ratio(6) == 6  # unchanged by the refusal
    finally:
        _ctree._set_rebuild_ratio(old)
