"""The LUCB and look-ahead acquisition rules: LUCB's pair is the weakest member against
the strongest challenger, the look-ahead score is the one-step expected entropy drop
written out pair by pair, and both run through the active loop."""

import numpy as np
import pytest
from scipy import special

from fairjudge.active import run_active_topk
from fairjudge.active._experiment import MatrixOracle
from fairjudge.active._scores import binary_entropy, pair_scores
from fairjudge.data import SimulatedJudge, simulate_items


def posterior(seed, n=8):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n))
    cov = a @ a.T / n * 0.3 + np.eye(n) * 0.05
    return rng.normal(0, 1, n), cov


def test_lucb_picks_the_weakest_member_against_the_strongest_challenger():
    scores, cov = posterior(0)
    k = 3
    membership = np.zeros(8)
    top = np.argsort(-scores)[:k]
    membership[top] = 1.0
    out = pair_scores("lucb", scores, cov, membership)
    c = cov
    sd = np.sqrt(np.diag(c) - 2 * c.mean(axis=1) + c.mean())
    weakest = top[np.argmin((scores - sd)[top])]
    outside = np.setdiff1d(np.arange(8), top)
    strongest = outside[np.argmax((scores + sd)[outside])]
    i, j = np.unravel_index(np.argmax(out), out.shape)
    assert {i, j} == {weakest, strongest}
    np.testing.assert_array_equal(out, out.T)
    assert np.isneginf(np.diag(out)).all() and np.isfinite(out[~np.eye(8, dtype=bool)]).all()


def test_lookahead_is_the_expected_entropy_drop_of_the_pair():
    scores, cov = posterior(1)
    k = 3
    membership = np.zeros(8)
    membership[np.argsort(-scores)[:k]] = 1.0
    out = pair_scores("lookahead", scores, cov, membership)
    ordered = np.sort(scores)[::-1]
    c0 = (ordered[k - 1] + ordered[k]) / 2
    sd = np.sqrt(np.diag(cov) - 2 * cov.mean(axis=1) + cov.mean())
    for i, j in [(0, 1), (2, 5), (7, 3)]:
        u = np.zeros(8)
        u[i], u[j] = 1, -1
        p = special.expit(scores[i] - scores[j])
        w = p * (1 - p)
        su = cov @ u
        denominator = 1 + w * u @ su
        before = sum(binary_entropy(special.ndtr((scores[m] - c0) / sd[m])) for m in (i, j))
        after = 0.0
        for y, prob in ((1, p), (0, 1 - p)):
            for m in (i, j):
                mean = scores[m] + su[m] * (y - p) / denominator
                var = sd[m] ** 2 - w * su[m] ** 2 / denominator
                after += prob * binary_entropy(special.ndtr((mean - c0) / np.sqrt(var)))
        assert out[i, j] == pytest.approx(before - after, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("rule", ["lucb", "lookahead"])
def test_the_rules_run_the_loop_and_favour_the_boundary(rule):
    rng = np.random.default_rng(4)
    items = simulate_items(20, rng=rng)
    quality = items["quality"].to_numpy()
    matrix = SimulatedJudge(quality, items["verbose"].to_numpy(), bias=2.0, position=0.5,
                            rng=rng).verdict_matrix()
    result = run_active_topk(MatrixOracle(matrix), 20, k=4, budget=80,
                             covariates=items[["verbose"]].to_numpy(),
                             covariate_names=["verbose"], rule=rule, true_quality=quality,
                             rng=0)
    counts = np.bincount(result.shown.ravel(), minlength=20)
    order = np.argsort(-quality)
    near = counts[order[2:6]].mean()   # true ranks 3-6, around the boundary at 4
    far = counts[order[-6:]].mean()    # the six worst items
    assert near > far
