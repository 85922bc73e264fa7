"""The validation-size planner (the paper's Theorem 6 / equation (cost.ub1), and the valid version)."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize

from thors_stream import ThresholdResult
from thors_stream.planner import paper_failure_probability, required_validation_size

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bounds_coverage as bc

KW = dict(fn_cost=100.0, fp_cost=10.0, n_test=6512)


def plug_in_ratio(n, fpr, fnr, pi1, conf=0.95, prior_known=False, fn=100.0, fp=10.0):
    """risk_upper / nominal risk at the typical counts, through the public ThresholdResult path."""
    n1 = round(pi1 * n)
    n0 = n - n1
    k1 = round(fnr * n1)
    k0 = n0 - round(fpr * n0)
    r = ThresholdResult(0.0, 0.0, n0, n1, k0, k1, n0, n1, k0, k1, fn, fp)
    b = r.bounds(conf, class_prior=pi1 if prior_known else None)
    return b.risk_upper / (pi1 * fn * fnr + (1 - pi1) * fp * fpr)


@pytest.mark.parametrize(("fpr", "fnr", "pi1", "mult"), [(0.2, 0.1, 0.24, 1.3), (0.05, 0.3, 0.5, 1.5),
                                                        (0.37, 0.047, 0.24, 1.2), (0.1, 0.0, 0.02, 2.0)])
def test_paper_method_solves_equation_cost_ub1(fpr, fnr, pi1, mult):
    n = required_validation_size(fpr, fnr, pi1, multiple=mult, method="paper", **KW)
    fail = paper_failure_probability([n - 1, n], fpr, fnr, pi1, multiple=mult, **KW)
    assert fail[1] <= 0.05 < fail[0]
    # the paper's equation, transcribed independently (n1 = pi1 n_v, k1 = FNR n1, ...)
    n1, n0 = round(pi1 * n), n - round(pi1 * n)
    k1, k0 = round(fnr * n1), n0 - round(fpr * n0)
    eps = (mult - 1) * (pi1 * 100 * fnr + (1 - pi1) * 10 * fpr) / (pi1 * 100 + (1 - pi1) * 10)
    direct = 6512 * (math.exp(-2 * (eps + k1 / (n1 * (n1 + 1))) ** 2 * n1)
                     + math.exp(-2 * (eps + (n0 - k0) / (n0 * (n0 + 1))) ** 2 * n0))
    assert direct == pytest.approx(fail[1])


@pytest.mark.parametrize(("fpr", "fnr", "pi1", "mult", "known"), [(0.2, 0.1, 0.24, 1.3, False),
                                                                 (0.05, 0.3, 0.5, 1.5, True),
                                                                 (0.37, 0.047, 0.24, 1.2, False)])
def test_valid_method_is_the_smallest_size_meeting_the_target(fpr, fnr, pi1, mult, known):
    n = required_validation_size(fpr, fnr, pi1, multiple=mult, prior_known=known, **KW)
    assert plug_in_ratio(n, fpr, fnr, pi1, prior_known=known) <= mult < plug_in_ratio(n - 1, fpr, fnr, pi1,
                                                                                       prior_known=known)


def test_planner_is_monotone_in_multiple_and_confidence():
    sizes = [required_validation_size(0.2, 0.1, 0.24, multiple=m, **KW) for m in (1.1, 1.3, 2.0, 3.5)]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 10 * sizes[-1]
    confs = [required_validation_size(0.2, 0.1, 0.24, multiple=1.3, confidence=c, **KW) for c in (0.8, 0.95, 0.99)]
    assert confs == sorted(confs)
    paper = [required_validation_size(0.2, 0.1, 0.24, multiple=1.3, method="paper", **dict(KW, n_test=t))
             for t in (1, 100, 10_000)]
    assert paper == sorted(paper) and paper[0] < paper[-1]  # the paper's n_te union factor


def test_realised_cost_needs_more_data_than_expected_cost():
    exp_ = required_validation_size(0.2, 0.1, 0.24, multiple=1.3, **KW)
    real = required_validation_size(0.2, 0.1, 0.24, multiple=1.3, quantity="realised", **KW)
    assert real > exp_


def test_unreachable_target_raises_with_the_limit():
    # 20 test events: the test-sampling term alone exceeds 1.2 times the nominal cost
    with pytest.raises(ValueError, match=r"max_size=.*bound / C2 = "):
        required_validation_size(0.2, 0.1, 0.24, fn_cost=100, fp_cost=10, multiple=1.2, n_test=20,
                                 quantity="realised", max_size=10**6)
    with pytest.raises(ValueError, match="failure probability"):
        required_validation_size(0.2, 0.1, 0.24, multiple=1.01, method="paper", max_size=1000, **KW)


def test_planned_size_gives_about_the_planned_bound_on_simulated_data():
    # Gaussian classes, the population-optimal threshold's rates as the planning input; at the
    # planned size the bound THORS's own data gives is near the planned multiple of C2
    pi1, fn, fp, mult = 0.5, 5.0, 1.0, 1.5
    dist = bc.DISTS["gauss"]

    def risk(t):
        return pi1 * fn * dist.fnr(t) + (1 - pi1) * fp * dist.fpr(t)

    t_opt = optimize.minimize_scalar(risk, bounds=(-3, 4), method="bounded").x
    fpr, fnr = float(dist.fpr(t_opt)), float(dist.fnr(t_opt))
    n = required_validation_size(fpr, fnr, pi1, fn_cost=fn, fp_cost=fp, multiple=mult)
    rng = np.random.default_rng(4)
    y = rng.random((300, n)) < pi1
    sel = bc.thors_many(dist.sample(rng, y), y, fn, fp)
    from thors_stream.bounds import bounds_arrays

    b = bounds_arrays(sel["n0"], sel["n1"], sel["k0"], sel["k1"], fn_cost=fn, fp_cost=fp, confidence=0.95)
    ratio = b["risk_upper"] / risk(t_opt)
    assert 0.85 * mult < np.median(ratio) < 1.15 * mult
    # and the bound holds for the true risk at each chosen threshold
    thr = sel["threshold"]
    true = np.where(np.isfinite(thr), risk(np.where(np.isfinite(thr), thr, 0.0)), (1 - pi1) * fp)
    assert np.mean(true <= b["risk_upper"]) >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 300)


BAD = [
    (dict(fpr=1.5), "1.5"), (dict(fpr=-0.1), "-0.1"), (dict(fnr="x"), "'x'"), (dict(class_prior=0.0), "0.0"),
    (dict(class_prior=None), "class_prior"), (dict(multiple=1.0), "multiple"), (dict(multiple=math.nan), "nan"),
    (dict(confidence=1.0), "confidence"), (dict(n_test=0), "n_test"), (dict(n_test=-5), "-5"),
    (dict(method="exactly"), "'exactly'"), (dict(quantity="mean"), "'mean'"), (dict(max_size=1), "max_size"),
    (dict(fn_cost=0), "fn_cost"), (dict(fp_cost=-1), "fp_cost"), (dict(fpr=0.0, fnr=0.0), "nominal cost is 0"),
]


@pytest.mark.parametrize(("change", "named"), BAD)
def test_bad_input_raises_naming_the_value(change, named):
    args = dict(fpr=0.2, fnr=0.1, class_prior=0.24, fn_cost=100, fp_cost=10, multiple=1.3)
    args.update(change)
    with pytest.raises(ValueError, match=named):
        required_validation_size(**args)


def test_plot_draws_one_line_per_method():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from thors_stream.plotting import plot_validation_size

    ax = plot_validation_size(0.2, 0.1, 0.24, fn_cost=100, fp_cost=10, n_test=6512, multiples=[1.2, 1.5, 2.0])
    assert len(ax.lines) == 2
    for line in ax.lines:
        ys = line.get_ydata()
        assert len(ys) == 3 and np.all(np.diff(ys) < 0)
    ax.figure.clf()


def test_plot_without_matplotlib_names_the_extra(monkeypatch):
    import builtins

    from thors_stream import plotting as plots

    real_import = builtins.__import__

    def no_mpl(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    with pytest.raises(ImportError, match=r"thors_stream\[plot\]"):
        plots.plot_validation_size(0.2, 0.1, 0.24, fn_cost=100, fp_cost=10)
