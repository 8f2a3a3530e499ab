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
from fairjudge.judges._runner import (
    RunOptions,
    RunReport,
    _progress_bar,
    answer_cost,
    execute_requests,
)
from fairjudge.judges._types import (
    Completion,
    GenerationSettings,
    JudgeRequest,
)
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
        ``cost`` (dollars, NaN without a price; characters / 4 tokens when the provider
        reported no usage, then ``cost_estimated`` is True), tokens, latency, ``cached``,
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


#: Pairs planned, judged and parsed at a time when a cache is given: rendered prompts and raw
#: completions of one chunk are held, never of the whole table. Without a cache, or in batch
#: mode, the table is one chunk.
PAIRS_PER_CHUNK = 5000


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
    references, reference_calls = await _references(pairs, strategy, backends[0], templates,
                                                    cache, options, settings, report)
    run = _Run(strategy, backends, prompt, settings, options, parser, report, references,
               flags, rubric="{{rubric}}" in prompt.user)
    # A batch run is one chunk: every call is submitted before any batch is waited for
    # (chunks would wait for one provider batch after another, up to 24 h each).
    step = (PAIRS_PER_CHUNK if cache is not None and options.batch is None
            else max(1, len(pairs)))
    bars = (_progress_bars(pairs, strategy, backends, references, seed=seed, samples=samples)
            if options.progress else [None] * len(backends))
    try:
        for first in range(0, len(pairs), step):
            await run.judge_chunk(pairs.iloc[first:first + step], first, seed=seed,
                                  samples=samples, cache=cache, bars=bars)
    finally:
        for bar in bars:
            if bar is not None:
                bar.close()
    aggregate_rows, incomplete = [], []
    for position, row in enumerate(pairs.itertuples(index=False)):
        results = run.by_pair.get(row.id, [])
        if not results or row.id in run.missing:
            incomplete.append(row.id)  # some requested call (any sample) has no answer
        if not results or any(outcome is None for _, outcome, _ in results):
            continue
        outcome = strategy.aggregate([to_pair_frame(o, order) for order, o, _ in results])
        aggregate_rows.append({
            "pair_id": row.id, "question_id": row.question_id, "item_a": row.item_a,
            "item_b": row.item_b, "winner": _WINNER.get(outcome),
            "outcome_detail": _DETAIL[outcome], "strategy": strategy.name,
            "judge": "+".join(dict.fromkeys(label for _, _, label in results)),
            "n_calls": len(results), "cost_multiplier": strategy.cost_multiplier(len(backends)),
            "cost": run.pair_cost.get(row.id, np.nan), **run.flags_of(position)})
    calls = (pd.concat(run.call_frames, ignore_index=True) if run.call_frames
             else pd.DataFrame(columns=_CALL_COLUMNS))
    aggregate = pd.DataFrame(aggregate_rows, columns=_AGGREGATE_COLUMNS)
    flagged = flags[flags[list(INJECTION_FLAGS)].any(axis=1)].reset_index(drop=True)
    return JudgingResult(calls, aggregate, report, incomplete, reference_calls, flagged)


def _progress_bars(pairs, strategy, backends, references, *, seed, samples) -> list:
    """One bar per backend over every call planned for it (each chunk advances it)."""
    planned = np.zeros(len(backends), dtype=int)
    for pair_id, question, reference in pairs[["id", "question", "reference"]].itertuples(
            index=False):
        if strategy.needs_reference and not (reference or references.get(question)):
            continue  # no reference, no call
        for call in strategy.calls(pair_id, seed=seed, n_backends=len(backends)):
            planned[call.backend] += samples
    return [_LazyBar(int(n), backend.label) if n else None
            for n, backend in zip(planned, backends)]


class _LazyBar:
    """A progress bar drawn at its first update: a run stopped by an input error found
    before any call (no price for a spend cap, say) shows no empty bar above the error."""

    def __init__(self, total: int, label: str):
        self.total, self.label, self._bar = total, label, None

    def update(self, n: int = 1) -> None:
        if self._bar is None:
            self._bar = _progress_bar(self.total, self.label)
        if self._bar is not None:
            self._bar.update(n)

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        """Show ``text`` after the bar (a batch's progress at the provider)."""
        self.update(0)
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=refresh)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class _Run:
    """One judging run: what every chunk of pairs needs, and what the chunks leave behind
    (call rows as DataFrames, each pair's sample-0 outcomes, costs, pairs missing a call)."""

    def __init__(self, strategy, backends, prompt, settings, options, parser, report,
                 references, flags, *, rubric):
        self.strategy, self.backends, self.prompt = strategy, backends, prompt
        self.settings, self.options, self.parser, self.report = settings, options, parser, report
        self.references, self.rubric = references, rubric
        self.flag_values = flags[list(INJECTION_FLAGS)].to_numpy(dtype=bool)
        # One set of rate limiters per backend for the whole run, not per chunk.
        self.limiters: list[dict] = [{} for _ in backends]
        self.call_frames: list[pd.DataFrame] = []
        # pair id -> [(order, outcome or None, judge label)] of its sample-0 calls
        self.by_pair: dict[str, list] = {}
        self.pair_cost: dict[str, float] = {}
        self.missing: set[str] = set()

    def flags_of(self, position: int) -> dict:
        return dict(zip(INJECTION_FLAGS, map(bool, self.flag_values[position])))

    async def judge_chunk(self, pairs: pd.DataFrame, offset: int, *, seed, samples, cache,
                          bars) -> None:
        """Plan, run and parse the calls of ``pairs`` (rows ``offset``... of the table)."""
        backends, settings = self.backends, self.settings
        features = _side_features(pairs)
        planned: list[list[tuple]] = [[] for _ in backends]  # per backend: (pos, call, request)
        for position, row in enumerate(pairs.itertuples(index=False), start=offset):
            reference = row.reference if row.reference else self.references.get(row.question)
            if self.strategy.needs_reference and not reference:
                continue  # the reference could not be generated; reported in `references`
            for call in self.strategy.calls(row.id, seed=seed, n_backends=len(backends)):
                for sample in range(samples):
                    shown = (row.item_a, row.item_b, row.text_a, row.text_b)
                    if call.order == "ba":
                        shown = (row.item_b, row.item_a, row.text_b, row.text_a)
                    temperature = (settings.temperature if call.temperature is None
                                   else call.temperature)
                    request = JudgeRequest(
                        messages=self.prompt.render(question=row.question, answer_a=shown[2],
                                                    answer_b=shown[3], reference=reference),
                        settings=replace(settings, temperature=temperature),
                        template=self.prompt.name, template_version=self.prompt.version,
                        sample=sample,
                        metadata={"pair_id": row.id, "item_a": shown[0], "item_b": shown[1],
                                  "answer_a": shown[2], "answer_b": shown[3],
                                  "order": call.order})
                    planned[call.backend].append((position, row, replace(call, sample=sample),
                                                  request))
        result_lists = await asyncio.gather(*[
            execute_requests(backend, [p[3] for p in plan], cache=cache, options=self.options,
                             report=self.report, progress=bar, limiters=limiters)
            for backend, plan, bar, limiters in zip(backends, planned, bars, self.limiters)])
        for backend, plan, results in zip(backends, planned, result_lists):
            verdicts = parse_verdicts(results, self.parser, requests=[p[3] for p in plan])
            self.report.invalid += sum(1 for v in verdicts
                                       if v is not None and v.outcome is Outcome.INVALID)
            self._record(backend, plan, verdicts, features, offset)

    def _record(self, backend, plan, verdicts, features: np.ndarray, offset: int) -> None:
        """Call rows of one backend's answers; ``features`` are the chunk's (from row
        ``offset``)."""
        price = (self.options.prices or {}).get(backend.model)
        strategy, rubric = self.strategy, self.rubric
        rows = []
        for (position, row, call, request), verdict in zip(plan, verdicts):
            if call.sample == 0:  # further samples measure stability; they do not vote
                self.by_pair.setdefault(row.id, []).append(
                    (call.order, None if verdict is None else verdict.outcome, backend.label))
            if verdict is None:
                self.missing.add(row.id)  # a requested call without an answer
                continue
            first, second = features[position - offset]
            if call.order == "ba":
                first, second = second, first
            probs = verdict.probabilities or {}
            cost, estimated = answer_cost(price, verdict.usage, request, verdict.raw)
            self.pair_cost[row.id] = self.pair_cost.get(row.id, 0.0) + cost
            rows.append({
                "pair_id": row.id, "question_id": row.question_id,
                "item_a": request.metadata["item_a"], "item_b": request.metadata["item_b"],
                "winner": _WINNER.get(verdict.outcome),
                "outcome_detail": _DETAIL[verdict.outcome],
                "judge": backend.label, "strategy": strategy.name, "order": call.order,
                "temperature": request.settings.temperature, "sample": call.sample,
                "template": request.template, "template_version": request.template_version,
                "cost": cost, "cost_estimated": estimated,
                "input_tokens": verdict.usage.input_tokens,
                "output_tokens": verdict.usage.output_tokens,
                "latency": verdict.latency, "cached": verdict.cached,
                "p_a": probs.get("A", np.nan), "p_b": probs.get("B", np.nan),
                "p_tie": probs.get("tie", np.nan),
                "scores": _scores_json(verdict.raw) if rubric else None,
                "length_a": first[0], "length_b": second[0],
                "markdown_a": first[1], "markdown_b": second[1],
                "raw": verdict.raw, "detail": verdict.detail,
                "parser": f"{verdict.parser}+{RUBRIC_PARSER.label}" if rubric
                else verdict.parser, **self.flags_of(position)})
        if rows:
            self.call_frames.append(pd.DataFrame(rows, columns=_CALL_COLUMNS))


_CALL_COLUMNS = ["pair_id", "question_id", "item_a", "item_b", "winner", "outcome_detail", "judge",
                 "strategy", "order", "temperature", "sample", "template", "template_version",
                 "cost", "cost_estimated", "input_tokens", "output_tokens", "latency", "cached",
                 "p_a", "p_b",
                 "p_tie", "scores", "length_a", "length_b", "markdown_a", "markdown_b", "raw",
                 "detail", "parser", *INJECTION_FLAGS]
_REFERENCE_COLUMNS = ["question", "judge", "template", "template_version", "reference", "ok",
                      "detail", "input_tokens", "output_tokens", "cost", "cost_estimated",
                      "cached"]
_AGGREGATE_COLUMNS = ["pair_id", "question_id", "item_a", "item_b", "winner", "outcome_detail",
                      "strategy", "judge", "n_calls", "cost_multiplier", "cost", *INJECTION_FLAGS]


def _scores_json(raw: str) -> str | None:
    """The rubric's per-criterion scores (S4, S7, S8) as compact JSON, when the reply has them."""
    scores = RUBRIC_PARSER.parse(Completion(raw))
    return None if scores is None else json.dumps(scores, sort_keys=True)


def _side_features(pairs: pd.DataFrame) -> np.ndarray:
    """Word count and markdown markers of both answers of every pair, shape
    ``(n_pairs, 2 sides, 2)``: the per-side covariates a verdict table carries as
    ``length_a``, ``markdown_a``, ... Each distinct text of ``pairs`` is measured once."""
    codes, texts = pd.factorize(pd.concat([pairs["text_a"], pairs["text_b"]],
                                          ignore_index=True), use_na_sentinel=False)
    table = text_features(pd.Series(texts, dtype=object))
    measured = table[["length", "markdown"]].to_numpy(dtype=np.int64)[codes]
    return np.stack([measured[:len(pairs)], measured[len(pairs):]], axis=1)


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
    for question, request, result in zip(missing, requests, results):
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
                     **dict(zip(("cost", "cost_estimated"),
                                answer_cost(price, c.usage, request, c.text))),
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
