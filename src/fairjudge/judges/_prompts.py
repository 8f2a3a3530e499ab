"""Versioned prompt templates for the judging strategies [debiasing-strategies-study §3.3].

Templates use ``{{question}}``, ``{{answer_a}}``, ``{{answer_b}}``, ``{{reference}}`` and
``{{rubric}}`` placeholders (double braces, so JSON examples in a prompt need no escaping).
Answers are always wrapped in ``[The Start of Assistant A's Answer]`` ... markers. The
version string enters every cache key: editing a template's text without changing its
version would silently reuse verdicts from the old prompt, so user templates without an
explicit version get one derived from their text.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from fairjudge._util._files import read_json_file
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._types import Message

_PLACEHOLDER = re.compile(r"\{\{(question|answer_a|answer_b|reference|rubric)\}\}")

RUBRIC = (
    "accuracy (factual correctness), relevance (addresses the question), completeness "
    "(covers what was asked), clarity (easy to follow), reasoning depth (sound, well-supported"
    " reasoning)"
)

_SYSTEM = (
    "You are an impartial judge comparing two AI assistant answers to the same user question. "
    "Judge substance, not presentation: do not let the order of the answers, their length, "
    "their formatting, or the identity of their authors influence you."
)

_ANSWERS = (
    "[User Question]\n{{question}}\n\n"
    "[The Start of Assistant A's Answer]\n{{answer_a}}\n[The End of Assistant A's Answer]\n\n"
    "[The Start of Assistant B's Answer]\n{{answer_b}}\n[The End of Assistant B's Answer]\n"
)

_REFERENCE = "\n[The Start of Reference Answer]\n{{reference}}\n[The End of Reference Answer]\n"

_JSON_VERDICT = (
    'Reply with a JSON object {"reasoning": "<one short paragraph>", "verdict": "A" | "B" | '
    '"tie"}.'
)

_RUBRIC_JSON = (
    'Reply with a JSON object {"scores": {"A": {"accuracy": 1-5, "relevance": 1-5, '
    '"completeness": 1-5, "clarity": 1-5, "reasoning_depth": 1-5}, "B": {...}}, '
    '"reasoning": "<short>", "verdict": "A" | "B" | "tie"}. The verdict is your own '
    "overall judgement, a separate field, not a sum of the scores."
)


@dataclass(frozen=True)
class PromptTemplate:
    """A named, versioned prompt.

    Attributes
    ----------
    name, version : str
    system, user : str
        Text with ``{{placeholder}}`` fields.
    kind : str
        ``"verdict"`` (a pairwise judgement) or ``"generate"`` (free text, e.g. a reference).
    """

    name: str
    version: str
    system: str
    user: str
    kind: str = "verdict"

    def render(self, *, question: str, answer_a: str = "", answer_b: str = "",
               reference: str | None = None, rubric: str = RUBRIC) -> tuple:
        """The chat messages for one call, answers in the order shown."""
        if "{{reference}}" in self.user and reference is None:
            raise FairjudgeInputError(f"template {self.name!r} needs a reference answer")
        values = {"question": question, "answer_a": answer_a, "answer_b": answer_b,
                  "reference": reference or "", "rubric": rubric}
        # One pass: placeholder-like text inside an answer is never expanded again.
        text = _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), self.user)
        messages = (Message("user", text),)
        if self.system:
            messages = (Message("system", self.system),) + messages
        return messages


BUILTIN_TEMPLATES = {
    "baseline": PromptTemplate(
        "baseline", "1", _SYSTEM,
        _ANSWERS + "\nWhich answer is better? " + _JSON_VERDICT),
    "letter": PromptTemplate(
        "letter", "1", "",
        "Question: {{question}}\n\n" + _ANSWERS
        + "\nWhich answer is more accurate and complete? Respond with ONLY the single letter "
          "A or B."),
    "rubric": PromptTemplate(
        "rubric", "1", _SYSTEM,
        _ANSWERS + "\nScore each answer from 1 to 5 on this rubric: {{rubric}}. "
        + _RUBRIC_JSON),
    "cot": PromptTemplate(
        "cot", "1", _SYSTEM,
        _ANSWERS + "\nThink step by step: list what the question requires, check each answer "
        "against it, note errors and omissions, and only then decide. " + _JSON_VERDICT),
    "reference": PromptTemplate(
        "reference", "1", _SYSTEM,
        _ANSWERS + _REFERENCE + "\nUse the reference answer to check correctness. Which "
        "answer is better? " + _JSON_VERDICT),
    "combined-budget": PromptTemplate(
        "combined-budget", "1", _SYSTEM,
        _ANSWERS + "\nThink step by step, then score each answer from 1 to 5 on this rubric: "
        "{{rubric}}. " + _RUBRIC_JSON),
    "combined-full": PromptTemplate(
        "combined-full", "1", _SYSTEM,
        _ANSWERS + _REFERENCE + "\nUse the reference answer to check correctness. Think step "
        "by step, then score each answer from 1 to 5 on this rubric: {{rubric}}. "
        + _RUBRIC_JSON),
    "generate-reference": PromptTemplate(
        "generate-reference", "1", "",
        "Write a concise, correct, high-quality answer to the following question. Reply with "
        "the answer only.\n\nQuestion: {{question}}", kind="generate"),
}


def load_templates(path: str | os.PathLike | None = None) -> dict[str, PromptTemplate]:
    """Built-in templates, overridden by those in a JSON file.

    The file maps template names to ``{"user": ..., "system": ..., "version": ...}``;
    ``system`` and ``version`` are optional. A missing version becomes ``"user-<hash>"`` of
    the text, so an edited prompt never reuses cached verdicts of the previous one.

    Raises
    ------
    FairjudgeInputError
        Naming the file and template for malformed entries.
    """
    templates = dict(BUILTIN_TEMPLATES)
    if path is None:
        return templates
    path = Path(path)
    data = read_json_file(path, "template")
    if not isinstance(data, dict):
        raise FairjudgeInputError(f"{path.name}: expected an object mapping template names "
                                  "to {user, system, version}")
    for name, spec in data.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("user"), str):
            raise FairjudgeInputError(f"{path.name}: template `{name}` needs a string field "
                                      "`user`")
        base = BUILTIN_TEMPLATES.get(name)
        kind = spec.get("kind", base.kind if base else "verdict")
        if kind == "verdict" and not all(f"{{{{{p}}}}}" in spec["user"]
                                         for p in ("answer_a", "answer_b")):
            raise FairjudgeInputError(f"{path.name}: template `{name}` must contain "
                                      "{{answer_a}} and {{answer_b}}")
        system = spec.get("system", base.system if base else "")
        version = spec.get("version") or "user-" + hashlib.sha256(
            (system + "\x00" + spec["user"]).encode()).hexdigest()[:12]
        templates[name] = PromptTemplate(name, str(version), system, spec["user"], kind)
    return templates
