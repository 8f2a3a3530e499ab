"""Verdict parsing never guesses; templates render and version correctly."""

import json

import pytest

from fairjudge.data import Outcome
from fairjudge.judges import BUILTIN_TEMPLATES, load_templates, parse_rubric_scores, parse_verdict
from fairjudge._util._warnings import FairjudgeInputError


@pytest.mark.parametrize("text, expected", [
    ("A", Outcome.A), ("B.", Outcome.B), ("**A**", Outcome.A), ("Assistant B", Outcome.B),
    ("Output (a)", Outcome.A), ("tie", Outcome.TIE), ("Tie.", Outcome.TIE),
    ('{"reasoning": "x", "verdict": "B"}', Outcome.B),
    ('```json\n{"verdict": "tie"}\n```', Outcome.TIE),
    ('Some text {"winner": "A"} trailing', Outcome.A),
    ("Reasoning here. Final verdict: [[B]]", Outcome.B), ("[[C]]", Outcome.TIE),
    ("A\n\nBecause it is more complete.", Outcome.A),
    ("The second is better.\nVerdict: B", Outcome.B),
    ("<think>maybe B</think>A", Outcome.A),
])
def test_accepted_forms(text, expected):
    assert parse_verdict(text) == (expected, "")


@pytest.mark.parametrize("text, reason", [
    ("", "empty output"), (None, "empty output"), ("   \n", "empty output"),
    ("<think>still thinking", "output ended inside hidden reasoning"),
    ("<think>all hidden</think>", "only hidden reasoning"),
    ("[[A]] no wait [[B]]", "contradiction"),
    ('{"reasoning": "no verdict"}', "JSON object without a verdict field"),
    ('{"verdict": "both are bad"}', "JSON field `verdict`"),
    ("B is better", "no verdict found"), ("I would pick the first one", "no verdict found"),
    ("C", "no verdict found"),
])
def test_everything_else_is_invalid_with_a_reason(text, reason):
    outcome, detail = parse_verdict(text)
    assert outcome is Outcome.INVALID
    assert reason in detail


def test_rubric_scores_are_extracted():
    text = json.dumps({"scores": {"A": {"accuracy": 4}, "B": {"accuracy": 2}}, "verdict": "A"})
    assert parse_rubric_scores(text) == {"A": {"accuracy": 4}, "B": {"accuracy": 2}}
    assert parse_rubric_scores("A") is None


def test_templates_render_answers_in_the_order_shown():
    messages = BUILTIN_TEMPLATES["baseline"].render(question="Q?", answer_a="first",
                                                    answer_b="second")
    text = messages[-1].content
    assert text.index("first") < text.index("second")
    assert "[The Start of Assistant A's Answer]\nfirst\n" in text
    assert messages[0].role == "system"
    with pytest.raises(ValueError, match="needs a reference answer"):
        BUILTIN_TEMPLATES["reference"].render(question="Q", answer_a="a", answer_b="b")
    assert "rubric" in BUILTIN_TEMPLATES["rubric"].render(
        question="Q", answer_a="a", answer_b="b")[-1].content.lower()


def test_user_templates_override_and_get_a_content_version(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"baseline": {"user": "Q {{question}} {{answer_a}} {{answer_b}}"}}))
    first = load_templates(path)["baseline"]
    path.write_text(json.dumps({"baseline": {"user": "Q! {{question}} {{answer_a}} {{answer_b}}"}}))
    second = load_templates(path)["baseline"]
    assert first.version.startswith("user-") and first.version != second.version
    path.write_text(json.dumps({"baseline": {"user": "x {{answer_a}} {{answer_b}}",
                                             "version": "7"}}))
    assert load_templates(path)["baseline"].version == "7"
    assert load_templates(path)["cot"] == BUILTIN_TEMPLATES["cot"]


@pytest.mark.parametrize("content, message", [
    ("{not json", r"t.json line 1: not valid JSON"),
    ('{"baseline": {"system": "x"}}', r"template `baseline` needs a string field `user`"),
    ('{"baseline": {"user": "only {{answer_a}}"}}', r"must contain \{\{answer_a\}\} and"),
])
def test_template_file_errors(tmp_path, content, message):
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(FairjudgeInputError, match=message):
        load_templates(path)


@pytest.mark.parametrize("reply, reason", [
    ('{"score": NaN}', "not a finite number"), ('{"score": Infinity}', "not a finite number"),
    ('{"score": true}', "is not a number"), ('{"score": 1e400}', "not a finite number"),
    ("Score: 7", "not an integer from 1 to 5"), ("Score: 2\nScore: 4", "contradictory")])
def test_likert_parser_never_crashes_on_odd_scores(reply, reason):
    from fairjudge.judges import Completion, LikertParser

    score, detail = LikertParser().parse(Completion(reply))
    assert score is None and reason in detail
    assert LikertParser().parse(Completion('{"rating": 4}')) == (4, "")
