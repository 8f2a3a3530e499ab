"""Prediction-powered Bradley–Terry scores."""

import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from fairjudge.ppi import ppi_bradley_terry

K = 6


def data(seed, n=150, big_n=2000, judge_noise=0.3, judge_bias=0.0):
    """Humans follow Bradley–Terry on theta; the judge predicts from a noisy, shifted copy."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, K)
    judge = theta + judge_noise * rng.normal(size=K) + judge_bias * np.arange(K) / K

    def draw(m):
        a = rng.integers(0, K, m)
        return np.c_[a, (a + rng.integers(1, K, m)) % K]

    lab, unl = draw(n), draw(big_n)
    y = (rng.random(n) < expit(theta[lab[:, 0]] - theta[lab[:, 1]])).astype(float)
    f = expit(judge[lab[:, 0]] - judge[lab[:, 1]])
    f_unl = expit(judge[unl[:, 0]] - judge[unl[:, 1]])
    return theta, lab, y, f, unl, f_unl


@pytest.mark.slow
def test_matches_ppi_py_logistic_regression_with_a_reference_item():
    ppi_py = pytest.importorskip("ppi_py", reason="the reference implementation "
                                                  "(pip install ppi-python) is not installed")
    _, lab, y, f, unl, f_unl = data(0, judge_noise=0.2)
    x_lab = np.zeros((len(lab), K))
    x_lab[np.arange(len(lab)), lab[:, 0]], x_lab[np.arange(len(lab)), lab[:, 1]] = 1, -1
    x_unl = np.zeros((len(unl), K))
    x_unl[np.arange(len(unl)), unl[:, 0]], x_unl[np.arange(len(unl)), unl[:, 1]] = 1, -1
    contrast = np.c_[-np.ones(K - 1), np.eye(K - 1)]  # theta_i - theta_0: item 0 at 0
    for power in (None, 0.0, 0.4, 1.0):
        ours = ppi_bradley_terry(lab, y, f, unl, f_unl, n_items=K, power=power,
                                 prior_precision=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimate = ppi_py.ppi_logistic_pointestimate(x_lab[:, 1:], y, f, x_unl[:, 1:],
                                                         f_unl, lam=power)
            low, high = ppi_py.ppi_logistic_ci(x_lab[:, 1:], y, f, x_unl[:, 1:], f_unl,
                                               alpha=0.05, lam=power)
        np.testing.assert_allclose(contrast @ ours.scores, estimate, atol=1e-7)
        se = np.sqrt(np.diag(contrast @ ours.covariance @ contrast.T))
        np.testing.assert_allclose(se, (high - low) / 2 / stats.norm.ppf(0.975), rtol=1e-7)


def test_power_zero_is_the_labels_alone_and_one_with_perfect_predictions_the_judge():
    _, lab, y, f, unl, f_unl = data(1)
    alone = ppi_bradley_terry(lab, y, f, unl, f_unl, n_items=K, power=0)
    other = ppi_bradley_terry(lab, y, 1 - f, unl, 1 - f_unl, n_items=K, power=0)
    np.testing.assert_allclose(alone.scores, other.scores, atol=1e-9)
    np.testing.assert_allclose(alone.covariance, other.covariance, atol=1e-9)
    # predictions equal to the labels: the labelled correction vanishes
    exact = ppi_bradley_terry(lab, y, y, unl, f_unl, n_items=K, power=1, prior_precision=0)
    judge_only = ppi_bradley_terry(lab[:2], np.array([0.5, 0.5]), np.array([0.5, 0.5]), unl,
                                   f_unl, n_items=K, power=1, prior_precision=0)
    np.testing.assert_allclose(exact.scores, judge_only.scores, atol=1e-8)
    assert abs(alone.scores.sum()) < 1e-9  # the origin: mean zero


@pytest.mark.slow
def test_intervals_cover_the_humans_scores_despite_a_biased_judge():
    """200 data sets with a judge whose scores drift by up to 1.7 logits: the 95% interval
    of theta_5 - theta_0 covers the truth at a rate not significantly below 0.95 (one-sided
    binomial, alpha 0.01), while the judge alone would be far off."""
    covered, judge_bias = 0, []
    trials = 200
    for seed in range(trials):
        theta, lab, y, f, unl, f_unl = data(seed, n=200, judge_bias=2.0)
        fit = ppi_bradley_terry(lab, y, f, unl, f_unl, n_items=K)
        c = np.zeros(K)
        c[5], c[0] = 1, -1
        se = np.sqrt(c @ fit.covariance @ c)
        covered += abs(c @ fit.scores - c @ theta) <= 1.959964 * se
        judge_bias.append(c @ ppi_bradley_terry(lab, f, f, unl, f_unl, n_items=K,
                                                power=1).scores - c @ theta)
    assert stats.binomtest(covered, trials, 0.95, alternative="less").pvalue > 0.01
    assert np.mean(judge_bias) > 1.0


def test_bad_input_is_named():
    _, lab, y, f, unl, f_unl = data(2)
    with pytest.raises(ValueError, match="`labels` must hold 150 numbers in"):
        ppi_bradley_terry(lab, y * 2, f, unl, f_unl, n_items=K)
    with pytest.raises(ValueError, match="must pair two different items among 6"):
        ppi_bradley_terry(lab, y, f, np.c_[unl[:, 0], unl[:, 0]], f_unl, n_items=K)
    with pytest.raises(ValueError, match="`power` must be in"):
        ppi_bradley_terry(lab, y, f, unl, f_unl, n_items=K, power=2)


def test_rank_with_human_labels_and_ppi(tmp_path):
    """`rank --anchors --ppi`: the judge's fit predicts every compared pair, the labels
    (several annotators of a pair averaged) power the humans' scores."""
    import pandas as pd

    import fairjudge
    from fairjudge._cli import main
    from fairjudge.data import SimulatedJudge, matrix_to_verdicts

    rng = np.random.default_rng(4)
    quality = rng.normal(0, 1.25, 12)
    length = rng.normal(0, 1, 12)
    ids = [f"m{i}" for i in range(12)]
    judge = SimulatedJudge(quality, length, bias=1.0, position=0.3, rng=rng)
    verdicts = matrix_to_verdicts(judge.verdict_matrix(), ids)
    humans = SimulatedJudge(quality, length, rng=rng).verdict_matrix()
    labelled = verdicts.sample(30, random_state=1)
    anchors = pd.concat([labelled, labelled.iloc[:5]]).assign(judge="human")
    anchors["winner"] = [{1.0: "a", 0.0: "b"}[humans[ids.index(a), ids.index(b)]]
                         for a, b in zip(anchors["item_a"], anchors["item_b"])]
    items = pd.DataFrame({"id": ids, "length": length})
    result = fairjudge.rank(verdicts, items, anchors=anchors, ppi=True, k=3)
    pairs = {tuple(sorted(p)) for p in zip(labelled["item_a"], labelled["item_b"])}
    assert result.fit.model == "ppi" and result.diagnostics["ppi"]["n_labelled"] == len(pairs)
    assert result.diagnostics["ppi"]["n_unlabelled"] == 66 - len(pairs)
    assert {b for b in result.bias["judge"]} == {"judge"}  # the judge's bias terms
    assert abs(result.scores.mean()) < 1e-9
    verdicts.to_csv(tmp_path / "v.csv", index=False)
    anchors.to_csv(tmp_path / "a.csv", index=False)
    items.to_csv(tmp_path / "i.csv", index=False)
    assert main(["rank", str(tmp_path / "v.csv"), "--items", str(tmp_path / "i.csv"),
                 "--anchors", str(tmp_path / "a.csv"), "--ppi"]) == 0
    with pytest.raises(ValueError, match="ppi needs human labels"):
        fairjudge.rank(verdicts, items, ppi=True)
    with pytest.raises(ValueError, match="drop --bootstrap"):
        fairjudge.rank(verdicts, items, anchors=anchors, ppi=True, bootstrap=5)
