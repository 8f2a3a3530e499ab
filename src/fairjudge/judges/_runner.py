"""Running many judge requests: cache first, then bounded, rate-limited, retried calls."""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fairjudge._util._errors import JudgeBackendError, RequestRejected, RetryableError
from fairjudge._util._files import read_json_file
from fairjudge._util._gc import fewer_young_collections
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._cache import (
    BATCHED,
    BUSY,
    CLAIMED,
    CompletionCache,
    keyed_payload,
    lease_owner,
    legacy_cache_key,
)
from fairjudge.judges._types import CallResult, JudgeRequest, Usage, chars_per_token_usage

if TYPE_CHECKING:  # pragma: no cover
    from fairjudge.judges._batch import BatchOptions


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def __post_init__(self):
        for name in ("input_per_mtok", "output_per_mtok"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0:
                raise FairjudgeInputError(f"price `{name}` must be a non-negative finite "
                                          f"number of dollars per million tokens; got {value!r}")

    def cost(self, usage: Usage) -> float:
        """Dollars billed for ``usage``: list price times its ``price_factor`` (batch
        discounts)."""
        return (usage.input_tokens * self.input_per_mtok
                + usage.output_tokens * self.output_per_mtok) / 1e6 * usage.price_factor


def answer_cost(price, usage, request: JudgeRequest, text: str) -> tuple[float, bool]:
    """Dollars of one answer and whether they are an estimate.

    With the provider's usage, its price; without it (``usage.reported`` False: the runner
    stored the worst case, which the spend cap counted), the strategies study's estimate of
    characters / 4 tokens of prompt and of answer, marked ``True``. NaN without a price.
    """
    if price is None:
        return float("nan"), not usage.reported
    if usage.reported:
        return price.cost(usage), False
    prompt_chars = sum(len(m.content) for m in request.messages)
    return price.cost(chars_per_token_usage(prompt_chars, text or "", usage.price_factor)), True


#: A date suffix on a model id (``-2024-07-18``, ``-20241022``), dropped when a price is
#: looked up, so a dated snapshot takes its base model's price.
_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


class PriceTable(dict):
    """Model id -> :class:`Price`. Load with :meth:`from_file` (JSON
    ``{"model": {"input": 0.15, "output": 0.60}}``, dollars per million tokens; keys
    starting with ``_`` are notes) or :meth:`builtin`. A model id with a date suffix
    (``gpt-4o-mini-2024-07-18``) takes its base id's price unless it has its own.
    ``date`` says when the prices were published (None for a user's table)."""

    date: str | None = None
    builtin_models: frozenset = frozenset()

    def is_builtin(self, model) -> bool:
        """Whether ``model``'s price is a built-in list price (not from a user's file)."""
        return model in self.builtin_models or (
            model not in self and _DATE_SUFFIX.sub("", str(model)) in self.builtin_models)

    def get(self, model, default=None):
        if model in self:
            return self[model]
        base = _DATE_SUFFIX.sub("", str(model))
        return super().get(base, default)

    @classmethod
    def builtin(cls) -> "PriceTable":
        """The list prices fairjudge ships (``fairjudge/judges/prices.json``, dated)."""
        from importlib.resources import files

        data = json.loads(files("fairjudge.judges").joinpath("prices.json").read_text())
        table = cls.from_dict(data, source="built-in prices")
        table.date = data.get("_date")
        table.builtin_models = frozenset(table)
        return table

    def updated(self, other: "PriceTable") -> "PriceTable":
        """This table with ``other``'s entries added or overriding (a user's file over the
        built-in prices)."""
        merged = PriceTable({**self, **other})
        merged.date = self.date
        merged.builtin_models = frozenset(self.builtin_models - set(other))
        return merged

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "PriceTable":
        path = Path(path)
        return cls.from_dict(read_json_file(path, "price"), source=path.name)

    @classmethod
    def from_dict(cls, data, *, source: str = "prices") -> "PriceTable":
        """From ``{"model": {"input": $/Mtok, "output": $/Mtok}}``; NaN, infinite, negative
        or non-numeric prices are refused, naming the model."""
        table = cls()
        for model, spec in (data.items() if isinstance(data, dict) else []):
            if str(model).startswith("_"):
                continue  # a note (`_date`, `_about`), not a model
            if not isinstance(spec, dict) or not {"input", "output"} <= set(spec):
                raise FairjudgeInputError(
                    f"{source}: price of `{model}` needs numeric `input` and `output` "
                    "(dollars per million tokens)")
            values = {}
            for side in ("input", "output"):
                value = spec[side]
                try:
                    number = float(value)
                except (TypeError, ValueError):
                    number = float("nan")
                if isinstance(value, (bool, str)) or not 0 <= number < math.inf:
                    raise FairjudgeInputError(
                        f"{source}: `{side}` price of `{model}` must be a non-negative finite "
                        f"number of dollars per million tokens; got {value!r}")
                values[side] = number
            table[model] = Price(values["input"], values["output"])
        if not table:
            raise FairjudgeInputError(f"{source}: no prices found; expected "
                                      '{"model": {"input": ..., "output": ...}}')
        return table


@dataclass(frozen=True)
class RunOptions:
    """How a batch of requests is executed.

    Attributes
    ----------
    concurrency : int
        Requests in flight at once.
    requests_per_minute, tokens_per_minute : float or None
        Client-side rate limits. Tokens are reserved before a call (prompt estimate plus
        the output budget) and corrected by the usage the provider reports (see
        :class:`TokenRateLimiter`).
    max_retries : int
        Retries per request on 429, 5xx, timeouts, dropped connections and malformed bodies.
    backoff_base, backoff_max : float
        Exponential backoff ``min(max, base * 2**attempt)`` seconds with jitter in
        [50%, 100%]; a provider's ``Retry-After`` takes precedence.
    max_cost : float or None
        Hard spend cap in dollars for the whole job, across reruns: an attempt is sent only
        if the money spent on the job's calls (by this run and, recorded in the cache's
        spend ledger, by earlier runs -- attempts that died in flight count at their worst
        case), plus the worst case of every attempt in flight, plus this attempt's worst
        case stays within the cap. Every attempt counts, retries included; a failed attempt
        the provider may have billed is charged its worst case.
    prices : PriceTable or None
        Needed for cost reports and for ``max_cost``.
    progress : bool
        Show a progress bar with ETA on stderr.
    seed : int
        Seeds the backoff jitter.
    lease_seconds : float
        How long a claim on a key (see :meth:`CompletionCache.claim`) lasts before another
        process may take it over. Keys are claimed in groups ahead of their calls, and a
        lease is renewed right before any attempt (retries included) once half of it has
        passed. At least twice the backend's timeout is used.
    batch : BatchOptions or None
        Send the calls through the backend's batch API (OpenAI Batch, Anthropic Message
        Batches: half the price, answers within 24 h) or as ``vllm run-batch`` files,
        instead of one request each; see :mod:`fairjudge.judges._batch`. Concurrency and
        rate limits do not apply; the spend cap does (each call reserves its worst case at
        the batch price until its batch is collected).
    job : str or None
        Names the job that ``max_cost`` bounds: every run and every process with the same
        job on the same cache share one cap, checked against the cache's spend ledger
        before each attempt (the command line uses a hash of its arguments without
        ``--max-cost``, so a rerun, or the same command started twice, is one job). None:
        the cap bounds this run plus what earlier runs spent on the same calls.
    """

    concurrency: int = 16
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_retries: int = 8
    backoff_base: float = 0.5
    backoff_max: float = 60.0
    max_cost: float | None = None
    prices: PriceTable | None = None
    progress: bool = False
    seed: int = 0
    lease_seconds: float = 300.0
    job: str | None = None
    batch: BatchOptions | None = None


class SpendLedger:
    """Money reserved by calls in flight, shared by every backend of a run."""

    def __init__(self):
        self.reserved = 0.0
        self.in_flight = 0
        self.stop = False
        self._condition = None

    @property
    def condition(self) -> asyncio.Condition:
        if self._condition is None:
            self._condition = asyncio.Condition()
        return self._condition


@dataclass
class RunReport:
    """What a run did; updated live, so it is meaningful after an interruption too.

    Money is counted three ways, all against the spend cap: ``cost_reported`` (answers whose
    provider reported usage), ``cost_estimated`` (answers without usable usage, charged at
    their worst case: prompt bytes as tokens plus the full output budget) and
    ``cost_failed`` (the worst case of every failed attempt the provider may have billed: a
    timeout, a dropped or truncated answer, a server error). ``cost`` is their sum: what this
    run spent. ``cost_earlier`` is what earlier runs of the same calls spent (from the
    cache's ledger), which the cap counts too. ``cost_estimated_typical`` prices the same
    answers without usage at characters / 4 tokens (the strategies study's estimate): what
    they most likely cost, reported beside the worst case and never counted against the cap.
    """

    requested: int = 0
    distinct: int = 0
    cache_hits: int = 0
    fresh: int = 0
    invalid: int = 0
    retries: int = 0
    failed: int = 0
    skipped_by_cap: int = 0
    attempts: int = 0
    failed_attempts_billed: int = 0
    usage_estimated: int = 0
    answered_elsewhere: int = 0
    legacy_adopted: int = 0
    unpriced: int = 0
    batch_submitted: int = 0
    batch_collected: int = 0
    batch_pending: int = 0
    batches_resumed: int = 0
    cost_reported: float = 0.0
    cost_estimated: float = 0.0
    cost_estimated_typical: float = 0.0
    cost_failed: float = 0.0
    cost_earlier: float = 0.0
    max_cost: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    elapsed: float = 0.0
    stopped_by_cap: bool = False
    interrupted: bool = False
    errors: list = field(default_factory=list)
    #: provider ids of the batches this run submitted
    batches: list = field(default_factory=list)
    #: what the user should know about batches still running or held
    batch_notes: list = field(default_factory=list)
    #: key -> worst case this run reserved for it in a batch it has not collected yet
    batch_reserved: dict = field(default_factory=dict, repr=False)
    #: model -> where its price came from, for models priced from the built-in table
    price_sources: dict = field(default_factory=dict)
    ledger: SpendLedger = field(default_factory=SpendLedger, repr=False, compare=False)

    @property
    def cost(self) -> float:
        """Dollars spent or possibly spent: reported + estimated + failed attempts."""
        return self.cost_reported + self.cost_estimated + self.cost_failed

    def as_dict(self) -> dict:
        """The counters, JSON-ready."""
        out = {k: v for k, v in vars(self).items() if k not in ("ledger", "batch_reserved")}
        out["batch_notes"] = list(dict.fromkeys(self.batch_notes))
        out["cost"] = self.cost
        return out

    def summary(self) -> str:
        parts = [f"{self.requested} calls ({self.distinct} distinct): {self.cache_hits} from "
                 f"cache, {self.fresh} answered now", f"{self.invalid} invalid outputs",
                 f"{self.attempts} requests sent ({self.retries} retries, "
                 f"{self.failed_attempts_billed} failed attempts possibly billed)",
                 f"{self.failed} failed"]
        if self.legacy_adopted:
            parts.append(f"{self.legacy_adopted} answers recorded by an older fairjudge (before "
                         "endpoints entered the cache key) were served for this endpoint and "
                         "are bound to it now")
        if self.answered_elsewhere:
            parts.append(f"{self.answered_elsewhere} answered by another process sharing the "
                         "cache")
        if self.batch_submitted or self.batch_collected or self.batch_pending:
            batch = (f"batch API: {self.batch_submitted} calls submitted in "
                     f"{len(self.batches)} batches ({', '.join(self.batches) or '-'}), "
                     f"{self.batch_collected} answers collected")
            if self.batch_pending:
                batch += (f", {self.batch_pending} calls of this run still waiting in batches "
                          "(rerun with the batch option to collect them; nothing is sent "
                          "twice)")
            parts.append(batch)
        if self.unpriced and not (self.cost_reported or self.cost_estimated):
            money = "cost unknown (no price for the model: pass a price table)"
        else:
            money = f"spent ${self.cost:.4f}"
            pieces = [f"${self.cost_reported:.4f} reported by the provider"]
            if self.cost_estimated:
                pieces.append(f"${self.cost_estimated:.4f} estimated for "
                              f"{self.usage_estimated} answers without usage (their worst "
                              f"case, counted against the cap; about "
                              f"${self.cost_estimated_typical:.4f} at characters/4 tokens)")
            if self.cost_failed:
                pieces.append(f"${self.cost_failed:.4f} worst case of failed attempts")
            money += f" ({' + '.join(pieces)})"
            if self.unpriced:
                money += f"; {self.unpriced} answers of unpriced models not counted"
        if self.max_cost is not None:
            if self.cost_earlier:
                money += (f"; earlier runs spent ${self.cost_earlier:.4f} on these calls "
                          "(counted against the cap)")
            money += f"; cap ${self.max_cost:g} for the whole job"
        parts.append(f"{money}; {self.input_tokens} in / {self.output_tokens} out tokens")
        for model, source in self.price_sources.items():
            parts.append(f"{model} priced at {source} (--prices overrides)")
        if self.stopped_by_cap:
            parts.append(f"STOPPED by the spend cap: {self.skipped_by_cap} calls not made")
        parts.extend(dict.fromkeys(self.batch_notes))
        if self.interrupted:
            parts.append("INTERRUPTED: rerun the same command to resume from the cache")
        parts.append(f"{self.elapsed:.1f} s")
        return "; ".join(parts)


class RateLimiter:
    """Spaces acquisitions so that at most ``per_minute`` units pass per minute."""

    def __init__(self, per_minute: float):
        if per_minute <= 0:
            raise FairjudgeInputError(f"rate limits must be positive; got {per_minute}")
        self.interval = 60.0 / per_minute
        self._next = 0.0

    async def acquire(self, amount: float = 1.0) -> None:
        now = time.monotonic()
        wait = max(0.0, self._next - now)
        self._next = max(now, self._next) + amount * self.interval
        if wait:
            await asyncio.sleep(wait)

    def refund(self, amount: float) -> None:
        """Give back ``amount`` units acquired but not used (an estimate that was too high):
        later acquisitions start that much sooner, never before now. A negative ``amount``
        (more was used than acquired) delays them by the excess."""
        now = time.monotonic()
        if amount >= 0:
            self._next = max(now, self._next - amount * self.interval)
        else:
            self._next = max(now, self._next) - amount * self.interval


class TokenRateLimiter:
    """A tokens-per-minute limit on calls whose token counts are known only afterwards.

    Before a call it reserves the prompt's estimated tokens plus the whole output budget
    (what a provider's own limiter counts at admission); the prompt estimate starts at the
    byte-level bound of :func:`estimated_input_tokens` and is then scaled by the ratio of
    reported prompt tokens to prompt bytes seen so far (about 1/4 for English), so it stops
    over-throttling once answers arrive. After an answer with reported usage, what was
    reserved beyond the tokens actually used is refunded.
    """

    def __init__(self, per_minute: float):
        self.limiter = RateLimiter(per_minute)
        self.tokens_seen = 0
        self.bytes_seen = 0

    def estimate(self, request: JudgeRequest, output_budget: int) -> float:
        """Tokens reserved for ``request``: calibrated prompt estimate plus output budget."""
        bound = estimated_input_tokens(request)
        ratio = min(1.0, self.tokens_seen / self.bytes_seen) if self.bytes_seen else 1.0
        return bound * ratio + output_budget

    async def acquire(self, request: JudgeRequest, output_budget: int) -> float:
        reserved = self.estimate(request, output_budget)
        await self.limiter.acquire(reserved)
        return reserved

    def settle(self, request: JudgeRequest, reserved: float, usage) -> None:
        """Learn from an answer's reported usage and refund what it did not use."""
        if not usage.reported:
            return  # nothing learned; the reservation stands
        self.tokens_seen += usage.input_tokens
        self.bytes_seen += estimated_input_tokens(request)
        self.limiter.refund(reserved - usage.input_tokens - usage.output_tokens)


def lease_clock() -> float:
    """Seconds on the clock that ages the leases a run holds."""
    return time.monotonic()


class _Leases:
    """The leases one run holds on the keys it pays for (see :meth:`CompletionCache.claim`).

    A key is claimed together with the next keys of the run's queue, in one transaction
    that commits before any of them is sent: a run commits once per group of calls, not
    once per call (those commits were most of the cache's cost). Right before a request
    leaves, the answers the cache holds are committed and a lease with less than half its
    ``ttl`` left is renewed, so a lease outlives every attempt (``ttl`` is at least twice
    the backend's timeout). Leases of calls never sent are released at the end.
    """

    def __init__(self, cache: CompletionCache, owner: str, ttl: float, group: int):
        self.cache, self.owner, self.ttl, self.group = cache, owner, ttl, max(1, group)
        #: key -> lease_clock() just before the claim that took (or renewed) our lease
        self.taken: dict[str, float] = {}

    def claim(self, key: str, queue: list) -> str:
        """The outcome for ``key`` (:data:`CLAIMED`, :data:`DONE`, :data:`BUSY` or
        :data:`BATCHED`). A key claimed earlier whose lease is fresh is ours already;
        otherwise it is claimed with the next ``group - 1`` keys to be sent (the last ones
        of ``queue``, which is popped from its end) that are not ours yet."""
        now = lease_clock()
        if now - self.taken.get(key, -math.inf) < self.ttl / 2:
            return CLAIMED
        upcoming = queue[:-self.group:-1]
        keys = [key, *[k for k in upcoming if k not in self.taken]]
        outcomes = self.cache.claim_many(keys, self.owner, self.ttl)
        for k in keys:
            if outcomes[k] == CLAIMED:
                self.taken[k] = now
            else:
                self.taken.pop(k, None)
        return outcomes[key]

    def before_send(self, key: str) -> bool:
        """Right before a request for ``key`` leaves (nothing awaited in between): commit
        the answers held (with the renewal, if one is due) and renew a half-spent lease.
        False if the lease was lost meanwhile (another process pays for the key now)."""
        now = lease_clock()
        if now - self.taken.get(key, -math.inf) < self.ttl / 2:
            self.cache.flush()
            return True
        if self.cache.claim(key, self.owner, self.ttl) != CLAIMED:
            self.taken.pop(key, None)
            return False
        self.taken[key] = now
        return True

    def finish(self, key: str, answered: bool) -> None:
        """The call for ``key`` is over: without an answer, another process may pay."""
        self.taken.pop(key, None)
        if not answered:
            self.cache.release(key, self.owner)

    def release_unused(self) -> None:
        """Release the leases of keys claimed ahead but never sent."""
        self.cache.release_many(list(self.taken), self.owner)
        self.taken.clear()


def estimated_input_tokens(request: JudgeRequest) -> int:
    """An upper bound on prompt tokens: UTF-8 bytes plus a per-message overhead.

    Byte-level BPE tokenizers never emit more tokens than bytes, so the worst case of a call
    is known before it is sent (characters / 4 is the usual estimate, and can be 4x low for
    CJK text).
    """
    return sum(len(m.content.encode("utf-8")) for m in request.messages) + 8 * len(
        request.messages)


def output_budget(request: JudgeRequest, backend: JudgeBackend) -> int | None:
    """The largest number of output tokens the call may produce (None if unbounded)."""
    s = request.settings
    budgets = [b for b in (s.max_completion_tokens, s.max_tokens) if b]
    if budgets:
        return max(budgets)
    return getattr(backend, "default_max_tokens", None)


async def execute_requests(backend: JudgeBackend, requests: list[JudgeRequest], *,
                           cache: CompletionCache | None = None,
                           options: RunOptions = RunOptions(),
                           report: RunReport | None = None,
                           progress=None, limiters: dict | None = None
                           ) -> list[CallResult | None]:
    """Answer every request with a raw completion, from the cache where possible.

    Identical requests (same cache key) are sent once. Each fresh completion is written to
    the cache the moment it arrives, before anything else can fail: it is committed before
    the run starts another request (answers that arrive together commit together), within
    the cache's ``commit_interval``, and before this function returns or raises. Keys are
    claimed (leased, see :meth:`CompletionCache.claim`) in groups of ``concurrency``, each
    group committed before any of its keys is sent; leases left unused are released.
    Nothing is parsed here: parsers (:mod:`fairjudge.judges._parsing`) run on the results,
    cached or fresh alike.
    Returns one :class:`CallResult` per request, ``None`` where no answer was obtained
    (spend cap reached, retries exhausted).

    ``progress``, a tqdm bar the caller owns (and closes), counts every request answered
    here, from the cache or not; without it, a bar of the calls to send is shown when
    ``options.progress`` is set. ``limiters``, a dict the caller keeps, carries the rate
    limiters (and what the token limiter learned) from one call to the next, for a
    caller that sends a run in several batches.

    Raises
    ------
    JudgeBackendError
        On a non-retryable provider error (bad key, bad request): the run stops, verdicts
        obtained so far stay cached.
    """
    report = report if report is not None else RunReport()
    start = time.perf_counter()
    identity = backend.identity()
    keyed = [keyed_payload(identity, r) for r in requests]  # (key, payload JSON) each
    keys = [key for key, _ in keyed]
    if not backend.cacheable:
        # Free backends may answer from the request's metadata (replay looks the items up by
        # id), so identical prompts about different items must not be merged.
        keys = [f"{k}:{r.metadata.get('item_a')}:{r.metadata.get('item_b')}"
                for k, r in zip(keys, requests)]
    report.requested += len(requests)
    first_index: dict[str, int] = {}
    for i, key in enumerate(keys):
        first_index.setdefault(key, i)
    report.distinct += len(first_index)
    answers: dict[str, CallResult] = {}
    if cache is not None and backend.cacheable:
        legacy = ({k: legacy_cache_key(identity, requests[i]) for k, i in first_index.items()}
                  if cache.holds_legacy() else None)
        adopted_before = cache.adopted
        hits = cache.get_many(first_index, legacy_keys=legacy,
                              endpoint=identity.get("endpoint"))
        report.legacy_adopted += cache.adopted - adopted_before
        answers.update({k: CallResult(k, c, cached=True) for k, c in hits.items()})
        report.cache_hits += len(answers)
    pending = [k for k in first_index if k not in answers]
    if cache is not None and backend.cacheable and pending and options.batch is None:
        # A call waiting in a provider batch is paid for there: never send it again.
        batched = cache.batched(pending)
        if batched:
            pending = [k for k in pending if k not in batched]
            report.batch_pending += len(batched)
            report.batch_notes.append(
                f"{len(batched)} calls wait in batches submitted by an earlier run with a "
                "batch option (`fairjudge cache batches` lists them): rerun with that option "
                "to collect them")
    if options.max_cost is not None:
        report.max_cost = options.max_cost
        if cache is not None and backend.cacheable:
            # The cap bounds the whole job across reruns: what earlier runs spent (answers
            # now cached, attempts that failed or died in flight) counts -- the job's whole
            # ledger when the run names its job, else what was spent on these calls.
            if options.job is not None:
                # Reported only: the job's ledger itself gates every attempt.
                report.cost_earlier = max(report.cost_earlier,
                                          cache.job_spent(options.job) - report.cost)
            else:
                report.cost_earlier += cache.spent_on(first_index)
        if pending and backend.billed:
            # (A backend no provider bills, the human one, has no price to know.)
            _check_cap_possible(backend, requests[first_index[pending[0]]], options)
    price = (options.prices or {}).get(backend.model)
    if price is not None and getattr(options.prices, "is_builtin", lambda _: False)(
            backend.model):
        report.price_sources[backend.model] = (
            f"the built-in list price of {options.prices.date} (${price.input_per_mtok:g} in, "
            f"${price.output_per_mtok:g} out per million tokens)")
    if options.batch is not None and pending:
        from fairjudge.judges._batch import run_batched

        bar = progress if progress is not None else (
            _progress_bar(len(pending), backend.label) if options.progress else None)
        if progress is not None:
            bar.update(len(keys) - len(pending))
        capped = options.max_cost is not None and cache is not None
        ledger_before = cache.spent_on(first_index) if capped else 0.0
        cost_before, reserved_before = report.cost, report.ledger.reserved
        try:
            await run_batched(backend, {k: requests[first_index[k]] for k in pending},
                              cache=cache, options=options, report=report, answers=answers,
                              bar=bar, price=price)
            if capped:
                # Collecting a batch an earlier run submitted settles its worst case, counted
                # as earlier spending, at what was billed, now counted as this run's.
                # (This run's own uncollected batches are in ledger.reserved already.)
                report.cost_earlier = max(0.0, report.cost_earlier
                                          + cache.spent_on(first_index) - ledger_before
                                          - (report.cost - cost_before)
                                          - (report.ledger.reserved - reserved_before))
        finally:
            if bar is not None and progress is None:
                bar.close()
            report.elapsed += time.perf_counter() - start
        return [answers.get(k) for k in keys]
    jitter = np.random.default_rng(options.seed)
    limiters = {} if limiters is None else limiters
    if options.requests_per_minute and "rpm" not in limiters:
        limiters["rpm"] = RateLimiter(options.requests_per_minute)
    if options.tokens_per_minute and "tpm" not in limiters:
        limiters["tpm"] = TokenRateLimiter(options.tokens_per_minute)
    rpm, tpm = limiters.get("rpm"), limiters.get("tpm")
    ledger = report.ledger
    state = {"fatal": None}
    if progress is not None:
        bar = progress
        bar.update(len(keys) - len(pending))  # from the cache, or duplicates sent once
    else:
        bar = (_progress_bar(len(pending), backend.label) if options.progress and pending
               else None)
    queue = list(reversed(pending))
    leasing = cache is not None and backend.cacheable
    owner = lease_owner()
    ttl = max(options.lease_seconds, 2.0 * float(getattr(backend, "timeout", 0.0) or 0.0))

    def worst_case(request: JudgeRequest) -> Usage:
        """The most a call can use: prompt bytes as tokens, plus the whole output budget."""
        return Usage(estimated_input_tokens(request), output_budget(request, backend) or 0,
                     reported=False)

    job = options.job if leasing and options.max_cost is not None else None

    async def reserve(key: str, amount: float):
        """Reserve ``amount`` dollars for an attempt and record it in the cache's spend
        ledger; wait while attempts in flight may free room. Returns the ledger id (None
        without a cache), or False when the attempt cannot fit under the cap even with
        nothing else in flight (the run then stops dispatching).

        With a job the cap is checked against the job's ledger (shared by reruns and by
        other processes) in the same transaction that records the attempt; otherwise
        against this run's spending, its reservations in flight and what earlier runs spent
        on the same calls. The in-process ledger is shared by every backend of the run.
        """
        async with ledger.condition:
            while True:
                if ledger.stop:
                    return False
                if job is not None:
                    attempt_id = cache.open_attempt(key, amount, owner=owner, job=job,
                                                    cap=options.max_cost)
                    if attempt_id is not None:
                        ledger.in_flight += 1
                        return attempt_id
                    if ledger.in_flight == 0 and cache.open_elsewhere(job, owner) == 0:
                        break
                    # Our own attempts settle and notify; another process's only show in
                    # the ledger, so look again shortly.
                    try:
                        await asyncio.wait_for(ledger.condition.wait(), 0.2)
                    except asyncio.TimeoutError:
                        pass
                    continue
                if report.cost + report.cost_earlier + ledger.reserved + amount \
                        <= options.max_cost:
                    ledger.reserved += amount
                    ledger.in_flight += 1
                    return cache.open_attempt(key, amount, owner=owner) if leasing else None
                if ledger.in_flight == 0:
                    break
                await ledger.condition.wait()
            ledger.stop = True
            report.stopped_by_cap = True
            ledger.condition.notify_all()
            return False

    async def settle(amount: float) -> None:
        async with ledger.condition:
            if job is None:
                ledger.reserved -= amount
            ledger.in_flight -= 1
            ledger.condition.notify_all()

    def charge_failed(request: JudgeRequest) -> float:
        """An attempt the provider may have billed gave no answer: count its worst case."""
        report.failed_attempts_billed += 1
        if price is None:
            return 0.0
        dollars = price.cost(worst_case(request))
        report.cost_failed += dollars
        return dollars

    def charge_answer(request: JudgeRequest, completion) -> object:
        """Count an answer's cost; an answer without usable usage is charged (and stored)
        at its worst case, marked as an estimate."""
        if not completion.usage.reported:
            worst = worst_case(request)
            # Without an output budget the text itself bounds the output tokens.
            out = max(worst.output_tokens, len(completion.text.encode("utf-8")))
            completion = replace(completion, usage=replace(worst, output_tokens=out))
            report.usage_estimated += 1
        dollars = 0.0
        if price is None:
            report.unpriced += 1
        elif completion.usage.reported:
            dollars = price.cost(completion.usage)
            report.cost_reported += dollars
        else:
            dollars = price.cost(completion.usage)
            report.cost_estimated += dollars
            report.cost_estimated_typical += answer_cost(price, completion.usage, request,
                                                         completion.text)[0]
        report.input_tokens += completion.usage.input_tokens
        report.output_tokens += completion.usage.output_tokens
        return completion, dollars

    leases = _Leases(cache, owner, ttl, options.concurrency) if leasing else None

    def claim(key: str) -> str:
        """Claim the key for this process (leases across processes sharing the cache);
        an answer stored meanwhile by another process is taken from the cache."""
        if leases is None:
            return CLAIMED
        outcome = leases.claim(key, queue)
        if outcome not in (CLAIMED, BUSY, BATCHED):
            completion = cache.get(key)
            if completion is not None:
                answers[key] = CallResult(key, completion, cached=True)
                report.cache_hits += 1
                report.answered_elsewhere += 1
                if bar is not None:
                    bar.update(1)
            return "answered"
        return outcome

    async def call(key: str) -> str:
        """Answer one key; returns ``"busy"`` when another process is paying for it."""
        request = requests[first_index[key]]
        claimed = claim(key)
        if claimed == BATCHED:
            # Submitted to a provider batch (by another process) since this run began.
            report.batch_pending += 1
            return "batched"
        if claimed != CLAIMED:
            return claimed
        worst = price.cost(worst_case(request)) if price is not None else 0.0
        capped = options.max_cost is not None
        try:
            for attempt in range(options.max_retries + 1):
                # Every attempt may be billed: each one reserves its own worst case, with a
                # durable record in the cache's ledger (if this process dies with it in
                # flight, a rerun still counts it against the cap).
                attempt_id = None
                if capped:
                    attempt_id = await reserve(key, worst)
                    if attempt_id is False:
                        queue.append(key)  # not made: counted as skipped below
                        return "stopped"
                settled = False

                def close(dollars: float) -> None:
                    if attempt_id is not None:
                        cache.close_attempt(attempt_id, dollars)

                try:
                    # Rate limits apply to every attempt, retries included.
                    if rpm:
                        await rpm.acquire()
                    if tpm:
                        reserved = await tpm.acquire(request,
                                                     output_budget(request, backend) or 0)
                    if leases is not None and not leases.before_send(key):
                        # The lease ran out while waiting and another process took the key:
                        # nothing was sent, nothing billed.
                        if tpm:
                            tpm.limiter.refund(reserved)
                        close(0.0)
                        return "busy"
                    report.attempts += 1
                    completion = await backend.complete(request)
                    if tpm:
                        tpm.settle(request, reserved, completion.usage)
                except RetryableError as err:
                    close(charge_failed(request) if err.maybe_billed else 0.0)
                    if capped:
                        await settle(worst)
                    settled = True
                    if attempt == options.max_retries:
                        report.failed += 1
                        report.errors.append(f"gave up after {attempt + 1} attempts: {err}")
                        return "failed"
                    report.retries += 1
                    delay = min(options.backoff_max, options.backoff_base * 2 ** attempt)
                    if err.retry_after is not None:
                        delay = min(options.backoff_max, err.retry_after)
                    # Jitter spreads retries of many workers that were throttled together.
                    await asyncio.sleep(delay * (0.5 + 0.5 * float(jitter.random()))
                                        if err.retry_after is None else
                                        delay * (1.0 + 0.1 * float(jitter.random())))
                    continue
                except RequestRejected as err:
                    close(0.0)
                    report.failed += 1
                    report.errors.append(str(err))
                    return "failed"
                except JudgeBackendError:
                    close(0.0)
                    raise
                except (asyncio.CancelledError, KeyboardInterrupt):
                    # Interrupted in flight: it may have been billed. Its ledger row stays
                    # open, at its worst case.
                    charge_failed(request)
                    raise
                finally:
                    if capped and not settled:
                        settled = True
                        await settle(worst)
                completion, dollars = charge_answer(request, completion)
                if leasing:
                    cache.put(key, completion, identity=identity, request=request,
                              payload_text=keyed[first_index[key]][1])
                # After the put: settling commits the held answer in the same transaction,
                # so an attempt is never settled while its paid answer could still be lost.
                close(dollars)
                answers[key] = CallResult(key, completion, cached=False, retries=attempt)
                report.fresh += 1
                if bar is not None:
                    bar.update(1)
                if leasing:
                    # Let the workers woken with this one put their answers too: the next
                    # claim or flush before a send then commits them all in one transaction
                    # (one commit per answer was a fifth of a run's time).
                    await asyncio.sleep(0)
                return "answered"
        except JudgeBackendError as err:
            # Fatal (bad key, unknown model): stop dispatching, let calls in flight finish
            # and be cached, then raise.
            state["fatal"] = err
            return "failed"
        finally:
            if leases is not None:
                leases.finish(key, key in answers)

    async def worker() -> None:
        while queue and not ledger.stop and state["fatal"] is None:
            key = queue.pop()
            if await call(key) == "busy":
                # Another process pays for this key: come back to it after the others.
                queue.insert(0, key)
                await asyncio.sleep(0.05)

    workers = [asyncio.ensure_future(worker()) for _ in range(max(1, options.concurrency))]
    try:
        with fewer_young_collections():
            await asyncio.gather(*workers)
    except BaseException:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    finally:
        if leasing:
            # The cache holds back the last answers for a few milliseconds (it commits them
            # in groups): commit them now, whether the run ended, failed or was cancelled;
            # then release the leases claimed ahead for calls never sent.
            cache.flush()
            leases.release_unused()
        if bar is not None and progress is None:
            bar.close()
        report.elapsed += time.perf_counter() - start
    if state["fatal"] is not None:
        raise state["fatal"]
    report.skipped_by_cap += len(queue) if ledger.stop else 0
    return [answers.get(k) for k in keys]


def _check_cap_possible(backend, request, options: RunOptions) -> None:
    if options.prices is None or options.prices.get(backend.model) is None:
        raise FairjudgeInputError(
            f"a spend cap needs the price of model {backend.model!r}: pass a price table "
            '(--prices FILE, JSON {"' f'{backend.model}' '": {"input": <$ per million input '
            'tokens>, "output": <$ per million output tokens>}})')
    if output_budget(request, backend) is None:
        raise FairjudgeInputError(
            "a spend cap needs a completion budget, so that the worst-case cost of a call is "
            "known: set --max-tokens N (GenerationSettings(max_tokens=N) in Python)")


def _progress_bar(total: int, label: str):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a core dependency
        return None
    return tqdm(total=total, desc=label, unit="call", file=sys.stderr, dynamic_ncols=True,
                mininterval=0.5)


def run_requests(backend: JudgeBackend, requests: list[JudgeRequest], *,
                 cache: CompletionCache | None = None, options: RunOptions = RunOptions(),
                 report: RunReport | None = None) -> list[CallResult | None]:
    """Synchronous wrapper of :func:`execute_requests` (closes the backend afterwards)."""
    async def main():
        try:
            return await execute_requests(backend, requests, cache=cache, options=options,
                                          report=report)
        finally:
            await backend.aclose()

    return asyncio.run(main())
