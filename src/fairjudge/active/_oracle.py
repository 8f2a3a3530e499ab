"""Recording a real judge's oracle over a controlled pool [bias-aware-active-topk, Technical
Appendix, "Oracle collection and offline evaluation"].

For each judge the paper queries all N(N-1) ordered pairs of a controlled pool once, at
temperature 0, caches the verdict matrix, and evaluates every acquisition strategy offline
against it (:func:`fairjudge.active.run_topk_experiment` with ``oracles=``). The calls go
through the judge runner, so they are cached the moment they arrive (a killed collection
started again pays only for what is missing), bounded by the runner's spend cap, retried and
rate limited like any other run.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._oracle import RecordedOracle
from fairjudge.data._pools import controlled_pool
from fairjudge.data._schema import Outcome
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._cache import CompletionCache
from fairjudge.judges._parsing import VERDICT_PARSER, VerdictParser, parse_verdicts
from fairjudge.judges._prompts import PromptTemplate, load_templates
from fairjudge.judges._runner import RunOptions, RunReport, execute_requests
from fairjudge.judges._types import GenerationSettings, JudgeRequest

#: Columns of a recorded oracle's verdict table, in order.
ORACLE_VERDICT_COLUMNS = ("pair_id", "item_a", "item_b", "winner", "outcome_detail", "judge",
                          "order", "sample", "strategy", "cost", "cached", "raw", "parser")
_WINNER = {Outcome.A: "a", Outcome.B: "b", Outcome.TIE: "tie"}
_DETAIL = {Outcome.A: "win", Outcome.B: "win", Outcome.TIE: "tie", Outcome.INVALID: "invalid",
           Outcome.ABSTAIN: "abstain"}


def ordered_pairs(n_items: int) -> np.ndarray:
    """Every ordered pair ``(first, second)`` of ``n_items`` items, ``first != second``,
    shape (N (N - 1), 2), in row-major order of the verdict matrix."""
    first, second = np.nonzero(~np.eye(n_items, dtype=bool))
    return np.column_stack([first, second])


def collect_oracle(items: pd.DataFrame, backend: JudgeBackend, *, question: str,
                   judge: str | None = None, cache: CompletionCache | None = None,
                   options: RunOptions = RunOptions(),
                   settings: GenerationSettings = GenerationSettings(temperature=0.0),
                   template: PromptTemplate | str = "letter",
                   templates: dict | None = None,
                   parser: VerdictParser = VERDICT_PARSER, report: RunReport | None = None,
                   info: dict | None = None) -> RecordedOracle:
    """Ask a judge about every ordered pair of ``items`` once and record its verdicts.

    Parameters
    ----------
    items : pandas.DataFrame
        Indexed by item id (N >= 2 rows) with ``text`` and ground truth ``quality``,
        ``verbose``, ``length`` (a :func:`fairjudge.data.controlled_pool`).
    backend : JudgeBackend
        Any backend (``openai``, ``anthropic``, ``hf``, ...); closed afterwards.
    question : str
        The prompt every item answers.
    judge : str, optional
        The judge's name in the verdict table (default: the backend's label).
    cache : CompletionCache, optional
        Every completion is stored as it arrives; a rerun answers from it for free.
    options : RunOptions
        Concurrency, retries, rate limits, prices and ``max_cost``, the hard spend cap.
    settings : GenerationSettings
        Temperature 0 by default, as in the paper.
    template : str or PromptTemplate
        A pairwise verdict template; default ``letter``, the paper's prompt ("Which answer is
        more accurate and complete? Respond with ONLY the single letter A or B.").
    templates : dict, optional
        Templates by name (:func:`fairjudge.judges.load_templates`) to look ``template`` up.
    parser : VerdictParser
    report : RunReport, optional
        Filled with calls, cache hits, money and whether the spend cap stopped the run.
    info : dict, optional
        Extra provenance stored in the oracle (pool settings, seed, ...).

    Returns
    -------
    RecordedOracle
        One verdict row per ordered pair answered (invalid outputs included, with an empty
        ``winner``); pairs the cap or failures left unanswered are absent and counted in
        :attr:`RecordedOracle.missing`.

    Raises
    ------
    FairjudgeInputError
        On items without ``text`` or with fewer than 2 rows, an empty question, or a
        template that is not a pairwise verdict template.
    """
    if not isinstance(items, pd.DataFrame) or "text" not in items.columns or len(items) < 2:
        raise FairjudgeInputError("`items` must be an item table with a `text` column and at "
                                  "least 2 rows")
    if not isinstance(question, str) or not question.strip():
        raise FairjudgeInputError("`question` must be the non-empty prompt the items answer")
    prompt = ((templates or load_templates())[template] if isinstance(template, str)
              else template)
    if prompt.kind != "verdict":
        raise FairjudgeInputError(f"template {prompt.name!r} is not a pairwise verdict template")
    report = report if report is not None else RunReport()
    name = judge or backend.label
    ids = [str(i) for i in items.index]
    texts = [str(t) for t in items["text"]]
    pairs = ordered_pairs(len(ids))
    requests = []
    for first, second in pairs:
        lo, hi = min(first, second), max(first, second)
        requests.append(JudgeRequest(
            messages=prompt.render(question=question, answer_a=texts[first],
                                   answer_b=texts[second]),
            settings=settings, template=prompt.name, template_version=prompt.version,
            metadata={"pair_id": f"{ids[lo]}|{ids[hi]}", "item_a": ids[first],
                      "item_b": ids[second], "question": question,
                      "answer_a": texts[first], "answer_b": texts[second]}))

    async def ask():
        try:
            return await execute_requests(backend, requests, cache=cache, options=options,
                                          report=report)
        finally:
            await backend.aclose()

    results = asyncio.run(ask())
    verdicts = parse_verdicts(results, parser, requests=requests)
    price = (options.prices or {}).get(backend.model) if getattr(backend, "model", None) \
        else None
    rows = []
    for request, verdict, (first, second) in zip(requests, verdicts, pairs):
        if verdict is None:
            continue  # not answered (spend cap, failed call): missing, asked again on rerun
        report.invalid += verdict.outcome is Outcome.INVALID
        meta = request.metadata
        rows.append({"pair_id": meta["pair_id"], "item_a": meta["item_a"],
                     "item_b": meta["item_b"], "winner": _WINNER.get(verdict.outcome),
                     "outcome_detail": _DETAIL[verdict.outcome], "judge": name,
                     "order": "ab" if first < second else "ba", "sample": 0,
                     "strategy": "B0",
                     "cost": price.cost(verdict.usage) if price else np.nan,
                     "cached": verdict.cached, "raw": verdict.raw, "parser": verdict.parser})
    table = pd.DataFrame(rows, columns=list(ORACLE_VERDICT_COLUMNS))
    provenance = {"question": question, "template": prompt.name,
                  "template_version": prompt.version, "temperature": settings.temperature,
                  "max_tokens": settings.max_tokens, "backend": backend.name,
                  "model": getattr(backend, "model", None), "parser": parser.label,
                  "cost": report.cost, "stopped_by_cap": report.stopped_by_cap,
                  "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "fairjudge_version": _version(), **(info or {})}
    return RecordedOracle(items=items.copy(), verdicts=table, judge=name, info=provenance)


def build_pool_oracle(topic: str, backend: JudgeBackend, *, n_items: int = 30,
                      statements_per_item: int = 6, bank: str = "paper", seed: int = 0,
                      **judging) -> RecordedOracle:
    """Draw a controlled pool and record a judge's oracle on it (the paper's protocol).

    The pool is :func:`fairjudge.data.controlled_pool` ``(topic, n_items=...,
    statements_per_item=..., bank=..., rng=seed)``; its question is the pool's question.
    Every other keyword goes to :func:`collect_oracle` (``cache``, ``options`` with the spend
    cap, ``settings``, ``template``, ``judge``, ``report``).

    Returns
    -------
    RecordedOracle
        Its ``info`` records the topic, bank, ``C``, ``N`` and seed beside the judging
        provenance.

    Examples
    --------
    >>> from fairjudge.judges import get_backend
    >>> oracle = build_pool_oracle("the Moon", get_backend("simulated"),
    ...                            n_items=6, seed=3)  # doctest: +SKIP
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise FairjudgeInputError(f"`seed` must be an integer; got {seed!r}")
    pool = controlled_pool(topic, n_items=n_items, statements_per_item=statements_per_item,
                           bank=bank, rng=int(seed))
    info = {"topic": topic, "bank": bank, "statements_per_item": int(statements_per_item),
            "seed": int(seed), **judging.pop("info", {})}
    return collect_oracle(pool, backend, question=pool.attrs["question"], info=info, **judging)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("fairjudge")
    except Exception:  # noqa: BLE001 -- a source checkout without metadata
        return "unknown"
