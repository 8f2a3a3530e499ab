"""Algorithm 1 of the debiasing study (JUDGESTRATEGYSELECTOR, §5.4): every branch, in the
paper's order of checks, on inputs whose answer the paper's pseudocode fixes."""

import pytest

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.strategies import judge_strategy_selector, study_model

# The study's five judges under the model IDs of its Appendix C.
CLAUDE, FLASH, LLAMA = "claude-sonnet-4@20250514", "gemini-2.5-flash", \
    "meta/llama-3.3-70b-instruct-maas"
PRO, GPT4O = "gemini-2.5-pro", "gpt-4o"


@pytest.mark.parametrize("task", ["adversarial", "high-stakes", "Adversarial"])
@pytest.mark.parametrize("model", [None, CLAUDE, FLASH, PRO, "some-new-model"])
@pytest.mark.parametrize("k", [None, 1, 3])
def test_line_2_adversarial_comes_first_whatever_the_model_or_budget(task, model, k):
    choice = judge_strategy_selector(task, model=model, budget_multiplier=k)
    assert (choice.line, choice.strategies) == (2, ("S5",))
    assert choice.judges == ("Claude", "GPT-4o", "Llama")
    assert choice.notes == ()  # S5 is one call: within any k


@pytest.mark.parametrize("k", [None, 2, 1])
def test_line_5_no_model_and_cost_matters_is_flash_s8_whatever_k(k):
    choice = judge_strategy_selector("natural", budget_multiplier=k)
    assert (choice.line, choice.judges, choice.strategies) == (5, ("Gemini 2.5 Flash",),
                                                                ("S8",))
    assert choice.calls_per_pair == (2,)
    # Line 5 does not read k: with k = 1 it still returns S8 (two calls), flagged.
    assert any("more than the budget k = 1" in n for n in choice.notes) == (k == 1)


def test_no_model_and_cost_indifferent_falls_through_to_line_16():
    choice = judge_strategy_selector("natural", cost_matters=False)
    assert (choice.line, choice.judges, choice.strategies) == (16, (), ("S5",))


@pytest.mark.parametrize("k, strategy", [(None, "S8"), (2, "S8"), (3, "S8"), (1, "S5")])
def test_line_8_claude_s8_or_s5_at_k_1(k, strategy):
    choice = judge_strategy_selector("natural", model=CLAUDE, budget_multiplier=k)
    assert (choice.line, choice.judges, choice.strategies) == (8, (CLAUDE,), (strategy,))
    assert choice.model_class == "Claude" and choice.notes == ()


@pytest.mark.parametrize("k, strategy", [(None, "S8"), (2, "S8"), (1, "S1")])
def test_line_10_flash_s8_or_s1_at_k_1(k, strategy):
    choice = judge_strategy_selector("natural", model=FLASH, budget_multiplier=k)
    assert (choice.line, choice.judges, choice.strategies) == (10, (FLASH,), (strategy,))
    # The paper's "S1 if k = 1" is a two-call strategy: returned as stated, with a note.
    assert choice.calls_per_pair == (2,)
    assert any("more than the budget k = 1" in n for n in choice.notes) == (k == 1)


@pytest.mark.parametrize("k", [None, 1])
def test_line_12_llama_s8_whatever_k(k):
    choice = judge_strategy_selector("natural", model=LLAMA, budget_multiplier=k)
    assert (choice.line, choice.judges, choice.strategies) == (12, (LLAMA,), ("S8",))
    assert len(choice.notes) == (k == 1)


@pytest.mark.parametrize("model", [PRO, GPT4O, "openai:gpt-4o-2024-08-06"])
def test_line_14_pro_or_gpt4o_baseline_or_swap(model):
    choice = judge_strategy_selector("natural", model=model, budget_multiplier=1)
    assert (choice.line, choice.judges, choice.strategies) == (14, (model,), ("B0", "S1"))
    assert choice.notes == ()  # B0 fits k = 1


@pytest.mark.parametrize("model", ["GPT-4", "openai:gpt-4o-mini", "PaLM2", "qwen-72b"])
def test_line_16_any_other_model_gets_s5(model):
    choice = judge_strategy_selector("natural", model=model)
    assert (choice.line, choice.judges, choice.strategies) == (16, (model,), ("S5",))
    assert choice.model_class is None
    assert choice.notes == (f"{model!r} is none of the study's five judges",)


def test_a_model_named_by_family_only_is_matched_and_flagged():
    choice = judge_strategy_selector("natural", model="claude-3-haiku-20240307")
    assert (choice.line, choice.strategies) == (8, ("S8",))
    assert choice.notes == ("the study measured Claude Sonnet 4; 'claude-3-haiku-20240307' is "
                            "matched to \"Claude\" by family, as Algorithm 1 names models",)


def test_study_model_names():
    assert [study_model(m) for m in (CLAUDE, FLASH, LLAMA, PRO, GPT4O)] == [
        "Claude", "Gemini Flash", "Llama", "Gemini Pro", "GPT-4o"]
    assert study_model(None) is None and study_model("bard") is None


def test_choice_describes_itself_and_serialises():
    choice = judge_strategy_selector("natural", model=PRO)
    assert choice.describe() == (
        "gemini-2.5-pro with B0 (baseline) or S1 (position swap (tie on disagreement)) "
        "[Algorithm 1, line 14: baseline already strong; debiasing gains within MDE]")
    assert choice.as_dict()["strategies"] == ["B0", "S1"]


@pytest.mark.parametrize("kwargs, message", [
    ({"task": "easy"}, r"`task` must be one of natural, adversarial, high-stakes; got 'easy'"),
    ({"budget_multiplier": 0}, r"`budget_multiplier` must be a positive whole number .* got 0"),
    ({"budget_multiplier": 1.5}, r"`budget_multiplier` must be .* got 1.5"),
    ({"budget_multiplier": True}, r"`budget_multiplier` must be .* got True"),
    ({"model": " "}, r"`model` must be a non-empty name or None; got ' '"),
])
def test_bad_inputs_are_named(kwargs, message):
    with pytest.raises(FairjudgeInputError, match=message):
        judge_strategy_selector(**kwargs)
