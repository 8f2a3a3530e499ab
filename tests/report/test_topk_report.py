"""Top-k experiment report: formatting of given numbers only (fairjudge.report)."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest

import fairjudge.report as report
from fairjudge.active import (
    TopkExperimentConfig,
    run_topk_experiment,
    summarize_topk_results,
)
from fairjudge.report import (
    format_ablation_2x2,
    format_full_data_tests,
    format_recall_table,
    format_score_ablation,
    format_topk_summary,
    render_topk_summary,
    write_topk_report,
)


def _recall(rows):
    return pd.DataFrame(rows, columns=["model", "rule", "budget", "mean", "se", "n"])


RECALL = _recall([
    ("naive", "topk", 60, 0.55, 0.125, 4), ("naive", "topk", 120, 0.75, 0.05, 4),
    ("naive", "random", 60, 0.5, 0.0, 4),
    ("bias-aware", "topk", 120, 0.8, 0.1, 4), ("bias-aware", "round-robin", 120, 0.6, 0.0, 4),
])


def test_recall_table_lays_out_given_numbers():
    table = format_recall_table(RECALL, "naive")
    assert table.to_string() == (
        "               B=60        B=120\n"
        "rule                            \n"
        "topk    0.55 ± 0.12  0.75 ± 0.05\n"
        "random  0.50 ± 0.00             ")
    assert format_recall_table(RECALL, "naive", ["random"]).index.tolist() == ["random"]


def test_ablations_select_cells_of_the_recall_summary():
    table = format_ablation_2x2(RECALL, 120)
    assert table.loc["naive"].tolist() == ["", "0.75 ± 0.05"]
    assert table.loc["bias-aware"].tolist() == ["0.60 ± 0.00", "0.80 ± 0.10"]
    scores = format_score_ablation(RECALL, 120, ["topk", "global", "round-robin"])
    assert scores["recall"].to_dict() == {"topk": "0.80 ± 0.10", "round-robin": "0.60 ± 0.00"}


def test_full_data_tests_are_rounded_here():
    tests = pd.DataFrame([{"judge": "biased", "n_items": 30, "k": 5,
                           "comparison": "bias-aware - naive", "n_oracles": 2,
                           "mean_difference": 0.30004, "ci_low": -0.974, "ci_high": 1.574,
                           "p_value": 0.20481}])
    out = format_full_data_tests(tests)
    assert out.iloc[0].tolist() == ["biased", 30, 5, "bias-aware - naive", 2, 0.3,
                                    "[-0.97, +1.57]", "0.2048"]
    assert format_full_data_tests(tests.iloc[:0]).empty


@pytest.fixture(scope="module")
def tiny():
    config = TopkExperimentConfig(n_items=10, k=3, n_oracles=2, n_seeds=2, budgets=(20, 40),
                                  ablation_rules=("entropy",), ablation_budget=20,
                                  spend_budget=40, k_values=(3,), large_n_items=0,
                                  n_samples=100)
    results = run_topk_experiment(config)
    return config, results, summarize_topk_results(results, config)


def test_report_files_come_from_the_summary(tiny, tmp_path):
    config, results, summary = tiny
    text, written = write_topk_report(results, config, tmp_path / "new", summary=summary)
    assert text == render_topk_summary(format_topk_summary(summary))
    assert (tmp_path / "new" / "summary.txt").read_text() == text + "\n"
    assert {p.name for p in written} >= {"summary.txt", "summary.json"}


def test_report_computes_no_statistics():
    """report/ imports neither fairjudge.stats nor scipy: it receives numbers."""
    package = Path(report.__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                assert not name.startswith(("fairjudge.stats", "scipy")), (path.name, name)
