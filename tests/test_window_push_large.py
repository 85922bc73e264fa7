"""The per-event window path of a large compiled tree equals the numpy core, event by event.

Above 32,768 distinct scores the compiled core's ``update`` with a count window descends to
the new event's leaf and to the expiring event's leaf first (to load both), then updates
both leaves along those recorded paths, descending again only when the insertion changed
the tree's shape (a split, a spill, a merge). The small windows of the property tests
never reach that path; these streams do, with the insertions made to land in the expiring
event's leaf, to split the leaves around it, and with reverted (cancelled) queue entries,
and weights. After every step the compiled summary's threshold and cost equal the numpy
core's (an independent, exact implementation), the tree's invariants hold at checkpoints,
and at the end both equal a plain integer-arithmetic oracle over the window's events.
"""

from __future__ import annotations

import numpy as np
import pytest

from thors_stream import StreamingThors
from thors_stream._backend import available_backends

pytestmark = pytest.mark.skipif("c" not in available_backends(), reason="compiled backend not built")

N = 36_000  # above the compiled core's 32,768-key threshold for the prefetching path
FN, FP = 7, 2


def oracle(keys: np.ndarray, w1: np.ndarray, w0: np.ndarray) -> tuple[float, float]:
    """Threshold and cost of per-score class weights by cumulative sums, exact: the weights
    are multiples of 0.5, so twice them are integers."""
    k1, k0 = (w1 * 2).astype(np.int64), (w0 * 2).astype(np.int64)
    c1, c0 = np.cumsum(k1), np.cumsum(k0)
    cost = FN * c1 + FP * (c0[-1] - c0)  # flag iff score > key
    everything = FP * c0[-1]
    j = int(np.argmin(cost))
    if cost[j] < everything:
        return float(keys[j]), cost[j] / 2
    return float("-inf"), everything / 2


def stream(kind: str, rng: np.random.Generator) -> tuple[list[float], list[bool], list[float]]:
    s = rng.random(N)
    if kind == "same leaf":  # each new event lands next to the one leaving
        tail = s[:8_000] + 1e-12
    elif kind == "splits":  # a burst into a narrow range that the oldest events also hold
        s[:4_000] = 0.5 + rng.random(4_000) * 1e-6
        tail = 0.5 + rng.random(8_000) * 1e-6
    else:  # ties on the keys that leave, and repeats
        tail = np.concatenate([s[:4_000], np.round(rng.random(4_000), 2)])
    scores = np.concatenate([s, tail])
    ys = rng.random(scores.size) < 0.3
    ws = rng.choice([1.0, 1.0, 1.0, 2.0, 0.5], scores.size) if kind == "splits" else np.ones(scores.size)
    return scores.tolist(), ys.tolist(), ws.tolist()


@pytest.mark.parametrize("kind", ["same leaf", "splits", "ties"])
def test_large_window_per_event_path_equals_numpy_core(kind: str) -> None:
    rng = np.random.default_rng(len(kind))
    s, y, w = stream(kind, rng)
    fast = StreamingThors(fn_cost=FN, fp_cost=FP, window=N, backend="c")
    slow = StreamingThors(fn_cost=FN, fp_cost=FP, window=N, backend="python")
    for st in (fast, slow):
        st.update_many(np.array(s[:N]), np.array(y[:N]), ws=np.array(w[:N]))
    assert fast._tree.n_keys > 32_768
    for k in range(N, len(s)):
        for st in (fast, slow):
            st.update(s[k], y[k], w[k])
        if k % 97 == 0:  # revert a recent event: its queue entry is cancelled, the window goes on
            j = k - int(rng.integers(0, 90))
            for st in (fast, slow):
                st.revert(s[j], y[j], w[j])
        assert fast.get() == slow.get(), k
        assert fast.cost == slow.cost, k
        if k % 2_000 == 0:
            fast._tree.check()
    fast._tree.check()
    keys, w1, w0, _, _ = fast.held()
    assert oracle(keys, w1, w0) == (fast.get(), fast.cost)
    for a, b in zip(fast.held(), slow.held()):
        np.testing.assert_array_equal(a, b)
