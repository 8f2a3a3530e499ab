"""Requests to a judge and what comes back."""

from __future__ import annotations

from dataclasses import dataclass, field

from fairjudge.data._schema import Outcome


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str
    content: str


@dataclass(frozen=True)
class GenerationSettings:
    """Settings that change a judge's output (all enter the cache key).

    Attributes
    ----------
    temperature : float or None
        ``None`` leaves the provider default (required for reasoning models that fix it,
        and for backends that take no temperature override).
    max_tokens : int or None
        Completion budget for ordinary chat models.
    max_completion_tokens : int or None
        Completion budget including hidden reasoning tokens (OpenAI reasoning models).
    json_response : bool
        Ask for a JSON object (``response_format={"type": "json_object"}``).
    logprobs : int
        Number of top log-probabilities to request for each output token (0 = none).
    reasoning_effort : str or None
        Passed through where the provider supports it.
    """

    temperature: float | None = 0.0
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    json_response: bool = False
    logprobs: int = 0
    reasoning_effort: str | None = None

    def as_dict(self) -> dict:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens,
                "max_completion_tokens": self.max_completion_tokens,
                "json_response": self.json_response, "logprobs": self.logprobs,
                "reasoning_effort": self.reasoning_effort}


@dataclass(frozen=True)
class JudgeRequest:
    """One call to a judge.

    ``messages`` are fully rendered; ``template`` and ``template_version`` name the prompt
    that produced them; ``sample`` distinguishes deliberate repeats of an identical call.
    ``labels`` maps answer labels shown to the judge to outcomes (``{"A": Outcome.A, ...}``).
    ``metadata`` carries ids for replay and bookkeeping; it never enters the cache key.
    ``kind`` is ``"verdict"`` for a pairwise judgement or ``"generate"`` for free text
    (e.g. a reference answer).
    """

    messages: tuple
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    template: str = ""
    template_version: str = ""
    sample: int = 0
    kind: str = "verdict"
    metadata: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def text(self) -> str:
        return "\n\n".join(m.content for m in self.messages)


@dataclass(frozen=True)
class Usage:
    """Token usage of one call (``reasoning_tokens`` are included in ``output_tokens``)."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0

    def as_dict(self) -> dict:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "reasoning_tokens": self.reasoning_tokens}


@dataclass(frozen=True)
class Completion:
    """What a backend returns for one request (before parsing).

    ``probabilities`` holds P(A), P(B) and P(tie) of the verdict token when the provider
    returned log-probabilities (renormalised over the labels found), else ``None``.
    ``outcome`` (an :class:`Outcome`) is set only by backends that decide directly.
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    probabilities: dict | None = None
    finish_reason: str | None = None
    outcome: object = None
    """Set by backends that decide without text parsing (replay, hf, simulated)."""


@dataclass(frozen=True)
class Verdict:
    """A parsed judge call.

    Attributes
    ----------
    key : str
        Cache key of the call.
    outcome : Outcome
        ``A``/``B``/``TIE`` in the shown order, ``INVALID`` if the output did not parse.
    raw : str
        The judge's text (kept even when invalid).
    probabilities : dict or None
    usage : Usage
    latency : float
        Seconds spent waiting for the provider (0 for a cache hit).
    cached : bool
    retries : int
    detail : str
        Why a verdict is invalid (empty output, unparseable text, ...), else ``""``.
    """

    key: str
    outcome: Outcome
    raw: str
    probabilities: dict | None = None
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    cached: bool = False
    retries: int = 0
    detail: str = ""
