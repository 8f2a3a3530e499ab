"""The penalised Bradley–Terry engine: derivatives, optimum, invariances."""

import numpy as np
import pytest
from scipy import optimize
from scipy.special import expit

from fairjudge.data import Comparisons
from fairjudge.models import bias_aware_bt, bt_pairwise
from fairjudge.models._engine import PenalisedBT, aggregate_pairs


def random_comparisons(rng, n_items=12, n=400, n_judges=2, tie_rate=0.1):
    first = rng.integers(0, n_items, n)
    second = (first + rng.integers(1, n_items, n)) % n_items
    score = rng.choice([0.0, 1.0], n)
    score[rng.random(n) < tie_rate] = 0.5
    return Comparisons(first, second, score, rng.uniform(0.5, 2.0, n),
                       rng.integers(0, n_judges, n), tuple(f"i{i}" for i in range(n_items)),
                       tuple(f"j{j}" for j in range(n_judges)))


def independent_objective(beta, comps, x_std, position, lam, lam_b):
    """Eq. (2) written per verdict, independently of the aggregated engine."""
    n_items, d = x_std.shape
    q = d + int(position)
    theta = beta[:n_items]
    bias = beta[n_items:].reshape(comps.n_judges, q)
    total = 0.0
    for a, b, y, w, j in zip(comps.first, comps.second, comps.first_score, comps.weight,
                             comps.judge):
        eta = theta[a] - theta[b] + x_std[a] @ bias[j, :d] - x_std[b] @ bias[j, :d]
        if position:
            eta += bias[j, d]
        total -= w * (y * np.log(expit(eta)) + (1 - y) * np.log(expit(-eta)))
    return total + 0.5 * lam * theta @ theta + 0.5 * lam_b * beta[n_items:] @ beta[n_items:]


@pytest.fixture
def problem():
    rng = np.random.default_rng(11)
    comps = random_comparisons(rng)
    x = rng.normal(size=(comps.n_items, 2))
    x_std = (x - x.mean(0)) / x.std(0)
    objective = PenalisedBT(aggregate_pairs(comps), x_std, position=True, prior_precision=0.7,
                            bias_prior_precision=np.full(comps.n_judges * 3, 0.2))
    beta = rng.normal(scale=0.5, size=objective.n_params)
    return comps, x, x_std, objective, beta


def test_value_matches_per_verdict_objective(problem):
    comps, _, x_std, objective, beta = problem
    expected = independent_objective(beta, comps, x_std, True, 0.7, 0.2)
    assert objective.value(beta) == pytest.approx(expected, rel=1e-12)


def test_gradient_matches_finite_differences(problem):
    _, _, _, objective, beta = problem
    err = optimize.check_grad(objective.value, lambda b: objective.gradient_hessian(b)[0], beta,
                              epsilon=1e-6)
    assert err < 1e-4 * np.linalg.norm(objective.gradient_hessian(beta)[0])


def test_hessian_matches_finite_differences_of_gradient(problem):
    _, _, _, objective, beta = problem
    analytic = objective.gradient_hessian(beta)[1].copy()
    h = 1e-6
    numeric = np.empty_like(analytic)
    for p in range(beta.size):
        step = np.zeros_like(beta)
        step[p] = h
        numeric[:, p] = (objective.gradient_hessian(beta + step)[0]
                         - objective.gradient_hessian(beta - step)[0]) / (2 * h)
    np.testing.assert_allclose(analytic, numeric, atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(analytic, analytic.T)


@pytest.mark.slow
def test_map_matches_independent_optimizer(problem):
    comps, x, x_std, _, _ = problem
    fit = bias_aware_bt(comps, x, covariate_names=["u", "v"], prior_precision=0.7,
                        bias_prior_precision=0.2)
    n_params = fit.params.size
    ref = optimize.minimize(independent_objective, np.zeros(n_params),
                            args=(comps, x_std, True, 0.7, 0.2), method="BFGS",
                            options={"gtol": 1e-10, "maxiter": 10_000})
    np.testing.assert_allclose(fit.params, ref.x, atol=1e-5)
    # Coefficients are reported on the user's scale: standardised value / covariate sd.
    assert fit.bias_estimate("u", "j0").estimate == pytest.approx(
        ref.x[comps.n_items] / x[:, 0].std(), abs=1e-5)


def test_covariance_is_inverse_hessian_at_the_mode(problem):
    comps, x, _, objective, _ = problem
    fit = bias_aware_bt(comps, x, prior_precision=0.7, bias_prior_precision=0.2)
    hess = objective.gradient_hessian(fit.params)[1]
    np.testing.assert_allclose(fit.param_covariance @ hess, np.eye(fit.params.size), atol=1e-8)
    np.testing.assert_allclose(fit.covariance, fit.param_covariance[:12, :12])


def test_relabelling_items_does_not_change_the_fit():
    rng = np.random.default_rng(5)
    comps = random_comparisons(rng, n_judges=1)
    x = rng.normal(size=comps.n_items)
    fit = bias_aware_bt(comps, x)
    perm = rng.permutation(comps.n_items)          # new index of each old item
    inverse = np.argsort(perm)
    relabelled = Comparisons(perm[comps.first], perm[comps.second], comps.first_score,
                             comps.weight, comps.judge,
                             tuple(comps.item_ids[i] for i in inverse), comps.judges)
    refit = bias_aware_bt(relabelled, x[inverse])
    np.testing.assert_allclose(refit.scores[perm], fit.scores, atol=1e-10)
    np.testing.assert_allclose(refit.covariance[np.ix_(perm, perm)], fit.covariance, atol=1e-10)
    assert [b.estimate for b in refit.bias] == pytest.approx([b.estimate for b in fit.bias])


def test_splitting_verdicts_into_weighted_copies_does_not_change_the_fit():
    rng = np.random.default_rng(6)
    comps = random_comparisons(rng)
    x = rng.normal(size=comps.n_items)
    doubled = Comparisons(np.tile(comps.first, 2), np.tile(comps.second, 2),
                          np.tile(comps.first_score, 2), np.tile(comps.weight / 2, 2),
                          np.tile(comps.judge, 2), comps.item_ids, comps.judges)
    np.testing.assert_allclose(bias_aware_bt(doubled, x).params, bias_aware_bt(comps, x).params,
                               atol=1e-10)


def test_tie_counts_half_a_win_each():
    # One tie between two items is the same as one win each way with half weight.
    tie = Comparisons.from_outcomes([0], [1], ["tie"], n_items=2)
    split = Comparisons.from_outcomes([0, 0], [1, 1], ["a", "b"], n_items=2, weight=[0.5, 0.5])
    np.testing.assert_allclose(bt_pairwise(tie).scores, bt_pairwise(split).scores)
    np.testing.assert_allclose(bt_pairwise(tie).scores, 0.0, atol=1e-12)


def test_two_item_closed_form():
    # w wins of item 0 out of n, prior lambda: the mode solves w - n sigmoid(2t) = lambda t
    # with theta = (t, -t).
    w, n, lam = 7.0, 10.0, 0.5
    comps = Comparisons.from_outcomes([0] * 10, [1] * 10, ["a"] * 7 + ["b"] * 3, n_items=2)
    fit = bt_pairwise(comps, prior_precision=lam)
    t = optimize.brentq(lambda t: w - n * expit(2 * t) - lam * t, -10, 10, xtol=1e-14)
    np.testing.assert_allclose(fit.scores, [t, -t], atol=1e-10)


def test_warm_start_reaches_the_same_optimum_in_fewer_steps():
    rng = np.random.default_rng(8)
    comps = random_comparisons(rng)
    x = rng.normal(size=comps.n_items)
    cold = bias_aware_bt(comps, x)
    warm = bias_aware_bt(comps, x, init=cold.params)
    np.testing.assert_allclose(warm.params, cold.params, atol=1e-9)
    assert warm.n_iter < cold.n_iter


def test_large_key_space_uses_the_sorting_path():
    # 3000 items: the dense histogram would need 9e6 cells for 5000 verdicts.
    rng = np.random.default_rng(9)
    comps = random_comparisons(rng, n_items=3000, n=5000, n_judges=1)
    pairs = aggregate_pairs(comps)
    assert pairs.n.sum() == pytest.approx(comps.weight.sum())
    key = pairs.first * 3000 + pairs.second
    assert np.all(np.diff(key) > 0)
