"""Parsers: turning a cached completion into a verdict, scores or an object.

Parsers run *after* the cache (generate, then parse): a completion is stored as the
provider returned it, and every parser carries a version, recorded with what it produced.
Fixing a parser therefore re-parses cached completions without paying for a single call.
A verdict is never guessed: anything ambiguous is ``Outcome.INVALID`` with a reason.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from fairjudge.data._schema import Outcome
from fairjudge.judges._types import Completion, Verdict

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


def first_json(text: str, *, whole: bool = False, objects_only: bool = True):
    """The first JSON value in a reply, or None: the whole text (with ``whole``), then each
    fenced block, then the span from the first ``{`` to the last ``}``. With
    ``objects_only`` only a JSON object counts."""
    candidates = ([text] if whole else []) + list(_json_candidates(text))
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if not objects_only or isinstance(data, dict):
            return data
    return None


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
    data = first_json(body)
    if data is not None:
        lowered = {str(k).lower(): v for k, v in data.items()}
        field = next((name for name in VERDICT_FIELDS if name in lowered), None)
        if field is None:
            return Outcome.INVALID, "JSON object without a verdict field"
        outcome = _label(lowered[field])
        if outcome is None:
            return Outcome.INVALID, f"JSON field `{field}` holds {lowered[field]!r}"
        found["json"] = outcome
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
    data = first_json(strip_hidden_reasoning(str(text)))
    if data is not None and isinstance(data.get("scores"), dict):
        return data["scores"]
    return None


# ----------------------------------------------------------------------------- versioned parsers

_LABELS = {"A": "A", "B": "B"}


def verdict_probabilities(logprobs, text: str) -> dict | None:
    """P(A), P(B), P(tie) of the verdict token, for a reply that is just a label.

    Only a bare-label reply (``"A"``, ``"B"``, ``"tie"``; e.g. the ``letter`` template)
    has a verdict token whose probabilities mean anything: in a JSON or reasoning reply the
    first "A" may be an article. The first non-blank output token must be that label
    (case-sensitive); the top alternatives' probabilities are summed per label over
    spellings (``"A"``, ``" A"``) and renormalised over the labels present.

    Parameters
    ----------
    logprobs : list of dict or None
        Per output token ``{"token", "logprob", "top_logprobs": [...]}`` (see
        :class:`~fairjudge.judges.Completion`).
    text : str
        The completion text.
    """
    if not isinstance(logprobs, list) or not logprobs:
        return None
    stripped = text.strip()
    if stripped.upper() not in _LABELS and stripped.lower() != "tie":
        return None

    def label_of(token) -> str | None:
        token = str(token).strip()
        return _LABELS.get(token) or ("tie" if token.lower() == "tie" else None)

    entry = next((e for e in logprobs if isinstance(e, dict)
                  and str(e.get("token", "")).strip()), None)
    if entry is None or label_of(entry.get("token", "")) is None:
        return None
    mass: dict[str, float] = {}
    for alt in entry.get("top_logprobs") or [entry]:
        if not isinstance(alt, dict):
            continue
        label = label_of(alt.get("token", ""))
        logprob = alt.get("logprob")
        if label is not None and isinstance(logprob, (int, float)) and math.isfinite(logprob):
            mass[label] = mass.get(label, 0.0) + math.exp(float(logprob))
    total = sum(mass.values())
    if total <= 0:
        return None
    return {label: value / total for label, value in sorted(mass.items())}


@dataclass(frozen=True)
class ParsedVerdict:
    """A verdict read from one completion (before it is joined to its request)."""

    outcome: Outcome
    detail: str = ""
    probabilities: dict | None = None


@dataclass(frozen=True)
class VerdictParser:
    """Pairwise verdict from a completion: :func:`parse_verdict` on the text, the label
    scores of backends that score labels directly (argmax, first label on an exact tie),
    or the decision of backends that decide without text (replay, simulated).

    ``version`` changes whenever the result for some completion changes.
    """

    name: str = "verdict"
    version: str = "1"

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def parse(self, completion: Completion, *, kind: str = "verdict") -> ParsedVerdict:
        if completion.outcome is not None:
            return ParsedVerdict(Outcome(completion.outcome))
        if completion.label_probabilities:
            probabilities = dict(completion.label_probabilities)
            keys = [k for k in ("A", "B", "tie") if k in probabilities]
            best = max(keys, key=lambda k: (probabilities[k], -keys.index(k)))
            outcome = {"A": Outcome.A, "B": Outcome.B, "tie": Outcome.TIE}[best]
            return ParsedVerdict(outcome, "", probabilities)
        outcome, detail = parse_verdict(completion.text)
        if outcome is Outcome.INVALID and completion.finish_reason == "length":
            detail += " (the completion budget ran out; raise max tokens)"
        return ParsedVerdict(outcome, detail,
                             verdict_probabilities(completion.logprobs, completion.text))


@dataclass(frozen=True)
class RubricParser:
    """Per-criterion rubric scores ``{"A": {...}, "B": {...}}`` (S4, S7, S8), or None."""

    name: str = "rubric"
    version: str = "1"

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def parse(self, completion: Completion) -> dict | None:
        return parse_rubric_scores(completion.text)


_LIKERT_FIELDS = ("score", "rating", "likert")
_LIKERT_LINE = re.compile(r"(?:score|rating)\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE)


@dataclass(frozen=True)
class LikertParser:
    """A score on a closed integer scale (``low``..``high``) from a completion.

    Accepted: a JSON object with ``score``/``rating``; a ``Score: 4`` line; a reply that is
    just the number. Several different scores, a non-integer, or a value off the scale is
    ``None`` with the reason.
    """

    low: int = 1
    high: int = 5
    name: str = "likert"
    version: str = "1"

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def parse(self, completion: Completion) -> tuple[int | None, str]:
        body = strip_hidden_reasoning(completion.text or "").strip()
        if not body:
            return None, "empty output"
        found = []
        data = first_json(body)
        if data is not None:
            lowered = {str(k).lower(): v for k, v in data.items()}
            field = next((f for f in _LIKERT_FIELDS if f in lowered), None)
            if field is not None:
                found.append(lowered[field])
        found += [m.group(1) for m in _LIKERT_LINE.finditer(body)]
        if not found and re.fullmatch(r"-?\d+(?:\.\d+)?", body):
            found.append(body)
        values = set()
        for value in found:
            if isinstance(value, bool):
                return None, f"score {value!r} is not a number"
            try:
                number = float(value)
            except (TypeError, ValueError, OverflowError):
                return None, f"score {value!r} is not a number"
            if not math.isfinite(number):
                return None, f"score {value!r} is not a finite number"
            values.add(number)
        if not values:
            return None, "no score found"
        if len(values) > 1:
            return None, f"contradictory scores {sorted(values)}"
        score = values.pop()
        if score != int(score) or not self.low <= score <= self.high:
            return None, f"score {score:g} is not an integer from {self.low} to {self.high}"
        return int(score), ""


VERDICT_PARSER = VerdictParser()
RUBRIC_PARSER = RubricParser()


def parse_verdicts(results, parser: VerdictParser = VERDICT_PARSER) -> list[Verdict | None]:
    """Parse :class:`CallResult` objects (``None`` stays ``None``) into verdicts."""
    out = []
    for result in results:
        if result is None:
            out.append(None)
            continue
        parsed = parser.parse(result.completion)
        c = result.completion
        out.append(Verdict(key=result.key, outcome=parsed.outcome, raw=c.text,
                           probabilities=parsed.probabilities, usage=c.usage, latency=c.latency,
                           cached=result.cached, retries=result.retries, detail=parsed.detail,
                           parser=parser.label))
    return out
