"""Acceptance: the replay backend reproduces published figures from ../shared/data."""

import pandas as pd
import pytest

from fairjudge.audit import gold_accuracy, position_consistency
from fairjudge.data import load_judgebench, load_llmbar, load_pairs
from fairjudge.judges import get_backend
from fairjudge.strategies import judge_pairs

pytestmark = pytest.mark.shared_data  # skipped without ../shared/data (tests/conftest.py)


def replay_both_orders(bench, judge):
    pairs = load_pairs(
        bench.pairs.rename(columns={"item_a": "a", "item_b": "b"}),
        questions=bench.questions.reset_index()[["question_id", "question"]],
        items=bench.items.reset_index().rename(columns={"index": "id"})[["id", "text"]])
    backend = get_backend("replay", verdicts=bench.verdicts, judge=judge)
    return judge_pairs(pairs, "S1", [backend], seed=0)


def test_llmbar_gpt4_natural_vanilla():
    bench = load_llmbar("Natural", judges="GPT-4", strategies="Vanilla_NoRules")
    result = replay_both_orders(bench, "GPT-4")
    assert len(result.calls) == 200
    consistency = position_consistency(result.calls)
    accuracy = gold_accuracy(result.calls, bench.gold)
    assert consistency.estimate == pytest.approx(0.97, abs=0.005)
    assert round(accuracy.estimate, 2) == 0.94 or accuracy.estimate == pytest.approx(0.935)


def test_judgebench_claude3_haiku_consistency():
    bench = load_judgebench("claude", judges="claude-3-haiku-20240307")
    result = replay_both_orders(bench, "claude-3-haiku-20240307")
    assert len(result.aggregate) == 270
    assert position_consistency(result.calls).estimate == pytest.approx(0.50, abs=0.005)
    # Recorded parse failures stay invalid: never mapped to a side.
    invalid = result.calls[result.calls["outcome_detail"] == "invalid"]
    assert len(invalid) > 0 and invalid["winner"].isna().all()
    aggregate = result.aggregate.set_index("pair_id").loc[invalid["pair_id"].iloc[0]]
    assert pd.isna(aggregate["winner"]) or aggregate["outcome_detail"] == "invalid"
