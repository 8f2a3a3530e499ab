"""Running many judge requests: cache first, then bounded, rate-limited, retried calls."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fairjudge._util._errors import JudgeBackendError, RequestRejected, RetryableError
from fairjudge._util._files import read_json_file
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._cache import CompletionCache, cache_key, legacy_cache_key
from fairjudge.judges._types import CallResult, JudgeRequest, Usage


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, usage: Usage) -> float:
        return (usage.input_tokens * self.input_per_mtok
                + usage.output_tokens * self.output_per_mtok) / 1e6


class PriceTable(dict):
    """Model id -> :class:`Price`. Load with :meth:`from_file` (JSON
    ``{"model": {"input": 0.15, "output": 0.60}}``, dollars per million tokens)."""

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "PriceTable":
        path = Path(path)
        data = read_json_file(path, "price")
        table = cls()
        for model, spec in (data.items() if isinstance(data, dict) else []):
            try:
                table[model] = Price(float(spec["input"]), float(spec["output"]))
            except (KeyError, TypeError, ValueError):
                raise FairjudgeInputError(
                    f"{path.name}: price of `{model}` needs numeric `input` and `output` "
                    "(dollars per million tokens)") from None
            for side, value in (("input", spec["input"]), ("output", spec["output"])):
                if isinstance(value, bool) or not 0 <= float(value) < np.inf:
                    raise FairjudgeInputError(
                        f"{path.name}: `{side}` price of `{model}` must be a non-negative "
                        f"finite number of dollars per million tokens; got {value!r}")
        if not table:
            raise FairjudgeInputError(f"{path.name}: no prices found; expected "
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
        Client-side rate limits (token counts estimated as characters / 4 plus the output
        budget before a call).
    max_retries : int
        Retries per request on 429, 5xx, timeouts, dropped connections and malformed bodies.
    backoff_base, backoff_max : float
        Exponential backoff ``min(max, base * 2**attempt)`` seconds with jitter in
        [50%, 100%]; a provider's ``Retry-After`` takes precedence.
    max_cost : float or None
        Hard spend cap in dollars: a request is dispatched only if the money already spent,
        plus the worst case of every request in flight, plus this request's worst case stays
        within the cap, so the cap is never exceeded.
    prices : PriceTable or None
        Needed for cost reports and for ``max_cost``.
    progress : bool
        Show a progress bar with ETA on stderr.
    seed : int
        Seeds the backoff jitter.
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
    """What a run did; updated live, so it is meaningful after an interruption too."""

    requested: int = 0
    distinct: int = 0
    cache_hits: int = 0
    fresh: int = 0
    invalid: int = 0
    retries: int = 0
    failed: int = 0
    skipped_by_cap: int = 0
    cost: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    elapsed: float = 0.0
    stopped_by_cap: bool = False
    interrupted: bool = False
    errors: list = field(default_factory=list)
    ledger: SpendLedger = field(default_factory=SpendLedger, repr=False, compare=False)

    def as_dict(self) -> dict:
        """The counters, JSON-ready."""
        return {k: v for k, v in vars(self).items() if k != "ledger"}

    def summary(self) -> str:
        parts = [f"{self.requested} calls ({self.distinct} distinct): {self.cache_hits} from "
                 f"cache, {self.fresh} fresh", f"{self.invalid} invalid outputs",
                 f"{self.retries} retries", f"{self.failed} failed"]
        parts.append(f"cost ${self.cost:.4f} ({self.input_tokens} in / {self.output_tokens} "
                     "out tokens)")
        if self.stopped_by_cap:
            parts.append(f"STOPPED by the spend cap: {self.skipped_by_cap} calls not made")
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
                           report: RunReport | None = None) -> list[CallResult | None]:
    """Answer every request with a raw completion, from the cache where possible.

    Identical requests (same cache key) are sent once. Each fresh completion is written to
    the cache the moment it arrives, before anything else can fail. Nothing is parsed here:
    parsers (:mod:`fairjudge.judges._parsing`) run on the results, cached or fresh alike.
    Returns one :class:`CallResult` per request, ``None`` where no answer was obtained
    (spend cap reached, retries exhausted).

    Raises
    ------
    JudgeBackendError
        On a non-retryable provider error (bad key, bad request): the run stops, verdicts
        obtained so far stay cached.
    """
    report = report if report is not None else RunReport()
    start = time.perf_counter()
    identity = backend.identity()
    keys = [cache_key(identity, r) for r in requests]
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
        legacy = {k: legacy_cache_key(identity, requests[i]) for k, i in first_index.items()}
        hits = cache.get_many(first_index, legacy_keys=legacy,
                              endpoint=identity.get("endpoint"))
        answers.update({k: CallResult(k, c, cached=True) for k, c in hits.items()})
        report.cache_hits += len(answers)
    pending = [k for k in first_index if k not in answers]
    if options.max_cost is not None and pending:
        _check_cap_possible(backend, requests[first_index[pending[0]]], options)
    jitter = np.random.default_rng(options.seed)
    rpm = RateLimiter(options.requests_per_minute) if options.requests_per_minute else None
    tpm = RateLimiter(options.tokens_per_minute) if options.tokens_per_minute else None
    price = (options.prices or {}).get(backend.model)
    ledger = report.ledger
    state = {"fatal": None}
    bar = _progress_bar(len(pending), backend.label) if options.progress and pending else None
    queue = list(reversed(pending))

    async def reserve(request: JudgeRequest) -> float | None:
        """Reserve the worst-case cost of a call; wait while calls in flight may free room.

        Returns the reservation, or None when the call cannot fit under the cap even with
        nothing else in flight (the run then stops dispatching). The ledger is shared by
        every backend of the run.
        """
        reservation = price.cost(Usage(estimated_input_tokens(request),
                                       output_budget(request, backend) or 0))
        async with ledger.condition:
            while report.cost + ledger.reserved + reservation > options.max_cost:
                if ledger.in_flight == 0 or ledger.stop:
                    ledger.stop = True
                    report.stopped_by_cap = True
                    ledger.condition.notify_all()
                    return None
                await ledger.condition.wait()
            ledger.reserved += reservation
            ledger.in_flight += 1
        return reservation

    async def release(reservation: float) -> None:
        async with ledger.condition:
            ledger.reserved -= reservation
            ledger.in_flight -= 1
            ledger.condition.notify_all()

    async def call(key: str) -> None:
        request = requests[first_index[key]]
        reservation = 0.0
        if options.max_cost is not None:
            reservation = await reserve(request)
            if reservation is None:
                queue.append(key)  # not made: counted as skipped below
                return
        try:
            for attempt in range(options.max_retries + 1):
                # Rate limits apply to every attempt, retries included.
                if rpm:
                    await rpm.acquire()
                if tpm:
                    await tpm.acquire(estimated_input_tokens(request)
                                      + (output_budget(request, backend) or 0))
                try:
                    completion = await backend.complete(request)
                    break
                except RetryableError as err:
                    if attempt == options.max_retries:
                        report.failed += 1
                        report.errors.append(f"gave up after {attempt + 1} attempts: {err}")
                        return
                    report.retries += 1
                    delay = min(options.backoff_max, options.backoff_base * 2 ** attempt)
                    if err.retry_after is not None:
                        delay = min(options.backoff_max, err.retry_after)
                    # Jitter spreads retries of many workers that were throttled together.
                    await asyncio.sleep(delay * (0.5 + 0.5 * float(jitter.random()))
                                        if err.retry_after is None else
                                        delay * (1.0 + 0.1 * float(jitter.random())))
                except RequestRejected as err:
                    report.failed += 1
                    report.errors.append(str(err))
                    return
            if cache is not None and backend.cacheable:
                cache.put(key, completion, identity=identity, request=request)
            answers[key] = CallResult(key, completion, cached=False, retries=attempt)
            report.fresh += 1
            if price is not None:
                report.cost += price.cost(completion.usage)
            report.input_tokens += completion.usage.input_tokens
            report.output_tokens += completion.usage.output_tokens
            if bar is not None:
                bar.update(1)
        except JudgeBackendError as err:
            # Fatal (bad key, unknown model): stop dispatching, let calls in flight finish
            # and be cached, then raise.
            state["fatal"] = err
        finally:
            if options.max_cost is not None:
                await release(reservation)

    async def worker() -> None:
        while queue and not ledger.stop and state["fatal"] is None:
            await call(queue.pop())

    workers = [asyncio.ensure_future(worker()) for _ in range(max(1, options.concurrency))]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    finally:
        if bar is not None:
            bar.close()
        report.elapsed += time.perf_counter() - start
    if state["fatal"] is not None:
        raise state["fatal"]
    report.skipped_by_cap += len(queue) if ledger.stop else 0
    return [answers.get(k) for k in keys]


def _check_cap_possible(backend, request, options: RunOptions) -> None:
    if options.prices is None or backend.model not in options.prices:
        raise FairjudgeInputError(
            f"a spend cap needs the price of model {backend.model!r}: pass a price table "
            '(JSON {"model": {"input": $/Mtok, "output": $/Mtok}})')
    if output_budget(request, backend) is None:
        raise FairjudgeInputError("a spend cap needs a completion budget: set max tokens, so "
                                  "that the worst-case cost of a call is known")


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
