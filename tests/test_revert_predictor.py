"""The compiled core's revert predictor (see ``pr_revert`` in ``thors_stream/_ctree_src/module.c``): an unwindowed
tree keeps its held events' keys in arrival order, so a revert of the oldest one tells it the
next revert's key, whose leaf it prefetches. A hint only: these tests check that it really
predicts in river.utils.Rolling's order (it never did before 2026-11-25), that it stops when
its order is broken, and that the answers never depend on it."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_force
from strategies import tied_scores

from thors_stream import StreamingThors
from thors_stream._backend import available_backends

pytestmark = pytest.mark.skipif("c" not in available_backends(), reason="compiled backend not built")


def predictor(st: StreamingThors) -> tuple[int, int, int]:
    """(recording, keys queued, reverts predicted)."""
    return st._tree._predictor()


def same_as_fresh(st: StreamingThors, held: list[tuple[float, int]]) -> None:
    fresh = StreamingThors(fn_cost=st.fn_cost, fp_cost=st.fp_cost)
    for s, y in held:
        fresh.update(s, y)
    assert st.get() == fresh.get()
    assert st.cost == fresh.cost


def stream(n: int, seed: int = 0) -> tuple[list[float], list[int]]:
    rng = np.random.default_rng(seed)
    return rng.random(n).tolist(), (rng.random(n) < 0.1).astype(int).tolist()


def test_rolling_order_is_predicted_revert_by_revert():
    river_utils = pytest.importorskip("river.utils")
    s, y = stream(5_000)
    roll = river_utils.Rolling(StreamingThors, window_size=1_000, fn_cost=5, fp_cost=1)
    for a, b in zip(s, y):
        roll.update(a, b)
    st = roll.obj
    assert predictor(st) == (1, 1_000, 4_000)  # every revert was the predicted one
    same_as_fresh(st, list(zip(s[-1_000:], y[-1_000:])))


def test_update_then_revert_after_a_batch_fill_is_predicted():
    s, y = stream(30_000, seed=1)
    st = StreamingThors(fn_cost=5, fp_cost=1)
    st.update_many(s[:20_000], y[:20_000])  # a batch is recorded in arrival order
    for k in range(20_000, 30_000):
        st.update(s[k], y[k])
        st.revert(s[k - 20_000], y[k - 20_000])
    assert predictor(st) == (1, 20_000, 10_000)
    same_as_fresh(st, list(zip(s[10_000:], y[10_000:])))


def test_slow_path_events_are_recorded_too():
    """A numpy scalar score, a weight: the validating Python path, still in arrival order."""
    st = StreamingThors(fn_cost=5, fp_cost=1)
    st.update(np.float64(0.25), 1)
    st.update(0.5, 0, 2.0)
    st.update(0.75, 1)
    assert predictor(st)[:2] == (1, 3)
    st.revert(np.float64(0.25), 1)
    st.revert(0.5, 0, 2.0)
    assert predictor(st) == (1, 1, 2)
    same_as_fresh(st, [(0.75, 1)])


@pytest.mark.parametrize("breaker", ["revert out of order", "merge", "load rows"])
def test_a_broken_order_stops_it_and_the_answers_stay_exact(breaker, tmp_path):
    s, y = stream(3_000, seed=2)
    st = StreamingThors(fn_cost=5, fp_cost=1)
    st.update_many(s[:2_000], y[:2_000])
    held = list(zip(s[:2_000], y[:2_000]))
    before = st._tree.nbytes()
    if breaker == "revert out of order":
        st.revert(*held.pop(7))
    elif breaker == "merge":
        other = StreamingThors(fn_cost=5, fp_cost=1)
        other.update(0.123, 1)
        st.merge(other)
        held.append((0.123, 1))
    else:
        st.save(tmp_path / "c.thors")
        st = StreamingThors.load(tmp_path / "c.thors")
        before = None
    assert predictor(st)[:2] == (0, 0)
    if before is not None:
        assert st._tree.nbytes() < before  # its queue is freed
    for k in range(2_000, 3_000):  # Rolling order from here: nothing to predict with, still exact
        st.update(s[k], y[k])
        st.revert(*held.pop(0))
        held.append((s[k], y[k]))
    assert predictor(st) == (0, 0, 0)
    same_as_fresh(st, held)


def test_many_events_on_few_scores_stop_it():
    """More queued keys than 2 * distinct scores + 65,536: a tree this small is in cache,
    the queue would be memory for nothing."""
    st = StreamingThors(fn_cost=5, fp_cost=1)
    rng = np.random.default_rng(3)
    st.update_many(rng.integers(0, 10, 60_000) / 10, rng.random(60_000) < 0.5)
    assert predictor(st)[0] == 1
    st.update_many(rng.integers(0, 10, 10_000) / 10, rng.random(10_000) < 0.5)
    assert predictor(st)[:2] == (0, 0)


def test_windowed_summaries_have_no_predictor():
    st = StreamingThors(fn_cost=5, fp_cost=1, window=100)
    for a, b in zip(*stream(300)):
        st.update(a, b)
    assert predictor(st) == (0, 0, 0)


# ------------------------------------------------------------------ property
ops = st.lists(
    st.one_of(
        st.tuples(st.just("update"), tied_scores | st.floats(-10, 10), st.booleans(),
                  st.sampled_from([1.0, 1.0, 0.5, 2.0])),
        st.tuples(st.just("numpy update"), tied_scores, st.booleans(), st.just(1.0)),
        st.tuples(st.just("batch"), st.lists(tied_scores, min_size=1, max_size=8), st.booleans(), st.just(1.0)),
        st.tuples(st.just("revert oldest"), st.none(), st.none(), st.none()),
        st.tuples(st.just("revert any"), st.integers(0, 10**6), st.none(), st.none()),
        st.tuples(st.just("merge"), tied_scores, st.booleans(), st.none()),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_interleavings_stay_exact_and_the_queue_mirrors_what_is_held(seq):
    """Any mix of fast, slow and batch updates, oldest-first and random reverts and merges:
    the answer is the exact oracle's on the held events, and the predictor follows its
    documented rule, modelled here as a plain list of scores: every update appends its score,
    a revert whose score is the first one's pops it (a hint cannot tell events of one score
    apart, so after such a revert of a later event the queue's order differs from the held
    events'), and anything else (another revert, a merge) stops it for good."""
    st_ = StreamingThors(fn_cost=3, fp_cost=1)
    held: list[tuple[float, bool, float]] = []
    model: list[float] | None = []  # the queue the rule gives; None once stopped
    for op, a, b, c in seq:
        added: list[float] = []
        if op == "update":
            st_.update(a, b, c) if c != 1.0 else st_.update(a, b)
            held.append((a, b, c))
            added = [a]
        elif op == "numpy update":
            st_.update(np.float64(a), b)
            held.append((a, b, 1.0))
            added = [a]
        elif op == "batch":
            st_.update_many(a, [b] * len(a))
            held.extend((s, b, 1.0) for s in a)
            added = list(a)
        elif op == "merge":
            other = StreamingThors(fn_cost=3, fp_cost=1)
            other.update(a, b)
            st_.merge(other)
            held.append((a, b, 1.0))
            model = None
        elif held:
            s, y, w = held.pop(0 if op == "revert oldest" else a % len(held))
            st_.revert(s, y, w)
            if model is not None:
                model = model[1:] if model and model[0] == s else None
        if model is not None:
            model += added
        recording, queued, _ = predictor(st_)
        assert bool(recording) == (model is not None)
        if model is not None:
            assert queued == len(held) == len(model)
            assert st_._tree._predictor_keys() == model
    if held:
        thr, best, _ = brute_force(held, 3, 1)
        assert st_.get() == thr
        assert Fraction(st_.cost) == best
    else:
        assert len(st_) == 0
