"""The human backend: an annotation sheet as a judge."""

import asyncio

import pandas as pd
import pytest

from fairjudge._util._errors import RequestRejected
from fairjudge.data._schema import Outcome
from fairjudge.judges import get_backend
from fairjudge.judges._types import JudgeRequest


def request(a, b, sample=0):
    return JudgeRequest(messages=[{"role": "user", "content": "?"}], sample=sample,
                        metadata={"item_a": a, "item_b": b, "question": "Q?",
                                  "answer_a": f"text of {a}", "answer_b": f"text of {b}"})


def test_an_unlabelled_comparison_is_written_and_a_label_is_read_back(tmp_path):
    sheet = tmp_path / "labels.jsonl"
    human = get_backend("human", labels=sheet)
    with pytest.raises(RequestRejected, match="awaiting a human label"):
        asyncio.run(human.complete(request("x", "y")))
    with pytest.raises(RequestRejected):
        asyncio.run(human.complete(request("x", "y")))  # asked again: not written twice
    written = pd.read_json(sheet, lines=True)
    assert len(written) == 1 and human.awaiting == [("x", "y", 0)]
    assert written.loc[0, "answer_a"] == "text of x" and written.loc[0, "question"] == "Q?"
    written["winner"] = ["B"]
    written.to_json(sheet, orient="records", lines=True)
    again = get_backend("human", labels=sheet)
    completion = asyncio.run(again.complete(request("x", "y")))
    assert completion.outcome is Outcome.B and again.awaiting == []
    # the other order, or another sample, is another comparison
    with pytest.raises(RequestRejected):
        asyncio.run(again.complete(request("y", "x")))
    assert human.label == "human:annotators" and not human.cacheable


def test_a_bad_label_names_the_line(tmp_path):
    sheet = tmp_path / "labels.csv"
    pd.DataFrame({"item_a": ["x", "u"], "item_b": ["y", "v"], "sample": [0, 0],
                  "winner": ["a", "first"]}).to_csv(sheet, index=False)
    with pytest.raises(ValueError, match=r"labels.csv line 3: `winner` is 'first'; write a"):
        get_backend("human", labels=sheet)
    pd.DataFrame({"item_a": ["x"], "winner": ["a"]}).to_csv(sheet, index=False)
    with pytest.raises(ValueError, match="needs the column `item_b`"):
        get_backend("human", labels=sheet)
    with pytest.raises(ValueError, match="needs an annotation sheet"):
        get_backend("human", labels=None)
