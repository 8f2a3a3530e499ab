"""The matrix-free (sparse) solver against the dense one where both run."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fairjudge
from fairjudge._api import leaderboard
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data import Comparisons
from fairjudge.models import bias_aware_bt, bt_pairwise, hierarchical_bias_aware_bt
from fairjudge.models import _bt as bt_module
from fairjudge.models import _sparse
from fairjudge.models._sparse import LaplacianSystem


def simulated(n_items=400, n_verdicts=20000, n_judges=2, seed=0, per_verdict=False):
    """Random pairs, a length-like item covariate, a per-judge position bias."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_items)
    x = rng.normal(size=n_items)
    a = rng.integers(0, n_items, n_verdicts)
    b = (a + rng.integers(1, n_items, n_verdicts)) % n_items
    judge = rng.integers(0, n_judges, n_verdicts)
    kappa = np.linspace(-0.4, 0.4, n_judges)
    logit = theta[a] - theta[b] + 0.5 * (x[a] - x[b]) + kappa[judge]
    diff, names = None, ()
    if per_verdict:
        diff = rng.normal(size=n_verdicts)
        logit = logit + 0.3 * diff
        names = ("style",)
    draw = rng.random(n_verdicts)
    outcome = np.where(draw < 0.05, 0.5, (draw < 1 / (1 + np.exp(-logit))).astype(float))
    comparisons = Comparisons(a, b, outcome, np.ones(n_verdicts), judge,
                              tuple(f"i{i}" for i in range(n_items)),
                              tuple(f"j{j}" for j in range(n_judges)), diff, names)
    return comparisons, x


@pytest.mark.parametrize("per_verdict", [False, True])
def test_sparse_fit_matches_the_dense_fit(per_verdict):
    comparisons, x = simulated(per_verdict=per_verdict)
    dense = bias_aware_bt(comparisons, x, covariate_names=["len"], solver="dense")
    sparse = bias_aware_bt(comparisons, x, covariate_names=["len"], solver="sparse")
    assert dense.solver == "dense" and sparse.solver == "sparse"
    assert sparse.covariance is None
    np.testing.assert_allclose(sparse.scores, dense.scores, atol=1e-6, rtol=0)
    for d, s in zip(dense.bias, sparse.bias):
        assert (d.name, d.judge) == (s.name, s.judge)
        assert s.estimate == pytest.approx(d.estimate, abs=1e-6)
        assert s.std_error == pytest.approx(d.std_error, rel=1e-6)
    np.testing.assert_allclose(sparse.bias_covariance(), dense.bias_covariance(), rtol=1e-6,
                               atol=1e-12)
    # Contrast variances are exact up to the CG tolerance.
    i, j = np.array([0, 3, 17, 250]), np.array([1, 99, 5, 399])
    np.testing.assert_allclose(sparse.contrast_variance(i, j), dense.contrast_variance(i, j),
                               rtol=1e-6)
    # Marginal variances are estimated: within 2% (the goal), and within a few of their
    # own stated standard errors.
    exact = dense.marginal_variances()
    estimate = sparse.marginal_variances()
    assert np.max(np.abs(estimate / exact - 1)) < 0.02
    stated = sparse.posterior.marginal_variance_errors()
    assert np.all(np.abs(estimate - exact) <= 6 * stated + 1e-3 * exact)
    np.testing.assert_allclose(sparse.centred_variances(), dense.centred_variances(), rtol=0.02)
    np.testing.assert_allclose(sparse.variance_inflation(), dense.variance_inflation(),
                               rtol=0.02)


def test_sparse_naive_and_hierarchical_fits_match_dense():
    comparisons, x = simulated(n_items=300, n_verdicts=12000, seed=3)
    for fit in (bt_pairwise, lambda c, **kw: hierarchical_bias_aware_bt(c, x, **kw)):
        dense, sparse = fit(comparisons, solver="dense"), fit(comparisons, solver="sparse")
        np.testing.assert_allclose(sparse.scores, dense.scores, atol=1e-6, rtol=0)
        np.testing.assert_allclose(sparse.bias_prior_precision, dense.bias_prior_precision,
                                   rtol=1e-5)


def test_disconnected_graph_levels_come_from_the_prior_on_both_solvers():
    comparisons, _ = simulated(n_items=200, n_verdicts=6000, n_judges=1, seed=5)
    keep = (comparisons.first < 100) == (comparisons.second < 100)   # two islands
    split = Comparisons(comparisons.first[keep], comparisons.second[keep],
                        comparisons.first_score[keep], comparisons.weight[keep],
                        comparisons.judge[keep], comparisons.item_ids, comparisons.judges)
    with pytest.warns(fairjudge.ComparisonGraphWarning):
        dense = bias_aware_bt(split, solver="dense")
    with pytest.warns(fairjudge.ComparisonGraphWarning):
        sparse = bias_aware_bt(split, solver="sparse")
    np.testing.assert_allclose(sparse.scores, dense.scores, atol=1e-6, rtol=0)
    np.testing.assert_allclose(sparse.contrast_variance([0], [150]),
                               dense.contrast_variance([0], [150]), rtol=1e-6)


def test_laplacian_solve_against_a_dense_solve():
    rng = np.random.default_rng(1)
    n = 60
    lo, hi = np.triu_indices(n, 1)
    keep = rng.random(lo.size) < 0.2
    lo, hi = lo[keep], hi[keep]
    link = rng.uniform(0.1, 2.0, lo.size)
    system = LaplacianSystem(n, lo, hi, prior_precision=0.7)
    system.set_weights(link)
    dense = np.zeros((n, n))
    dense[lo, hi] = dense[hi, lo] = -link
    dense[np.arange(n), np.arange(n)] = -dense.sum(axis=1) + 0.7
    rhs = rng.normal(size=(n, 3)) + 5.0            # a nonzero mean: the level is exact too
    solution, report = system.solve(rhs, rtol=1e-12)
    assert report.not_converged == 0
    np.testing.assert_allclose(solution, np.linalg.solve(dense, rhs), rtol=1e-8, atol=1e-10)
    vector, _ = system.solve(rhs[:, 0], rtol=1e-12)
    np.testing.assert_allclose(vector, solution[:, 0], rtol=1e-10)


def random_system(n, per_item, prior_precision, seed):
    """A LaplacianSystem on random pairs (odd cycles included) with random edge weights,
    and the same matrix built densely."""
    rng = np.random.default_rng(seed)
    m = n * per_item // 2
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    keys = np.unique(np.minimum(a, b).astype(np.int64) * n + np.maximum(a, b))
    lo, hi = keys // n, keys % n
    link = rng.uniform(0.05, 0.4, lo.size)
    system = LaplacianSystem(n, lo, hi, prior_precision=prior_precision)
    system.set_weights(link)
    dense = np.zeros((n, n))
    dense[lo, hi] = dense[hi, lo] = -link
    dense[np.arange(n), np.arange(n)] = -dense.sum(axis=1) + prior_precision
    return system, dense, link


def test_the_exact_log_determinant_is_numpys():
    system, dense, _ = random_system(300, 6, 0.7, seed=2)
    sign, expected = np.linalg.slogdet(dense)
    assert sign == 1
    assert system.log_determinant() == pytest.approx(expected, rel=1e-12)


def test_the_lanczos_log_determinant_and_its_changes_against_the_exact():
    """Stochastic Lanczos quadrature at 2500 items: the value within 0.5% (its Hutchinson
    error, 0.15% here), and the change when one edge weight in three grows by 10% -- what the
    reliability model's marginal likelihood differentiates -- within 0.5% of the exact
    change (the fixed probes' errors cancel)."""
    system, dense, link = random_system(2500, 10, 1.0, seed=3)
    exact = np.linalg.slogdet(dense)[1]
    estimate = system.log_determinant(exact_items=0)
    assert estimate == pytest.approx(exact, rel=5e-3)
    assert system.log_determinant(exact_items=0) == estimate   # fixed probes
    grown = link * np.where(np.arange(link.size) % 3 == 0, 1.1, 1.0)
    system.set_weights(grown)
    moved, _, _ = random_system(2500, 10, 1.0, seed=3)
    moved.set_weights(grown)
    change = system.log_determinant(exact_items=0) - estimate
    exact_change = moved.log_determinant(exact_items=10 ** 9) - exact
    assert change == pytest.approx(exact_change, rel=5e-3)


def test_sparse_draws_carry_the_posterior_marginal_variances():
    comparisons, x = simulated(n_items=200, n_verdicts=8000, seed=7)
    sparse = bias_aware_bt(comparisons, x, covariate_names=["len"], solver="sparse")
    draws = np.concatenate(list(sparse.posterior_samples(20000, rng=0)))
    variance = sparse.marginal_variances()
    # The sample variance of 20000 normal draws has relative sd sqrt(2 / 19999) = 1%.
    np.testing.assert_allclose(draws.var(axis=0), variance, rtol=0.06)
    np.testing.assert_allclose(draws.mean(axis=0), sparse.scores,
                               atol=6 * np.sqrt(variance.max() / 20000))


def test_sparse_membership_matches_exact_membership_within_monte_carlo_error():
    comparisons, x = simulated(n_items=300, n_verdicts=6000, seed=11)
    dense = bias_aware_bt(comparisons, x, covariate_names=["len"], solver="dense")
    sparse = bias_aware_bt(comparisons, x, covariate_names=["len"], solver="sparse")
    for k in (1, 10, 50):
        exact = dense.topk_membership(k, n_samples=8000, rng=1)
        again = dense.topk_membership(k, n_samples=8000, rng=3)
        approx = sparse.topk_membership(k, n_samples=8000, rng=2)
        assert approx.sum() == pytest.approx(k)
        # The approximation (residual correlations dropped) is within the Monte-Carlo noise
        # of 8000 draws: its largest error is of the size of two exact runs' largest
        # difference (each entry's sd <= 0.5 / sqrt(8000) = 0.0056).
        noise = np.max(np.abs(again - exact))
        assert np.max(np.abs(approx - exact)) <= 1.5 * noise + 0.01


def test_rank_picks_the_solver_by_size_and_reports_it(monkeypatch):
    comparisons, x = simulated(n_items=150, n_verdicts=6000, seed=2)
    ids = np.array(comparisons.item_ids)
    verdicts = pd.DataFrame({
        "item_a": ids[comparisons.first], "item_b": ids[comparisons.second],
        "winner": np.select([comparisons.first_score == 1, comparisons.first_score == 0],
                            ["a", "b"], "tie"),
        "judge": np.array(comparisons.judges)[comparisons.judge]})
    items = pd.DataFrame({"id": ids, "length": x})
    dense = fairjudge.rank(verdicts, items, k=5, covariates=["length"], n_samples=400)
    forced = fairjudge.rank(verdicts, items, k=5, covariates=["length"], n_samples=400,
                            solver="sparse")
    assert forced.diagnostics["solver"] == "sparse"
    monkeypatch.setattr(bt_module, "SPARSE_MIN_ITEMS", 100)
    sparse = fairjudge.rank(verdicts, items, k=5, covariates=["length"], n_samples=400)
    assert dense.diagnostics["solver"] == "dense"
    assert sparse.diagnostics["solver"] == "sparse"
    assert 0 < sparse.diagnostics["marginal_variance_max_rel_error"] <= 0.004
    assert _sparse.DEFAULT_PROBES <= sparse.diagnostics["marginal_variance_probes"] \
        <= _sparse.MAX_PROBES
    a, b = dense.to_frame(), sparse.to_frame().loc[dense.to_frame().index]
    np.testing.assert_allclose(b["score"], a["score"], atol=1e-6)
    np.testing.assert_allclose(b["std_error_vs_mean"], a["std_error_vs_mean"], rtol=0.02)
    d = sparse.difference("i0", "i1")
    e = dense.difference("i0", "i1")
    assert (d.ci_low, d.ci_high) == pytest.approx((e.ci_low, e.ci_high), rel=1e-6)
    assert b["rank_low"].between(1, 150).all() and b["rank_high"].between(1, 150).all()
    assert (b["rank_low"] <= b["rank_high"]).all()
    pd.testing.assert_frame_equal(forced.to_frame(), sparse.to_frame())


def test_rank_command_takes_the_solver(tmp_path, capsys):
    import json

    from fairjudge._cli import main

    comparisons, _ = simulated(n_items=60, n_verdicts=2000, n_judges=1, seed=8)
    ids = np.array(comparisons.item_ids)
    path = tmp_path / "v.csv"
    pd.DataFrame({"item_a": ids[comparisons.first], "item_b": ids[comparisons.second],
                  "winner": np.where(comparisons.first_score == 0, "b", "a")}).to_csv(path)
    capsys.readouterr()
    assert main(["rank", str(path), "--solver", "sparse", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["diagnostics"]["solver"] == "sparse"


def chain(n_items=120, per_link=15, seed=0):
    """Items compared only with their neighbours: the worst graph for the probe estimate."""
    rng = np.random.default_rng(seed)
    a = np.repeat(np.arange(n_items - 1), per_link)
    theta = np.cumsum(rng.normal(0, 0.2, n_items))
    outcome = (rng.random(a.size) < 1 / (1 + np.exp(-(theta[a] - theta[a + 1])))).astype(float)
    return Comparisons(a, a + 1, outcome, np.ones(a.size), np.zeros(a.size, np.int64),
                       tuple(f"i{i}" for i in range(n_items)), ("j",))


def test_imprecise_probe_estimates_are_solved_exactly_and_otherwise_warned():
    comparisons = chain()
    dense = bias_aware_bt(comparisons, solver="dense")
    sparse = bias_aware_bt(comparisons, solver="sparse")
    # Every entry misses the probe target on a chain, and 120 < MAX_EXACT: all exact.
    np.testing.assert_allclose(sparse.marginal_variances(), dense.marginal_variances(),
                               rtol=1e-6)
    assert np.all(sparse.posterior.marginal_variance_errors() == 0)
    # Too many to solve one by one, and few items: one dense factor gives them all.
    many = bias_aware_bt(comparisons, solver="sparse")
    many.posterior.max_exact = 0
    np.testing.assert_allclose(many.marginal_variances(), dense.marginal_variances(),
                               rtol=1e-8)
    np.testing.assert_allclose(many.centred_variances(), dense.centred_variances(),
                               rtol=1e-8)
    assert np.all(many.posterior.marginal_variance_errors() == 0)
    for draws_first in (False, True):
        capped = bias_aware_bt(comparisons, solver="sparse")
        capped.posterior.max_exact = 0
        capped.posterior.dense_items = 0
        # (the caps are read when the variances are first computed; they are cached after)
        # The draws behind membership carry the estimate too, and say so.
        with pytest.warns(fairjudge.ApproximationWarning, match="solver='dense'"):
            if draws_first:
                capped.topk_membership(3, n_samples=20)
            else:
                capped.marginal_variances()


def test_a_weak_prior_does_not_hide_imprecise_centred_variances():
    # Under prior precision 1e-6 the level 1 / (N lambda) is 2500, against about 0.2 for the
    # rest of a variance: precision is asked of the rest, which centring leaves.
    comparisons, x = simulated(n_items=400, n_verdicts=4000, seed=12)
    dense = bias_aware_bt(comparisons, x, prior_precision=1e-6, solver="dense")
    sparse = bias_aware_bt(comparisons, x, prior_precision=1e-6, solver="sparse")
    np.testing.assert_allclose(sparse.centred_variances(), dense.centred_variances(),
                               rtol=0.02)


def one_judge(a, b, theta, rng):
    """Verdicts of one judge on the pairs (a, b), drawn from Bradley-Terry with ``theta``."""
    outcome = (rng.random(a.size) < 1 / (1 + np.exp(-(theta[a] - theta[b])))).astype(float)
    return Comparisons(a, b, outcome, np.ones(a.size), np.zeros(a.size, np.int64),
                       tuple(f"i{i}" for i in range(theta.size)), ("j",))


def heavy_pair_on_top(n_items=400, per_item=20, seed=1):
    """Random pairs, and the two leading items compared 400 times with each other (an A/B
    test): their scores are strongly correlated a posteriori."""
    rng = np.random.default_rng(seed)
    m = n_items * per_item // 2
    a, b = rng.integers(2, n_items, m), rng.integers(2, n_items, m)
    keep = a != b
    a = np.r_[a[keep], np.zeros(100, int), np.ones(100, int), np.zeros(400, int)]
    b = np.r_[b[keep], rng.integers(2, n_items, 200), np.ones(400, int)]
    theta = 0.3 * rng.normal(size=n_items)
    theta[:2] = 3.0, 2.9
    return one_judge(a, b, theta, rng)


def test_membership_draws_keep_the_correlations_of_the_items_in_doubt():
    comparisons = heavy_pair_on_top()
    dense = bias_aware_bt(comparisons, solver="dense")
    sparse = bias_aware_bt(comparisons, solver="sparse")
    # The pair's contrast is far tighter than either score: independent draws of the two
    # would move item 1 above item 0 far too often (0.18 against 0.006 at 3000 items).
    assert dense.contrast_variance([0], [1])[0] < 0.3 * dense.marginal_variances()[0]
    for k in (1, 2):
        exact = dense.topk_membership(k, n_samples=6000, rng=1)
        drawn = sparse.topk_membership(k, n_samples=6000, rng=2)
        # Each entry's Monte-Carlo sd is at most 0.5 / sqrt(6000) = 0.0065.
        np.testing.assert_allclose(drawn[:2], exact[:2], atol=0.035)
    assert {0, 1} <= set(sparse.in_doubt(1).tolist())
    # The leaderboard's membership comes from the same draws.
    board = leaderboard(sparse, 1, level=0.95, n_samples=6000, rng=4)
    exact = dense.topk_membership(1, n_samples=6000, rng=1)
    np.testing.assert_allclose(board.loc[["i0", "i1"], "membership"], exact[:2], atol=0.035)


def heavily_compared_core(n_items=400, n_core=12, per_pair=100, seed=1):
    """Arena-like: a core of leading models compared 100 times per pair, the other items
    about 10 times each, 30% of that against the core."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, n_items)
    theta[:n_core] = 2.5 + 0.15 * rng.normal(size=n_core)
    lo, hi = np.triu_indices(n_core, 1)
    m = (n_items - n_core) * 10
    tail = rng.integers(n_core, n_items, m)
    other = np.where(rng.random(m) < 0.3, rng.integers(0, n_core, m),
                     rng.integers(n_core, n_items, m))
    keep = tail != other
    return one_judge(np.r_[np.repeat(lo, per_pair), tail[keep]],
                     np.r_[np.repeat(hi, per_pair), other[keep]], theta, rng)


def test_a_heavily_compared_core_is_drawn_jointly_though_each_pair_couples_weakly():
    comparisons = heavily_compared_core()
    dense = bt_pairwise(comparisons, solver="dense")
    sparse = bt_pairwise(comparisons, solver="sparse")
    system = sparse.posterior.system
    # Each pair's first-order correlation stays below the threshold; the core's scores
    # correlate through all its pairs (the exact block finds it).
    coupling = system.link / np.sqrt(system.diagonal[system.lo] * system.diagonal[system.hi])
    assert coupling.max() < _sparse.JOINT_COUPLING
    for k in (3, 6):
        assert sparse.joint_items(k) is not None
        exact = dense.topk_membership(k, n_samples=6000, rng=1)
        # Drawn on their own, the core's members were off by 0.12.
        np.testing.assert_allclose(sparse.topk_membership(k, n_samples=6000, rng=2), exact,
                                   atol=0.035)


def test_items_in_doubt_bracket_the_boundary():
    comparisons, x = simulated(n_items=300, n_verdicts=6000, seed=11)
    fit = bias_aware_bt(comparisons, x, solver="sparse")
    variance = fit.centred_variances()
    order = np.argsort(-fit.scores)
    z = stats.norm.isf(1e-3)
    for k in (1, 10, 150):
        doubt = np.zeros(fit.n_items, dtype=bool)
        doubt[fit.in_doubt(k)] = True
        assert doubt[order[k - 1]] and doubt[order[k]]
        boundary = 0.5 * (fit.scores[order[k - 1]] + fit.scores[order[k]])
        spread = np.sqrt(variance + 0.5 * (variance[order[k - 1]] + variance[order[k]]))
        distance = np.abs(fit.scores - boundary) / spread
        np.testing.assert_array_equal(doubt, distance < z)
        assert 2 <= doubt.sum() < fit.n_items
    assert fit.in_doubt(300).size == 0
    with pytest.raises(FairjudgeInputError, match="`tail`"):
        fit.in_doubt(5, tail=0.7)


def test_a_weakly_coupled_graph_draws_every_item_on_its_own():
    # Random pairs: no two items are compared often enough with each other to correlate.
    comparisons, x = simulated(n_items=300, n_verdicts=6000, seed=11)
    fit = bias_aware_bt(comparisons, x, solver="sparse")
    assert fit.in_doubt(10).size >= 2 and fit.joint_items(10) is None
    assert fit.joint_items(None) is None


def test_naive_chain_fits_under_a_weak_prior_match_the_laplacian_spectrum():
    # No bias terms, a chain, weak priors: the probe scale must stay positive, and the dense
    # factor must not lose T to the level 1 / (N lambda) in rounding.
    for n, per_link, prior in ((300, 15, 0.1), (300, 15, 1e-4), (150, 30, 1e-9)):
        sparse = bt_pairwise(chain(n_items=n, per_link=per_link, seed=3),
                             prior_precision=prior, solver="sparse")
        system = sparse.posterior.system
        laplacian = np.zeros((n, n))
        laplacian[system.lo, system.hi] = laplacian[system.hi, system.lo] = -system.link
        laplacian[np.diag_indices(n)] = system.diagonal - prior
        values, vectors = np.linalg.eigh(laplacian)
        # T = sum over the nonzero Laplacian eigenvalues of v v^T / (mu + lambda).
        reference = (vectors[:, 1:] ** 2 / (values[1:] + prior)).sum(axis=1)
        diagonal = sparse.posterior._centred_laplacian_diagonal()[0]
        np.testing.assert_allclose(diagonal, reference, rtol=1e-7)
        membership = sparse.topk_membership(5, n_samples=200)
        assert membership.sum() == pytest.approx(5)


def test_joint_draws_from_the_dense_factor_on_a_chain_and_across_components():
    # A chain is badly mixed: the draws of the items in doubt come from one dense factor.
    comparisons = chain(n_items=200, per_link=6, seed=4)
    dense = bt_pairwise(comparisons, solver="dense")
    sparse = bt_pairwise(comparisons, solver="sparse")
    joint = sparse.joint_items(5)
    assert joint is not None and joint.size >= 2
    block = sparse.posterior.joint_block(joint)
    exact = dense.covariance[np.ix_(joint, joint)]
    # T's block is the covariance less the level 1 / (N lambda) the prior alone fixes.
    np.testing.assert_allclose(block, exact - 1.0 / 200, atol=1e-8 * np.abs(exact).max())
    np.testing.assert_allclose(sparse.topk_membership(5, n_samples=6000, rng=1),
                               dense.topk_membership(5, n_samples=6000, rng=2), atol=0.035)
    # Two chains that never meet: T has no entry across them, and each level is its own.
    first, second = chain(n_items=60, per_link=6, seed=5), chain(n_items=40, per_link=6, seed=6)
    both = Comparisons(np.r_[first.first, second.first + 60],
                       np.r_[first.second, second.second + 60],
                       np.r_[first.first_score, second.first_score],
                       np.ones(len(first) + len(second)),
                       np.zeros(len(first) + len(second), np.int64),
                       tuple(f"i{i}" for i in range(100)), ("j",))
    dense = bt_pairwise(both, solver="dense", check_graph=False)
    sparse = bt_pairwise(both, solver="sparse", check_graph=False)
    sparse.marginal_variances()
    sparse.posterior._cache["badly_mixed"] = True  # (the dense route, whatever the probes)
    index = np.array([0, 30, 59, 60, 80, 99])
    size = np.where(index < 60, 60, 40)
    level = np.where(index[:, None] < 60, index[None, :] < 60, index[None, :] >= 60)
    np.testing.assert_allclose(sparse.posterior.joint_block(index),
                               dense.covariance[np.ix_(index, index)] - level / size[:, None],
                               atol=1e-8)



def test_unconverged_conjugate_gradients_warn():
    comparisons = chain(n_items=200, per_link=2)
    sparse = bias_aware_bt(comparisons, solver="sparse")
    rhs = np.zeros(200)
    rhs[0], rhs[-1] = 1.0, -1.0
    _, report = sparse.posterior.system.solve(rhs, max_iter=2)
    assert report.not_converged == 1
    with pytest.warns(fairjudge.ConvergenceWarning, match="poorly connected"):
        _sparse.warn_unconverged(report, "a test")


def test_contrast_indices_are_checked_on_both_solvers():
    comparisons, x = simulated(n_items=100, n_verdicts=3000, seed=4)
    for solver in ("dense", "sparse"):
        fit = bias_aware_bt(comparisons, solver=solver)
        for i, j in (([0, 1], [2]), ([-1], [3]), ([0], [100]), ([0.5], [1])):
            with pytest.raises(FairjudgeInputError, match="contrast indices"):
                fit.contrast_variance(i, j)


def test_full_covariance_consumers_name_the_sparse_solver():
    comparisons, x = simulated(n_items=100, n_verdicts=3000, seed=4)
    sparse = bias_aware_bt(comparisons, x, covariate_names=["len"], solver="sparse")
    with pytest.raises(FairjudgeInputError, match="sparse solver"):
        sparse.dense_covariance("the test")
    with pytest.raises(FairjudgeInputError, match="`solver` must be one of"):
        bias_aware_bt(comparisons, solver="cholmod")


@pytest.mark.parametrize("draws", [1, 37, 400, 1500])
def test_rank_intervals_and_membership_from_one_set_of_draws(draws):
    from fairjudge.models._leaderboard import posterior_rank_summaries

    samples = np.random.default_rng(draws).normal(size=(draws, 40))
    blocks = [samples[: draws // 2], samples[draws // 2:]] if draws > 1 else [samples]
    membership, low, high = posterior_rank_summaries(blocks, 5, level=0.9)
    ranks = (-samples).argsort(axis=1).argsort(axis=1) + 1
    np.testing.assert_array_equal(low, np.quantile(ranks, 0.05, axis=0, method="inverted_cdf"))
    np.testing.assert_array_equal(high, np.quantile(ranks, 0.95, axis=0, method="inverted_cdf"))
    np.testing.assert_allclose(membership, (ranks <= 5).mean(axis=0))


def test_products_split_over_cores_equal_the_single_product(monkeypatch):
    rng = np.random.default_rng(2)
    n = 300
    lo = rng.integers(0, n - 1, 2000)
    hi = lo + 1 + rng.integers(0, n - 1 - lo)
    keys = np.unique(lo * n + hi)
    system = LaplacianSystem(n, keys // n, keys % n, prior_precision=1.0)
    system.set_weights(rng.uniform(0.1, 1.0, keys.size))
    x = rng.normal(size=(n, 13))
    single = system.adjacency_product(x)
    monkeypatch.setattr(_sparse, "PARALLEL_PRODUCT", 1)
    monkeypatch.setattr(_sparse.os, "cpu_count", lambda: 3)
    np.testing.assert_allclose(system.adjacency_product(x), single, rtol=1e-13, atol=1e-13)
