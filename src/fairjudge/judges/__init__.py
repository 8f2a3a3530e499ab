"""Judge backends, prompts, output parsing and the durable verdict cache.

Backends (loaded lazily, each behind an optional extra): ``openai`` (any OpenAI-compatible
Chat Completions server), ``anthropic`` (Messages API), ``hf`` (a local transformers causal
LM scored by next-token logits), ``replay`` (recorded verdicts) and ``simulated`` (Eq. 1 with
bias knobs). :mod:`fairjudge.judges.testing` holds a loopback provider server for tests.
"""

from fairjudge.judges._base import (BACKENDS, JudgeBackend, JudgeBackendError, RequestRejected,
                                    RetryableError, get_backend, register_backend)
from fairjudge.judges._cache import VerdictCache, cache_key
from fairjudge.judges._parsing import parse_rubric_scores, parse_verdict, strip_hidden_reasoning
from fairjudge.judges._prompts import BUILTIN_TEMPLATES, RUBRIC, PromptTemplate, load_templates
from fairjudge.judges._runner import (Price, PriceTable, RateLimiter, RunOptions, RunReport,
                                      execute_requests, run_requests)
from fairjudge.judges._types import (Completion, GenerationSettings, JudgeRequest, Message,
                                     Usage, Verdict)

__all__ = [
    "BACKENDS",
    "BUILTIN_TEMPLATES",
    "RUBRIC",
    "Completion",
    "GenerationSettings",
    "JudgeBackend",
    "JudgeBackendError",
    "JudgeRequest",
    "Message",
    "Price",
    "PriceTable",
    "PromptTemplate",
    "RequestRejected",
    "RateLimiter",
    "RetryableError",
    "RunOptions",
    "RunReport",
    "Usage",
    "Verdict",
    "VerdictCache",
    "cache_key",
    "execute_requests",
    "get_backend",
    "load_templates",
    "parse_rubric_scores",
    "parse_verdict",
    "register_backend",
    "run_requests",
    "strip_hidden_reasoning",
]
