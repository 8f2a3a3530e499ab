"""Encoding a verdict table on integer codes: each column is factorised once, unknown ids
are found from the codes, and the validated ``winner`` column is built from its codes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fairjudge.data import (
    TIE_SCORE,
    FairjudgeInputError,
    check_verdict_items,
    encode_verdicts,
    load_items,
    load_verdicts,
)
from fairjudge.data._schema import positions_in


def _jsonl(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_positions_in_marks_unknown_and_missing_values_with_minus_one():
    index = pd.Index(["x", "y", "z"])
    values = pd.Series(["z", "ghost", None, "x", "z"], dtype=object)
    assert positions_in(values, index).tolist() == [2, -1, -1, 0, 2]
    assert positions_in(values, index).dtype == np.int64


def test_validated_winner_column_is_object_with_none_without_a_verdict():
    verdicts = load_verdicts(pd.DataFrame({
        "item_a": ["x", "y", "x", "y"], "item_b": ["y", "x", "y", "x"],
        "winner": [" A", "tie", None, "b"],
        "outcome_detail": ["win", "tie", "invalid", "win"]}))
    assert verdicts["winner"].dtype == object
    assert verdicts["winner"].tolist() == ["a", "tie", None, "b"]


def test_unknown_item_after_a_row_without_verdict_names_its_own_line(tmp_path):
    """Rows without a winner are dropped before the ids are looked up; the error still
    names the file line of the verdict, not its position among the kept rows."""
    path = _jsonl(tmp_path / "pairs.jsonl", [
        {"item_a": "x", "item_b": "y", "winner": "a"},
        {"item_a": "x", "item_b": "y", "winner": None, "outcome_detail": "invalid"},
        {"item_a": "y", "item_b": "ghost", "winner": "b"}])
    (tmp_path / "items.csv").write_text("id\nx\ny\n", encoding="utf-8")
    verdicts, items = load_verdicts(path), load_items(tmp_path / "items.csv")
    message = ("pairs.jsonl line 3: field `item_b` names unknown item 'ghost'; it is not in "
               "items.csv")
    with pytest.raises(FairjudgeInputError) as info:
        encode_verdicts(verdicts, items)
    assert str(info.value) == message
    with pytest.raises(FairjudgeInputError) as info:
        check_verdict_items(verdicts, items)
    assert str(info.value) == message


def test_rows_without_a_winner_are_left_out():
    verdicts = load_verdicts(pd.DataFrame({
        "item_a": ["x", "y", "x"], "item_b": ["y", "x", "y"], "winner": ["tie", None, "b"],
        "outcome_detail": [None, "abstain", None], "weight": [1.0, 5.0, 2.0]}))
    c = encode_verdicts(verdicts)
    assert c.first_score.tolist() == [TIE_SCORE, 0.0]
    assert c.weight.tolist() == [1.0, 2.0]


def test_first_appearance_order_is_down_item_a_then_down_item_b():
    rng = np.random.default_rng(0)
    ids = np.array([f"i{k}" for k in range(40)], dtype=object)
    a = rng.integers(0, 40, 300)
    b = (a + rng.integers(1, 40, 300)) % 40
    verdicts = load_verdicts(pd.DataFrame({"item_a": ids[a], "item_b": ids[b],
                                           "winner": rng.choice(["a", "b", "tie"], 300)}))
    c = encode_verdicts(verdicts)
    expected = pd.unique(np.concatenate([ids[a], ids[b]]))
    assert c.item_ids == tuple(expected)
    assert np.asarray(c.item_ids)[c.first].tolist() == ids[a].tolist()
    assert np.asarray(c.item_ids)[c.second].tolist() == ids[b].tolist()


def test_given_judges_fix_the_order_and_an_unlisted_judge_is_named():
    verdicts = load_verdicts(pd.DataFrame({
        "item_a": ["x", "y", "x"], "item_b": ["y", "x", "y"], "winner": ["a", "b", "a"],
        "judge": ["gpt", "claude", "gpt"]}))
    c = encode_verdicts(verdicts, judges=["gpt", "claude", "gemini"])
    assert c.judges == ("gpt", "claude", "gemini")
    assert c.judge.tolist() == [0, 1, 0]
    with pytest.raises(FairjudgeInputError,
                       match=r"^judge 'claude' is not among `judges` \['gpt'\]$"):
        encode_verdicts(verdicts, judges=["gpt"])


def test_an_unvalidated_winner_is_refused():
    frame = pd.DataFrame({"item_a": ["x"], "item_b": ["y"], "winner": ["A>B"],
                          "judge": ["judge"], "weight": [1.0]})
    with pytest.raises(FairjudgeInputError, match=r"must be validated first .*a winner is "
                                                  r"not one of a, b, tie"):
        encode_verdicts(frame)
