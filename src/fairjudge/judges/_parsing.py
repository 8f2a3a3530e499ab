"""Turning a judge's text into an outcome, without ever guessing."""

from __future__ import annotations

import json
import re

from fairjudge.data._schema import Outcome

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"^\s*<(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSE_THINK = re.compile(r"</(think|thinking|reasoning)>", re.IGNORECASE)
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

    Recognised forms: a JSON object (bare or in a fenced block) with a verdict field
    (``verdict``, ``winner``, ``decision``, ``preference``, ...) whose value is A, B or a
    tie word; ``[[A]]``/``[[B]]``/``[[C]]`` tags (``C`` = tie, as in MT-Bench prompts); a
    reply that *is* a label (``A``, ``**B**``, ``Assistant A``, ``Output (b)``, ``tie``)
    or starts with one on its own first line; ``Verdict: A``-style lines. Hidden reasoning
    is removed first: complete ``<think>...</think>`` blocks, and everything before a lone
    closing ``</think>`` (models served without a reasoning parser). Every form present must
    agree; anything else -- an empty completion, contradictory forms, an unknown label --
    is ``Outcome.INVALID``: a verdict is never guessed.

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
    body = str(text)
    closing = list(_CLOSE_THINK.finditer(body))
    if closing:
        body = body[closing[-1].end():]
        if not body.strip():
            return Outcome.INVALID, "only hidden reasoning, no verdict"
    body = strip_hidden_reasoning(body)
    if _OPEN_THINK.match(body):
        return Outcome.INVALID, "output ended inside hidden reasoning"
    body = body.strip()
    if not body:
        return Outcome.INVALID, "only hidden reasoning, no verdict"
    found: dict[str, Outcome] = {}
    for candidate in _json_candidates(body):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            lowered = {str(k).lower(): v for k, v in data.items()}
            field = next((name for name in VERDICT_FIELDS if name in lowered), None)
            if field is None:
                return Outcome.INVALID, "JSON object without a verdict field"
            outcome = _label(lowered[field])
            if outcome is None:
                return Outcome.INVALID, f"JSON field `{field}` holds {lowered[field]!r}"
            found["json"] = outcome
            break
    tags = {m.group(1).lower() for m in _TAG.finditer(body)}
    if len(tags) > 1:
        return Outcome.INVALID, f"contradictory verdict tags {sorted(tags)}"
    if tags:
        found["tag"] = {"a": Outcome.A, "b": Outcome.B}.get(tags.pop(), Outcome.TIE)
    leading = _label(body)
    if leading is None:
        leading = _label(body.splitlines()[0])
    if leading is not None:
        found["label"] = leading
    labelled = [m.group(1) for line in body.splitlines() if (m := _LABELLED_LINE.match(line))]
    lines = {o for o in map(_label, labelled) if o is not None}
    if len(lines) > 1:
        return Outcome.INVALID, "contradictory verdict lines"
    if lines:
        found["line"] = lines.pop()
    outcomes = set(found.values())
    if len(outcomes) > 1:
        forms = ", ".join(f"{k}={v.value}" for k, v in found.items())
        return Outcome.INVALID, f"contradictory verdicts ({forms})"
    if outcomes:
        return outcomes.pop(), ""
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
