"""The synthetic judge, simulated items and controlled answer pools (fairjudge.data)."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairjudge.data import (
    QUESTION_TEMPLATE,
    Outcome,
    SimulatedJudge,
    controlled_pool,
    pool_bank,
    pool_question,
    pool_topics,
    simulate_items,
    true_topk,
)
from fairjudge.data._statement_banks import ELABORATION_CLAUSES, TOPICS

# --------------------------------------------------------------------------- simulate_items


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_simulated_items_are_balanced_and_decorrelated(seed):
    items = simulate_items(30, rng=seed)
    assert list(items.columns) == ["quality", "verbose"]
    assert len(items) == 30
    assert items.index.tolist() == [f"item{i:02d}" for i in range(30)]
    assert set(items["verbose"].unique()) == {0.0, 1.0}
    assert int((items["verbose"] == 1).sum()) == 15
    corr = np.corrcoef(items["quality"], items["verbose"])[0, 1]
    assert abs(corr) < 0.12


def test_simulated_items_are_reproducible():
    a = simulate_items(30, rng=11)
    b = simulate_items(30, rng=11)
    pd.testing.assert_frame_equal(a, b)
    c = simulate_items(30, rng=12)
    assert not np.allclose(a["quality"].to_numpy(), c["quality"].to_numpy())


def test_simulated_quality_spread_matches_quality_sd():
    # theta ~ N(0, quality_sd^2): with 4000 items the sample sd is within a few percent.
    items = simulate_items(4000, quality_sd=2.0, max_abs_corr=0.5, rng=0)
    assert abs(items["quality"].std() - 2.0) < 0.1
    assert abs(items["quality"].mean()) < 0.15


@pytest.mark.parametrize("bad", [1, 0, 2.0, "30"])
def test_simulate_items_rejects_bad_n_items(bad):
    with pytest.raises(ValueError, match="`n_items` must be an integer >= 2"):
        simulate_items(bad, rng=0)


# --------------------------------------------------------------------------- SimulatedJudge


QUALITY = np.array([-1.2, -0.3, 0.0, 0.4, 1.1, 2.0])
COVARIATES = np.array([[0, 1.0], [1, 0.0], [1, 2.0], [0, 0.5], [1, 1.0], [0, 3.0]])
BIAS = np.array([1.5, -0.7])
POSITION = 0.4


def _closed_form(a: int, b: int) -> float:
    eta = (QUALITY[a] - QUALITY[b] + sum(BIAS[d] * (COVARIATES[a, d] - COVARIATES[b, d])
                                         for d in range(2)) + POSITION)
    return 1.0 / (1.0 + math.exp(-eta))


def _judge(rng=0):
    return SimulatedJudge(QUALITY, COVARIATES, bias=BIAS, position=POSITION, rng=rng)


def test_probability_first_matches_closed_form():
    judge = _judge()
    n = len(QUALITY)
    first, second = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    p = judge.probability_first(first.ravel(), second.ravel())
    expected = [_closed_form(a, b) for a, b in zip(first.ravel(), second.ravel())]
    np.testing.assert_allclose(p, expected, rtol=1e-12, atol=1e-15)
    # The position term favours the first-shown item even between equal items.
    assert judge.probability_first([2], [2])[0] == pytest.approx(1 / (1 + math.exp(-POSITION)))


def test_scalar_bias_with_one_covariate():
    x = np.array([0.0, 1.0, 1.0])
    judge = SimulatedJudge(np.zeros(3), x, bias=2.0, position=0.0)
    assert judge.probability_first([1], [0])[0] == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert judge.probability_first([0], [1])[0] == pytest.approx(1 / (1 + math.exp(2.0)))
    assert judge.probability_first([1], [2])[0] == pytest.approx(0.5)


def test_judge_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="`quality` and `covariates` must describe the same items"):
        SimulatedJudge(np.zeros(3), np.zeros(4))


def test_verdict_matrix_shape_values_and_diagonal():
    matrix = _judge(rng=5).verdict_matrix()
    n = len(QUALITY)
    assert matrix.shape == (n, n)
    assert np.isnan(np.diag(matrix)).all()
    off = matrix[~np.eye(n, dtype=bool)]
    assert np.isin(off, (0.0, 1.0)).all()


def test_verdict_matrix_frequencies_match_probabilities():
    """Chi-square over the 30 ordered pairs; under a correct simulator the statistic is
    chi2(30) and the test below fails with probability 1e-6."""
    n_draws = 4000
    judge = _judge(rng=2024)
    n = len(QUALITY)
    wins = np.zeros((n, n))
    for _ in range(n_draws):
        wins += np.nan_to_num(judge.verdict_matrix(), nan=0.0)
    off = ~np.eye(n, dtype=bool)
    p = np.array([[_closed_form(a, b) if a != b else np.nan for b in range(n)]
                  for a in range(n)])
    z = (wins[off] - n_draws * p[off]) / np.sqrt(n_draws * p[off] * (1 - p[off]))
    chi2_stat = float((z ** 2).sum())
    assert stats.chi2.sf(chi2_stat, df=off.sum()) > 1e-6, chi2_stat


def test_single_calls_match_probability():
    judge = _judge(rng=77)
    n_draws = 4000
    wins = sum(judge(5, 0) is Outcome.A for _ in range(n_draws))
    p = _closed_form(5, 0)
    z = (wins - n_draws * p) / math.sqrt(n_draws * p * (1 - p))
    assert abs(z) < 5.0, z  # two-sided tail probability ~ 6e-7


def test_same_seed_gives_same_matrix():
    np.testing.assert_array_equal(_judge(rng=3).verdict_matrix(), _judge(rng=3).verdict_matrix())
    assert not np.array_equal(_judge(rng=3).verdict_matrix(), _judge(rng=4).verdict_matrix(),
                              equal_nan=True)


# --------------------------------------------------------------------------- controlled pools


def _strip(statement: str) -> str:
    return statement.rstrip(".")


def _count_from(bank, text: str) -> int:
    return sum(_strip(s) in text for s in bank)


@pytest.mark.parametrize("topic", pool_topics())
def test_controlled_pool_structure(topic):
    c, n_items, n_full = 6, 30, 5
    pool = controlled_pool(topic, n_items=n_items, statements_per_item=c,
                           n_fully_correct=n_full, rng=17)
    bank = TOPICS[topic]
    assert len(pool) == n_items
    assert list(pool.columns) == ["text", "quality", "verbose", "length"]
    assert int((pool["quality"] == c).sum()) == n_full
    for item_id, row in pool.iterrows():
        text = row["text"]
        t = _count_from(bank["true"], text)
        f = _count_from(bank["false"], text)
        assert t + f == c, (item_id, t, f)
        assert row["quality"] == 2 * t - c, item_id
        clauses = sum(clause in text for clause in ELABORATION_CLAUSES)
        if row["verbose"] == 1:
            assert clauses == c, item_id
        else:
            assert row["verbose"] == 0
            assert clauses == 0, item_id
        assert row["length"] == len(text.split())
    assert pool["text"].is_unique
    assert int((pool["verbose"] == 1).sum()) == n_items // 2
    assert abs(np.corrcoef(pool["quality"], pool["verbose"])[0, 1]) < 0.12
    assert pool.attrs["question"] == f"Give an accurate and informative overview of {topic}."
    assert pool_question(topic) == QUESTION_TEMPLATE.format(topic=topic)


def test_controlled_pool_with_three_statements():
    topic = pool_topics()[0]
    pool = controlled_pool(topic, n_items=20, statements_per_item=3, n_fully_correct=0, rng=1)
    bank = TOPICS[topic]
    assert (pool["quality"] < 3).all()
    for _, row in pool.iterrows():
        t = _count_from(bank["true"], row["text"])
        assert row["quality"] == 2 * t - 3
        assert _count_from(bank["false"], row["text"]) == 3 - t


def test_elaborated_sentences_have_statement_then_clause():
    pool = controlled_pool("the Moon", n_items=10, n_fully_correct=2, rng=3)
    verbose_text = pool[pool["verbose"] == 1]["text"].iloc[0]
    bank = TOPICS["the Moon"]["true"] + TOPICS["the Moon"]["false"]
    for statement in bank:
        if _strip(statement) in verbose_text:
            # the statement is followed by ", <clause>." rather than by its own period
            assert _strip(statement) + ", " in verbose_text
            assert statement not in verbose_text


def test_controlled_pool_is_reproducible():
    a = controlled_pool("photosynthesis", rng=5)
    b = controlled_pool("photosynthesis", rng=5)
    pd.testing.assert_frame_equal(a, b)
    c = controlled_pool("photosynthesis", rng=6)
    assert not a["text"].equals(c["text"])


def test_pool_topics_lists_the_banks():
    assert set(pool_topics()) == set(TOPICS)
    assert "the Moon" in pool_topics()


@pytest.mark.parametrize(("kwargs", "argument"), [
    ({"topic": "Mars"}, "topic"),
    ({"statements_per_item": 0}, "statements_per_item"),
    ({"statements_per_item": 100}, "statements_per_item"),
    ({"statements_per_item": 2.5}, "statements_per_item"),
    ({"n_items": 1}, "n_items"),
    ({"n_items": 30.0}, "n_items"),
    ({"n_fully_correct": 31}, "n_fully_correct"),
    ({"n_fully_correct": -1}, "n_fully_correct"),
    ({"n_fully_correct": 2.5}, "n_fully_correct"),
], ids=lambda v: str(v))
def test_controlled_pool_rejects_bad_arguments(kwargs, argument):
    kwargs = {"topic": "the Moon", **kwargs}
    with pytest.raises(ValueError, match=f"`{argument}`"):
        controlled_pool(rng=0, **kwargs)


# --------------------------------------------------------------------------- paper defaults


def test_default_bank_is_the_papers_12_true_and_12_false():
    for topic in pool_topics():
        bank = pool_bank(topic)
        assert len(bank["true"]) == len(bank["false"]) == 12
        assert bank["true"] == TOPICS[topic]["true"][:12]
        extended = pool_bank(topic, "extended")
        assert extended["true"] == TOPICS[topic]["true"]
        assert len(extended["true"]) > 12 and len(extended["false"]) > 12


def test_default_pool_draws_only_from_the_paper_bank():
    topic = "the Moon"
    pool = controlled_pool(topic, n_items=200, max_abs_corr=0.2, rng=0)
    extra = TOPICS[topic]["true"][12:] + TOPICS[topic]["false"][12:]
    texts = " ".join(pool["text"])
    assert not any(_strip(s) in texts for s in extra)
    assert pool.attrs["bank"] == "paper" and pool.attrs["statements_per_item"] == 6
    wide = controlled_pool(topic, n_items=200, max_abs_corr=0.2, bank="extended", rng=0)
    assert any(_strip(s) in " ".join(wide["text"]) for s in extra)


def test_default_pool_does_not_force_fully_correct_items():
    """The number of quality-C items varies from pool to pool (it arises from the draw);
    the old default always gave exactly 5."""
    counts = {int((controlled_pool("photosynthesis", rng=seed)["quality"] == 6).sum())
              for seed in range(12)}
    assert len(counts) > 1 and counts != {5}


def test_default_quality_levels_are_uniform():
    """t ~ Uniform{0..C}: each of the 7 quality levels is equally likely. Chi-square over
    2100 items; under a correct draw the test fails with probability 1e-6."""
    quality = controlled_pool("the Moon", n_items=2100, bank="extended", max_abs_corr=0.2,
                              rng=9)["quality"]
    observed = quality.value_counts().reindex([-6.0, -4.0, -2.0, 0.0, 2.0, 4.0, 6.0],
                                              fill_value=0)
    assert stats.chisquare(observed.to_numpy()).pvalue > 1e-6


def test_n_fully_correct_is_kept_as_an_option():
    pool = controlled_pool("the Moon", n_items=30, n_fully_correct=5, rng=2)
    assert int((pool["quality"] == 6).sum()) == 5


def test_tiny_pools_are_redrawn_until_verbosity_decorrelates():
    for seed in range(20):
        pool = controlled_pool("the Moon", n_items=8, rng=seed)
        assert abs(np.corrcoef(pool["quality"], pool["verbose"])[0, 1]) < 0.12 or \
            pool["quality"].std() == 0


def test_controlled_pool_rejects_an_unknown_bank():
    with pytest.raises(ValueError, match=r"`bank` must be one of paper, extended; got 'big'"):
        controlled_pool("the Moon", bank="big", rng=0)


def test_statements_per_item_is_bounded_by_the_paper_bank():
    with pytest.raises(ValueError, match=r"`statements_per_item` must be between 1 and 12"):
        controlled_pool("the Moon", statements_per_item=13, rng=0)
    assert len(controlled_pool("the Moon", n_items=4, statements_per_item=13,
                               bank="extended", rng=0)) == 4


# --------------------------------------------------------------------------- ties in the truth


def test_true_topk_with_ties_at_the_boundary():
    truth = true_topk([6, 6, 6, 6, 4, 4, 4, 2], 5)
    assert truth.certain.tolist() == [True] * 4 + [False] * 4
    assert truth.tied.tolist() == [False] * 4 + [True] * 3 + [False]
    assert truth.open_slots == 1
    assert truth.recall([0, 1, 2, 3, 4]) == 1.0
    assert truth.recall([0, 1, 2, 3, 6]) == 1.0  # any tied item fills the open slot
    # Tied items beyond the open slot earn nothing: 2 certain + 1 slot of 3 tied picks.
    assert truth.recall([0, 1, 4, 5, 6]) == pytest.approx(3 / 5)


def test_topk_recall_does_not_credit_tied_items_beyond_the_open_slots():
    """Five items of quality 4 chosen while four items of quality 6 exist: the old rule
    (every item at or above the k-th quality counts) gave 1.0."""
    from fairjudge.active import topk_recall

    quality = [6, 6, 6, 6, 4, 4, 4, 4, 4, 4, 2]
    assert topk_recall([4, 5, 6, 7, 8], quality, 5) == pytest.approx(1 / 5)
    assert topk_recall([0, 1, 2, 3, 9], quality, 5) == 1.0
    # Without ties the rule is plain |selected ∩ T| / k.
    assert topk_recall([0, 2], [3.0, 2.0, 1.0, 0.0], 2) == 0.5


@pytest.mark.parametrize(("args", "message"), [
    (([1.0, 2.0], 3), "`k` must be between 1 and n_items=2; got 3"),
    (([1.0, np.nan], 1), "`quality` must be a non-empty 1-d array of finite numbers"),
])
def test_true_topk_rejects_bad_arguments(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        true_topk(*args)


def test_boundary_distance_is_rank_distance_without_ties_and_levels_with_them():
    """Fig. 4's distance: for distinct qualities, k - rank inside the top-k and rank - k - 1
    outside (ranks k and k + 1 at 0); with ties, in quality levels, no tie broken by index."""
    from fairjudge.data import boundary_distance

    quality = np.random.default_rng(3).normal(size=25)
    rank = np.empty(25, int)
    rank[np.argsort(-quality)] = np.arange(1, 26)
    expected = np.where(rank <= 5, 5 - rank, rank - 5 - 1)
    assert boundary_distance(quality, 5).tolist() == expected.tolist()
    # Levels 6 > 4 > 2 > 0 with k = 3: the 4s straddle the boundary (distance 0), 6 is one
    # level inside, 2 the first level outside (0) and 0 the next (1).
    assert boundary_distance([4, 6, 0, 4, 2, 4, 6], 3).tolist() == [0, 1, 1, 0, 0, 0, 1]
