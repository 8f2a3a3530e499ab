"""Provider batch APIs: a run's calls submitted as asynchronous batches, collected into the
cache, and resumed after any interruption without being submitted twice.

OpenAI's Batch API and Anthropic's Message Batches answer within 24 hours at half the list
price; ``vllm run-batch`` answers a JSONL file of requests offline on a self-hosted GPU. A
run in batch mode (``RunOptions(batch=BatchOptions(...))``, ``--batch`` or ``--batch-dir``
on the command line) goes through the same :func:`fairjudge.judges.execute_requests` as
any other run: cached answers are served first, and only the rest is batched.

Durability
----------
Every batch is recorded in the cache *before* it is submitted (its calls, their requests,
and a spend-ledger row per call at its worst case, in one transaction), then marked
``submitted`` with the provider's id. A call waiting in an open batch is never sent again,
by a batch or by an ordinary run: whichever run finds the batch ended collects every answer
in it into the cache and settles each ledger row at what the provider billed (a call the
provider refused or let expire is settled at zero: batch APIs bill only answers). An
interruption at any point therefore loses nothing and pays nothing twice:

- before the batch row is committed: nothing was submitted, nothing recorded;
- between the record and the provider's id (killed, or a create request that may have
  arrived): once the submitting process is gone, the next run asks the provider for the
  batch by the token fairjudge attached to it (OpenAI batch ``metadata``; a manifest's
  file name). Anthropic's API has no such field, and an OpenAI list that cannot be read
  to the end cannot tell either: the batch is then marked ``unknown`` and its calls stay
  blocked until the user checks the console and releases them (``fairjudge cache batches
  --forget TOKEN``), because submitting again could pay twice;
- after the id is recorded (the usual case: killed while polling): the next run polls the
  same batch and collects it.

Online calls and batches exclude each other through the cache: a call leased by a live
process paying for it online is not batched, and a batched call is never claimed online.
"""

from __future__ import annotations

import abc
import asyncio
import json
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from fairjudge._util._errors import JudgeBackendError, RequestRejected, RetryableError
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._cache import _owner_is_gone as owner_is_gone
from fairjudge.judges._cache import lease_owner, request_payload
from fairjudge.judges._types import (
    CallResult,
    Completion,
    JudgeRequest,
    Usage,
    chars_per_token_usage,
)

#: This process, as the owner of the batches it submits.
OWNER = lease_owner()

#: What :meth:`BatchAPI.find` returns when the provider cannot be asked whether a batch
#: whose submission was interrupted arrived.
UNKNOWN = "unknown"


@dataclass(frozen=True)
class BatchOptions:
    """How a run's calls go through a batch API instead of one request each.

    Attributes
    ----------
    poll_seconds : float
        Seconds between two status checks of a running batch.
    wait : bool or None
        True: poll until every batch holding a call of this run has ended, and collect it.
        False: submit, collect whatever has already ended, and return; calls still running
        come back as None and a rerun collects them. None (default): wait for a
        provider's batches, not for ``vllm run-batch`` manifests (which run only when the
        user runs them).
    max_requests : int or None
        Calls per batch (None: the provider's limit, 50,000 for OpenAI, 100,000 for
        Anthropic).
    directory : str or Path or None
        Instead of a provider's batch endpoint, write ``vllm run-batch`` input files here
        (OpenAI batch JSONL, one per batch; openai backend) and collect the output file
        the user's ``vllm run-batch -i IN -o OUT`` writes beside it. Answers are stored as
        answers of the backend's ``base_url``, so an online run against the same vLLM
        server later reuses them.
    """

    poll_seconds: float = 30.0
    wait: bool | None = None
    max_requests: int | None = None
    directory: str | Path | None = None

    def __post_init__(self):
        if not (isinstance(self.poll_seconds, (int, float)) and self.poll_seconds > 0):
            raise FairjudgeInputError(f"`poll_seconds` must be a positive number of seconds; "
                                      f"got {self.poll_seconds!r}")
        if self.max_requests is not None and (isinstance(self.max_requests, bool) or not
                                              isinstance(self.max_requests, int)
                                              or self.max_requests < 1):
            raise FairjudgeInputError(f"`max_requests` must be a positive integer; got "
                                      f"{self.max_requests!r}")


@dataclass(frozen=True)
class BatchStatus:
    """Where a submitted batch stands.

    Attributes
    ----------
    state : str
        The provider's word for it (``in_progress``, ``completed``, ``ended``, ...).
    ended : bool
        No call in it will change any more: collect its results.
    failed : str or None
        Why the whole batch failed before anything ran (nothing was billed), else None.
    done, total : int
        Calls finished so far, and in the batch.
    """

    state: str
    ended: bool
    failed: str | None = None
    done: int = 0
    total: int = 0


class BatchAPI(abc.ABC):
    """One provider's batch endpoint, as a judge backend offers it (:meth:`JudgeBackend.
    batch_api`). Results are keyed by ``custom_id``: fairjudge's cache key of the call."""

    #: ``openai``, ``anthropic`` or ``files``
    kind: str = ""
    #: Share of the list price the provider bills for a batch answer.
    price_factor: float = 1.0
    #: The provider's limits on one batch: calls, and bytes of its input.
    max_requests: int = 50_000
    max_bytes: int = 190 * 2 ** 20

    def __init__(self, backend):
        self.backend = backend

    @property
    def scope(self) -> str:
        """Which batches this API can collect: its kind, endpoint and model."""
        return f"{self.kind}|{getattr(self.backend, 'endpoint', '')}|{self.backend.model}"

    @property
    def provider(self) -> str:
        return f"{self.kind} batch ({self.backend.model})"

    def line_bytes(self, key: str, request: JudgeRequest) -> int:
        """Bytes the call adds to the batch's input (for the size limit)."""
        return len(json.dumps(self.backend.request_body(request))) + len(key) + 100

    @abc.abstractmethod
    async def submit(self, token: str, entries: list[tuple[str, JudgeRequest]]) -> str:
        """Submit ``(custom_id, request)`` pairs as one batch tagged ``token``; return the
        provider's batch id."""

    @abc.abstractmethod
    async def find(self, token: str) -> str | None:
        """The id of the batch tagged ``token`` if the provider has it, None if it does not,
        :data:`UNKNOWN` if the provider cannot tell."""

    @abc.abstractmethod
    async def status(self, remote_id: str) -> BatchStatus:
        """The batch's state."""

    @abc.abstractmethod
    async def results(self, remote_id: str) -> dict[str, Completion | str]:
        """An ended batch's answers: custom_id -> completion, or a message saying why the
        call has none (refused, expired, cancelled). Completions carry the batch's
        ``price_factor`` in their usage."""

    async def get_object(self, path: str, state_field: str) -> dict:
        """GET ``<base_url><path>`` of an HTTP provider: a batch object, which must carry a
        text ``state_field`` (else a retryable, unbilled error)."""
        backend = self.backend
        data, _ = await backend._http.send("GET", f"{backend.base_url}{path}",
                                           backend._headers, provider=self.provider)
        if not isinstance(data, dict) or not isinstance(data.get(state_field), str):
            raise RetryableError(f"{self.provider}: {path} has no {state_field}",
                                 maybe_billed=False)
        return data

    def waiting_note(self, batch: dict) -> str:
        """What the user should know about a batch still running."""
        return f"batch {batch['remote_id']} is running at the provider"

    async def aclose(self) -> None:
        """Release connections (the backend's own are closed by the run)."""


def discounted(completion: Completion, factor: float) -> Completion:
    """``completion`` with its usage billed at ``factor`` of the list price."""
    return replace(completion, usage=replace(completion.usage, price_factor=factor))


def new_token() -> str:
    """A batch token: fairjudge's own id for a batch, attached to it before submission."""
    return f"fj{uuid.uuid4().hex[:20]}"


def worst_usage(payload: dict, default_budget: int | None, factor: float) -> Usage:
    """The most a call can cost, from its request payload: prompt bytes as tokens (plus a
    per-message overhead, as :func:`fairjudge.judges._runner.estimated_input_tokens`) and
    its whole output budget, billed at ``factor``."""
    messages = payload.get("messages", [])
    prompt = sum(len(str(content).encode("utf-8")) for _, content in messages) \
        + 8 * len(messages)
    settings = payload.get("settings", {})
    budgets = [b for b in (settings.get("max_completion_tokens"), settings.get("max_tokens"))
               if b]
    budget = max(budgets) if budgets else (default_budget or 0)
    return Usage(prompt, budget, reported=False, price_factor=factor)


async def with_retries(call, options, jitter: np.random.Generator):
    """Await ``call()`` (a status check, a download, an upload), retrying retryable errors
    with the run's backoff; a provider's ``Retry-After`` takes precedence."""
    for attempt in range(options.max_retries + 1):
        try:
            return await call()
        except RetryableError as err:
            if attempt == options.max_retries:
                raise
            delay = min(options.backoff_max, err.retry_after if err.retry_after is not None
                        else options.backoff_base * 2 ** attempt)
            await asyncio.sleep(delay * (0.5 + 0.5 * float(jitter.random())))


async def run_batched(backend, pending: dict, *, cache, options, report, answers: dict,
                      bar, price) -> None:
    """Answer ``pending`` (cache key -> request) through the backend's batch API.

    Submits the calls that no open batch holds yet (within the spend cap), then polls
    every open batch of this backend's scope, collects each one that has ended into the
    cache (all its answers, this run's or not: they are paid for), and fills ``answers``
    with this run's. Calls still running are counted in ``report.batch_pending``.
    """
    if cache is None:
        raise FairjudgeInputError("batch mode needs a completion cache: the cache records "
                                  "each batch so that a later run collects it")
    api = backend.batch_api(options.batch)
    jitter = np.random.default_rng(options.seed)
    identity = backend.identity()
    wait = options.batch.wait if options.batch.wait is not None else api.kind != "files"
    if api.price_factor != 1.0:
        report.batch_notes.append(f"batch answers are billed at {api.price_factor:.0%} of the "
                                  "list price")
    try:
        await _resolve_interrupted(api, cache, report, jitter, options)
        waiting = cache.batched(pending)
        fresh = [k for k in pending if k not in waiting]
        if fresh:
            await _submit(api, fresh, pending, cache=cache, options=options, report=report,
                          identity=identity, price=price, jitter=jitter)
        await _collect(api, pending, cache=cache, options=options, report=report,
                       answers=answers, bar=bar, price=price, wait=wait, jitter=jitter)
    finally:
        await api.aclose()


async def _resolve_interrupted(api, cache, report, jitter, options) -> None:
    """Batches recorded but not known to have reached the provider, whose submitting
    process is gone: find them by token. (A live process may still be submitting.)"""
    for batch in cache.batches(scope=api.scope, open_only=True):
        if batch["state"] != "submitting" or (
                batch["owner"] and not owner_is_gone(batch["owner"])):
            continue
        found = await with_retries(lambda: api.find(batch["token"]), options, jitter)
        if found == UNKNOWN:
            cache.set_batch(batch["token"], "unknown", note=(
                "the submission was interrupted and the provider cannot be asked whether "
                "it arrived"))
        elif found is None:
            # Never submitted: release its calls (nothing was billed).
            if cache.set_batch(batch["token"], "failed", note="never reached the provider",
                               expected="submitting"):
                _settle_unanswered(cache, batch["token"])
        elif cache.set_batch(batch["token"], "submitted", remote_id=found,
                             expected="submitting"):
            report.batches_resumed += 1


def _settle_unanswered(cache, token: str, report=None) -> None:
    """Settle every call of a batch that answered nothing at zero (batch APIs bill answers
    only), releasing this run's reservations for them."""
    for key, attempt, _ in cache.batch_entries(token):
        if attempt is not None:
            cache.close_attempt(attempt, 0.0)
        if report is not None:
            _release(report, key)


def _release(report, key: str) -> None:
    """Give back the reservation this run holds for ``key`` (its batch was collected or
    answered nothing)."""
    report.ledger.reserved -= report.batch_reserved.pop(key, 0.0)


def _chunks(api, keys: list[str], pending: dict, limit: int):
    """Split ``keys`` into batches within the provider's count and size limits."""
    chunk, size = [], 0
    for key in keys:
        line = api.line_bytes(key, pending[key])
        if chunk and (len(chunk) >= limit or size + line > api.max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append(key)
        size += line
    if chunk:
        yield chunk


async def _submit(api, keys: list[str], pending: dict, *, cache, options, report, identity,
                  price, jitter) -> None:
    limit = min(options.batch.max_requests or api.max_requests, api.max_requests)
    default_budget = getattr(api.backend, "default_max_tokens", None)
    capped = options.max_cost is not None
    job = options.job if capped else None
    chunks = list(_chunks(api, keys, pending, limit))
    for number, chunk in enumerate(chunks):
        token = new_token()
        entries, worst_of = [], {}
        for key in chunk:
            payload = request_payload(identity, pending[key])
            worst_of[key] = (price.cost(worst_usage(payload, default_budget, api.price_factor))
                             if price is not None else 0.0)
            entries.append((key, worst_of[key], payload))
        # Without a job the cap counts this run's spending, its reservations (batches it
        # submitted and has not collected among them) and what earlier runs spent.
        spent = report.cost + report.cost_earlier + report.ledger.reserved
        taken, stopped = cache.open_batch(
            token, api=api.kind, scope=api.scope, identity=identity, entries=entries,
            owner=OWNER, job=job, cap=options.max_cost if capped else None, spent=spent)
        if job is None:
            for key in taken:
                report.batch_reserved[key] = worst_of[key]
                report.ledger.reserved += worst_of[key]
        if stopped is not None:
            report.stopped_by_cap = True
            report.skipped_by_cap += len(chunk) - stopped + sum(
                len(c) for c in chunks[number + 1:])
        if taken:
            remote = await _submit_one(api, token, [(k, pending[k]) for k in taken],
                                       cache=cache, options=options, report=report,
                                       jitter=jitter)
            if remote is not None:
                cache.set_batch(token, "submitted", remote_id=remote)
                report.batch_submitted += len(taken)
                report.batches.append(remote)
        if stopped is not None:
            break


async def _submit_one(api, token, requests, *, cache, options, report, jitter) -> str | None:
    """Submit one recorded batch; None when it was not submitted (its calls are released)
    or may have been (the batch stays ``submitting``, its calls held, until a later run
    asks the provider)."""
    for attempt in range(options.max_retries + 1):
        try:
            if api.kind != "files":
                report.attempts += 1
            return await api.submit(token, requests)
        except RetryableError as err:
            if err.maybe_billed:
                # The provider may have created the batch, or may still: asking now could
                # miss it and submitting again could pay twice. A later run asks.
                cache.set_batch(token, "submitting", note=str(err))
                report.errors.append(
                    f"{api.provider}: submitting batch {token} failed ({err}); the provider "
                    "may have it, so its calls are held and the next run looks it up")
                return None
            if attempt == options.max_retries:
                report.errors.append(f"{api.provider}: submitting a batch failed: {err}")
                break
            report.retries += 1
            delay = min(options.backoff_max, err.retry_after if err.retry_after is not None
                        else options.backoff_base * 2 ** attempt)
            await asyncio.sleep(delay * (0.5 + 0.5 * float(jitter.random())))
        except (RequestRejected, JudgeBackendError) as err:
            # Refused before anything was created: release the calls, nothing was billed.
            _settle_unanswered(cache, token, report)
            cache.set_batch(token, "failed", note=str(err))
            report.failed += len(requests)
            report.errors.append(f"{api.provider}: the batch was refused: {err}")
            if isinstance(err, JudgeBackendError):
                raise
            return None
    _settle_unanswered(cache, token, report)
    cache.set_batch(token, "failed", note="submission failed")
    report.failed += len(requests)
    return None


async def _collect(api, pending: dict, *, cache, options, report, answers, bar, price, wait,
                   jitter) -> None:
    """Poll the scope's open batches; collect the ended ones; wait for those holding a call
    of this run while ``wait``."""
    wanted = set(pending)
    while True:
        running = []
        for batch in cache.batches(scope=api.scope, open_only=True):
            if batch["state"] != "submitted":
                continue
            try:
                status = await with_retries(lambda: api.status(batch["remote_id"]), options,
                                            jitter)
            except JudgeBackendError as err:
                # Not concluded lost: under another API key or project the batch may exist
                # (and be billed); sending its calls again could pay twice.
                raise JudgeBackendError(
                    f"{err}. fairjudge recorded batch {batch['remote_id']} (token "
                    f"{batch['token']}) as submitted; if it was submitted with another API "
                    "key, use that key to collect it; if the provider really has no such "
                    "batch, release its calls with `fairjudge cache batches --forget "
                    f"{batch['token']}`") from None
            if status.failed is not None:
                keys = [k for k, _, _ in cache.batch_entries(batch["token"])]
                _settle_unanswered(cache, batch["token"], report)
                cache.set_batch(batch["token"], "failed", note=status.failed)
                mine = wanted.intersection(keys)
                report.failed += len(mine)
                if mine:
                    report.errors.append(f"{api.provider}: batch {batch['remote_id']} "
                                         f"failed: {status.failed}")
            elif status.ended:
                results = await with_retries(lambda: api.results(batch["remote_id"]),
                                             options, jitter)
                _ingest(api, batch, results, cache=cache, report=report, answers=answers,
                        wanted=wanted, bar=bar, price=price)
            else:
                running.append((batch, status))
        holding = [(b, s) for b, s in running
                   if wanted.intersection(k for k, _, _ in cache.batch_entries(b["token"]))]
        if bar is not None and holding:
            done = sum(s.done for _, s in holding)
            total = sum(s.total for _, s in holding)
            bar.set_postfix_str(f"batch {done}/{total} done at the provider", refresh=True)
        if not holding or not wait:
            break
        await asyncio.sleep(options.batch.poll_seconds)
    waiting = cache.batched(k for k in pending if k not in answers)
    report.batch_pending += len(waiting)
    notes, holders = {}, set(waiting.values())
    for batch in cache.batches(open_only=True):
        if batch["token"] in holders:
            notes[batch["token"]] = (api.waiting_note(batch) if batch["state"] == "submitted"
                                     and batch["scope"] == api.scope else
                                     _held_note(batch))
    report.batch_notes.extend(notes.values())


def _held_note(batch: dict) -> str:
    if batch["state"] == "unknown":
        return (f"batch {batch['token']} ({batch['api']}) holds calls whose submission was "
                "interrupted; whether the provider received it is unknown. Check the "
                "provider's batch list, then release its calls with `fairjudge cache batches "
                f"--forget {batch['token']}`")
    return (f"batch {batch['remote_id'] or batch['token']} ({batch['api']}) holds calls of "
            "this run; rerun with the same batch option to collect it")


def _ingest(api, batch: dict, results: dict, *, cache, report, answers, wanted, bar,
            price) -> None:
    """Store every answer of an ended batch and settle its ledger rows."""
    default_budget = getattr(api.backend, "default_max_tokens", None)
    entries = cache.batch_entries(batch["token"])
    stored = set(cache.get_many([key for key, _, _ in entries]))
    for key, attempt, payload in entries:
        if key in stored:
            # Collected by a run interrupted while collecting (each answer is stored and
            # settled in one transaction): neither stored nor counted again.
            continue
        result = results.get(key, "no result for this call in the batch's output")
        mine = key in wanted
        _release(report, key)
        if isinstance(result, str):
            if attempt is not None:
                cache.close_attempt(attempt, 0.0)  # batch APIs bill answers only
            if mine:
                report.failed += 1
                report.errors.append(f"{api.provider}: {result}")
            continue
        completion = result
        if not completion.usage.reported:
            worst = worst_usage(payload, default_budget, api.price_factor)
            completion = replace(completion, usage=replace(
                worst, output_tokens=max(worst.output_tokens,
                                         len(completion.text.encode("utf-8")))))
            report.usage_estimated += 1
        dollars = 0.0
        if price is None:
            report.unpriced += 1
        else:
            dollars = price.cost(completion.usage)
            if completion.usage.reported:
                report.cost_reported += dollars
            else:
                report.cost_estimated += dollars
                prompt_chars = sum(len(str(content)) for _, content in
                                   payload.get("messages", []))
                report.cost_estimated_typical += price.cost(chars_per_token_usage(
                    prompt_chars, completion.text, api.price_factor))
        report.input_tokens += completion.usage.input_tokens
        report.output_tokens += completion.usage.output_tokens
        cache.ingest(key, completion, payload, attempt, dollars)
        report.batch_collected += 1
        if mine:
            answers[key] = CallResult(key, completion, cached=False)
            report.fresh += 1
            if bar is not None:
                bar.update(1)
    cache.set_batch(batch["token"], "done")


def read_jsonl_lines(text: str, source: str) -> list[dict]:
    """Objects of a JSONL batch output; a line that is not a JSON object is reported."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise RetryableError(f"{source}: line {number} is not JSON ({line[:80]!r})",
                                 maybe_billed=False) from None
        if isinstance(record, dict):
            records.append(record)
    return records
