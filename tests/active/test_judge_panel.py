"""Across judges: the panel table (Table 1), competence against gain (Fig. 8) and the cost
frontier (Fig. 7), each against numbers worked out by hand."""

import numpy as np
import pandas as pd
import pytest

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.active import competence_gain, cost_frontier, judge_panel, money_to_reach


def full_rows(judge, oracle, naive, aware, c_hat, kappa_hat, k=5, n_items=30):
    return [{"judge": judge, "n_items": n_items, "oracle": oracle, "model": "naive", "k": k,
             "recall": naive},
            {"judge": judge, "n_items": n_items, "oracle": oracle, "model": "bias-aware",
             "k": k, "recall": aware, "c_hat": c_hat, "kappa_hat": kappa_hat},
            {"judge": judge, "n_items": n_items, "oracle": oracle, "model": "swap-majority",
             "k": k, "recall": 0.0}]


def test_the_panel_averages_each_judges_oracles_and_sorts_by_the_verbosity_coefficient():
    full = pd.DataFrame(
        full_rows("cheap", 0, 0.4, 0.8, 1.0, 0.3) + full_rows("cheap", 1, 0.6, 1.0, 0.8, 0.5)
        + full_rows("frontier", 0, 1.0, 1.0, 0.1, -0.2)
        + full_rows("cheap", 0, 0.0, 0.0, 9.0, 9.0, k=3))  # another k: ignored
    panel = judge_panel(full, k=5)
    assert panel["judge"].tolist() == ["cheap", "frontier"]
    cheap = panel.iloc[0]
    assert cheap["n_oracles"] == 2
    assert cheap["c_hat"] == pytest.approx(0.9) and cheap["kappa_hat"] == pytest.approx(0.4)
    assert cheap["naive_recall"] == pytest.approx(0.5)
    assert cheap["bias_aware_recall"] == pytest.approx(0.9)
    assert cheap["delta"] == pytest.approx(0.4)
    assert panel.iloc[1]["delta"] == 0.0


def ranks(values):
    """Average ranks (ties share the mean of their positions), by hand."""
    values = np.asarray(values, float)
    order = np.argsort(values, kind="stable")
    out = np.empty(values.size)
    i = 0
    while i < values.size:
        j = i
        while j + 1 < values.size and values[order[j + 1]] == values[order[i]]:
            j += 1
        out[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return out


def test_competence_gain_is_the_pearson_correlation_of_ranks():
    panel = pd.DataFrame({"judge": list("abcdef"),
                          "naive_recall": [0.5, 0.6, 0.6, 0.84, 1.0, 0.08],
                          "delta": [0.4, 0.2, 0.33, 0.16, 0.0, 0.04],
                          "c_hat": [0.99, 0.83, 0.75, 0.59, 0.13, -0.51]})
    result = competence_gain(panel)
    expected_gain = np.corrcoef(ranks(panel["naive_recall"]), ranks(panel["delta"]))[0, 1]
    expected_bias = np.corrcoef(ranks(panel["naive_recall"]), ranks(panel["c_hat"]))[0, 1]
    assert result.rho_gain == pytest.approx(expected_gain, abs=1e-12)
    assert result.rho_bias == pytest.approx(expected_bias, abs=1e-12)
    assert result.n_judges == 6 and 0 < result.p_gain < 1


def test_a_constant_gain_gives_no_correlation_rather_than_a_number():
    panel = pd.DataFrame({"judge": list("abc"), "naive_recall": [1.0, 0.9, 0.8],
                          "delta": [0.0, 0.0, 0.0], "c_hat": [0.1, 0.2, 0.3]})
    result = competence_gain(panel)
    assert np.isnan(result.rho_gain) and np.isnan(result.p_gain)
    assert result.rho_bias == pytest.approx(-1.0)
    with pytest.raises(FairjudgeInputError, match="at least 3 judges"):
        competence_gain(panel.iloc[:2])


def budget_rows(judge, model, b, recalls):
    """``recalls[oracle][seed]``."""
    return [{"judge": judge, "oracle": o, "seed": s, "model": model, "rule": "topk",
             "budget": b, "recall": r} for o, seeds in enumerate(recalls)
            for s, r in enumerate(seeds)]


def test_the_cost_frontier_prices_each_verdict_and_averages_oracles():
    budget = pd.DataFrame(
        budget_rows("cheap", "bias-aware", 60, [[0.6, 0.8], [1.0, 1.0]])
        + budget_rows("cheap", "bias-aware", 120, [[1.0, 1.0], [1.0, 0.8]])
        + budget_rows("strong", "bias-aware", 60, [[0.8, 1.0], [1.0, 1.0]])
        + [{"judge": "cheap", "oracle": 0, "seed": 0, "model": "bias-aware",
            "rule": "random", "budget": 60, "recall": 0.0}])  # another rule: ignored
    frontier = cost_frontier(budget, {"cheap": 0.001, "strong": 0.02},
                             models=("bias-aware",))
    cheap = frontier[frontier["judge"] == "cheap"]
    assert cheap["money"].tolist() == pytest.approx([0.06, 0.12])
    # Oracle means 0.7 and 1.0: mean 0.85, s.e. = sd([0.7, 1.0]) / sqrt(2) = 0.15.
    assert cheap["recall"].tolist() == pytest.approx([0.85, 0.95])
    assert cheap["se"].iloc[0] == pytest.approx(0.15)
    strong = frontier[frontier["judge"] == "strong"].iloc[0]
    assert strong["money"] == pytest.approx(1.2) and strong["recall"] == pytest.approx(0.95)
    reach = money_to_reach(frontier, 0.9).set_index("judge")["money"]
    assert reach["cheap"] == pytest.approx(0.12) and reach["strong"] == pytest.approx(1.2)
    assert np.isnan(money_to_reach(frontier, 0.99).set_index("judge")["money"]["cheap"])


def test_the_cost_frontier_names_a_judge_without_a_price():
    budget = pd.DataFrame(budget_rows("cheap", "bias-aware", 60, [[0.5]]))
    with pytest.raises(FairjudgeInputError, match="no cost per call for judge 'cheap'"):
        cost_frontier(budget, {"other": 1.0})
    with pytest.raises(FairjudgeInputError, match="must be positive"):
        cost_frontier(budget, {"cheap": 0.0})


def simulated_recorded(judge, competence, bias, seed, n_items=12):
    """A recorded oracle of a simulated judge on a controlled pool (no server needed)."""
    from fairjudge.data import (RecordedOracle, SimulatedJudge, controlled_pool,
                                matrix_to_verdicts)

    rng = np.random.default_rng(seed)
    items = controlled_pool("the Moon", n_items=n_items, rng=rng)
    simulated = SimulatedJudge(competence * items["quality"].to_numpy(dtype=float),
                               items["verbose"].to_numpy(), bias=bias, rng=rng)
    verdicts = matrix_to_verdicts(simulated.verdict_matrix(), items.index, judge=judge)
    return RecordedOracle(items, verdicts, judge, {"simulated": True})


def test_experiment_topk_reports_the_panel_and_the_cost_frontier(tmp_path, capsys):
    """Three recorded judges with prices: the report gives Table 1's per-judge fits, the
    Spearman correlation of Fig. 8 and recall against money (Fig. 7), and they equal the
    same quantities recomputed from the run tables it wrote."""
    import json

    from fairjudge._cli import main
    from fairjudge.data import write_recorded_oracle

    folders = []
    for n, (judge, competence, bias) in enumerate([("cheap", 0.4, 3.0), ("mid", 0.6, 1.0),
                                                   ("strong", 1.0, 0.0)]):
        for oracle in range(2):
            folder = tmp_path / f"{judge}{oracle}"
            write_recorded_oracle(simulated_recorded(judge, competence, bias, [n, oracle]),
                                  folder)
            folders += ["--oracle", str(folder)]
    out = tmp_path / "topk"
    code = main(["experiment", "topk", *folders, "--judge-cost", "cheap=0.001",
                 "--judge-cost", "mid=0.01", "--judge-cost", "strong=0.1", "--k", "3",
                 "--seeds", "1", "--budgets", "10,30", "--rules", "topk",
                 "--k-values", "3", "--samples", "100", "--jobs", "1", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Competence vs gain (Fig. 8)" in captured.out
    assert "Recall against money, topk rule (Fig. 7)" in captured.out
    summary = json.loads((out / "summary.json").read_text())
    full = pd.read_csv(out / "full.csv")
    fits = full[full["k"] == 3].pivot_table(index=["judge", "oracle"], columns="model",
                                            values="recall")
    delta = (fits["bias-aware"] - fits["naive"]).groupby("judge").mean()
    naive = fits["naive"].groupby("judge").mean()
    judges = {row["judge"]: row for row in summary["judges"]}
    for judge in ("cheap", "mid", "strong"):
        assert judges[judge]["delta"] == pytest.approx(delta[judge])
        assert judges[judge]["naive_recall"] == pytest.approx(naive[judge])
    order = ["cheap", "mid", "strong"]
    expected = np.corrcoef(ranks(naive[order]), ranks(delta[order]))[0, 1]
    reported = summary["competence_gain"]["rho_gain"]
    assert (np.isnan(expected) and reported is None) or reported == pytest.approx(expected)
    budget = pd.read_csv(out / "budget.csv")
    cheap = budget[(budget["judge"] == "cheap") & (budget["rule"] == "topk")
                   & (budget["model"] == "bias-aware") & (budget["budget"] == 30)]
    row = next(r for r in summary["cost_frontier"] if r["judge"] == "cheap"
               and r["model"] == "bias-aware" and r["budget"] == 30)
    assert row["money"] == pytest.approx(30 * 0.001)
    assert row["recall"] == pytest.approx(cheap["recall"].mean())
    for name in ("fig7_cost_frontier.png", "fig8_competence_gain.png"):
        assert (out / name).read_bytes().startswith(b"\x89PNG"), name
    # Rules are compared per judge, in a folder each: never averaged across judges.
    assert summary["judges_folders"] == {"cheap": "cheap", "mid": "mid", "strong": "strong"}
    for judge in ("cheap", "mid", "strong"):
        own = pd.read_csv(out / judge / "budget.csv")
        assert set(own["judge"]) == {judge}
        recall = json.loads((out / judge / "summary.json").read_text())["recall"]
        mine = budget[budget["judge"] == judge].groupby(["model", "rule", "budget"])["recall"]
        for cell in recall:
            assert cell["mean"] == pytest.approx(
                mine.mean()[(cell["model"], cell["rule"], cell["budget"])])
    pooled = next(r for r in summary["delta"] if r["judge"] == "pooled"
                  and r["setting"] == "full data")
    assert pooled["n_oracles"] == 6


def test_experiment_topk_judge_cost_names_the_recorded_judges(tmp_path, capsys):
    from fairjudge._cli import main
    from fairjudge.data import write_recorded_oracle

    write_recorded_oracle(simulated_recorded("cheap", 0.4, 3.0, 0), tmp_path / "o")
    code = main(["experiment", "topk", "--oracle", str(tmp_path / "o"), "--judge-cost",
                 "gpt=0.1", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2
    assert "no recorded judge is named 'gpt'; the recorded judges are cheap" in err


def test_summaries_refuse_to_average_rules_across_judges():
    from fairjudge.active import (TopkExperimentConfig, run_topk_experiment,
                                  split_results_by_judge, summarize_topk_results)

    oracles = [simulated_recorded("cheap", 0.4, 3.0, 0), simulated_recorded("strong", 1, 0, 1)]
    config = TopkExperimentConfig(k=3, n_seeds=1, budgets=(10,), rules=("topk", "random"),
                                  ablation_rules=(), residualized_rules=(), k_values=(3,),
                                  n_samples=100)
    results = run_topk_experiment(config, oracles=oracles)
    with pytest.raises(FairjudgeInputError, match="2 judges .*split_results_by_judge"):
        summarize_topk_results(results, config)
    parts = split_results_by_judge(results)
    assert list(parts) == ["cheap", "strong"]
    for judge, part in parts.items():
        assert set(part["budget"]["judge"]) == {judge} == set(part["estimates"]["judge"])
        summary = summarize_topk_results(part, config)
        assert summary.recall["n"].max() == 1  # one oracle x one seed, this judge's


def test_one_recorded_judge_with_a_price_gets_its_cost_curve(tmp_path, capsys):
    import json

    from fairjudge._cli import main
    from fairjudge.data import write_recorded_oracle

    write_recorded_oracle(simulated_recorded("cheap", 0.4, 3.0, 0), tmp_path / "o")
    out = tmp_path / "x"
    code = main(["experiment", "topk", "--oracle", str(tmp_path / "o"), "--judge-cost",
                 "cheap=0.5", "--k", "3", "--seeds", "1", "--budgets", "10,20",
                 "--rules", "topk", "--k-values", "3", "--samples", "100", "--jobs", "1",
                 "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Recall against money, topk rule (Fig. 7)" in captured.out
    assert "Competence vs gain" not in captured.out  # one judge: no panel
    frontier = json.loads((out / "summary.json").read_text())["cost_frontier"]
    assert sorted(r["money"] for r in frontier if r["model"] == "naive") == [5.0, 10.0]
