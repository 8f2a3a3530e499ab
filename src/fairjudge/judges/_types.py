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
    """Token usage of one call (``reasoning_tokens`` are included in ``output_tokens``).

    ``reported`` is False when the provider sent no usable usage and the counts are
    fairjudge's conservative estimate (prompt bytes as tokens plus the full output budget).
    ``price_factor`` is the share of the list price the provider bills for these tokens:
    0.5 for answers from the OpenAI and Anthropic batch APIs, 1 otherwise.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    reported: bool = True
    price_factor: float = 1.0

    def as_dict(self) -> dict:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "reasoning_tokens": self.reasoning_tokens, "usage_reported": self.reported,
                "price_factor": self.price_factor}


def chars_per_token_usage(prompt_chars: int, output_text: str,
                          price_factor: float = 1.0) -> Usage:
    """The usual estimate of an answer's usage when the provider reports none: one token per
    four characters of prompt and of output, rounded up [debiasing-strategies-study, cost
    accounting]. A typical figure, not a bound (it can be 4x low for CJK text), so it is
    reported beside the worst case and never counted against a spend cap."""
    return Usage(-(-int(prompt_chars) // 4), -(-len(output_text) // 4), reported=False,
                 price_factor=price_factor)


@dataclass(frozen=True)
class Completion:
    """What a backend returns for one request: raw material, not yet a verdict.

    The cache stores completions; parsers (:mod:`fairjudge.judges._parsing`) turn them into
    verdicts, scores or objects afterwards, so a parser fix never needs a paid call.

    Attributes
    ----------
    text : str
        The completion text.
    usage : Usage
    latency : float
        Seconds the provider took.
    finish_reason : str or None
        ``stop``, ``length``, ... as the provider reported it.
    logprobs : list of dict or None
        Per output token, the provider's log-probabilities as
        ``{"token", "logprob", "top_logprobs": [{"token", "logprob"}, ...]}``.
    label_probabilities : dict or None
        ``{"A": p, "B": p[, "tie": p]}`` in the shown order, from backends that score the
        answer labels directly (the ``hf`` backend's next-token logits).
    outcome : Outcome or None
        Set only by backends that decide without text and are never cached (replay,
        simulated): the verdict parser takes it as is.
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    finish_reason: str | None = None
    logprobs: list | None = None
    label_probabilities: dict | None = None
    outcome: object = None


@dataclass(frozen=True)
class CallResult:
    """One answered request: the completion and how it was obtained.

    Attributes
    ----------
    key : str
        Cache key of the request.
    completion : Completion
    cached : bool
        Served from the cache (nothing paid now).
    retries : int
        Failed attempts before the answer (0 for a cache hit).
    """

    key: str
    completion: Completion
    cached: bool = False
    retries: int = 0


@dataclass(frozen=True)
class Verdict:
    """A pairwise verdict parsed from a completion.

    Attributes
    ----------
    key : str
        Cache key of the call.
    outcome : Outcome
        ``A``/``B``/``TIE`` in the shown order, ``INVALID`` if the output did not parse.
    raw : str
        The judge's text (kept even when invalid).
    probabilities : dict or None
        P(A), P(B)[, P(tie)] of the verdict label when log-probabilities or label scores
        were available.
    usage : Usage
    latency : float
        Seconds spent waiting for the provider (as recorded when it was paid).
    cached : bool
    retries : int
    detail : str
        Why a verdict is invalid (empty output, unparseable text, ...), else ``""``.
    parser : str
        ``name@version`` of the parser that produced it.
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
    parser: str = ""
