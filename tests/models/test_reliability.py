"""The bias-aware Bradley–Terry model with a reliability per judge."""

import warnings

import numpy as np
import pytest

from fairjudge._util._warnings import ApproximationWarning
from fairjudge.data import Comparisons
from fairjudge.models import LOG_RELIABILITY, bias_aware_bt, fit_model, reliability_bt
from fairjudge.models._bt import standardise_covariates
from fairjudge.models._reliability import _Objective

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
    data, x, position = variant(kind, n_items=300)
    dense = reliability_bt(data, x, position=position, solver="dense")
    fit = reliability_bt(data, x, position=position, solver="sparse")
    np.testing.assert_allclose(fit.scores, dense.scores, atol=1e-8)
    assert fit.judge_reliability() == pytest.approx(dense.judge_reliability(), rel=1e-8)
    for got, want in zip(fit.bias + fit.reliability, dense.bias + dense.reliability):
        assert got.std_error == pytest.approx(want.std_error, rel=1e-6, abs=1e-12)


def test_far_from_the_mode_the_sparse_fit_falls_back_to_gauss_newton(monkeypatch):
    """Judges of reliability 0.05 and 6 from a start far off: some exact steps cannot be
    taken, the Gauss–Newton ones are, and the fit still reaches the dense mode; a warm
    start from that fit (its reliabilities start again from 1) ends where it began."""
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
    asked = []
    sparse_derivatives = _Objective.sparse_derivatives

    def counting(self, beta, *, exact):
        asked.append(exact)
        return sparse_derivatives(self, beta, exact=exact)

    monkeypatch.setattr(_Objective, "sparse_derivatives", counting)
    start = np.zeros(n + 2 * 1 + 1)
    start[n + 2:] = 3.0   # the other judge's log reliability, far from its value
    fit = reliability_bt(data, solver="sparse", init=start)
    dense = reliability_bt(data, solver="dense")
    assert False in asked
    np.testing.assert_allclose(fit.scores, dense.scores, atol=1e-7)
    again = reliability_bt(data, solver="sparse", init=fit.params)
    np.testing.assert_allclose(again.scores, fit.scores, atol=1e-8)


def test_the_sparse_solver_gives_the_dense_fit():
    """Scores, biases and reliabilities with their errors as the dense algebra; marginal
    variances within 2% where the estimate meets its target (no warning); contrasts
    exactly."""
    data, x = large_panel(800, per_item=80)
    dense = reliability_bt(data, x, covariate_names=["length"], solver="dense")
    fit = reliability_bt(data, x, covariate_names=["length"], solver="sparse")
    assert fit.solver == "sparse" and fit.covariance is None and dense.solver == "dense"
    assert "sparse solver" in fit.notes[0]
    np.testing.assert_allclose(fit.scores, dense.scores, atol=1e-8)
    for got, want in zip(fit.bias + fit.reliability, dense.bias + dense.reliability):
        assert (got.name, got.judge) == (want.name, want.judge)
        assert got.estimate == pytest.approx(want.estimate, abs=1e-8)
        assert got.std_error == pytest.approx(want.std_error, rel=1e-6, abs=1e-12)
    assert fit.judge_reliability() == pytest.approx(dense.judge_reliability(), rel=1e-8)
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
