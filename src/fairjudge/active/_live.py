"""The live driver of :class:`ActiveTopK`: ask a real judge, batch by batch.

Each batch of proposals is rendered with a prompt template, sent through the judge runner
(cache first, bounded concurrency, retries, rate limits, the spend cap), parsed, and fed
back to the ranker. Everything paid is cached the moment it arrives; because the ranker is
deterministic given its seed and the verdicts, a killed run started again with the same
command replays the cached verdicts instantly and continues where it stopped, reaching the
same result.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.active._ranker import ActiveTopK, Posterior
from fairjudge.data._schema import Outcome
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._cache import CompletionCache
from fairjudge.judges._parsing import VERDICT_PARSER, VerdictParser, parse_verdicts
from fairjudge.judges._prompts import PromptTemplate, load_templates
from fairjudge.judges._runner import RunOptions, RunReport, execute_requests
from fairjudge.judges._types import GenerationSettings, JudgeRequest

#: Why a live run stopped: its budget in calls or in money was spent, no pair was left, the
#: hard spend cap on billed cost stopped it, a whole batch of calls failed, or a human judge
#: was asked comparisons that await labels in its annotation sheet.
STOP_REASONS = ("budget", "money", "exhausted", "spend cap", "failures", "awaiting labels")


@dataclass(frozen=True)
class LiveResult:
    """Outcome of :func:`run_live_topk`.

    Attributes
    ----------
    posterior : Posterior
        The final fit, membership and top-k.
    calls : pandas.DataFrame
        One row per judge call made (cached or fresh), as a verdict table: ``pair_id``,
        ``item_a`` (shown first), ``item_b``, ``winner``, ``outcome_detail``, ``judge``,
        ``order``, ``sample``, ``strategy``, ``cost`` (what the call cost when it was paid,
        from the price table; ``cached`` says whether it was paid in this run),
        ``judge_cost`` (the judge's :attr:`JudgeSpec.cost` the loop planned with),
        ``cached``, ``acquisition_score``, ``raw``, ``parser``.
    report : RunReport
        Calls, cache hits, retries, failures and money spent.
    stopped : str
        One of :data:`STOP_REASONS`.
    ranker : ActiveTopK
        The ranker in its final state (``history()`` holds every recorded verdict).
    """

    posterior: Posterior
    calls: pd.DataFrame
    report: RunReport
    stopped: str
    ranker: ActiveTopK


async def run_live_topk_async(ranker: ActiveTopK, texts, backend, *,
                              question: str, budget: int | None = None,
                              max_cost: float | None = None,
                              cache: CompletionCache | None = None,
                              options: RunOptions = RunOptions(),
                              settings: GenerationSettings = GenerationSettings(),
                              template: PromptTemplate | str = "baseline",
                              parser: VerdictParser = VERDICT_PARSER,
                              batch_size: int | None = None, judge: str | None = None,
                              report: RunReport | None = None,
                              progress: bool = False) -> LiveResult:
    """Asynchronous :func:`run_live_topk` (the backend stays open)."""
    texts = [str(t) for t in texts]
    if len(texts) != ranker.n_items:
        raise FairjudgeInputError(f"`texts` has {len(texts)} answers for {ranker.n_items} items")
    if budget is None and max_cost is None:
        raise FairjudgeInputError("give a budget in calls (`budget`) or in money (`max_cost`)")
    if budget is not None and (isinstance(budget, bool) or
                               not isinstance(budget, (int, np.integer)) or budget < 1):
        raise FairjudgeInputError(f"`budget` must be a positive integer; got {budget!r}")
    if max_cost is not None and not (np.isfinite(max_cost) and max_cost > 0):
        raise FairjudgeInputError(f"`max_cost` must be a positive number; got {max_cost!r}")
    if not isinstance(question, str) or not question.strip():
        raise FairjudgeInputError("`question` must be the non-empty prompt the items answer")
    prompt = load_templates()[template] if isinstance(template, str) else template
    if prompt.kind != "verdict":
        raise FairjudgeInputError(f"template {prompt.name!r} is not a pairwise verdict template")
    batch_size = max(1, int(batch_size or options.concurrency))
    backends = _panel(ranker, backend, judge)
    report = report if report is not None else RunReport()
    prices = {name: (options.prices or {}).get(b.model) for name, b in backends.items()}
    bar = (_bar(budget, ", ".join(b.label for b in backends.values())) if progress
           else None)
    rows, stopped, spent = [], "budget", 0
    asked = None if len(backends) > 1 else next(iter(backends))
    try:
        while budget is None or spent < budget:
            money = None if max_cost is None else max(max_cost - ranker.spent, 0.0)
            proposals = ranker.propose(batch_size if budget is None else
                                       min(batch_size, budget - spent), judge=asked,
                                       money=money)
            if not proposals:
                exhausted = (ranker.exhausted if asked is None
                             else ranker.exhausted_for(asked))
                stopped = "exhausted" if exhausted else "money"
                break
            requests = [JudgeRequest(
                messages=prompt.render(question=question, answer_a=texts[p.first],
                                       answer_b=texts[p.second]),
                settings=settings, template=prompt.name, template_version=prompt.version,
                sample=p.repeat, metadata={"pair_id": ranker.pair_id(p.first, p.second),
                                           "item_a": ranker.item_ids[p.first],
                                           "item_b": ranker.item_ids[p.second],
                                           "question": question,
                                           "answer_a": texts[p.first],
                                           "answer_b": texts[p.second]})
                for p in proposals]
            verdicts = await _ask(backends, proposals, requests, cache, options, report,
                                  parser)
            answered, failed = [], []
            for p, verdict in zip(proposals, verdicts):
                if verdict is None:
                    failed.append(p)
                    continue
                report.invalid += verdict.outcome is Outcome.INVALID
                answered.append((p, verdict.outcome))
                rows.append(_call_row(ranker, p, verdict, prices[p.judge]))
            ranker.release(failed)
            ranker.update(answered)
            spent += len(answered)
            if bar is not None:
                bar.update(len(answered))
            if report.stopped_by_cap:
                stopped = "spend cap"
                break
            if any(getattr(b, "awaiting", None) for b in backends.values()):
                # A human judge was asked: spend nothing more until its labels are in.
                stopped = "awaiting labels"
                break
            if failed and not answered:
                stopped = "failures"  # a whole batch failed: retrying it now would too
                break
    finally:
        if bar is not None:
            bar.close()
    calls = pd.DataFrame(rows, columns=CALL_COLUMNS)
    return LiveResult(ranker.posterior(), calls, report, stopped, ranker)


async def _ask(backends: dict, proposals, requests, cache, options, report, parser) -> list:
    """Each proposal's parsed verdict (None for a failed call), every judge's calls at once."""
    by_judge: dict = {}
    for slot, p in enumerate(proposals):
        by_judge.setdefault(p.judge, []).append(slot)
    answers = await asyncio.gather(*(
        execute_requests(backends[name], [requests[s] for s in slots], cache=cache,
                         options=options, report=report)
        for name, slots in by_judge.items()))
    verdicts = [None] * len(proposals)
    for (name, slots), results in zip(by_judge.items(), answers):
        parsed = parse_verdicts(results, parser, requests=[requests[s] for s in slots])
        for s, verdict in zip(slots, parsed):
            verdicts[s] = verdict
    return verdicts


def _panel(ranker: ActiveTopK, backend, judge: str | None) -> dict:
    """Judge name -> backend: one backend (as ``judge``, default the ranker's first judge),
    or a mapping naming every judge of the ranker."""
    if isinstance(backend, dict):
        if set(backend) != set(ranker.judges):
            raise FairjudgeInputError(
                f"the backends ({', '.join(backend)}) must be the ranker's judges "
                f"({', '.join(ranker.judges)}), one to one")
        return dict(backend)
    return {judge or next(iter(ranker.judges)): backend}


CALL_COLUMNS = ["pair_id", "item_a", "item_b", "winner", "outcome_detail", "judge", "order",
                "sample", "strategy", "cost", "judge_cost", "cached", "acquisition_score",
                "raw", "parser"]
_WINNER = {Outcome.A: "a", Outcome.B: "b", Outcome.TIE: "tie"}
_DETAIL = {Outcome.A: "win", Outcome.B: "win", Outcome.TIE: "tie", Outcome.INVALID: "invalid",
           Outcome.ABSTAIN: "abstain"}


def _call_row(ranker, proposal, verdict, price) -> dict:
    return {"pair_id": ranker.pair_id(proposal.first, proposal.second),
            "item_a": ranker.item_ids[proposal.first],
            "item_b": ranker.item_ids[proposal.second],
            "winner": _WINNER.get(verdict.outcome),
            "outcome_detail": _DETAIL[verdict.outcome], "judge": proposal.judge,
            "order": "ab" if proposal.first < proposal.second else "ba",
            "sample": proposal.repeat, "strategy": "B0",
            "cost": price.cost(verdict.usage) if price else np.nan,
            "judge_cost": proposal.cost,
            "cached": verdict.cached, "acquisition_score": proposal.score, "raw": verdict.raw,
            "parser": verdict.parser}


def _bar(total: int, label: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=f"select ({label})", unit="call", file=sys.stderr,
                dynamic_ncols=True, mininterval=0.5)


def run_live_topk(ranker: ActiveTopK, texts, backend: JudgeBackend, **kwargs) -> LiveResult:
    """Run the active top-k loop against a live judge until the budget is spent.

    Parameters
    ----------
    ranker : ActiveTopK
        A fresh ranker over the items (its seed fixes every choice).
    texts : sequence of str, length N
        The items' answer texts, in the ranker's item order.
    backend : JudgeBackend, or a mapping of judge name to JudgeBackend
        The judge (any backend: ``openai``, ``anthropic``, ``hf``, ...); a mapping names a
        backend for every judge of the ranker, and the ranker chooses which to ask for
        each comparison (its score per unit cost, :class:`ActiveTopK`).
    question : str
        The prompt every item answers.
    budget : int, optional
        Judge calls to spend (invalid outputs count; failed calls do not).
    max_cost : float, optional
        Money to spend in the ranker's :attr:`JudgeSpec.cost` units (what the loop plans
        with; ``options.max_cost`` stays the hard cap on what the providers bill).
    cache : CompletionCache, optional
        Every call is cached; a rerun of a killed run replays it for free.
    options : RunOptions
        Concurrency, retries, rate limits, ``max_cost`` (a hard cap over the whole run) and
        prices.
    settings : GenerationSettings
    template : str or PromptTemplate
        A pairwise verdict template (default ``baseline``).
    parser : VerdictParser
    batch_size : int, optional
        Proposals per round (default: the concurrency), so the judge stays busy; the
        posterior is refitted between rounds as the ranker's ``refit_every`` says.
    judge : str, optional
        Which of the ranker's judges this backend is (default: its first).
    report : RunReport, optional
        Accumulates across calls (pass one to share a spend cap with other runs).
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    LiveResult
    """
    async def main():
        try:
            return await run_live_topk_async(ranker, texts, backend, **kwargs)
        finally:
            for one in (backend.values() if isinstance(backend, dict) else [backend]):
                await one.aclose()

    return asyncio.run(main())

