"""Multi-fidelity acquisition: choosing the judge of each comparison by value per unit cost."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import fairjudge
from fairjudge._cli import main
from fairjudge.active import (
    ActiveTopK,
    JudgeSpec,
    MatrixOracle,
    binary_entropy,
    pair_scores,
    run_active_topk,
)
from fairjudge.data import SimulatedJudge, simulate_items
from fairjudge.data._simulator import matrix_to_verdicts

PANEL = [JudgeSpec("cheap", 0.1), JudgeSpec("strong", 1.0)]


def test_a_judges_reliability_scales_the_information_term():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=6)
    a = rng.normal(size=(6, 6))
    cov = a @ a.T / 6 + np.eye(6)
    membership = rng.uniform(size=6)
    tau = 0.4
    d = scores[:, None] - scores[None, :]
    p = expit(tau * d)
    variance = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    h = binary_entropy(membership)
    expected = tau ** 2 * p * (1 - p) * variance * (h[:, None] + h[None, :])
    np.fill_diagonal(expected, -np.inf)
    np.testing.assert_allclose(pair_scores("topk", scores, cov, membership, tau), expected)
    np.testing.assert_allclose(pair_scores("topk", scores, cov, membership, 1.0),
                               pair_scores("topk", scores, cov, membership))


def fitted_ranker(rng=0, **kwargs):
    ranker = ActiveTopK(8, k=3, judges=PANEL, model="reliability", n_samples=400, rng=rng,
                        **kwargs)
    gen = np.random.default_rng(1)
    verdicts = []
    for _ in range(40):
        a, b = gen.choice(8, 2, replace=False)
        judge = "cheap" if gen.random() < 0.7 else "strong"
        noisy = judge == "cheap" and gen.random() < 0.3
        verdicts.append((a, b, "a" if (a < b) != noisy else "b", judge))
    ranker.update(verdicts)
    ranker.posterior()
    return ranker


def test_the_judge_and_pair_of_largest_value_per_cost_are_proposed():
    ranker = fitted_ranker()
    fit = ranker.current_fit
    tau = fit.judge_reliability()
    membership = ranker._membership
    value = {}
    for spec in PANEL:
        s = pair_scores("topk", fit.scores, fit.covariance, membership, tau[spec.name])
        value[spec.name] = np.where(ranker._candidates()[PANEL.index(spec)], s, -np.inf) \
            / spec.cost
    best = max(v.max() for v in value.values())
    (proposal,) = ranker.propose(1)
    assert proposal.value == pytest.approx(best)
    assert value[proposal.judge][proposal.pair] == pytest.approx(best)
    assert proposal.cost == dict(cheap=0.1, strong=1.0)[proposal.judge]
    assert proposal.score == pytest.approx(best * proposal.cost)


def test_each_judge_asks_each_pair_once_and_money_limits_the_judges():
    ranker = ActiveTopK(5, k=2, judges=PANEL, model="reliability", n_samples=200, rng=0)
    ranker.update([(0, 1, "a", "cheap")])
    # the cheap judge has asked (0, 1); the strong one may still ask it
    assert not ranker._candidates()[0][0, 1] and ranker._candidates()[1][0, 1]
    assert ranker.propose(1, money=0.05) == []
    batch = ranker.propose(20, money=0.5)
    assert len(batch) == 5 and {p.judge for p in batch} == {"cheap"}
    assert len({(p.judge, p.pair) for p in batch}) == 5
    # a verdict of a judge the ranker does not ask enters the fit but marks no pair as asked
    ranker.update([(2, 3, "a", "human")])
    assert ranker._candidates()[1][2, 3]


def test_a_settled_posterior_buys_nothing_dear_and_a_stated_reliability_counts():
    ranker = fitted_ranker()
    ranker._membership = np.where(ranker._membership > 0.5, 1.0, 0.0)  # every item settled
    assert {p.judge for p in ranker.propose(10)} == {"cheap"}
    # Before its first verdict, a judge is valued at its stated reliability.
    guess = ActiveTopK(6, k=2, judges=[JudgeSpec("cheap", 0.1),
                                       JudgeSpec("strong", 1.0, reliability=10.0)], rng=0)
    assert guess._reliability("strong") == 10.0 and guess._reliability("cheap") == 1.0
    assert guess.propose(1)[0].judge == "strong"  # 100x the information for 10x the price
    with pytest.raises(ValueError, match="reliability of judge 'x' must be a positive"):
        JudgeSpec("x", reliability=0)


def test_rules_that_cannot_weigh_judges_are_refused():
    ranker = ActiveTopK(5, k=2, judges=PANEL, rule="lucb", rng=0)
    with pytest.raises(ValueError, match="cannot choose among judges"):
        ranker.propose(1)
    assert ranker.propose(1, judge="strong")[0].judge == "strong"
    free = ActiveTopK(5, k=2, judges=[JudgeSpec("a", 0.0), JudgeSpec("b", 1.0)], rng=0)
    with pytest.raises(ValueError, match="costs nothing"):
        free.propose(1)


def two_judge_pool(seed=3, n=16):
    rng = np.random.default_rng(seed)
    items = simulate_items(n, rng=rng)
    quality, verbose = items["quality"].to_numpy(), items["verbose"].to_numpy()
    cheap = SimulatedJudge(quality, verbose, bias=2.0, position=0.5, reliability=0.5,
                           rng=rng).verdict_matrix()
    strong = SimulatedJudge(quality, verbose, rng=rng).verdict_matrix()
    return items, cheap, strong


def test_a_money_budget_is_never_overspent_and_checkpoints_are_money():
    items, cheap, strong = two_judge_pool()
    quality, verbose = items["quality"].to_numpy(), items["verbose"].to_numpy()
    result = run_active_topk({"cheap": MatrixOracle(cheap), "strong": MatrixOracle(strong)},
                             16, k=4, judges=PANEL, max_cost=15.05, model="reliability",
                             covariates=verbose[:, None], true_quality=quality,
                             checkpoints=[2.0, 5.0], n_samples=300, rng=0)
    history = result.history
    assert history["cost"].sum() <= 15.05 + 1e-9
    # the cheap judge covers the 120 pairs (12.0) before the money runs short
    assert (history["judge"] == "cheap").sum() == 120
    assert (history["judge"] == "strong").sum() == 3
    assert sorted(result.recall_at) == [2.0, 5.0, 15.05]
    assert "money is spent" in result.notes[0]
    # every verdict is the recorded one of the judge that answered
    for row in history.itertuples():
        a, b = int(row.item_a), int(row.item_b)
        matrix = cheap if row.judge == "cheap" else strong
        assert {1.0: "a", 0.0: "b"}[matrix[a, b]] == row.winner


def test_select_with_two_recorded_judges_from_the_command_line(tmp_path, capsys):
    items, cheap, strong = two_judge_pool(n=12)
    items.to_csv(tmp_path / "items.csv")
    ids = list(items.index)
    matrix_to_verdicts(cheap, ids, judge="mini").to_csv(tmp_path / "mini.csv", index=False)
    matrix_to_verdicts(strong, ids, judge="big").to_csv(tmp_path / "big.csv", index=False)
    argv = ["select", tmp_path / "items.csv", "--oracle", tmp_path / "mini.csv", "--oracle",
            tmp_path / "big.csv", "--judge-cost", "0.1", "--judge-cost", "1", "--max-cost",
            "9", "--k", "3", "--covariates", "verbose", "--posterior-samples", "200",
            "--json"]
    assert main([str(a) for a in argv]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["model"] == "reliability" and payload["stopped"] == "money"
    queried = pd.DataFrame(payload["queried"])
    assert set(queried["judge"]) == {"mini", "big"}
    assert queried.groupby("judge")["cost"].first().to_dict() == {"mini": 0.1, "big": 1.0}
    assert queried["cost"].sum() <= 9 + 1e-9
    # the same panel from one file, costs by name, in the library
    both = pd.concat([pd.read_csv(tmp_path / "mini.csv"), pd.read_csv(tmp_path / "big.csv")])
    again = fairjudge.select(items, both, k=3, max_cost=9, judge_costs={"big": 1, "mini": 0.1},
                             model="reliability", covariates=["verbose"], n_samples=200)
    assert again.topk == payload["topk"]
    mixed = [a if a != "1" else "big=1" for a in argv]
    assert main([str(a) for a in mixed]) == 2
    assert "not a mix" in capsys.readouterr().err
    with pytest.raises(ValueError, match="3 judge costs for 2 judges"):
        fairjudge.select(items, both, k=3, max_cost=9, judge_costs=[1, 2, 3])
    with pytest.raises(ValueError, match="budget in calls"):
        fairjudge.select(items, both, k=3)
