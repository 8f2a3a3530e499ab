"""Acceptance: the audit code reproduces published figures from ../shared/data."""

import json

import pytest

from fairjudge._cli import main
from fairjudge.audit import audit_verdicts, external_validity
from fairjudge.data import load_judgebench, load_llmbar, load_prd, shared_data_dir

pytestmark = [pytest.mark.shared_data,
              pytest.mark.skipif(shared_data_dir() is None,
                                 reason="needs the recorded datasets in ../shared/data")]


def test_llmbar_gpt4_natural_through_the_audit_cli(tmp_path, capsys):
    bench = load_llmbar("Natural", judges="GPT-4", strategies="Vanilla_NoRules")
    bench.verdicts.to_json(tmp_path / "v.jsonl", orient="records", lines=True)
    bench.gold.to_json(tmp_path / "g.jsonl", orient="records", lines=True)
    bench.items.reset_index()[["id", "text"]].to_json(tmp_path / "items.jsonl",
                                                     orient="records", lines=True)
    code = main(["audit", "--verdicts", str(tmp_path / "v.jsonl"), "--gold",
                 str(tmp_path / "g.jsonl"), "--items", str(tmp_path / "items.jsonl"), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)["GPT-4"]
    for key in ("position_consistency", "first_position_rate", "accuracy", "length_bias",
                "markdown_bias"):
        assert set(report[key]) == {"estimate", "ci_low", "ci_high", "n"}
        assert report[key]["ci_low"] <= report[key]["estimate"] <= report[key]["ci_high"]
    assert report["position_consistency"]["estimate"] == pytest.approx(0.97, abs=0.005)
    assert round(report["accuracy"]["estimate"] + 1e-9, 2) == 0.94


def test_prd_bard_first_slot_rate():
    bench = load_prd(reviewers="bard")
    audit = audit_verdicts(bench.verdicts, n_boot=200)["bard"]
    assert audit.first_position_rate.estimate == pytest.approx(0.78, abs=0.005)


def test_judgebench_haiku_consistency():
    bench = load_judgebench("claude", judges="claude-3-haiku-20240307")
    audit = audit_verdicts(bench.verdicts, n_boot=200)["claude-3-haiku-20240307"]
    assert audit.position_consistency.estimate == pytest.approx(0.50, abs=0.005)


def test_self_preference_on_prd_reviewers_that_are_contestants():
    bench = load_prd(reviewers="claude")
    audit = audit_verdicts(bench.verdicts, items=bench.items[["text", "source"]], n_boot=200)
    sp = audit["claude"].self_preference
    assert sp.family == "anthropic" and sp.judge_rate.n > 100


def test_external_validity_flags_a_dataset_effect_on_neighbor():
    """On LLMBar Neighbor the worse answer is usually longer: length alone predicts gold,
    so a correction must be compared with the covariates-only control."""
    bench = load_llmbar("Neighbor", judges="GPT-4", strategies="Vanilla_NoRules")
    ev = external_validity(bench.verdicts, bench.items[["text"]], bench.gold, n_boot=300)
    assert ev.gold_prefers_longer.estimate < 0.3
    assert ev.covariates_only.estimate > ev.raw.estimate
    assert "dataset" in ev.conclusion or "helps" in ev.conclusion
