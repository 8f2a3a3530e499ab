"""The assumption check's explained share against a joint fit computed independently.

The check fits one small logistic regression per judge on verdicts grouped by their
covariate difference; the reference below fits the joint model (every judge's terms at
once) on the raw verdict rows with scipy's optimiser, so grouping, splitting by judge and
aggregation are all checked against the definition.
"""

import numpy as np
import pytest
from scipy import optimize

from fairjudge.data._encode import Comparisons
from fairjudge.models._assumption import check_independence_assumption
from fairjudge.models._bt import POSITION, bias_aware_bt, standardise_covariates


def world(seed, n=40, m=6000, judges=3, ties=True):
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.integers(50, 70, n), rng.normal(size=n)]).astype(float)
    first = rng.integers(0, n, m)
    second = (first + rng.integers(1, n, m)) % n
    judge = rng.integers(0, judges, m)
    theta = rng.normal(size=n) + 0.4 * (x[:, 0] - x[:, 0].mean()) / x[:, 0].std()
    eta = theta[first] - theta[second] + 0.2 * judge
    score = (rng.random(m) < 1 / (1 + np.exp(-eta))).astype(float)
    if ties:
        score[rng.random(m) < 0.1] = 0.5
    comparisons = Comparisons(first, second, score, rng.uniform(0.5, 2.0, m), judge,
                              tuple(f"i{i}" for i in range(n)),
                              tuple(f"j{k}" for k in range(judges)))
    return comparisons, x


def joint_best(design, comparisons):
    """Maximum of the ridge (1e-6) logistic log-likelihood of the raw rows, all judges'
    columns at once (BFGS to a tight tolerance)."""
    y, w = comparisons.first_score, comparisons.weight

    def negative(beta):
        eta = design @ beta
        value = np.sum(w * (y * eta - np.logaddexp(0.0, eta))) - 0.5e-6 * beta @ beta
        grad = design.T @ (w * (y - 1 / (1 + np.exp(-eta)))) - 1e-6 * beta
        return -value, -grad

    beta = optimize.minimize(negative, np.zeros(design.shape[1]), jac=True, method="BFGS",
                             options={"gtol": 1e-9, "maxiter": 10000}).x
    eta = design @ beta
    return float(np.sum(w * (y * eta - np.logaddexp(0.0, eta))))


@pytest.mark.parametrize("position", [True, False])
def test_explained_share_equals_the_joint_fit_on_raw_verdicts(position):
    comparisons, x = world(3)
    names = ["len", "style"]
    corrected = bias_aware_bt(comparisons, x, covariate_names=names, position=position)
    uncorrected = bias_aware_bt(comparisons, None, position=position)
    x_std = standardise_covariates(x, names, comparisons.n_items)[0]
    check = check_independence_assumption(comparisons, x_std, names, uncorrected, corrected)

    m, judges = len(comparisons.first), comparisons.n_judges
    one_hot = np.zeros((m, judges))
    one_hot[np.arange(m), comparisons.judge] = 1.0
    dx = x_std[comparisons.first] - x_std[comparisons.second]
    per_judge = np.hstack([dx * one_hot[:, [j]] for j in range(judges)])
    y, w = comparisons.first_score, comparisons.weight
    if position:
        base = joint_best(one_hot, comparisons)
        covariates = joint_best(np.hstack([one_hot, per_judge]), comparisons)
        kappa = np.array([uncorrected.bias_estimate(POSITION, j).estimate
                          for j in comparisons.judges])
    else:
        base = float(np.sum(-w * np.log(2.0)))
        covariates = joint_best(per_judge, comparisons)
        kappa = np.zeros(judges)
    eta = (uncorrected.scores[comparisons.first] - uncorrected.scores[comparisons.second]
           + kappa[comparisons.judge])
    quality = float(np.sum(w * (y * eta - np.logaddexp(0.0, eta))))
    reference = (covariates - base) / (quality - base)
    assert 0.05 < reference < 1.0  # the planted length effect explains part of quality
    assert check.explained_share == pytest.approx(reference, rel=1e-6)
