"""90% percentile-bootstrap intervals cover the truth about 90% of the time.

Coverage is judged with a binomial test against 0.9 (not a fixed count), on data sets
simulated with fixed seeds so the test is deterministic.
"""

import numpy as np
from scipy import stats

from fairjudge.stats import bootstrap_mean
from fairjudge.stats._agreement import agreement, cohens_kappa

N_SETS = 300
N = 100
LEVEL = 0.9
N_BOOT = 1000


def _coverage_p_value(covered: int) -> float:
    return stats.binomtest(covered, N_SETS, LEVEL).pvalue


def test_bootstrap_mean_covers_a_bernoulli_mean():
    rng = np.random.default_rng(20240601)
    covered = 0
    for _ in range(N_SETS):
        values = (rng.random(N) < 0.7).astype(float)
        estimate = bootstrap_mean(values, level=LEVEL, n_boot=N_BOOT, rng=rng)
        covered += estimate.ci_low <= 0.7 <= estimate.ci_high
    assert _coverage_p_value(covered) > 0.01, covered


def test_agreement_and_kappa_cover_their_population_values():
    # Gold a/b/tie with MT-Bench-like shares; the judge copies gold with probability 0.7,
    # otherwise guesses uniformly, and gives no verdict 5% of the time.
    labels = np.array(["a", "b", "tie"])
    gold_share = np.array([0.4, 0.35, 0.25])
    p_missing = 0.05
    p_correct = (1 - p_missing) * (0.7 + 0.3 / 3)
    predicted_share = (1 - p_missing) * (0.7 * gold_share + 0.3 / 3)
    p_chance = float(predicted_share @ gold_share)
    true_kappa = (p_correct - p_chance) / (1 - p_chance)

    rng = np.random.default_rng(101)
    covered_agreement = covered_kappa = 0
    for _ in range(N_SETS):
        gold = rng.choice(3, N, p=gold_share)
        guess = np.where(rng.random(N) < 0.7, gold, rng.integers(0, 3, N))
        predicted = labels[guess].astype(object)
        predicted[rng.random(N) < p_missing] = None
        kappa = cohens_kappa(predicted, labels[gold], level=LEVEL, n_boot=N_BOOT, rng=rng)
        covered_kappa += kappa.ci_low <= true_kappa <= kappa.ci_high
        accuracy = agreement(predicted, labels[gold], level=LEVEL, n_boot=N_BOOT, rng=rng)
        covered_agreement += accuracy.ci_low <= p_correct <= accuracy.ci_high
    assert _coverage_p_value(covered_agreement) > 0.01, covered_agreement
    assert _coverage_p_value(covered_kappa) > 0.01, covered_kappa
