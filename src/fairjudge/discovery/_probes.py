"""Discovered bias factors as probe kinds [hubj-bias-discovery §3.3; debiasing-strategies-study
§3.5]: each factor becomes a kind of the probe registry whose pairs are an answer and its
G_inj rewrite at one intensity level (the answer kept, checked by the verifier), so that
``fairjudge audit --probes`` measures a discovered factor as it measures LENGTH or STYLE.

A factor kind is registered while its probes are built, and again by
:func:`fairjudge.probes.register_table_kinds` wherever a probe table carrying
``factor_definition`` is scored: the kind travels with its probes, so scoring needs no
generator and no code.
"""

from __future__ import annotations

import asyncio
import re

import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.discovery._modules import LEVELS, ModuleCaller, check_factors
from fairjudge.discovery._templates import load_module_templates
from fairjudge.judges import GenerationSettings, RunOptions, RunReport


def probe_kind_name(factor_name: str) -> str:
    """The probe kind of a factor: its name upper-cased, non-alphanumerics as ``_``."""
    name = re.sub(r"[^A-Z0-9]+", "_", factor_name.upper()).strip("_")
    if not name or not name[0].isalpha():
        name = "FACTOR_" + name
    return name


async def factor_probes_async(factors, records, generator, *, level: int = 5, criteria=None,
                              cache=None, options: RunOptions = RunOptions(),
                              report: RunReport | None = None, templates: dict | None = None,
                              verify: bool = True, seed: int = 0,
                              generator_settings: GenerationSettings = GenerationSettings(
                                  temperature=0.0, max_tokens=2048)) -> pd.DataFrame:
    """Asynchronous :func:`factor_probes`."""
    from fairjudge.probes import build_probes, factor_probe_kind, register_probe_kind
    from fairjudge.probes._build import answer_records

    factors = check_factors(factors)
    if level not in LEVELS:
        raise FairjudgeInputError(f"`level` must be one of {LEVELS}; got {level!r}")
    answers = answer_records(records)
    modules = ModuleCaller(generator, load_module_templates() if templates is None
                           else templates, cache, options,
                           report if report is not None else RunReport(), generator_settings)
    tables = []
    for number, factor in enumerate(factors):
        given = (criteria or [None] * len(factors))[number]
        levels = ({int(k): v for k, v in given.items()} if given
                  else await modules.criteria(factor))
        rewrites = await modules.text("hubj-inject", [
            {"bias_name": factor.name, "definition": factor.definition,
             "criterion": levels[level], "question": r.question, "answer": r.answer}
            for r in answers])
        if verify:  # a rewrite that changed the answer (or is unverified) gives no probe
            rewrites, _ = await modules.verified([r.question for r in answers],
                                                 [r.answer for r in answers], rewrites)
        lookup = {(r.question, r.answer): text for r, text in zip(answers, rewrites)}
        name = probe_kind_name(factor.name)
        register_probe_kind(factor_probe_kind(
            name, factor.definition, lambda q, a, lookup=lookup: lookup.get((q, a))),
            replace=True)
        table = build_probes(records, seed=seed, kinds=(name,))
        tables.append(table.assign(factor_definition=factor.definition, factor_level=level))
    out = pd.concat(tables, ignore_index=True)
    out.attrs["skipped"] = [s for t in tables for s in t.attrs.get("skipped", [])]
    return out


def factor_probes(factors, records, generator, **kwargs) -> pd.DataFrame:
    """Probe pairs for discovered bias factors: per record, its answer against the answer
    rewritten by G_inj to show the factor at ``level`` (answer-bearing content kept; a
    rewrite the verifier finds changes the answer gives no probe). Expected verdict: a tie;
    the target is the rewrite, so a positive bias score means the judge prefers more of
    the factor.

    Parameters
    ----------
    factors : sequence of BiasFactor
        Each becomes a probe kind named by :func:`probe_kind_name`.
    records : pandas.DataFrame or list of dict
        Answers, as :func:`fairjudge.probes.build_probes` reads them (question, answer).
    generator : JudgeBackend
        The LLM behind G_crit, G_inj and the verifier (cached, costed, under the cap).
    level : int
        Intensity 1-5 of the injection (default 5; a quantified factor's ℓ* is a good
        choice).
    criteria : sequence of dict, optional
        Per factor, criteria already written (a ``discover --out`` file keeps them).
    verify : bool
        Check each rewrite keeps the answer.
    seed : int
        Seeds the slots, as for ``build_probes``.

    Returns
    -------
    pandas.DataFrame
        A probe table (:data:`fairjudge.probes.PROBE_COLUMNS`) plus ``factor_definition``
        and ``factor_level``; ``attrs["skipped"]`` lists records that gave no probe.
    """
    async def main():
        try:
            return await factor_probes_async(factors, records, generator, **kwargs)
        finally:
            await generator.aclose()

    return asyncio.run(main())
