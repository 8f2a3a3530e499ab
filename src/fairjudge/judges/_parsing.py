"""Turning a judge's text into an outcome, without ever guessing."""

from __future__ import annotations

import json
import re

from fairjudge.data._schema import Outcome

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"^\s*<(think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"\[\[\s*(A|B|C|tie)\s*\]\]", re.IGNORECASE)
_LABELLED_LINE = re.compile(
    r"^\s*(?:\*\*)?\s*(?:final\s+)?(?:verdict|answer|winner|decision|choice|better\s+answer)"
    r"\s*(?:\*\*)?\s*[:=\-]\s*(?:\*\*)?\s*(.+?)\s*(?:\*\*)?\s*\.?\s*$", re.IGNORECASE)
VERDICT_FIELDS = ("verdict", "winner", "decision", "preference", "better", "choice",
                  "final_verdict", "answer")

_TIE_WORDS = {"tie", "draw", "equal", "a=b", "both", "neither", "same"}


def _label(value: str) -> Outcome | None:
    """``"A"``, ``"Assistant B"``, ``"Output (a)"``, ``"Response A"``, ``"tie"`` -> outcome."""
    text = str(value).strip().strip("\"'`*.()[]{} ").lower()
    text = re.sub(r"^(assistant|answer|response|output|model|option|candidate)\s*", "", text)
    text = text.strip("\"'`*.()[]{}: ")
    if text == "a":
        return Outcome.A
    if text == "b":
        return Outcome.B
    if text in _TIE_WORDS:
        return Outcome.TIE
    return None


def strip_hidden_reasoning(text: str) -> str:
    """Remove ``<think>...</think>``-style blocks that reasoning models may emit."""
    return _THINK.sub("", text)


def _json_candidates(text: str):
    for match in _FENCE.finditer(text):
        yield match.group(1)
    start = text.find("{")
    end = text.rfind("}")
    if start != -1 and end > start:
        yield text[start:end + 1]


def parse_verdict(text: str | None) -> tuple[Outcome, str]:
    """Parse a pairwise verdict from a judge's output.

    Accepted, in this order: a JSON object (bare or in a fenced block) with a verdict field
    (``verdict``, ``winner``, ``decision``, ``preference``, ...) whose value is A, B or a
    tie word; ``[[A]]``/``[[B]]``/``[[C]]`` tags (``C`` = tie, as in MT-Bench prompts), if
    all tags agree; a reply that *is* a label (``A``, ``**B**``, ``Assistant A``,
    ``Output (b)``, ``tie``) or starts with one on its own first line; a last
    ``Verdict: A``-style line. Hidden reasoning blocks (``<think>...</think>``) are removed
    first. Anything else, including an empty completion or contradictory tags, is
    ``Outcome.INVALID``: a verdict is never guessed.

    Returns
    -------
    (Outcome, str)
        The outcome in the order shown, and for ``INVALID`` the reason.

    Examples
    --------
    >>> parse_verdict('{"reasoning": "...", "verdict": "B"}')[0].value
    'b'
    >>> parse_verdict("Both are fine. [[C]]")[0].value
    'tie'
    >>> parse_verdict("I cannot decide.")
    (<Outcome.INVALID: 'invalid'>, 'no verdict found')
    """
    if text is None or not str(text).strip():
        return Outcome.INVALID, "empty output"
    body = strip_hidden_reasoning(str(text))
    if _OPEN_THINK.match(body):
        return Outcome.INVALID, "output ended inside hidden reasoning"
    body = body.strip()
    if not body:
        return Outcome.INVALID, "only hidden reasoning, no verdict"
    for candidate in _json_candidates(body):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            lowered = {str(k).lower(): v for k, v in data.items()}
            for name in VERDICT_FIELDS:
                if name in lowered:
                    outcome = _label(lowered[name])
                    if outcome is None:
                        return Outcome.INVALID, f"JSON field `{name}` holds {lowered[name]!r}"
                    return outcome, ""
            return Outcome.INVALID, "JSON object without a verdict field"
    tags = {m.group(1).lower() for m in _TAG.finditer(body)}
    if tags:
        if len(tags) > 1:
            return Outcome.INVALID, f"contradictory verdict tags {sorted(tags)}"
        tag = tags.pop()
        return {"a": Outcome.A, "b": Outcome.B}.get(tag, Outcome.TIE), ""
    whole = _label(body)
    if whole is not None:
        return whole, ""
    first_line = body.splitlines()[0]
    first = _label(first_line)
    if first is not None:
        return first, ""
    labelled = [m.group(1) for line in body.splitlines() if (m := _LABELLED_LINE.match(line))]
    if labelled:
        outcome = _label(labelled[-1])
        if outcome is not None:
            return outcome, ""
    return Outcome.INVALID, "no verdict found"


def parse_rubric_scores(text: str | None) -> dict | None:
    """Criterion scores ``{"A": {...}, "B": {...}}`` from a rubric reply, if present."""
    if not text:
        return None
    for candidate in _json_candidates(strip_hidden_reasoning(str(text))):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("scores"), dict):
            return data["scores"]
    return None
