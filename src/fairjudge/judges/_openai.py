"""OpenAI-compatible Chat Completions backend (OpenAI, vLLM, Ollama, llama.cpp server,
OpenRouter, DeepSeek, Gemini's OpenAI-compatible endpoint)."""

from __future__ import annotations

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._cache import normalise_endpoint
from fairjudge.judges._http import HTTPClient, api_key_from_env, reported_usage, wire_error
from fairjudge.judges._types import Completion, JudgeRequest

DEFAULT_BASE_URL = "https://api.openai.com/v1"


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
    key_port : bool
        Keep the port in the endpoint that enters the cache key (default). False lets a
        local server that restarts on another port reuse its cached answers.
    """

    name = "openai"

    def __init__(self, model: str, *, base_url: str = DEFAULT_BASE_URL,
                 api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0,
                 max_connections: int = 0, extra_body: dict | None = None,
                 key_port: bool = True):
        if not model:
            raise FairjudgeInputError("`model` is required for the openai backend")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.extra_body = dict(extra_body or {})
        self.endpoint = normalise_endpoint(self.base_url, keep_port=key_port)
        key = api_key_from_env(api_key_env, base_url=self.base_url,
                               default_base_url=DEFAULT_BASE_URL, provider=f"openai:{model}")
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self._http = HTTPClient(timeout=timeout, max_connections=max_connections)

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model, "extra_body": self.extra_body,
                "endpoint": self.endpoint}

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
        provider = f"openai:{self.model}"
        data, elapsed = await self._http.post_json(
            f"{self.base_url}/chat/completions", self._headers, self.request_body(request),
            provider=provider)
        return parse_chat_completion(data, elapsed, provider)

    async def aclose(self) -> None:
        await self._http.aclose()



def parse_chat_completion(data, elapsed: float, provider: str) -> Completion:
    """A Chat Completions answer checked against the wire schema.

    Anything that does not follow it -- a body that is not an object, an ``error`` object in
    a 200, no ``choices``, a message whose content is neither text nor text parts -- is a
    retryable failure with a clear message (the model may have run, so it counts as possibly
    billed). Usage that is missing or not a plausible token count gives
    ``Usage(reported=False)``: the runner then charges the call's worst case.
    """
    if not isinstance(data, dict):
        raise wire_error(provider, f"expected a JSON object, got {type(data).__name__}")
    if data.get("error"):
        raise wire_error(provider, f"an error object in a 200 answer: "
                                   f"{str(data['error'])[:200]}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise wire_error(provider, "no `choices`")
    choice = choices[0]
    message = choice.get("message")
    if message is None:
        message = {}
    if not isinstance(message, dict):
        raise wire_error(provider, f"`message` is a {type(message).__name__}, not an object")
    content = message.get("content")
    if content is None:
        content = ""
    elif isinstance(content, list):  # some servers return content parts
        if not all(isinstance(part, dict) and isinstance(part.get("text", ""), str)
                   for part in content):
            raise wire_error(provider, "message content parts are not text parts")
        content = "".join(part.get("text", "") for part in content)
    elif not isinstance(content, str):
        raise wire_error(provider, f"message content is a {type(content).__name__}, not text")
    finish = choice.get("finish_reason")
    logprobs = choice.get("logprobs")
    return Completion(
        text=content,
        usage=reported_usage(data.get("usage"), "prompt_tokens", "completion_tokens"),
        latency=elapsed,
        finish_reason=finish if isinstance(finish, str) else None,
        logprobs=(logprobs.get("content") if isinstance(logprobs, dict)
                  and isinstance(logprobs.get("content"), list) else None),
    )
