"""Structured outputs: a prompt and a JSON schema in, a validated object out.

Every LLM module that must return data rather than a verdict (HUB-J's feature extraction,
factor construction and scoring; UDA's judge answers; rubric scoring) goes through
:func:`generate_structured`: the reply is parsed as JSON and validated against the schema;
a malformed reply earns a bounded number of *re-asks* (the conversation so far, the reply,
and a message naming what was wrong). Every attempt is an ordinary judge call: cached under
its own key (so a rerun pays nothing), costed, and under the run's spend cap.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._cache import CompletionCache
from fairjudge.judges._parsing import VersionedParser, first_json, strip_hidden_reasoning
from fairjudge.judges._runner import RunOptions, RunReport, execute_requests
from fairjudge.judges._types import (
    CallResult,
    Completion,
    GenerationSettings,
    JudgeRequest,
    Message,
)

REASK = ("Your previous reply could not be used: {error}. Reply again with only a JSON "
         "value that satisfies the required schema, and nothing else.")


def _validator(schema: dict):
    try:
        import jsonschema
    except ImportError as err:  # pragma: no cover - a core dependency
        raise ImportError("structured outputs need jsonschema: pip install jsonschema") \
            from err
    if not isinstance(schema, dict):
        raise FairjudgeInputError("`schema` must be a JSON schema (a dict); got "
                                  f"{type(schema).__name__}")
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as err:
        raise FairjudgeInputError(f"`schema` is not a valid JSON schema: {err.message}") from None
    return cls(schema)


@dataclass(frozen=True)
class JSONSchemaParser(VersionedParser):
    """A JSON value satisfying ``schema`` from a completion, or ``None`` and the reason.

    The text may wrap the JSON in a fenced block or surround it with prose; hidden
    reasoning (``<think>...</think>``) is removed first. The first candidate that parses is
    validated; its first schema violation is the reason given.
    """

    schema: dict
    name: str = "json-schema"
    version: str = "1"

    def parse(self, completion: Completion) -> tuple[object | None, str]:
        validator = _validator(self.schema)
        body = strip_hidden_reasoning(completion.text or "").strip()
        if not body:
            return None, "the reply was empty"
        value = first_json(body, whole=True, objects_only=False)
        if value is None:
            return None, "the reply holds no parseable JSON"
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "the top level"
            return None, f"at {where}: {errors[0].message}"
        return value, ""


@dataclass(frozen=True)
class StructuredResult:
    """The outcome of one structured-output request.

    Attributes
    ----------
    value : object or None
        The validated JSON value; None when every attempt failed (or no answer came).
    attempts : tuple of CallResult
        Every call made for it, first ask first (re-asks included; cached ones too).
    errors : tuple of str
        Why each rejected attempt was rejected, in order.
    """

    value: object
    attempts: tuple
    errors: tuple

    @property
    def ok(self) -> bool:
        return self.value is not None

    @property
    def cost_calls(self) -> int:
        """Calls paid now (not served from the cache)."""
        return sum(1 for a in self.attempts if not a.cached)


async def generate_structured(backend: JudgeBackend, prompts, schema: dict, *,
                              cache: CompletionCache | None = None,
                              options: RunOptions = RunOptions(),
                              report: RunReport | None = None,
                              settings: GenerationSettings = GenerationSettings(),
                              max_reasks: int = 2, template: str = "structured",
                              template_version: str = "1", sample: int = 0
                              ) -> list[StructuredResult]:
    """Ask for a JSON value per prompt; validate it against ``schema``; re-ask when malformed.

    Parameters
    ----------
    backend : JudgeBackend
    prompts : sequence of sequence of Message
        One conversation per request (a system message and a user message, say).
    schema : dict
        A JSON schema (any draft :mod:`jsonschema` knows; checked first).
    cache, options, report
        As for :func:`fairjudge.judges.execute_requests`: every attempt is cached, costed
        and counted against ``options.max_cost``.
    settings : GenerationSettings
        ``json_response`` is switched on (providers that support it then return JSON).
    max_reasks : int
        Re-asks per request after the first reply (0 = none). The conversation of a re-ask
        is the original one, the rejected reply and a message naming the problem, so each
        re-ask is deterministic and cached under its own key.
    template, template_version : str
        Name the prompt in cache keys and records (change the version when the prompt text
        changes).
    sample : int
        Distinguishes deliberate repeats of the same request.

    Returns
    -------
    list of StructuredResult
        In the order of ``prompts``.

    Raises
    ------
    ValueError
        If ``schema`` is not a valid JSON schema or ``max_reasks`` is negative.
    """
    if not isinstance(max_reasks, int) or isinstance(max_reasks, bool) or max_reasks < 0:
        raise FairjudgeInputError(
            f"`max_reasks` must be a non-negative integer; got {max_reasks!r}")
    parser = JSONSchemaParser(schema)
    _validator(schema)
    settings = replace(settings, json_response=True)
    report = report if report is not None else RunReport()
    conversations = [tuple(p) for p in prompts]
    attempts: list[list[CallResult]] = [[] for _ in conversations]
    errors: list[list[str]] = [[] for _ in conversations]
    values: list[object] = [None] * len(conversations)
    open_items = list(range(len(conversations)))
    for _round in range(max_reasks + 1):
        if not open_items:
            break
        requests = [JudgeRequest(messages=conversations[i], settings=settings,
                                 template=template, template_version=template_version,
                                 sample=sample, kind="generate",
                                 metadata={"structured": i}) for i in open_items]
        results = await execute_requests(backend, requests, cache=cache, options=options,
                                         report=report)
        still_open = []
        for i, result in zip(open_items, results):
            if result is None:
                continue  # no answer (cap, retries exhausted): nothing to re-ask about
            attempts[i].append(result)
            value, error = parser.parse(result.completion)
            if error:
                errors[i].append(error)
                conversations[i] = conversations[i] + (
                    Message("assistant", result.completion.text),
                    Message("user", REASK.format(error=error)))
                still_open.append(i)
            else:
                values[i] = value
        open_items = still_open
    return [StructuredResult(values[i], tuple(attempts[i]), tuple(errors[i]))
            for i in range(len(conversations))]


def run_structured(backend: JudgeBackend, prompts, schema: dict, **kwargs
                   ) -> list[StructuredResult]:
    """Synchronous :func:`generate_structured` (closes the backend afterwards)."""
    async def main():
        try:
            return await generate_structured(backend, prompts, schema, **kwargs)
        finally:
            await backend.aclose()

    return asyncio.run(main())
