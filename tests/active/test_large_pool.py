"""ActiveTopK on pools too large for N x N arrays: pairs scored within the boundary set."""

import numpy as np
import pytest

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.active import ActiveTopK, pair_scores
from fairjudge.active import _ranker
from fairjudge.active._scores import binary_entropy
from fairjudge.models import _bt


@pytest.fixture
def large(monkeypatch):
    """Pools above 100 items count as large, fits above 100 items as sparse."""
    monkeypatch.setattr(_ranker, "BOUNDARY_MIN_ITEMS", 100)
    monkeypatch.setattr(_bt, "SPARSE_MIN_ITEMS", 100)


def seeded(n_items=300, n_verdicts=3000, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_items)
    a = rng.integers(0, n_items, n_verdicts)
    b = (a + rng.integers(1, n_items, n_verdicts)) % n_items
    won = rng.random(n_verdicts) < 1 / (1 + np.exp(-(theta[a] - theta[b])))
    return theta, list(zip(a.tolist(), b.tolist(), np.where(won, "a", "b")))


def test_large_pool_proposes_fresh_pairs_among_the_items_in_doubt(large):
    theta, verdicts = seeded()
    ranker = ActiveTopK(300, k=10, rng=1, n_samples=400, boundary_items=40)
    assert ranker.large_pool
    ranker.update(verdicts)
    posterior = ranker.posterior()
    assert posterior.fit.solver == "sparse"
    asked = {(min(a, b), max(a, b)) for a, b, _ in verdicts}
    proposals = ranker.propose(12)
    pairs = [p.pair for p in proposals]
    assert len(set(pairs)) == 12 and not set(pairs) & asked
    entropy = binary_entropy(posterior.membership)
    cutoff = np.sort(entropy)[::-1][39]
    assert all(entropy[i] >= cutoff - 1e-12 for pair in pairs for i in pair)
    assert ranker._cov.shape == (40, 40)


def test_a_boundary_set_of_every_item_scores_pairs_as_the_full_rule_does(monkeypatch):
    monkeypatch.setattr(_ranker, "BOUNDARY_MIN_ITEMS", 50)
    theta, verdicts = seeded(n_items=60, n_verdicts=400, seed=3)
    ranker = ActiveTopK(60, k=5, rng=2, n_samples=400, boundary_items=60)
    ranker.update(verdicts)
    posterior = ranker.posterior()
    fit = posterior.fit
    proposal = ranker.propose(1)[0]
    expected = pair_scores("topk", fit.scores, fit.covariance, posterior.membership)
    for a, b, _ in verdicts:
        expected[min(a, b), max(a, b)] = -np.inf
    expected[np.tril_indices(60)] = -np.inf
    assert proposal.score == pytest.approx(expected.max(), rel=1e-9)
    assert expected[proposal.pair] == pytest.approx(expected.max(), rel=1e-9)


def test_random_rule_on_a_large_pool_never_repeats_a_pair(large):
    _, verdicts = seeded(n_items=150, n_verdicts=200, seed=4)
    ranker = ActiveTopK(150, k=3, rule="random", rng=0, n_samples=200)
    ranker.update(verdicts)
    asked = {(min(a, b), max(a, b)) for a, b, _ in verdicts}
    pairs = [p.pair for p in ranker.propose(50)]
    assert len(set(pairs)) == 50 and not set(pairs) & asked


def test_large_pool_refuses_what_needs_n_by_n_arrays(large):
    with pytest.raises(FairjudgeInputError, match="round-robin"):
        ActiveTopK(300, k=5, rule="round-robin")
    with pytest.raises(FairjudgeInputError, match="askable"):
        ActiveTopK(300, k=5, askable=np.ones((300, 300), dtype=bool))
    with pytest.raises(FairjudgeInputError, match="boundary_items"):
        ActiveTopK(300, k=5, boundary_items=1)


def test_the_replay_driver_ranks_a_large_pool(large):
    from fairjudge.active import run_active_topk

    theta = np.random.default_rng(5).normal(size=150)
    result = run_active_topk(lambda i, j: "a" if theta[i] > theta[j] else "b", 150, k=3,
                             budget=40, rng=0, n_samples=100)
    pairs = {(min(a, b), max(a, b)) for a, b in result.shown}
    assert len(result.shown) == 40 and len(pairs) == 40
    assert result.fit.solver == "sparse"


def test_a_spent_boundary_set_grows_instead_of_stopping(large):
    ranker = ActiveTopK(150, k=3, rng=1, n_samples=100, refit_every=10**6, boundary_items=2)
    pairs = []
    for _ in range(6):   # a set of 2 items has one pair; then 4 items (6 pairs), ...
        (proposal,) = ranker.propose(1)
        pairs.append(proposal.pair)
        ranker.update([(proposal, "a")])
    assert len(set(pairs)) == 6 and not ranker.exhausted


def test_two_judges_on_a_large_pool_fit_the_sparse_reliability_model(large):
    """The reliability model (the default with several judges) fits a large pool with the
    sparse solver, and the ranker still proposes pairs among the items in doubt."""
    from fairjudge.active import JudgeSpec

    rng = np.random.default_rng(8)
    theta = rng.normal(size=300)
    ranker = ActiveTopK(300, k=10, judges=[JudgeSpec("cheap", 0.1), JudgeSpec("strong", 1.0)],
                        model="reliability", rng=1, n_samples=300, boundary_items=40)
    a = rng.integers(0, 300, 4000)
    b = (a + rng.integers(1, 300, 4000)) % 300
    cheap = rng.random(4000) < 0.7
    tau = np.where(cheap, 0.5, 2.0)
    won = rng.random(4000) < 1 / (1 + np.exp(-tau * (theta[a] - theta[b])))
    ranker.update(list(zip(a.tolist(), b.tolist(), np.where(won, "a", "b"),
                           np.where(cheap, "cheap", "strong"))))
    fit = ranker.posterior().fit
    assert fit.solver == "sparse" and fit.model == "reliability"
    assert fit.judge_reliability()["cheap"] < 0.5 * fit.judge_reliability()["strong"]
    # Each judge asks each pair once: no proposal repeats a pair its judge has asked.
    asked = {(min(i, j), max(i, j), "cheap" if c else "strong")
             for i, j, c in zip(a.tolist(), b.tolist(), cheap)}
    proposals = ranker.propose(8)
    pairs = {(*sorted(p.pair), p.judge) for p in proposals}
    assert len(pairs) == 8 and not pairs & asked
