"""Neyman-Pearson mode: exact against a brute-force oracle, streaming = batch, bad input, coverage."""

from __future__ import annotations

import math
import pickle
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from oracle import brute_force
from scipy import stats
from strategies import costs, events

from thors_stream import StreamingThors, thors_threshold
from thors_stream._backend import available_backends
from thors_stream.neyman_pearson import NPInfeasibleError, fpr_tail, min_class_size, min_rank

ALPHAS = [0.2, 0.35, 0.5]
CONFIDENCES = [0.4, 0.55, 0.7]
MODES = ["fpr", "fnr", "both"]
SKEWED = [0.25, 1.0, 40.0]  # costs that often push the plain optimum out of the admissible set
INF = float("inf")


# --------------------------------------------------------------------------- oracle
def oracle_ranks(n: int, alpha: float, delta: float) -> tuple[int | None, int | None]:
    """(smallest k with P(FPR > alpha) bound <= delta, largest m with P(FNR > alpha) bound <= delta), by scanning.

    FPR: the k-th smallest negative U_(k) < 1 - alpha has probability P(Bin(n, 1 - alpha) >= k).
    FNR: m positives at or below t; U_(m+1) > alpha has probability P(Bin(n, alpha) <= m).
    """
    k = next((k for k in range(1, n + 1) if stats.binom.sf(k - 1, n, 1 - alpha) <= delta), None)
    m = max((m for m in range(0, n) if stats.binom.cdf(m, n, alpha) <= delta), default=None)
    return k, m


def near_boundary(n: int, alpha: float, delta: float) -> bool:
    tails = [stats.binom.sf(k - 1, n, 1 - alpha) for k in range(1, n + 1)]
    tails += [stats.binom.cdf(m, n, alpha) for m in range(n)]
    return any(abs(t - delta) <= 1e-9 * delta for t in tails)


def np_oracle(evs, fn, fp, prior, max_fpr, max_fnr, confidence):
    """Return (threshold, exact cost) or None when no candidate is admissible (or too few events)."""
    both = max_fpr is not None and max_fnr is not None
    delta = (1 - confidence) / (2 if both else 1)
    n0 = sum(1 for _, y, _ in evs if not y)
    n1 = sum(1 for _, y, _ in evs if y)
    kmin, mmax = 0, n1
    if max_fpr is not None:
        kmin = oracle_ranks(n0, max_fpr, delta)[0]
        if kmin is None:
            return None
    if max_fnr is not None:
        mmax = oracle_ranks(n1, max_fnr, delta)[1]
        if mmax is None:
            return None
    _, _, cost = brute_force(evs, fn, fp, prior)
    ok = []
    for t in [-INF] + sorted({s for s, _, _ in evs}):
        c0 = sum(1 for s, y, _ in evs if not y and s <= t)
        c1 = sum(1 for s, y, _ in evs if y and s <= t)
        if c0 >= kmin and c1 <= mmax:
            ok.append(t)
    if not ok:
        return None
    best = min(cost[t] for t in ok)
    return next(t for t in ok if cost[t] == best), best, {t: cost[t] for t in ok}


def assert_oracle_threshold(got, want, prior):
    """``got`` is the oracle's threshold; with a class prior (float rescaling of the costs,
    whose ties the docs leave to rounding, as in test_batch_exact), an admissible threshold
    within 1e-9 of the exact optimum that no smaller admissible threshold clearly beats."""
    if prior is None:
        assert got == want[0]
        return
    best, ok = want[1], want[2]
    tol = Fraction(1e-9) * (abs(best) + max(ok.values()))
    assert got in ok and ok[got] <= best + tol, (got, want[0])
    assert all(c >= ok[got] - tol for t, c in ok.items() if t < got)


# labels that carry signal (positives shifted up), heavy ties: both constraints are often feasible
_base = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5]) | st.integers(0, 40).map(lambda k: k / 16)


def signal_events(min_size: int = 1):
    evs = st.lists(st.tuples(_base, st.booleans(), st.integers(1, 64).map(lambda k: k / 8)),
                   min_size=min_size, max_size=80)
    return st.tuples(evs, st.sampled_from([0.75, 1.25, 2.0])).map(
        lambda a: [(s + (a[1] if y else 0.0), y, w) for s, y, w in a[0]]
    )


def np_kwargs(mode, alpha, conf):
    return {"max_fpr": alpha if mode != "fnr" else None, "max_fnr": alpha if mode != "fpr" else None,
            "confidence": conf}


# --------------------------------------------------------------------------- exactness
@given(
    evs=events | signal_events(), fn=costs, fp=costs, alpha=st.sampled_from(ALPHAS), conf=st.sampled_from(CONFIDENCES),
    mode=st.sampled_from(MODES), prior=st.none() | st.sampled_from([0.1, 0.5, 0.8]), weighted=st.booleans(),
)
def test_batch_and_stream_match_oracle(evs, fn, fp, alpha, conf, mode, prior, weighted):
    check_against_oracle(evs, fn, fp, alpha, conf, mode, prior, weighted)


@given(
    evs=signal_events(12), fn=st.sampled_from(SKEWED), fp=st.sampled_from(SKEWED), alpha=st.sampled_from(ALPHAS),
    conf=st.sampled_from(CONFIDENCES), prior=st.none() | st.sampled_from([0.2, 0.6]), weighted=st.booleans(),
)
def test_both_constraints_match_oracle(evs, fn, fp, alpha, conf, prior, weighted):
    check_against_oracle(evs, fn, fp, alpha, conf, "both", prior, weighted)


def check_against_oracle(evs, fn, fp, alpha, conf, mode, prior, weighted):
    if not weighted:
        evs = [(s, y, 1.0) for s, y, _ in evs]
    kw = np_kwargs(mode, alpha, conf)
    delta = (1 - conf) / (2 if mode == "both" else 1)
    n1 = sum(1 for _, y, _ in evs if y)
    assume(not near_boundary(n1, alpha, delta) and not near_boundary(len(evs) - n1, alpha, delta))
    want = np_oracle(evs, fn, fp, prior, kw["max_fpr"], kw["max_fnr"], conf)
    event(f"mode={mode} feasible={want is not None}")
    if want is not None:
        event(f"constraint binds={want[0] != brute_force(evs, fn, fp, prior)[0]}")
    s = [e[0] for e in evs]
    y = [int(e[1]) for e in evs]
    w = [e[2] for e in evs] if weighted else None
    if want is None:
        with pytest.raises(NPInfeasibleError):
            thors_threshold(s, y, fn_cost=fn, fp_cost=fp, sample_weight=w, class_prior=prior, **kw)
    else:
        r = thors_threshold(s, y, fn_cost=fn, fp_cost=fp, sample_weight=w, class_prior=prior, **kw)
        assert_oracle_threshold(r.threshold, want, prior)
        assert r.cost == pytest.approx(float(want[1]), rel=1e-9, abs=1e-9)
        assert (r.max_fpr, r.max_fnr, r.np_confidence) == (kw["max_fpr"], kw["max_fnr"], conf)
    for backend in available_backends():
        stm = StreamingThors(fn_cost=fn, fp_cost=fp, class_prior=prior, backend=backend, **kw)
        stm.update_many(s, y, w)
        if want is None:
            with pytest.raises(NPInfeasibleError):
                stm.get()
            with pytest.raises(NPInfeasibleError):
                stm.result()
        else:
            assert_oracle_threshold(stm.get(), want, prior)
            assert stm.cost == pytest.approx(float(want[1]), rel=1e-9, abs=1e-9)
            assert stm.result() == r


@given(
    evs=st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), st.booleans()), min_size=1, max_size=80),
    window=st.integers(1, 40), alpha=st.sampled_from(ALPHAS), conf=st.sampled_from(CONFIDENCES),
    mode=st.sampled_from(MODES),
)
def test_windowed_stream_matches_batch_on_held_events(evs, window, alpha, conf, mode):
    kw = np_kwargs(mode, alpha, conf)
    stm = StreamingThors(fn_cost=3, fp_cost=1, window=window, **kw)
    for i, (s, y) in enumerate(evs):
        stm.update(s, y)
        held = evs[max(0, i + 1 - window): i + 1]
        try:
            want = thors_threshold([h[0] for h in held], [h[1] for h in held], fn_cost=3, fp_cost=1, **kw)
        except NPInfeasibleError as exc:
            with pytest.raises(NPInfeasibleError, match=re.escape(str(exc))):
                stm.get()
            continue
        assert stm.get() == want.threshold
        assert stm.result() == want


def test_revert_invalidates_cached_read():
    stm = StreamingThors(fn_cost=1, fp_cost=1, max_fpr=0.3, confidence=0.7)
    stm.update_many([0.1, 0.2, 0.3, 0.4, 0.5, 0.9], [0, 0, 0, 0, 0, 0])
    before = stm.get()
    assert before == thors_threshold([0.1, 0.2, 0.3, 0.4, 0.5, 0.9], [0] * 6, fn_cost=1, fp_cost=1,
                                     max_fpr=0.3, confidence=0.7).threshold
    stm.revert(0.9, 0)
    want = thors_threshold([0.1, 0.2, 0.3, 0.4, 0.5], [0] * 5, fn_cost=1, fp_cost=1, max_fpr=0.3, confidence=0.7)
    assert stm.get() == want.threshold != before


def test_ranks_against_exact_binomial_sums():
    # fpr_tail(k, n, a) = sum_{j >= k} C(n, j) (1 - a)^j a^(n - j), in exact rationals
    for n in (1, 2, 5, 13, 40):
        for a in (0.05, 0.1, 0.3, 0.5):
            fa = Fraction(a)
            for k in range(0, n + 2):
                exact = sum(math.comb(n, j) * (1 - fa) ** j * fa ** (n - j) for j in range(max(k, 0), n + 1))
                assert fpr_tail(k, n, a) == pytest.approx(float(exact), rel=1e-10, abs=1e-300)
    # the classic 59 (Wilks): the maximum of 59 draws exceeds the 95% quantile with probability >= 95%
    assert min_class_size(0.05, 0.05) == 59
    for a in (0.01, 0.05, 0.1, 0.2, 0.5):
        for d in (0.01, 0.05, 0.1, 0.3):
            n = min_class_size(a, d)
            assert (1 - a) ** n <= d * (1 + 1e-12) and (1 - a) ** (n - 1) > d * (1 - 1e-12)
            assert min_rank(n, a, d) == n and min_rank(n - 1, a, d) is None


def test_umbrella_rank_literature_value():
    # nproc's umbrella rank for n0 = 100, alpha = delta = 0.05: smallest k with P(Bin(100, .95) >= k) <= .05
    k = min_rank(100, 0.05, 0.05)
    assert stats.binom.sf(k - 1, 100, 0.95) <= 0.05 < stats.binom.sf(k - 2, 100, 0.95)
    assert k == 99  # P(Bin >= 99) = 0.037, P(Bin >= 98) = 0.118


def test_count_constraints_hold_on_continuous_data():
    rng = np.random.default_rng(3)
    s = rng.normal(size=300)
    y = rng.random(300) < 0.5
    a = thors_threshold(s, y, fn_cost=1, fp_cost=4, max_fnr=0.1, confidence=0.9)
    b = thors_threshold(-s, ~y, fn_cost=4, fp_cost=1, max_fpr=0.1, confidence=0.9)
    # mirrored: positives at or below t  <->  (new) negatives at or above -t
    assert a.count_k1 <= a.count1 - min_rank(a.count1, 0.1, 0.1)
    assert b.count_k0 >= min_rank(b.count0, 0.1, 0.1)
    assert a.count1 == b.count0


def test_loose_constraint_returns_plain_thors():
    rng = np.random.default_rng(0)
    y = rng.random(2000) < 0.3
    s = np.round(rng.normal(size=2000) + 1.5 * y, 2)
    plain = thors_threshold(s, y, fn_cost=2, fp_cost=1)
    assert plain.fpr < 0.5 and plain.fnr < 0.5
    r = thors_threshold(s, y, fn_cost=2, fp_cost=1, max_fpr=0.9, max_fnr=0.9, confidence=0.5)
    assert (r.threshold, r.cost, r.count_k0, r.count_k1) == (plain.threshold, plain.cost, plain.count_k0,
                                                             plain.count_k1)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kw, match", [
    ({"max_fpr": 0.0}, "max_fpr must be strictly between 0 and 1, got 0.0"),
    ({"max_fpr": 1}, "max_fpr .*got 1"),
    ({"max_fnr": -0.1}, "max_fnr .*got -0.1"),
    ({"max_fnr": math.nan}, "max_fnr .*got nan"),
    ({"max_fpr": "0.1"}, "max_fpr .*got '0.1'"),
    ({"max_fpr": True}, "max_fpr .*got True"),
    ({"max_fpr": 0.1, "confidence": 1.0}, "confidence .*got 1.0"),
    ({"max_fpr": 0.1, "confidence": 0}, "confidence .*got 0"),
    ({"max_fnr": 0.1, "confidence": None}, "confidence .*got None"),
])
def test_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        thors_threshold([0.1, 0.2], [0, 1], fn_cost=1, fp_cost=1, **kw)
    with pytest.raises(ValueError, match=match):
        StreamingThors(fn_cost=1, fp_cost=1, **kw)


@pytest.mark.parametrize("alpha, conf, which, cls", [
    (0.1, 0.9, "max_fpr", "negative"), (0.05, 0.95, "max_fnr", "positive"), (0.2, 0.8, "max_fpr", "negative"),
])
def test_too_few_events_names_the_count_needed(alpha, conf, which, cls):
    need = math.ceil(math.log(1 - conf) / math.log(1 - alpha))  # 22, 59, 8
    n = need - 1
    s = np.linspace(0, 1, 2 * n)
    y = np.r_[np.zeros(n, bool), np.ones(n, bool)]
    with pytest.raises(NPInfeasibleError, match=f"at least {need} {cls} events.*got {n}"):
        thors_threshold(s, y, fn_cost=1, fp_cost=1, **{which: alpha}, confidence=conf)
    stm = StreamingThors(fn_cost=1, fp_cost=1, **{which: alpha}, confidence=conf)
    stm.update_many(s, y)
    rows = [a.copy() for a in stm.held()]
    for _ in range(2):  # the cached failure raises again; nothing changes
        with pytest.raises(ValueError, match=f"at least {need} {cls} events"):
            stm.get()
    assert len(stm) == 2 * n and all(np.array_equal(a, b) for a, b in zip(rows, stm.held()))
    assert "infeasible" in repr(stm)
    with pytest.raises(NPInfeasibleError):
        stm.predict_one(0.5)
    # one more event of the class makes it feasible
    stm.update(0.5, cls == "positive")
    s2, y2 = np.r_[s, 0.5], np.r_[y, cls == "positive"]
    want = thors_threshold(s2, y2, fn_cost=1, fp_cost=1, **{which: alpha}, confidence=conf)
    assert stm.get() == want.threshold


def test_both_constraints_halve_delta_and_report_need():
    # alone, 22 negatives suffice for alpha = delta = 0.1; with both, delta = 0.05 each needs 29
    s = np.linspace(0, 1, 60)
    y = np.r_[np.zeros(25, bool), np.ones(35, bool)]
    thors_threshold(s, y, fn_cost=1, fp_cost=1, max_fpr=0.1, confidence=0.9)
    with pytest.raises(NPInfeasibleError, match=r"at least 29 negative events.*halved"):
        thors_threshold(s, y, fn_cost=1, fp_cost=1, max_fpr=0.1, max_fnr=0.1, confidence=0.9)


def test_no_threshold_meets_both():
    # 30 of each class, alpha = 0.1, delta = 0.1 each: the FPR needs every negative at or below t,
    # the FNR needs every positive above t; impossible once a positive scores below a negative.
    s = np.arange(60.0)
    y = np.r_[np.zeros(29, bool), [True, False], np.ones(29, bool)]
    with pytest.raises(NPInfeasibleError, match=r"no threshold meets both.*>= 30\.0.*<= 28\.0"):
        thors_threshold(s, y, fn_cost=1, fp_cost=1, max_fpr=0.1, max_fnr=0.1, confidence=0.8)
    y[29], y[30] = False, True  # separable: now exactly t = 29
    r = thors_threshold(s, y, fn_cost=1, fp_cost=1, max_fpr=0.1, max_fnr=0.1, confidence=0.8)
    assert r.threshold == 29.0


def test_predict_one_falls_back_to_default_while_infeasible():
    stm = StreamingThors(fn_cost=1, fp_cost=1, max_fpr=0.1, confidence=0.9, default_threshold=0.7)
    stm.update_many(np.linspace(0, 1, 10), np.zeros(10))
    assert stm.predict_one(0.8) and not stm.predict_one(0.6)


# --------------------------------------------------------------------------- persistence
def _filled(backend="auto", **kw):
    rng = np.random.default_rng(7)
    stm = StreamingThors(fn_cost=3, fp_cost=1, max_fpr=0.2, max_fnr=0.3, confidence=0.8, backend=backend, **kw)
    y = rng.random(400) < 0.4
    stm.update_many(np.round(rng.normal(size=400) + 2.0 * y, 1), y)
    return stm


def test_pickle_save_load_merge_keep_np_state(tmp_path):
    stm = _filled()
    want = stm.result()
    assert want.max_fpr == 0.2
    back = pickle.loads(pickle.dumps(stm))
    assert (back.max_fpr, back.max_fnr, back.confidence) == (0.2, 0.3, 0.8)
    assert back.result() == want
    path = tmp_path / "np.ckpt"
    stm.save(path)
    loaded = StreamingThors.load(path, backend="python")
    assert loaded.result() == want
    hub = StreamingThors.merged([_filled(window=1000)])
    assert hub.result() == want
    plain = StreamingThors(fn_cost=3, fp_cost=1)
    plain.merge(stm)  # NP settings are read-time: the plain hub gives the plain answer
    assert plain.get() == thors_threshold(*_held_events(stm), fn_cost=3, fp_cost=1).threshold


def _held_events(stm):
    keys, _, _, c1, c0 = stm.held()
    s = np.r_[np.repeat(keys, c1.astype(int)), np.repeat(keys, c0.astype(int))]
    y = np.r_[np.ones(int(c1.sum()), bool), np.zeros(int(c0.sum()), bool)]
    return s, y


def test_checkpoint_without_np_params_loads_as_plain():
    stm = StreamingThors(fn_cost=3, fp_cost=1)
    stm.update_many([0.1, 0.4, 0.9], [0, 1, 1])
    params, state, arrays = stm._checkpoint_parts()
    for k in ("max_fpr", "max_fnr", "confidence"):
        del params[k]  # a checkpoint written before Neyman-Pearson mode
    back = StreamingThors._from_checkpoint_parts(params, state, arrays)
    assert (back.max_fpr, back.max_fnr, back.confidence) == (None, None, 0.95)
    assert back.get() == stm.get()


# --------------------------------------------------------------------------- coverage
def test_coverage_gaussian_fpr_and_fnr():
    """True FPR/FNR exceed alpha in at most delta + 3 s.e. of repetitions; the naive rule does not."""
    rng = np.random.default_rng(2024)
    reps, n0, n1, alpha, delta = 300, 500, 500, 0.1, 0.1
    z = stats.norm
    viol_fpr = viol_fnr = viol_naive = 0
    for _ in range(reps):
        s0 = rng.normal(0.0, 1.0, n0)
        s1 = rng.normal(1.0, 1.0, n1)
        s = np.r_[s0, s1]
        y = np.r_[np.zeros(n0, bool), np.ones(n1, bool)]
        # fn_cost large: the cost optimum is low, so the FPR constraint binds
        r = thors_threshold(s, y, fn_cost=20, fp_cost=1, max_fpr=alpha, confidence=1 - delta)
        viol_fpr += z.sf(r.threshold) > alpha
        r = thors_threshold(s, y, fn_cost=1, fp_cost=20, max_fnr=alpha, confidence=1 - delta)
        viol_fnr += z.cdf(r.threshold - 1.0) > alpha
        # naive plug-in: the smallest threshold with empirical FPR <= alpha
        t_naive = np.sort(s0)[math.ceil((1 - alpha) * n0) - 1]
        viol_naive += z.sf(t_naive) > alpha
    se = math.sqrt(delta * (1 - delta) / reps)
    assert viol_fpr / reps <= delta + 3 * se
    assert viol_fnr / reps <= delta + 3 * se
    assert viol_naive / reps > delta + 3 * se  # the test can tell a rule without the guarantee


@pytest.mark.skipif("c" not in available_backends(), reason="compiled backend not built")
@pytest.mark.parametrize("caps", [(0.1, None), (None, 0.15), (0.2, 0.25)])
def test_compiled_count_indexes_stay_in_sync_through_every_mutation(caps, tmp_path):
    """The compiled backend answers NP reads in O(log n) from count indexes kept beside the
    cost tree; every path that changes the held events (update with expiry, update_many,
    revert, merge, pickle, save/load) must keep them exact: compare with the batch function."""
    max_fpr, max_fnr = caps
    rng = np.random.default_rng(3)
    kw = dict(fn_cost=3, fp_cost=1, max_fpr=max_fpr, max_fnr=max_fnr, confidence=0.8)
    st_ = StreamingThors(window=400, backend="c", **kw)
    held: list = []

    def check(s):
        hs, hy, hw = zip(*held)
        try:
            want = thors_threshold(hs, hy, sample_weight=hw, **kw)
        except NPInfeasibleError:
            with pytest.raises(NPInfeasibleError):
                s.get()
            return
        assert (s.get(), s.cost) == (want.threshold, want.cost)

    for step in range(60):
        m = int(rng.integers(1, 40))
        sc = np.round(rng.normal(size=m), 1)
        y = rng.random(m) < 0.4
        w = rng.integers(1, 4, m) / 2
        if step % 3:
            for e in zip(sc.tolist(), y.tolist(), w.tolist()):
                st_.update(*e)
        else:
            st_.update_many(sc, y, w)
        held = (held + list(zip(sc.tolist(), y.tolist(), w.tolist())))[-400:]
        check(st_)
    # reverts (of held events) on an unwindowed copy, merge, pickle, checkpoint
    hub = StreamingThors(backend="c", **kw)
    hub.merge(st_)
    for e in held[::9]:
        hub.revert(*e)
    held = [e for i, e in enumerate(held) if i % 9]
    check(hub)
    check(pickle.loads(pickle.dumps(hub)))
    hub.save(tmp_path / "np.ckpt")
    check(StreamingThors.load(tmp_path / "np.ckpt"))


@pytest.mark.skipif("c" not in available_backends(), reason="compiled backend not built")
@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([3_000, 20_000, 60_000]),
       decimals=st.sampled_from([2, 3, None]), pos=st.sampled_from([0.05, 0.3, 0.7]),
       fn=st.sampled_from([1.0, 10.0, 0.125]), cap=st.sampled_from([0.02, 0.1, 0.4]),
       mode=st.sampled_from(["fpr", "fnr"]), weighted=st.booleans())
def test_one_sided_reads_on_deep_trees_match_the_batch_function(seed, n, decimals, pos, fn, cap, mode, weighted):
    """The compiled core answers one constraint in one descent (rank_min: the children left
    of the rank's path are candidates for max_fnr, the ones right of it for max_fpr, ties to
    the lower key across levels), and returns get()'s plain answer when the constraint does
    not bind. Trees of two and three levels (the small-sample tests above stay in one leaf),
    ties, dyadic weights (every sum exact): equal to the batch function, bit for bit."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < pos
    s = 3 * rng.normal(size=n) + 2.5 * y  # with 2 decimals: ~1,500 scores, most held many times
    if decimals is not None:
        s = np.round(s, decimals)
    w = rng.integers(1, 9, n) / 4 if weighted else None
    kw = dict(fn_cost=fn, fp_cost=1.0, confidence=0.9, **{f"max_{mode}": cap})
    st_ = StreamingThors(backend="c", **kw)
    st_.update_many(s, y, w)
    assert st_._tree.height >= 2
    plain = StreamingThors(fn_cost=fn, fp_cost=1.0, backend="c")
    plain.update_many(s, y, w)
    try:
        want = thors_threshold(s, y, sample_weight=w, **kw)
    except NPInfeasibleError:
        with pytest.raises(NPInfeasibleError):
            st_.get()
        return
    got = st_.get()
    event(f"binds={want.threshold != plain.get()}")
    assert (got, st_.cost) == (want.threshold, want.cost)
    if want.threshold == thors_threshold(s, y, fn_cost=fn, fp_cost=1.0, sample_weight=w).threshold:
        assert got == plain.get()


@pytest.mark.skipif("c" not in available_backends(), reason="compiled backend not built")
@settings(deadline=None, max_examples=20)
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([2_000, 30_000]), distinct=st.sampled_from([50, 5_000, None]),
       fn=st.sampled_from([1.0, 3.0, 0.5]), weighted=st.booleans(), churn=st.booleans())
def test_rank_descent_equals_the_range_walk(seed, n, distinct, fn, weighted, churn):
    """rank_min (one descent by class rank) against range_min over the range that kth_key
    bounds, at every rank step of a sweep, on trees of one to three levels whose shape a
    window's churn has changed: the same minimum and the same key (dyadic weights: every
    sum exact, so the two orders of summation agree to the bit)."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, distinct, 2 * n) / 7 if distinct else rng.random(2 * n)
    y = rng.random(2 * n) < rng.uniform(0.1, 0.9)
    w = rng.integers(1, 9, 2 * n) / 4 if weighted else np.ones(2 * n)
    st_ = StreamingThors(fn_cost=fn, fp_cost=1.0, window=n, backend="c")
    st_.update_many(s[:n], y[:n], w[:n])
    if churn:  # splits, merges and moves since the bulk load
        for lo in range(n, 2 * n, 997):
            st_.update_many(s[lo : lo + 997], y[lo : lo + 997], w[lo : lo + 997])
    tree = st_._tree
    _, _, c1, c0 = tree.totals()
    for lower, total in ((True, c0), (False, c1)):
        ranks = {1, 2, int(total), int(total) + 1, *rng.integers(1, int(total) + 2, 60).tolist()}
        assert_rank_descent(tree, lower, ranks)


def assert_rank_descent(tree, lower, ranks):
    same = lambda a, b: a[0] == b[0] and (a[1] == b[1] or (math.isnan(a[1]) and math.isnan(b[1])))  # noqa: E731
    for k in sorted(ranks):
        bound = tree.kth_key(0 if lower else 1, float(k))
        want = tree.range_best(bound, math.inf) if lower else tree.range_best(-math.inf, bound)
        got = tree.rank_best(lower, float(k))
        assert same(got, want), (lower, k, got, want, tree.height)


@pytest.mark.skipif("c" not in available_backends(), reason="compiled backend not built")
@pytest.mark.parametrize("seed", range(4))
def test_rank_descent_breaks_ties_across_levels_to_the_lower_key(seed):
    """Unit costs and balanced classes: the prefix is a +-1 walk, whose minimum over a range
    is often reached again far to the right, in a subtree met higher up the descent than the
    first one (a tie rule that favoured the candidate found first failed 19 of 40 seeds)."""
    rng = np.random.default_rng(seed)
    st_ = StreamingThors(fn_cost=1.0, fp_cost=1.0, backend="c")
    st_.update_many(rng.random(30_000), rng.random(30_000) < 0.5)
    tree = st_._tree
    assert tree.height == 3
    _, _, c1, c0 = tree.totals()
    assert_rank_descent(tree, True, range(1, int(c0) + 2, 37))
    assert_rank_descent(tree, False, range(1, int(c1) + 2, 37))


@pytest.mark.skipif("c" not in available_backends(), reason="compiled backend not built")
@pytest.mark.parametrize("mode", ["fpr", "fnr", "both"])
@pytest.mark.parametrize("pos", [0.05, 0.5])
def test_fast_and_slow_reads_choose_alike_on_inexact_sums(mode, pos):
    """The compiled fast read (np_get) and the Python slow path (which refills its rank
    tables: the first read after the counts leave them) choose with one function, so with
    weights whose sums round they give the same threshold, to the bit, and the cost
    belongs to it."""
    rng = np.random.default_rng(int(pos * 100) + len(mode))
    n = 40_000
    y = rng.random(n) < pos
    s = np.round(rng.normal(size=n) + 3 * y, 3)  # separated enough for both caps at once
    w = rng.uniform(0.1, 3.0, n)
    kw = np_kwargs(mode, 0.2, 0.9)
    st_ = StreamingThors(fn_cost=3.7, fp_cost=1.3, backend="c", window=30_000, **kw)
    for lo in range(0, n, 5_000):
        st_.update_many(s[lo : lo + 5_000], y[lo : lo + 5_000], w[lo : lo + 5_000])
        empty = np.zeros(0, np.int64)  # rank tables that cover no count: the next read takes the slow path
        st_._tree.set_np_tables(int(mode != "fnr"), 0, empty, int(mode != "fpr"), 0, empty)
        slow = st_.get()
        fast = st_.get()
        assert slow == fast == st_._np_best()[1]


@pytest.mark.parametrize("backend", available_backends())
def test_regression_two_reads_of_one_state_agree(backend):
    """Found in review (7c93a40): the first read refills the rank tables through the Python
    path, which walked the range, while the next read took plain mode's answer; at this tie
    (exact in rationals, not in float64) they were 0.2 and then 0.6. Reads of one state now
    agree, and equal plain mode's where the constraint does not bind (0.2 and 0.6 are both
    within the documented margin of a near-tie of rounded sums)."""
    keys = [i / 10 for i in range(12)]
    y = [0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1]
    w = [0.2, 0.7, 0.3, 0.3, 0.1, 0.1, 0.1, 0.3, 0.1, 0.2, 0.7, 0.7]
    s = StreamingThors(fn_cost=1.0, fp_cost=1.0, max_fpr=0.9, confidence=0.5, backend=backend)
    s.update_many(keys, y, w)
    plain = StreamingThors(fn_cost=1.0, fp_cost=1.0, backend=backend)
    plain.update_many(keys, y, w)
    reads = [s.get() for _ in range(3)]
    assert reads == [plain.get()] * 3
