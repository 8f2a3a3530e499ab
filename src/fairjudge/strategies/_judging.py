"""Judging a table of pairs with a strategy: plan calls, run them, aggregate."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._features import text_features
from fairjudge.data._schema import Outcome
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._cache import CompletionCache
from fairjudge.judges._parsing import RUBRIC_PARSER, VERDICT_PARSER, VerdictParser, parse_verdicts
from fairjudge.judges._prompts import load_templates
from fairjudge.judges._runner import RunOptions, RunReport, execute_requests
from fairjudge.judges._types import Completion, GenerationSettings, JudgeRequest
from fairjudge.strategies._injection import INJECTION_FLAGS, injection_flags
from fairjudge.strategies._strategies import Strategy, get_strategy, to_pair_frame

_WINNER = {Outcome.A: "a", Outcome.B: "b", Outcome.TIE: "tie"}
_DETAIL = {Outcome.A: "win", Outcome.B: "win", Outcome.TIE: "tie", Outcome.ABSTAIN: "abstain",
           Outcome.INVALID: "invalid"}


@dataclass(frozen=True)
class JudgingResult:
    """Outcome of :func:`judge_pairs`.

    Attributes
    ----------
    calls : pandas.DataFrame
        One row per call actually shown to a judge: a fairjudge verdict table (``item_a``
        shown first) with ``pair_id``, ``strategy``, ``order``, ``sample``, ``temperature``,
        ``template``, ``template_version``, ``outcome_detail`` (win, tie or invalid),
        ``cost`` (dollars, NaN without a price), tokens, latency, ``cached``,
        ``p_a``/``p_b``/``p_tie`` when log-probabilities were available, ``raw``, ``detail``,
        ``parser`` (``name@version`` of the parser that read the completion), and
        ``answer_has_verdict_tokens``/``answer_has_delimiters`` (the pair's answers hold
        verdict tokens or prompt delimiters; see :func:`injection_flags`).
    aggregate : pandas.DataFrame
        One row per pair in the input's own a/b frame: ``pair_id``, ``question_id``, ``item_a``,
        ``item_b``, ``winner`` (empty for abstentions and invalid results),
        ``outcome_detail`` (win, tie, abstain or invalid), ``strategy``, ``judge``,
        ``n_calls``, ``cost``, and the two injection flags.
    report : RunReport
    incomplete : list of str
        Pairs left without every planned call (spend cap reached, retries exhausted).
    references : pandas.DataFrame
        The reference-generation calls of S6/S7 (one per question without a given
        reference): question, generated text, tokens, cost, cached.
    flagged : pandas.DataFrame
        The pairs whose answers hold verdict tokens or prompt delimiters, flagged before
        judging (rows of :func:`injection_flags`); empty when none do.
    """

    calls: pd.DataFrame
    aggregate: pd.DataFrame
    report: RunReport
    incomplete: list
    references: pd.DataFrame | None = None
    flagged: pd.DataFrame | None = None


async def judge_pairs_async(pairs: pd.DataFrame, strategy, backends: list[JudgeBackend], *,
                            cache: CompletionCache | None = None,
                            options: RunOptions = RunOptions(), seed: int = 0,
                            settings: GenerationSettings = GenerationSettings(),
                            templates: dict | None = None, template: str | None = None,
                            samples: int = 1, parser: VerdictParser = VERDICT_PARSER,
                            report: RunReport | None = None) -> JudgingResult:
    """Asynchronous :func:`judge_pairs` (backends stay open)."""
    strategy = get_strategy(strategy) if isinstance(strategy, str) else strategy
    if not backends:
        raise FairjudgeInputError("at least one backend is needed")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise FairjudgeInputError(f"`samples` must be a positive integer; got {samples!r}")
    templates = templates or load_templates()
    prompt = templates[template or strategy.template]
    report = report if report is not None else RunReport()
    flags = injection_flags(pairs, template=prompt)
    flag_of = {pair_id: dict(zip(INJECTION_FLAGS, values)) for pair_id, *values in
               flags[["pair_id", *INJECTION_FLAGS]].itertuples(index=False)}
    references, reference_calls = await _references(pairs, strategy, backends[0], templates,
                                                    cache, options,
                                   settings, report)
    planned: list[list[tuple]] = [[] for _ in backends]  # per backend: (row, call, request)
    for row in pairs.itertuples(index=False):
        reference = row.reference if row.reference else references.get(row.question)
        if strategy.needs_reference and not reference:
            continue  # the reference could not be generated; reported below
        planned_calls = [replace(call, sample=sample)
                         for call in strategy.calls(row.id, seed=seed, n_backends=len(backends))
                         for sample in range(samples)]
        for call in planned_calls:
            shown = (row.item_a, row.item_b, row.text_a, row.text_b)
            if call.order == "ba":
                shown = (row.item_b, row.item_a, row.text_b, row.text_a)
            temperature = settings.temperature if call.temperature is None else call.temperature
            request = JudgeRequest(
                messages=prompt.render(question=row.question, answer_a=shown[2],
                                       answer_b=shown[3], reference=reference),
                settings=replace(settings, temperature=temperature),
                template=prompt.name, template_version=prompt.version, sample=call.sample,
                metadata={"pair_id": row.id, "item_a": shown[0], "item_b": shown[1],
                          "answer_a": shown[2], "answer_b": shown[3], "order": call.order})
            planned[call.backend].append((row, call, request))
    result_lists = await asyncio.gather(*[
        execute_requests(backend, [p[2] for p in plan], cache=cache, options=options,
                         report=report)
        for backend, plan in zip(backends, planned)])
    call_rows, by_pair, pair_cost, missing = [], {}, {}, set()
    features = _side_features(pairs)
    rubric = "{{rubric}}" in prompt.user
    for backend, plan, results in zip(backends, planned, result_lists):
        price = (options.prices or {}).get(backend.model)
        verdicts = parse_verdicts(results, parser, requests=[p[2] for p in plan])
        report.invalid += sum(1 for v in verdicts
                              if v is not None and v.outcome is Outcome.INVALID)
        for (row, call, request), verdict in zip(plan, verdicts):
            if call.sample == 0:  # further samples measure stability; they do not vote
                by_pair.setdefault(row.id, []).append((call, verdict, backend))
            if verdict is None:
                missing.add(row.id)  # a requested call without an answer
                continue
            shown_a, shown_b = request.metadata["answer_a"], request.metadata["answer_b"]
            probs = verdict.probabilities or {}
            cost = price.cost(verdict.usage) if price else np.nan
            pair_cost[row.id] = pair_cost.get(row.id, 0.0) + cost
            call_rows.append({
                "pair_id": row.id, "question_id": row.question_id,
                "item_a": request.metadata["item_a"], "item_b": request.metadata["item_b"],
                "winner": _WINNER.get(verdict.outcome),
                "outcome_detail": _DETAIL[verdict.outcome],
                "judge": backend.label, "strategy": strategy.name, "order": call.order,
                "temperature": request.settings.temperature, "sample": call.sample,
                "template": request.template, "template_version": request.template_version,
                "cost": cost,
                "input_tokens": verdict.usage.input_tokens,
                "output_tokens": verdict.usage.output_tokens,
                "latency": verdict.latency, "cached": verdict.cached,
                "p_a": probs.get("A", np.nan), "p_b": probs.get("B", np.nan),
                "p_tie": probs.get("tie", np.nan),
                "scores": _scores_json(verdict.raw) if rubric else None,
                "length_a": features[shown_a][0], "length_b": features[shown_b][0],
                "markdown_a": features[shown_a][1], "markdown_b": features[shown_b][1],
                "raw": verdict.raw, "detail": verdict.detail,
                "parser": f"{verdict.parser}+{RUBRIC_PARSER.label}" if rubric
                else verdict.parser, **flag_of[row.id]})
    aggregate_rows, incomplete = [], []
    for row in pairs.itertuples(index=False):
        results = by_pair.get(row.id, [])
        if not results or row.id in missing:
            incomplete.append(row.id)  # some requested call (any sample) has no answer
        if not results or any(v is None for _, v, _ in results):
            continue
        outcome = strategy.aggregate([to_pair_frame(v.outcome, c.order) for c, v, _ in results])
        aggregate_rows.append({
            "pair_id": row.id, "question_id": row.question_id, "item_a": row.item_a,
            "item_b": row.item_b, "winner": _WINNER.get(outcome),
            "outcome_detail": _DETAIL[outcome], "strategy": strategy.name,
            "judge": "+".join(dict.fromkeys(b.label for _, _, b in results)),
            "n_calls": len(results), "cost_multiplier": strategy.cost_multiplier(len(backends)),
            "cost": pair_cost.get(row.id, np.nan), **flag_of[row.id]})
    calls = pd.DataFrame(call_rows, columns=_CALL_COLUMNS)
    aggregate = pd.DataFrame(aggregate_rows, columns=_AGGREGATE_COLUMNS)
    flagged = flags[flags[list(INJECTION_FLAGS)].any(axis=1)].reset_index(drop=True)
    return JudgingResult(calls, aggregate, report, incomplete, reference_calls, flagged)


_CALL_COLUMNS = ["pair_id", "question_id", "item_a", "item_b", "winner", "outcome_detail", "judge",
                 "strategy", "order", "temperature", "sample", "template", "template_version",
                 "cost", "input_tokens", "output_tokens", "latency", "cached", "p_a", "p_b",
                 "p_tie", "scores", "length_a", "length_b", "markdown_a", "markdown_b", "raw",
                 "detail", "parser", *INJECTION_FLAGS]
_REFERENCE_COLUMNS = ["question", "judge", "template", "template_version", "reference", "ok",
                      "detail", "input_tokens", "output_tokens", "cost", "cached"]
_AGGREGATE_COLUMNS = ["pair_id", "question_id", "item_a", "item_b", "winner", "outcome_detail",
                      "strategy", "judge", "n_calls", "cost_multiplier", "cost", *INJECTION_FLAGS]


def _scores_json(raw: str) -> str | None:
    """The rubric's per-criterion scores (S4, S7, S8) as compact JSON, when the reply has them."""
    scores = RUBRIC_PARSER.parse(Completion(raw))
    return None if scores is None else json.dumps(scores, sort_keys=True)


def _side_features(pairs: pd.DataFrame) -> dict:
    """Word count and markdown markers of every answer text (computed once per text): the
    per-side covariates a verdict table carries as ``length_a``, ``markdown_a``, ..."""
    texts = pd.unique(pd.concat([pairs["text_a"], pairs["text_b"]], ignore_index=True))
    table = text_features(pd.Series(texts, dtype=object))
    return {text: (int(length), int(markdown)) for text, length, markdown in
            zip(texts, table["length"], table["markdown"])}


async def _references(pairs, strategy: Strategy, backend, templates, cache, options, settings,
                      report) -> tuple[dict, pd.DataFrame]:
    """Reference answers generated once per question (cached like any other call).

    Returns the references by question text and one row per generation call (the question,
    the text, tokens, cost, whether it came from the cache).
    """
    empty = pd.DataFrame(columns=_REFERENCE_COLUMNS)
    if not strategy.needs_reference:
        return {}, empty
    missing = list(dict.fromkeys(q for q, r in zip(pairs["question"], pairs["reference"])
                                 if not r))
    if not missing:
        return {}, empty
    prompt = templates["generate-reference"]
    gen_settings = GenerationSettings(temperature=0.0 if settings.temperature is not None
                                      else None,
                                      max_tokens=settings.max_tokens or 1024,
                                      max_completion_tokens=settings.max_completion_tokens)
    requests = [JudgeRequest(messages=prompt.render(question=q), settings=gen_settings,
                             template=prompt.name, template_version=prompt.version,
                             kind="generate", metadata={"question": q}) for q in missing]
    results = await execute_requests(backend, requests, cache=cache, options=options,
                                     report=report)
    price = (options.prices or {}).get(backend.model)
    rows = []
    for question, result in zip(missing, results):
        if result is None:
            continue
        c = result.completion
        ok = bool(c.text.strip())
        detail = "" if ok else ("empty generation (the completion budget ran out)"
                                if c.finish_reason == "length" else "empty generation")
        rows.append({"question": question, "judge": backend.label, "template": prompt.name,
                     "template_version": prompt.version, "reference": c.text, "ok": ok,
                     "detail": detail, "input_tokens": c.usage.input_tokens,
                     "output_tokens": c.usage.output_tokens,
                     "cost": price.cost(c.usage) if price else np.nan,
                     "cached": result.cached})
    return ({r["question"]: r["reference"] for r in rows if r["ok"]},
            pd.DataFrame(rows, columns=_REFERENCE_COLUMNS))


def judge_pairs(pairs: pd.DataFrame, strategy, backends: list[JudgeBackend], **kwargs
                ) -> JudgingResult:
    """Judge every pair with a strategy and aggregate the verdicts per pair.

    Parameters
    ----------
    pairs : pandas.DataFrame
        From :func:`fairjudge.data.load_pairs`.
    strategy : str or Strategy
        ``B0``, ``S1`` ... ``S8`` or ``CWO`` [debiasing-strategies-study §3.3,
        position-bias-swap].
    backends : list of JudgeBackend
        The judge (several only for the cross-family ensemble S3).
    cache : CompletionCache, optional
        Raw completions are cached; verdicts are parsed from them every time.
    options : RunOptions
    seed : int
        Fixes the presentation order of single-order strategies: the order is a hash of
        (pair id, strategy, seed), independent of concurrency and restarts.
    settings : GenerationSettings
    templates : dict, optional
        From :func:`fairjudge.judges.load_templates` (user overrides).
    template : str, optional
        Use this template instead of the strategy's own.
    samples : int
        Repeats of every call (``sample`` 0, 1, ...; distinct cache entries, so repetition
        stability is measurable at temperature > 0). Only sample 0 enters the aggregate.
    parser : VerdictParser
        Reads verdicts from the completions (cached or fresh alike).

    Returns
    -------
    JudgingResult
    """
    async def main():
        try:
            return await judge_pairs_async(pairs, strategy, backends, **kwargs)
        finally:
            for backend in backends:
                await backend.aclose()

    return asyncio.run(main())
