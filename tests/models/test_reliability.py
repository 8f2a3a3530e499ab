"""The bias-aware Bradley–Terry model with a reliability per judge."""

import warnings

import numpy as np
import pytest

from fairjudge._util._warnings import ApproximationWarning
from fairjudge.data import Comparisons
from fairjudge.models import LOG_RELIABILITY, bias_aware_bt, fit_model, reliability_bt
from fairjudge.models._bt import standardise_covariates
from fairjudge.models._reliability import _newton, _Objective

N = 30


def panel(seed, n_cheap, n_strong, tau=(0.4, 1.5)):
    """A cheap judge (tau 0.4, length bias 1, first-slot lean 0.5) and a strong one (tau
    1.5, unbiased) on random ordered pairs of N items."""
    rng = np.random.default_rng(seed)
    theta, x = rng.normal(0, 1.25, N), rng.normal(0, 1, N)
    first, second, outcome, judge = [], [], [], []
    for j, (t, c, kappa, m) in enumerate(((tau[0], 1.0, 0.5, n_cheap),
                                          (tau[1], 0.0, 0.0, n_strong))):
        a = rng.integers(0, N, m)
        b = (a + rng.integers(1, N, m)) % N
        eta = t * (theta[a] - theta[b]) + c * (x[a] - x[b]) + kappa
        first += list(a)
        second += list(b)
        outcome += list(np.where(rng.random(m) < 1 / (1 + np.exp(-eta)), "a", "b"))
        judge += [j] * m
    data = Comparisons.from_outcomes(first, second, outcome, judge=judge,
                                     judges=["cheap", "strong"], n_items=N)
    return data, theta, x


def test_one_judge_is_exactly_the_bias_aware_model():
    data, _, x = panel(0, 2000, 0)
    data = Comparisons.from_outcomes(data.first, data.second,
                                     np.where(data.first_score == 1, "a", "b"), n_items=N)
    fit = reliability_bt(data, x[:, None], covariate_names=["length"])
    reference = bias_aware_bt(data, x[:, None], covariate_names=["length"])
    np.testing.assert_allclose(fit.params, reference.params, atol=1e-9)
    np.testing.assert_allclose(fit.covariance, reference.covariance, atol=1e-9)
    assert fit.model == "reliability" and fit.judge_reliability() == {"judge": 1.0}


def test_gradient_and_hessian_match_finite_differences():
    data, _, x = panel(1, 600, 300)
    x_std, _, _ = standardise_covariates(x[:, None], None, N)
    objective = _Objective(data, x_std, position=True, prior_precision=1.0,
                           bias_prior_precision=np.full(4, 0.1),
                           reliability_prior_precision=1.0)
    beta = np.random.default_rng(2).normal(0, 0.3, objective.n_params)
    grad, _, exact = objective.derivatives(beta)
    step = 1e-6
    numeric_grad, numeric_hess = np.zeros_like(grad), np.zeros_like(exact)
    for k in range(beta.size):
        e = np.zeros_like(beta)
        e[k] = step
        numeric_grad[k] = (objective.value(beta + e) - objective.value(beta - e)) / (2 * step)
        numeric_hess[:, k] = (objective.derivatives(beta + e)[0]
                              - objective.derivatives(beta - e)[0]) / (2 * step)
    np.testing.assert_allclose(grad, numeric_grad, atol=1e-4)
    np.testing.assert_allclose(exact, numeric_hess, atol=1e-4)


def test_the_reliability_ratio_is_recovered_within_its_interval():
    """The cheap judge gives 3 verdicts in 4, so it is the reference (tau = 1); the strong
    judge's tau is the true ratio 1.5 / 0.4 = 3.75 (with the cheap judge's length bias
    modelled: left out, it would enter the cheap judge's quality scale)."""
    data, theta, x = panel(3, 30000, 10000)
    fit = fit_model("reliability", data, x[:, None])
    (cheap, strong) = fit.reliability
    assert cheap.judge == "cheap" and cheap.estimate == 0 and cheap.std_error == 0
    assert strong.name == LOG_RELIABILITY and strong.n == 10000
    assert abs(strong.estimate - np.log(3.75)) < 4 * strong.std_error
    assert fit.judge_reliability()["strong"] == pytest.approx(np.exp(strong.estimate))
    # theta is on the reference judge's scale: 0.4 x the true quality
    slope = np.polyfit(theta, fit.scores, 1)[0]
    assert slope == pytest.approx(0.4, rel=0.1)


def test_a_judge_without_verdicts_keeps_tau_one():
    data, _, _ = panel(4, 800, 0)
    fit = reliability_bt(data)
    assert fit.judges == ("cheap", "strong")
    assert [r.judge for r in fit.reliability] == ["cheap"]
    assert fit.judge_reliability() == {"cheap": 1.0, "strong": 1.0}
    np.testing.assert_allclose(fit.scores, bias_aware_bt(data).scores, atol=1e-9)


def test_bad_settings_are_named():
    data, _, _ = panel(5, 50, 50)
    with pytest.raises(ValueError, match="reliability_prior_precision"):
        reliability_bt(data, reliability_prior_precision=0)
    with pytest.raises(ValueError, match="bias_prior_precision"):
        reliability_bt(data, bias_prior_precision=-1)


def large_panel(n_items, per_item=24, seed=6):
    """Three judges of reliability 1, 0.5 and 2.5 (a length bias and a first-slot lean
    each) on random pairs of ``n_items`` items, ``per_item`` verdicts per item."""
    rng = np.random.default_rng(seed)
    theta, x = rng.normal(0, 1, n_items), rng.normal(0, 1, n_items)
    m = per_item * n_items // 2
    a = rng.integers(0, n_items, m)
    b = (a + rng.integers(1, n_items, m)) % n_items
    judge = rng.integers(0, 3, m)
    tau = np.array([1.0, 0.5, 2.5])[judge]
    eta = tau * (theta[a] - theta[b]) + np.array([0.4, 0.0, 0.2])[judge] * (x[a] - x[b]) + 0.3
    outcome = np.where(rng.random(m) < 1 / (1 + np.exp(-eta)), "a", "b")
    return Comparisons.from_outcomes(a, b, outcome, judge=judge, judges=["j0", "j1", "j2"],
                                     n_items=n_items), x[:, None]


def variant(kind, n_items=60):
    """The large panel, its item covariate and position switch, in one of the shapes the
    sparse blocks must handle."""
    data, x = large_panel(n_items)
    if kind == "verdict covariate":
        rng = np.random.default_rng(9)
        data = Comparisons.from_outcomes(
            data.first, data.second, np.where(data.first_score == 1, "a", "b"),
            judge=data.judge, judges=data.judges, n_items=n_items,
            covariate_diff=rng.normal(size=data.first.size), covariate_names=["tone"])
    if kind == "judge without verdicts":
        data = Comparisons.from_outcomes(
            data.first, data.second, np.where(data.first_score == 1, "a", "b"),
            judge=np.minimum(data.judge, 1), judges=("j0", "j1", "silent"), n_items=n_items)
    if kind == "no bias terms":
        return data, np.zeros((n_items, 0)), False
    return data, x, True


KINDS = ["three judges", "verdict covariate", "judge without verdicts", "no bias terms"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("exact", [True, False])
def test_the_sparse_blocks_are_the_dense_hessian(exact, kind):
    """Laplacian edge weights, cross and block terms assemble into the exact (or the
    Gauss–Newton) Hessian of the dense path, with the same gradient and value."""
    data, x, position = variant(kind)
    x_std, _, _ = standardise_covariates(x, None, 60)
    q = x.shape[1] + len(data.covariate_names) + int(position)
    objective = _Objective(data, x_std, position=position, prior_precision=1.0,
                           bias_prior_precision=np.full(data.n_judges * q, 0.1),
                           reliability_prior_precision=1.0)
    beta = np.random.default_rng(7).normal(0, 0.4, objective.n_params)
    grad, gauss_newton, full = objective.derivatives(beta)
    d = objective.sparse_derivatives(beta, exact=exact)
    assembled = d.assemble_lower(np.empty((objective.n_params,) * 2))
    np.testing.assert_allclose(np.tril(assembled), np.tril(full if exact else gauss_newton),
                               atol=1e-10)
    np.testing.assert_allclose(d.grad, grad, atol=1e-10)
    assert d.value == pytest.approx(objective.value(beta), rel=1e-14)


@pytest.mark.parametrize("kind", KINDS)
def test_the_sparse_fit_is_the_dense_fit_in_every_shape(kind):
    """To the precision of the reliabilities' search (it stops when they move less than
    1e-7; their standard errors come from its finite-difference Hessian)."""
    data, x, position = variant(kind, n_items=300)
    dense = reliability_bt(data, x, position=position, solver="dense")
    fit = reliability_bt(data, x, position=position, solver="sparse")
    np.testing.assert_allclose(fit.scores, dense.scores, atol=1e-6)
    assert fit.judge_reliability() == pytest.approx(dense.judge_reliability(), rel=1e-6)
    for got, want in zip(fit.bias + fit.reliability, dense.bias + dense.reliability):
        assert got.std_error == pytest.approx(want.std_error, rel=1e-4, abs=1e-12)


def test_from_a_start_far_off_the_sparse_fit_reaches_the_dense_one():
    """Judges of reliability 0.05 and 6, the sharp one's log reliability started at 3: the
    sparse fit still reaches the dense answer, and a warm start from that fit (its
    reliabilities start again from 1) ends where it began, to the search's precision."""
    rng = np.random.default_rng(10)
    n, m = 300, 12000
    theta = rng.normal(0, 1, n)
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    judge = rng.integers(0, 2, m)
    eta = np.array([0.05, 6.0])[judge] * (theta[a] - theta[b])
    data = Comparisons.from_outcomes(a, b, np.where(rng.random(m) < 1 / (1 + np.exp(-eta)),
                                                    "a", "b"), judge=judge,
                                     judges=["noisy", "sharp"], n_items=n)
    start = np.zeros(n + 2 * 1 + 1)
    start[n + 2:] = 3.0   # the other judge's log reliability, far from its value
    fit = reliability_bt(data, solver="sparse", init=start)
    dense = reliability_bt(data, solver="dense")
    assert fit.converged and dense.converged
    np.testing.assert_allclose(fit.scores, dense.scores, atol=1e-7)
    again = reliability_bt(data, solver="sparse", init=fit.params)
    np.testing.assert_allclose(again.scores, fit.scores, atol=1e-6)


def test_the_sparse_solver_gives_the_dense_fit():
    """Scores, biases and reliabilities with their errors as the dense algebra; marginal
    variances within 2% where the estimate meets its target (no warning); contrasts
    exactly. (Scores and estimates to the precision of the reliabilities' search.)"""
    data, x = large_panel(800, per_item=80)
    dense = reliability_bt(data, x, covariate_names=["length"], solver="dense")
    fit = reliability_bt(data, x, covariate_names=["length"], solver="sparse")
    assert fit.solver == "sparse" and fit.covariance is None and dense.solver == "dense"
    assert "sparse solver" in fit.notes[0]
    np.testing.assert_allclose(fit.scores, dense.scores, atol=1e-6)
    for got, want in zip(fit.bias + fit.reliability, dense.bias + dense.reliability):
        assert (got.name, got.judge) == (want.name, want.judge)
        assert got.estimate == pytest.approx(want.estimate, abs=1e-6)
        assert got.std_error == pytest.approx(want.std_error, rel=1e-4, abs=1e-12)
    assert fit.judge_reliability() == pytest.approx(dense.judge_reliability(), rel=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ApproximationWarning)
        variances = fit.marginal_variances()
    np.testing.assert_allclose(variances, dense.marginal_variances(), rtol=0.02)
    i, j = np.arange(0, 40), np.arange(40, 80)
    np.testing.assert_allclose(fit.contrast_variance(i, j), dense.contrast_variance(i, j),
                               rtol=1e-6)


def test_auto_is_sparse_above_the_threshold_and_a_bad_solver_is_named(monkeypatch):
    from fairjudge.models import _bt

    data, x = large_panel(150)
    assert reliability_bt(data, x).solver == "dense"
    monkeypatch.setattr(_bt, "SPARSE_MIN_ITEMS", 100)
    assert reliability_bt(data, x).solver == "sparse"
    assert fit_model("reliability", data, x).solver == "sparse"
    with pytest.raises(ValueError, match="solver"):
        reliability_bt(data, solver="cholmod")


def sparse_panel(seed, n_items=200, n_cheap=2000, n_strong=500):
    """The cheap and strong judges of :func:`panel` without biases, on ``n_items`` items
    with 20 cheap and 5 strong verdicts per item: few verdicts per item, as when a cheap
    judge covers a pool and a strong one a part of it."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1.25, n_items)
    a = rng.integers(0, n_items, n_cheap + n_strong)
    b = (a + rng.integers(1, n_items, a.size)) % n_items
    judge = np.repeat([0, 1], [n_cheap, n_strong])
    eta = np.array([0.4, 1.5])[judge] * (theta[a] - theta[b])
    outcome = np.where(rng.random(a.size) < 1 / (1 + np.exp(-eta)), "a", "b")
    return Comparisons.from_outcomes(a, b, outcome, judge=judge, judges=["cheap", "strong"],
                                     n_items=n_items)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_few_verdicts_per_item_do_not_inflate_the_reliability(seed):
    """With 20 + 5 verdicts per item the joint mode puts the strong judge's log tau near 4
    (true log 3.75 = 1.32: the items' prior terms, not the data, set it); the marginal
    likelihood recovers it within 4 standard errors, and the standard error is about the
    estimate's spread over pools (0.16 against 0.18 over 20 pools in
    ``benchmarks/bench_reliability.py``)."""
    data = sparse_panel(seed)
    fit = reliability_bt(data, position=False)
    strong = fit.reliability[1]
    assert fit.converged and strong.judge == "strong"
    assert abs(strong.estimate - np.log(3.75)) < 4 * strong.std_error
    assert 0.1 < strong.std_error < 0.4
    # What the joint mode gives on the same verdicts.
    objective = _Objective(data, np.zeros((data.n_items, 0)), position=False,
                           prior_precision=1.0, bias_prior_precision=np.zeros(0),
                           reliability_prior_precision=1.0)
    joint = _newton(objective, np.zeros(objective.n_params), 1e-8, 200)[0]
    assert joint[-1] - np.log(3.75) > 1.5


def independent_log_marginal(data, log_lam, u, prior_u=1.0):
    """-log p(y | u, lambda) up to a constant by the Laplace approximation, computed from
    the verdicts with scipy's BFGS for the mode (no bias terms, judge 0 the reference)."""
    from scipy.optimize import minimize

    lam, tau = np.exp(log_lam), np.exp(np.array([0.0, u]))[data.judge]
    win = data.first_score

    def negative_log_posterior(theta):
        eta = tau * (theta[data.first] - theta[data.second])
        resid = 1 / (1 + np.exp(-eta)) - win
        grad = lam * theta
        np.add.at(grad, data.first, resid * tau)
        np.add.at(grad, data.second, -resid * tau)
        return (np.sum(np.logaddexp(0, eta) - win * eta) + 0.5 * lam * theta @ theta,
                grad)

    mode = minimize(negative_log_posterior, np.zeros(data.n_items), jac=True,
                    method="BFGS", options={"gtol": 1e-10}).x
    p = 1 / (1 + np.exp(-tau * (mode[data.first] - mode[data.second])))
    hessian = lam * np.eye(data.n_items)
    for i, j, w in zip(data.first, data.second, tau ** 2 * p * (1 - p)):
        hessian[[i, j, i, j], [i, j, j, i]] += [w, w, -w, -w]
    return (negative_log_posterior(mode)[0] + 0.5 * np.linalg.slogdet(hessian)[1]
            - 0.5 * data.n_items * log_lam + 0.5 * prior_u * u * u)


def test_the_reliability_maximises_an_independent_laplace_marginal():
    """On 15 items the fitted log tau and the estimated prior precision (the fit's
    ``prior_precision``) are where a Nelder-Mead search of the Laplace marginal likelihood,
    computed independently above, has its minimum."""
    from scipy.optimize import minimize

    data = sparse_panel(4, n_items=15, n_cheap=150, n_strong=60)
    fit = reliability_bt(data, position=False)
    best = minimize(lambda z: independent_log_marginal(data, *z), np.array([0.0, 0.5]),
                    method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-10})
    assert fit.reliability[1].estimate == pytest.approx(best.x[1], abs=1e-4)
    assert fit.prior_precision == pytest.approx(np.exp(best.x[0]), rel=1e-3)


def test_the_sparse_fit_with_a_lanczos_log_determinant_is_the_dense_fit(monkeypatch):
    """With the quality block's log det estimated (stochastic Lanczos quadrature, forced
    at 400 items), the reliability lands within a tenth of its standard error of the exact
    search's."""
    from fairjudge.models import _sparse

    data = sparse_panel(5, n_items=400, n_cheap=4000, n_strong=1000)
    dense = reliability_bt(data, position=False, solver="dense")
    monkeypatch.setattr(_sparse, "EXACT_LOG_DET_ITEMS", 0)
    fit = reliability_bt(data, position=False, solver="sparse")
    got, want = fit.reliability[1], dense.reliability[1]
    assert abs(got.estimate - want.estimate) < 0.1 * want.std_error
    np.testing.assert_allclose(fit.scores, dense.scores, atol=0.02)


@pytest.mark.shared_data  # skipped without ../shared/data (tests/conftest.py)
@pytest.mark.filterwarnings("ignore::fairjudge._util._warnings.ComparisonGraphWarning")
def test_recorded_judges_reliabilities_follow_their_accuracy_against_gold():
    """LLMBar Natural: 100 response pairs, each judged by six LLMs in both orders with two
    prompts, so every response has one opponent. Against the gold labels GPT-4 is right
    95% of the time, PaLM2 86%, the two ChatGPTs 81%, LLaMA2 77% and Falcon 69%. The
    reliabilities follow: the two weakest judges below the reference (ChatGPT, tau = 1),
    GPT-4 the highest at a plausible ratio. (The joint mode made GPT-4's tau 62 and every
    judge more reliable than the reference.)"""
    import fairjudge
    from fairjudge.data import load_recorded

    verdicts = load_recorded("llmbar/Natural").verdicts.dropna(subset=["winner"])
    ranking = fairjudge.rank(verdicts[["item_a", "item_b", "winner", "judge"]],
                             model="reliability", k=10)
    bias = ranking.bias
    tau = np.exp(bias[bias["name"] == LOG_RELIABILITY].set_index("judge")["estimate"])
    assert tau["ChatGPT"] == 1.0
    assert tau["Falcon"] < 1 and tau["LLaMA2"] < 1
    assert tau.idxmax() == "GPT-4" and 1.5 < tau["GPT-4"] < 5
