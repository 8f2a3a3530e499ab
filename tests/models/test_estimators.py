"""Estimators: recovery, intervals, membership, baselines, gate, hierarchy, multi-judge."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fairjudge
from fairjudge._util._warnings import ComparisonGraphWarning, WeakIdentificationWarning
from fairjudge.data import Comparisons, SimulatedJudge, matrix_to_verdicts, simulate_items
from fairjudge.models import (anchor_agreement, bias_aware_bt, bt_pairwise,
                              hierarchical_bias_aware_bt, length_residualized_bt,
                              swap_majority_bt, swap_majority_comparisons, topk_membership,
                              trusted_anchor_gate)


@pytest.mark.slow
def test_interval_coverage_is_nominal_when_the_model_holds():
    """90% Laplace intervals for c and kappa cover the truth ~90% of the time (binomial test).

    Data follow the model exactly: theta from the prior N(0, 1/lambda), a balanced binary
    covariate independent of theta, and every ordered pair judged 4 times.
    """
    n_sets, n_items, hits_c, hits_kappa = 300, 20, 0, 0
    for seed in range(n_sets):
        rng = np.random.default_rng(9000 + seed)
        quality = rng.normal(0.0, 1.0, n_items)
        x = rng.permutation(np.repeat([0.0, 1.0], n_items // 2))
        judge = SimulatedJudge(quality, x, bias=2.0, position=0.5, rng=rng)
        matrices = [judge.verdict_matrix() for _ in range(4)]
        first, second = np.nonzero(np.isfinite(matrices[0]))
        comps = Comparisons(np.tile(first, 4), np.tile(second, 4),
                            np.concatenate([m[first, second] for m in matrices]),
                            np.ones(4 * first.size), np.zeros(4 * first.size, np.int64),
                            tuple(map(str, range(n_items))), ("judge",))
        fit = bias_aware_bt(comps, x, covariate_names=["verbose"])
        hits_c += fit.bias_estimate("verbose").interval(0.90).contains(2.0)
        hits_kappa += fit.bias_estimate("position").interval(0.90).contains(0.5)
    for hits in (hits_c, hits_kappa):
        assert stats.binomtest(int(hits), n_sets, 0.90).pvalue > 0.01, (hits, n_sets)


@pytest.mark.slow
def test_intervals_are_not_anticonservative_under_the_paper_simulator(simulated):
    """Under the paper's simulator (theta sd 1.25, draws with |corr(theta, x)| >= 0.12
    rejected) c is identified only through the prior's independence of theta and x, and the
    rejection step makes the intervals conservative; they must never under-cover."""
    n_sets, hits_c, hits_kappa = 240, 0, 0
    for seed in range(n_sets):
        items, comps = simulated(1000 + seed)
        fit = bias_aware_bt(comps, items[["verbose"]].to_numpy(), covariate_names=["verbose"])
        hits_c += fit.bias_estimate("verbose").interval(0.90).contains(2.0)
        hits_kappa += fit.bias_estimate("position").interval(0.90).contains(0.5)
    # kappa is identified by the likelihood: its coverage must be consistent with 90%.
    assert stats.binomtest(int(hits_kappa), n_sets, 0.90).pvalue > 0.01, hits_kappa
    # c is identified only through the prior; the rejection step makes its interval
    # conservative (about 98% here), never anti-conservative.
    assert stats.binomtest(int(hits_c), n_sets, 0.90, alternative="less").pvalue > 0.01


def exact_topk_membership(mean, cov, k):
    """P(i in top-k) for N = 3 from multivariate normal CDFs of score differences."""
    n = len(mean)
    p = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        # P(i beats all others) and P(i loses to all others) via differences theta_i - theta_j.
        a = np.zeros((n - 1, n))
        for r, j in enumerate(others):
            a[r, i], a[r, j] = 1.0, -1.0
        m, s = a @ mean, a @ cov @ a.T
        p_max = stats.multivariate_normal(mean=-m, cov=s).cdf(np.zeros(n - 1))
        p_min = stats.multivariate_normal(mean=m, cov=s).cdf(np.zeros(n - 1))
        p[i] = p_max if k == 1 else 1.0 - p_min  # k == 2: in top-2 unless the minimum
    return p


@pytest.mark.parametrize("k", [1, 2])
def test_membership_matches_exact_enumeration(k):
    mean = np.array([0.4, 0.0, -0.3])
    cov = np.array([[0.5, 0.1, 0.0], [0.1, 0.4, 0.05], [0.0, 0.05, 0.3]])
    exact = exact_topk_membership(mean, cov, k)
    mc = topk_membership(mean, cov, k, n_samples=200_000, rng=3)
    se = np.sqrt(exact * (1 - exact) / 200_000)
    assert np.all(np.abs(mc - exact) < 5 * se + 1e-6), (mc, exact)
    assert mc.sum() == pytest.approx(k)


def test_membership_is_seeded_and_validates_k():
    mean, cov = np.zeros(4), np.eye(4)
    np.testing.assert_array_equal(topk_membership(mean, cov, 2, rng=1),
                                  topk_membership(mean, cov, 2, rng=1))
    with pytest.raises(ValueError, match=r"`k` must be an integer between 1 and n_items=4; got 5"):
        topk_membership(mean, cov, 5)


def test_naive_model_ranks_presentation_and_bias_aware_recovers_quality(simulated):
    """Prop. 1: with a strong verbosity bias the naive scores track x; the bias-aware do not."""
    naive_corr, aware_corr = [], []
    for seed in range(10):
        items, comps = simulated(seed)
        x = items["verbose"].to_numpy()
        naive_corr.append(np.corrcoef(bt_pairwise(comps).scores, x)[0, 1])
        aware_corr.append(np.corrcoef(bias_aware_bt(comps, x).scores, x)[0, 1])
    assert np.mean(naive_corr) > 0.4
    assert abs(np.mean(aware_corr)) < 0.1


def test_unbiased_judge_gets_coefficients_near_zero(simulated):
    """By symmetry (x <-> 1 - x) the estimate of c is centred on 0 for an unbiased judge: a
    one-sample t test over 20 data sets (measured |t| <= 1.8 on four disjoint blocks of 20
    seeds; false-failure rate 1e-3 on any redraw)."""
    estimates = [bias_aware_bt(comps, items[["verbose"]].to_numpy()).bias[0].estimate
                 for items, comps in (simulated(s, bias=0.0, position=0.0) for s in range(20))]
    assert stats.ttest_1samp(estimates, 0.0).pvalue > 1e-3, estimates


def _two_judge_fit(seed, full_matrix_comparisons):
    """Two judges on 40 items: A rewards verbosity (c = 2) and the first slot (kappa = 0.8),
    B only the second slot (kappa = -0.8). Returns the per-judge fit, the pooled fit's
    position estimate and the truth."""
    rng = np.random.default_rng(seed)
    items = simulate_items(40, rng=rng)
    q, x = items["quality"].to_numpy(), items["verbose"].to_numpy()
    truth = (("A", 2.0, 0.8), ("B", 0.0, -0.8))
    parts = [full_matrix_comparisons(items.index, SimulatedJudge(q, x, bias=c, position=kappa,
                                                                 rng=rng).verdict_matrix())
             for _, c, kappa in truth]
    comps = Comparisons(
        np.concatenate([c.first for c in parts]), np.concatenate([c.second for c in parts]),
        np.concatenate([c.first_score for c in parts]),
        np.concatenate([c.weight for c in parts]),
        np.concatenate([np.full(len(c), j) for j, c in enumerate(parts)]), tuple(items.index),
        ("A", "B"))
    fit = bias_aware_bt(comps, x, covariate_names=["verbose"])
    pooled = Comparisons(comps.first, comps.second, comps.first_score, comps.weight,
                         np.zeros(len(comps), np.int64), comps.item_ids, ("pooled",))
    return fit, bias_aware_bt(pooled, x).bias_estimate("position").estimate, truth


def test_multi_judge_fit_recovers_each_judges_bias(full_matrix_comparisons):
    """Each judge's 99% intervals for c and kappa contain its truth (all four at once in 97%
    of 100 measured seeds, ~0.99^4 nominal): a one-sided binomial test over 12 seeds that the
    share is not below 0.96 (false-failure rate 3e-4 at the measured 0.97). Pooling both
    judges into one bias term lands between them (|kappa| <= 0.13 over 100 seeds): the
    per-judge terms matter."""
    covered, pooled = 0, []
    for seed in range(12):
        fit, pooled_kappa, truth = _two_judge_fit(seed, full_matrix_comparisons)
        covered += all(fit.bias_estimate("verbose", judge).interval(0.99).contains(c)
                       and fit.bias_estimate("position", judge).interval(0.99).contains(kappa)
                       for judge, c, kappa in truth)
        pooled.append(pooled_kappa)
    assert stats.binomtest(covered, 12, 0.96, alternative="less").pvalue > 1e-3, covered
    assert np.max(np.abs(pooled)) < 0.3, pooled


@pytest.mark.slow
def test_hierarchical_learns_more_shrinkage_for_an_unbiased_judge(simulated):
    # One seed suffices: over 40 measured seeds the biased judge's learnt prior precision was
    # always the smaller, by a factor exp(5.7) on average and never less than exp(3.0).
    items, biased = simulated(21, bias=2.0, position=0.5)
    _, unbiased = simulated(21, bias=0.0, position=0.0)
    x = items[["verbose"]].to_numpy()
    fit_b = hierarchical_bias_aware_bt(biased, x)
    fit_u = hierarchical_bias_aware_bt(unbiased, x)
    assert fit_b.bias_prior_precision[0] < fit_u.bias_prior_precision[0]
    # At the fixed point tau^2 equals the mean of b^2 + Var(b) over the judge's parameters.
    tau2 = 1.0 / fit_b.bias_prior_precision[0]
    b = fit_b.params[30:]
    var = np.diag(fit_b.param_covariance)[30:]
    assert tau2 == pytest.approx(np.mean(b * b + var), rel=1e-3)


def test_swap_majority_aggregation_rule():
    # Pair (0,1): both orders prefer 0 -> 0 wins. Pair (1,2): each order prefers the first
    # shown -> tie. Pair (0,2): a single verdict -> kept.
    comps = Comparisons.from_outcomes([0, 1, 1, 2, 2], [1, 0, 2, 1, 0], ["a", "b", "a", "a", "b"],
                                      n_items=3)
    agg = swap_majority_comparisons(comps)
    result = {(int(a), int(b)): s for a, b, s in zip(agg.first, agg.second, agg.first_score)}
    assert result == {(0, 1): 1.0, (1, 2): 0.5, (0, 2): 1.0}
    assert swap_majority_bt(comps).model == "swap-majority"


def test_residualized_scores_are_orthogonal_to_the_covariates(simulated):
    items, comps = simulated(2)
    x = items[["verbose"]].to_numpy()
    fit = length_residualized_bt(comps, x, covariate_names=["verbose"])
    design = np.hstack([np.ones((30, 1)), x])
    np.testing.assert_allclose(design.T @ fit.scores, 0.0, atol=1e-9)
    naive = bt_pairwise(comps)
    slope = np.polyfit(x[:, 0], naive.scores, 1)[0]
    assert fit.bias_estimate("verbose").estimate == pytest.approx(slope)


def anchors_from_truth(items, rng, n=60):
    q = items["quality"].to_numpy()
    first = rng.integers(0, len(q), n)
    second = (first + rng.integers(1, len(q), n)) % len(q)
    return Comparisons.from_outcomes(first, second,
                                     ["a" if q[a] > q[b] else "b" for a, b in zip(first, second)],
                                     item_ids=tuple(items.index))


def test_gate_enables_correction_for_a_spurious_covariate(simulated):
    """Under a strong verbosity bias the bias-aware fit agrees with 60 true anchors strictly
    better than the naive fit in 199 of 200 measured seeds (mean gain 0.15, sd 0.06): at
    least 18 of 20 seeds must show it (binomial test against 1/2, p < 1e-3; false-failure
    rate 1e-4)."""
    enabled = 0
    for seed in range(20):
        items, comps = simulated(seed)
        x = items[["verbose"]].to_numpy()
        gate = trusted_anchor_gate(bt_pairwise(comps), bias_aware_bt(comps, x),
                                   anchors_from_truth(items, np.random.default_rng(1000 + seed)))
        assert gate.n_anchors == 60
        assert gate.chosen.model == ("bias-aware" if gate.enabled else "naive")
        enabled += gate.enabled and gate.bias_aware_agreement > gate.naive_agreement
    assert stats.binomtest(enabled, 20, 0.5, alternative="greater").pvalue < 1e-3, enabled


def test_gate_keeps_the_naive_fit_when_the_covariate_is_legitimate(full_matrix_comparisons):
    """Length tracks quality and the judge is unbiased: "correcting" for it removes signal.

    Measured over 200 seeds: the gate kept the naive fit every time, and the naive fit's
    agreement with 60 true anchors had mean 0.93, sd 0.035, minimum 0.80 (the old single
    seed 3 landed exactly on that minimum, asserting ``0.8 > 0.8``). Over 20 seeds the gate
    must keep the naive fit in at least 18 (binomial test against 1/2, p < 1e-3), and the
    naive agreement must be significantly above 0.8 (one-sided t test, p < 1e-3; measured
    t ~ 16).
    """
    kept, agreement = 0, []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        q = rng.normal(0, 1.25, 30)
        length = q + rng.normal(0, 0.3, 30)
        judge = SimulatedJudge(q, length, bias=0.0, position=0.0, rng=rng)
        items = simulate_items(30, rng=0)
        items["quality"] = q
        comps = full_matrix_comparisons(items.index, judge.verdict_matrix())
        naive = bt_pairwise(comps)
        aware = bias_aware_bt(comps, length, bias_prior_precision=0.01)
        gate = trusted_anchor_gate(naive, aware, anchors_from_truth(items, rng))
        assert gate.chosen is (aware if gate.enabled else naive)
        kept += not gate.enabled
        agreement.append(anchor_agreement(naive, anchors_from_truth(items, rng))[0])
    assert stats.binomtest(kept, 20, 0.5, alternative="greater").pvalue < 1e-3, kept
    assert stats.ttest_1samp(agreement, 0.8, alternative="greater").pvalue < 1e-3, agreement


def test_disconnected_graph_warns_and_names_components():
    comps = Comparisons.from_outcomes([0, 1, 2, 3], [1, 0, 3, 2], ["a", "a", "a", "b"],
                                      item_ids=("w", "x", "y", "z"))
    with pytest.warns(ComparisonGraphWarning, match=r"2 disconnected components.*'w', 'x'.*'y', 'z'"):
        bt_pairwise(comps)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bt_pairwise(comps, check_graph=False)


@pytest.mark.parametrize("kwargs, message", [
    ({"prior_precision": 0.0}, r"`prior_precision` must be positive"),
    ({"bias_prior_precision": -1.0}, r"`bias_prior_precision` must be positive"),
    ({"covariates": np.ones(4)}, r"covariate `x0` is constant across items"),
    ({"covariates": np.ones((3, 1))}, r"`covariates` must have shape \(n_items=4, d\)"),
    ({"covariates": [0, 1, np.nan, 2]}, r"`covariates` must be finite"),
])
def test_argument_errors_name_the_argument(kwargs, message):
    comps = Comparisons.from_outcomes([0, 1, 2], [1, 2, 3], ["a", "b", "a"], n_items=4)
    with pytest.raises(ValueError, match=message):
        bias_aware_bt(comps, **kwargs)


def test_empty_comparisons_are_rejected():
    empty = Comparisons.from_outcomes([], [], [], n_items=3)
    with pytest.raises(ValueError, match="`comparisons` is empty"):
        bt_pairwise(empty)


def test_variance_inflation_is_the_conditional_variance_ratio(simulated):
    """Reference: invert the full Laplace precision and read the theta block (the covariance
    of theta with the bias terms held fixed), a different route from the Schur complement
    of the covariance used by the method."""
    items, comps = simulated(3)
    fit = bias_aware_bt(comps, items["verbose"].to_numpy())
    n = fit.n_items
    known = np.linalg.inv(np.linalg.inv(fit.param_covariance)[:n, :n])
    centre = np.eye(n) - 1.0 / n
    expected = np.diag(centre @ fit.covariance @ centre) / np.diag(centre @ known @ centre)
    np.testing.assert_allclose(fit.variance_inflation(), expected, rtol=1e-8)
    assert np.all(fit.variance_inflation() >= 1.0 - 1e-9)  # knowing more never widens
    np.testing.assert_array_equal(bt_pairwise(comps).variance_inflation(), np.ones(n))


def test_variance_inflation_separates_the_simulator_from_a_covariate_that_tracks_quality(
        simulated):
    """On the paper's simulator (30 items, a balanced covariate) the verdicts separate bias
    from quality: inflation about 1.3 over ten seeds. With five items whose covariate nearly
    follows quality (as PRD's five models and their mean lengths), they cannot."""
    medians = []
    for seed in range(10):
        items, comps = simulated(seed)
        medians.append(np.median(bias_aware_bt(comps, items["verbose"].to_numpy())
                                 .variance_inflation()))
    assert max(medians) < 2.0
    rng = np.random.default_rng(0)
    quality = np.array([1.0, 0.5, 0.0, -0.5, -1.0])
    length = 200 + 80 * quality + rng.normal(0, 5, 5)
    judge = SimulatedJudge(quality, (length[:, None] - 200) / 80, bias=0.5, rng=rng)
    ids = [f"m{i}" for i in range(5)]
    verdicts = pd.concat([matrix_to_verdicts(judge.verdict_matrix(), ids) for _ in range(40)],
                         ignore_index=True)
    items = pd.DataFrame({"id": ids, "length": length})
    with pytest.warns(WeakIdentificationWarning, match="weakly identified.*--anchors"):
        ranking = fairjudge.rank(verdicts, items, k=2, n_samples=100)
    assert ranking.diagnostics["score_variance_inflation"] > 2 * max(medians)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WeakIdentificationWarning)
        naive = fairjudge.rank(verdicts, items, k=2, model="naive", n_samples=100)
    assert naive.diagnostics["score_variance_inflation"] == 1.0
