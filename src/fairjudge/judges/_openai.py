"""OpenAI-compatible Chat Completions backend (OpenAI, vLLM, Ollama, llama.cpp server,
OpenRouter, DeepSeek, Gemini's OpenAI-compatible endpoint)."""

from __future__ import annotations

from fairjudge._util._errors import JudgeBackendError
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._cache import normalise_endpoint
from fairjudge.judges._http import HTTPClient, api_key_from_env
from fairjudge.judges._types import Completion, JudgeRequest, Usage

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
        logprobs = choice.get("logprobs")
        return Completion(
            text=content,
            usage=Usage(int(usage.get("prompt_tokens") or 0),
                        int(usage.get("completion_tokens") or 0),
                        int(details.get("reasoning_tokens") or 0)),
            latency=elapsed,
            finish_reason=choice.get("finish_reason"),
            logprobs=logprobs.get("content") if isinstance(logprobs, dict) else None,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

