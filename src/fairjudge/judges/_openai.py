"""OpenAI-compatible Chat Completions backend (OpenAI, vLLM, Ollama, llama.cpp server,
OpenRouter, DeepSeek, Gemini's OpenAI-compatible endpoint)."""

from __future__ import annotations

import math
import os

from fairjudge.judges._base import JudgeBackend, JudgeBackendError
from fairjudge.judges._http import HTTPClient
from fairjudge.judges._types import Completion, JudgeRequest, Usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LABELS = {"A": "A", "B": "B", "tie": "tie"}


class OpenAIBackend(JudgeBackend):
    """Chat Completions over HTTP.

    Parameters
    ----------
    model : str
        Model id sent to the server.
    base_url : str
        API root (``.../v1``); ``/chat/completions`` is appended.
    api_key_env : str
        Environment variable holding the key (read at construction, never stored in caches
        or outputs). For a non-default ``base_url`` a missing key sends ``EMPTY``, which
        local servers accept.
    timeout : float
        Per-request timeout in seconds.
    max_connections : int
        Connection pool size (0 = unlimited; the run's concurrency limit bounds it).
    extra_body : dict, optional
        Extra JSON fields sent with every request (they enter the cache key).
    """

    name = "openai"

    def __init__(self, model: str, *, base_url: str = DEFAULT_BASE_URL,
                 api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0,
                 max_connections: int = 0, extra_body: dict | None = None):
        if not model:
            raise ValueError("`model` is required for the openai backend")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.extra_body = dict(extra_body or {})
        key = os.environ.get(api_key_env)
        if not key:
            if self.base_url == DEFAULT_BASE_URL:
                raise JudgeBackendError(f"set the {api_key_env} environment variable to call "
                                        f"{self.base_url}")
            key = "EMPTY"
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self._http = HTTPClient(timeout=timeout, max_connections=max_connections)

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model, "extra_body": self.extra_body}

    def request_body(self, request: JudgeRequest) -> dict:
        s = request.settings
        body = {"model": self.model,
                "messages": [{"role": m.role, "content": m.content} for m in request.messages]}
        if s.temperature is not None:
            body["temperature"] = s.temperature
        if s.max_tokens is not None:
            body["max_tokens"] = s.max_tokens
        if s.max_completion_tokens is not None:
            body["max_completion_tokens"] = s.max_completion_tokens
        if s.json_response:
            body["response_format"] = {"type": "json_object"}
        if s.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = int(s.logprobs)
        if s.reasoning_effort:
            body["reasoning_effort"] = s.reasoning_effort
        body.update(self.extra_body)
        return body

    async def complete(self, request: JudgeRequest) -> Completion:
        data, elapsed = await self._http.post_json(
            f"{self.base_url}/chat/completions", self._headers, self.request_body(request),
            provider=f"openai:{self.model}")
        try:
            choice = data["choices"][0]
            message = choice.get("message") or {}
        except (KeyError, IndexError, TypeError):
            raise JudgeBackendError(f"openai:{self.model}: response without choices: "
                                    f"{str(data)[:200]}") from None
        content = message.get("content") or ""
        if isinstance(content, list):  # some servers return content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        usage = data.get("usage") or {}
        details = usage.get("completion_tokens_details") or {}
        return Completion(
            text=content,
            usage=Usage(int(usage.get("prompt_tokens") or 0),
                        int(usage.get("completion_tokens") or 0),
                        int(details.get("reasoning_tokens") or 0)),
            latency=elapsed,
            probabilities=verdict_probabilities(choice.get("logprobs"), content),
            finish_reason=choice.get("finish_reason"),
        )

    async def aclose(self) -> None:
        await self._http.aclose()


def verdict_probabilities(logprobs, text: str) -> dict | None:
    """P(A), P(B), P(tie) of the verdict token, for a reply that is just a label.

    Only a bare-label reply (``"A"``, ``"B"``, ``"tie"``; e.g. the ``letter`` template)
    has a verdict token whose probabilities mean anything: in a JSON or reasoning reply the
    first "A" may be an article. The first non-blank output token must be that label
    (case-sensitive); the top alternatives' probabilities are summed per label over
    spellings (``"A"``, ``" A"``) and renormalised over the labels present.
    """
    if not isinstance(logprobs, dict) or not logprobs.get("content"):
        return None
    if text.strip().upper() not in LABELS and text.strip().lower() != "tie":
        return None
    entry = next((e for e in logprobs["content"] if str(e.get("token", "")).strip()), None)
    if entry is None or LABELS.get(str(entry.get("token", "")).strip()) is None and \
            str(entry.get("token", "")).strip().lower() != "tie":
        return None
    mass: dict[str, float] = {}
    for alt in entry.get("top_logprobs") or [entry]:
        token = str(alt.get("token", "")).strip()
        label = LABELS.get(token) or ("tie" if token.lower() == "tie" else None)
        if label is not None and alt.get("logprob") is not None:
            mass[label] = mass.get(label, 0.0) + math.exp(float(alt["logprob"]))
    total = sum(mass.values())
    if total <= 0:
        return None
    return {label: value / total for label, value in sorted(mass.items())}
