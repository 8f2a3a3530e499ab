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

#: Why a live run stopped.
STOP_REASONS = ("budget", "exhausted", "spend cap", "failures")


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
        ``order``, ``sample``, ``strategy``, ``cost`` (what the call cost when it was paid;
        ``cached`` says whether it was paid in this run), ``cached``, ``acquisition_score``,
        ``raw``, ``parser``.
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


async def run_live_topk_async(ranker: ActiveTopK, texts, backend: JudgeBackend, *,
                              question: str, budget: int,
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
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise FairjudgeInputError(f"`budget` must be a positive integer; got {budget!r}")
    if not isinstance(question, str) or not question.strip():
        raise FairjudgeInputError("`question` must be the non-empty prompt the items answer")
    prompt = load_templates()[template] if isinstance(template, str) else template
    if prompt.kind != "verdict":
        raise FairjudgeInputError(f"template {prompt.name!r} is not a pairwise verdict template")
    batch_size = max(1, int(batch_size or options.concurrency))
    judge = judge or next(iter(ranker.judges))
    report = report if report is not None else RunReport()
    price = (options.prices or {}).get(backend.model)
    bar = _bar(budget, backend.label) if progress else None
    rows, stopped, spent = [], "budget", 0
    try:
        while spent < budget:
            proposals = ranker.propose(min(batch_size, budget - spent), judge=judge)
            if not proposals:
                stopped = "exhausted"
                break
            requests = [JudgeRequest(
                messages=prompt.render(question=question, answer_a=texts[p.first],
                                       answer_b=texts[p.second]),
                settings=settings, template=prompt.name, template_version=prompt.version,
                sample=p.repeat, metadata={"pair_id": ranker.pair_id(p.first, p.second),
                                           "item_a": ranker.item_ids[p.first],
                                           "item_b": ranker.item_ids[p.second],
                                           "answer_a": texts[p.first],
                                           "answer_b": texts[p.second]})
                for p in proposals]
            results = await execute_requests(backend, requests, cache=cache, options=options,
                                             report=report)
            verdicts = parse_verdicts(results, parser, requests=requests)
            answered, failed = [], []
            for p, verdict in zip(proposals, verdicts):
                if verdict is None:
                    failed.append(p)
                    continue
                report.invalid += verdict.outcome is Outcome.INVALID
                answered.append((p, verdict.outcome))
                rows.append(_call_row(ranker, p, verdict, judge, price))
            ranker.release(failed)
            ranker.update(answered)
            spent += len(answered)
            if bar is not None:
                bar.update(len(answered))
            if report.stopped_by_cap:
                stopped = "spend cap"
                break
            if failed and not answered:
                stopped = "failures"  # a whole batch failed: retrying it now would too
                break
    finally:
        if bar is not None:
            bar.close()
    calls = pd.DataFrame(rows, columns=CALL_COLUMNS)
    return LiveResult(ranker.posterior(), calls, report, stopped, ranker)


CALL_COLUMNS = ["pair_id", "item_a", "item_b", "winner", "outcome_detail", "judge", "order",
                "sample", "strategy", "cost", "cached", "acquisition_score", "raw", "parser"]
_WINNER = {Outcome.A: "a", Outcome.B: "b", Outcome.TIE: "tie"}
_DETAIL = {Outcome.A: "win", Outcome.B: "win", Outcome.TIE: "tie", Outcome.INVALID: "invalid",
           Outcome.ABSTAIN: "abstain"}


def _call_row(ranker, proposal, verdict, judge, price) -> dict:
    return {"pair_id": ranker.pair_id(proposal.first, proposal.second),
            "item_a": ranker.item_ids[proposal.first],
            "item_b": ranker.item_ids[proposal.second],
            "winner": _WINNER.get(verdict.outcome),
            "outcome_detail": _DETAIL[verdict.outcome], "judge": judge,
            "order": "ab" if proposal.first < proposal.second else "ba",
            "sample": proposal.repeat, "strategy": "B0",
            "cost": price.cost(verdict.usage) if price else np.nan,
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
    backend : JudgeBackend
        The judge (any backend: ``openai``, ``anthropic``, ``hf``, ...).
    question : str
        The prompt every item answers.
    budget : int
        Judge calls to spend (invalid outputs count; failed calls do not).
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
            await backend.aclose()

    return asyncio.run(main())

