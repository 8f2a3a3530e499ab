"""Bias quantification by injection [hubj-bias-discovery §3.3, Algorithm 2].

For a factor z with definition t_z, G_crit writes five intensity criteria; for every
agreement case (the judge and the humans both prefer r+ over r-) G_inj rewrites r- to
show z at each level ℓ, keeping the answer; the judge compares r+ with the rewrite in both
orders. y = 1 when it picks the rewrite, 0 when it keeps r+, 0.5 for a tie or an
order-inconsistent pair (the S1 rule). The flip rate FR_ℓ is the mean of y. The effective
intensity ℓ* maximises FR on a calibration split (every level is rewritten and judged
there); the susceptibility ρ is FR at ℓ* on the held-out split (rewritten and judged at ℓ*
alone), with a Wilson interval over its cases. The judge compares the pair with its own
prompt (fairjudge's B0 template through S1), not the paper's A/B/C pairwise prompt, so ρ
is comparable across fairjudge runs rather than with the paper's Table 3.

Two controls fairjudge adds:

- a verifier call per rewrite asks whether it still gives the same answer (the paper's
  answer-change rate, Fig. 4); rewrites that change the answer are counted and left out
  of the flip rates, since a flip towards a different answer is not a bias (a verifier
  call without a usable reply leaves its rewrite out too, counted apart);
- a placebo: a content- and length-preserving paraphrase of r- judged the same way. Its
  flip rate is the judge's own noise against which ρ is read.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.discovery._modules import LEVELS, BiasFactor, ModuleCaller, check_factors
from fairjudge.discovery._templates import load_module_templates
from fairjudge.discovery._validate import check_text_columns
from fairjudge.judges import GenerationSettings, RunOptions, RunReport
from fairjudge.stats import Estimate
from fairjudge.stats._agreement import wilson_interval


@dataclass(frozen=True)
class FactorQuantification:
    """One factor on one judge.

    Attributes
    ----------
    factor : BiasFactor
    criteria : dict
        Level (1-5) -> the intensity criterion G_crit wrote.
    calibration : pandas.DataFrame
        Per level, on the calibration cases: ``flip_rate``, ``n`` (cases with a verdict),
        and the verifier's counts ``kept``, ``answer_changed``, ``verifier_failed``.
    effective_level : int
        ℓ*, the level with the highest calibration flip rate (the lowest on ties).
    susceptibility : Estimate
        ρ: the held-out flip rate at ℓ*, with a Wilson interval over its cases.
    placebo : Estimate or None
        The held-out flip rate towards a paraphrase of r- (the judge's own noise).
    answer_changed : float or None
        Share of the verified rewrites (calibration levels and the held-out ℓ*) found to
        change the answer, which are left out; None without verification.
    """

    factor: BiasFactor
    criteria: dict
    calibration: pd.DataFrame
    effective_level: int
    susceptibility: Estimate
    placebo: Estimate | None
    answer_changed: float | None

    def to_dict(self) -> dict:
        return {"factor": self.factor.name, "definition": self.factor.definition,
                "criteria": {str(k): v for k, v in self.criteria.items()},
                "calibration": self.calibration.to_dict(orient="records"),
                "effective_level": self.effective_level,
                "susceptibility": self.susceptibility.as_dict(),
                "placebo": None if self.placebo is None else self.placebo.as_dict(),
                "answer_changed": self.answer_changed}


@dataclass(frozen=True)
class Quantification:
    """Every factor on one judge: its bias profile ρ_m (:meth:`profile`)."""

    factors: list
    report: RunReport = field(repr=False, default=None)

    def profile(self) -> pd.DataFrame:
        """Per factor: ℓ*, ρ with its interval and n, the placebo flip rate, and the
        share of rewrites that changed the answer."""
        return pd.DataFrame([{
            "factor": q.factor.name, "effective_level": q.effective_level,
            "susceptibility": q.susceptibility.estimate, "ci_low": q.susceptibility.ci_low,
            "ci_high": q.susceptibility.ci_high, "n": q.susceptibility.n,
            "placebo": np.nan if q.placebo is None else q.placebo.estimate,
            "answer_changed": np.nan if q.answer_changed is None else q.answer_changed}
            for q in self.factors]).set_index("factor")

    def to_dict(self) -> dict:
        return {"factors": [q.to_dict() for q in self.factors]}


def load_factor_definitions(source) -> list[BiasFactor]:
    """Factors from a JSON list of ``{"name", "definition"}`` (or a ``discover --out``
    file, whose factors are defined by their terms and example sentences).

    Raises
    ------
    FairjudgeInputError
        For a file without factors, or a factor without a name.
    """
    from fairjudge.discovery._offline import read_factors_file

    data, where = read_factors_file(source)
    entries = data.get("factors") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise FairjudgeInputError(f"{where}: expected a list of factors "
                                  '[{"name": ..., "definition": ...}]')
    factors = []
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict) or not str(entry.get("name", "")).strip():
            raise FairjudgeInputError(f"{where}: factor {number} needs a `name`")
        definition = entry.get("definition")
        if not definition and entry.get("terms"):
            examples = "; ".join(entry.get("examples", [])[:2])
            definition = (f"The tendency for responses to contain passages about "
                          f"{', '.join(entry['terms'])}, such as: {examples}")
        if not definition:
            raise FairjudgeInputError(f"{where}: factor {entry['name']!r} needs a "
                                      "`definition`")
        factors.append(BiasFactor(str(entry["name"]), str(definition)))
    return factors


async def quantify_async(factors, cases: pd.DataFrame, judge, generator, *, cache=None,
                         options: RunOptions = RunOptions(), report: RunReport | None = None,
                         calibration: int = 100, placebo: bool = True, verify: bool = True,
                         templates: dict | None = None, strategy: str = "S1",
                         judge_settings: GenerationSettings = GenerationSettings(),
                         generator_settings: GenerationSettings = GenerationSettings(
                             temperature=0.0, max_tokens=2048),
                         rng=0) -> Quantification:
    """Asynchronous :func:`quantify` (backends stay open)."""
    from fairjudge.data import load_pairs
    from fairjudge.strategies import get_strategy, judge_pairs_async

    factors = check_factors(factors)
    cases = _checked_cases(cases)
    if len(cases) < calibration + 5:
        raise FairjudgeInputError(f"{len(cases)} agreement cases leave fewer than 5 held out "
                                  f"after {calibration} for calibration")
    if get_strategy(strategy).name not in ("S1", "S8"):
        raise FairjudgeInputError(f"strategy {strategy!r} does not score an order-inconsistent "
                                  "pair as a tie; quantification needs S1 or S8 (both orders, "
                                  "y = 0.5 when they disagree)")
    report = report if report is not None else RunReport()
    modules = ModuleCaller(generator, load_module_templates() if templates is None
                           else templates, cache, options, report, generator_settings)
    order = as_generator(rng).permutation(len(cases))
    cases = cases.iloc[order].reset_index(drop=True)
    cal = np.arange(calibration)
    test = np.arange(calibration, len(cases))

    async def flips(positions, rewrites, tag):
        """y per position: 1 = the judge picked the rewrite, 0 = r+, 0.5 = a tie or an
        order-inconsistent pair; NaN without a rewrite or a verdict."""
        y = np.full(len(positions), np.nan)
        keep = [j for j, text in enumerate(rewrites) if text is not None]
        if not keep:
            return y
        rows = cases.iloc[[positions[j] for j in keep]]
        ids = [f"{tag}:{case_id}" for case_id in rows["id"]]
        table = load_pairs(pd.DataFrame({"id": ids, "question": rows["question"].to_numpy(),
                                         "a": rows["chosen"].to_numpy(),
                                         "b": [rewrites[j] for j in keep]}))
        result = await judge_pairs_async(table, strategy, [judge], cache=cache,
                                         options=options, settings=judge_settings,
                                         report=report, seed=0)
        modules.check_cap("judge")  # flip rates from a part of the verdicts are not rates
        winner = dict(zip(result.aggregate["pair_id"], result.aggregate["winner"]))
        for j, pair_id in zip(keep, ids):
            w = winner.get(pair_id)
            if w is not None:
                y[j] = 1.0 if w == "b" else 0.0 if w == "a" else 0.5
        return y

    async def injected(factor, criteria, level, positions):
        rewrites = await modules.text("hubj-inject", [
            {"bias_name": factor.name, "definition": factor.definition,
             "criterion": criteria[level], "question": cases["question"].iloc[i],
             "answer": cases["rejected"].iloc[i]} for i in positions])
        checks = None
        if verify:
            rewrites, checks = await modules.verified(
                [cases["question"].iloc[i] for i in positions],
                [cases["rejected"].iloc[i] for i in positions], rewrites)
        return rewrites, checks

    out = []
    for factor in factors:
        criteria = await modules.criteria(factor)
        rows, checks_by_level = [], {}
        # Algorithm 2: every level on the calibration cases only...
        for level in LEVELS:
            rewrites, checks = await injected(factor, criteria, level, cal)
            checks_by_level[level] = checks
            y = await flips(cal, rewrites, f"{factor.name}@{level}")
            finite = np.isfinite(y)
            rows.append({"level": level, "flip_rate": float(y[finite].mean())
                         if finite.any() else np.nan, "n": int(finite.sum()),
                         **_check_counts(checks)})
        table = pd.DataFrame(rows)
        best = table.dropna(subset=["flip_rate"])
        if best.empty:
            raise FairjudgeInputError(
                f"no calibration case of {factor.name!r} got a verdict on a rewrite (rewrites "
                f"kept after the verifier: {table['n'].sum()}; see the run report's errors)")
        level_star = int(best.loc[best["flip_rate"].idxmax(), "level"])
        # ... then the held-out cases at the effective level alone.
        rewrites, checks = await injected(factor, criteria, level_star, test)
        rho = _rate(await flips(test, rewrites, f"{factor.name}@{level_star}"))
        control = None
        if placebo:
            paraphrases = await modules.text("hubj-paraphrase", [
                {"question": cases["question"].iloc[i], "answer": cases["rejected"].iloc[i]}
                for i in test])
            control = _rate(await flips(test, paraphrases, "placebo"))
        changed = None
        if verify:
            counts = _check_counts([c for cs in [*checks_by_level.values(), checks]
                                    for c in cs])
            judged = counts["kept"] + counts["answer_changed"]
            changed = counts["answer_changed"] / judged if judged else None
        out.append(FactorQuantification(factor, criteria, table, level_star, rho, control,
                                        changed))
    return Quantification(out, report)


def _checked_cases(cases: pd.DataFrame) -> pd.DataFrame:
    """The agreement cases, or an error naming the column and row at fault."""
    missing = [c for c in ("id", "question", "chosen", "rejected") if c not in cases.columns]
    if missing:
        raise FairjudgeInputError(f"the agreement cases lack column `{missing[0]}` (id, "
                                  "question, chosen = the response judge and humans prefer, "
                                  "rejected)")
    check_text_columns(cases, ("question", "chosen", "rejected"), "agreement cases")
    ids = cases["id"].astype(str)
    if ids.duplicated().any():
        raise FairjudgeInputError(f"agreement cases: `id` {ids[ids.duplicated()].iloc[0]!r} "
                                  "appears more than once")
    return cases.assign(id=ids)


def _check_counts(checks) -> dict:
    """Verifier outcomes: rewrites kept, found to change the answer, or left unchecked
    because the verifier gave no usable reply."""
    checks = list(checks or [])
    return {"kept": checks.count("kept"), "answer_changed": checks.count("changed"),
            "verifier_failed": checks.count("failed")}


def _rate(y: np.ndarray, level: float = 0.95) -> Estimate:
    """Mean of y (ties count 0.5) with a Wilson interval over the cases that have one."""
    y = y[np.isfinite(y)]
    if not len(y):
        return Estimate.missing(level=level, method="wilson")
    interval = wilson_interval(float(y.sum()), len(y), level=level)
    return Estimate(float(y.mean()), interval.low, interval.high, len(y), level, "wilson")


def quantify(factors, cases: pd.DataFrame, judge, generator, **kwargs) -> Quantification:
    """Measure how strongly ``judge`` responds to each factor [Algorithm 2].

    Parameters
    ----------
    factors : list of BiasFactor or (name, definition)
    cases : pandas.DataFrame
        Agreement cases of the judge: ``id``, ``question``, ``chosen`` (r+, the response
        the judge and the humans prefer) and ``rejected`` (r-).
    judge, generator : JudgeBackend
        The judge quantified, and the LLM behind G_crit, G_inj, the verifier and the
        placebo paraphrase.
    cache, options, report
        As for :func:`fairjudge.judges.execute_requests`: every call is cached, costed and
        under the spend cap, so a rerun pays nothing.
    calibration : int
        Cases (seeded) that choose ℓ* (paper: 100); the rest measure ρ (paper: 500).
    placebo, verify : bool
        Run the paraphrase control and the answer-preservation check.
    templates : dict, optional
        :func:`~fairjudge.discovery.load_module_templates` (user overrides).
    strategy : str
        How the judge compares r+ with the rewrite: ``S1`` (both orders, a tie when they
        disagree; the paper's y = 0.5 for inconsistent pairs).
    rng : seed
        Seeds the calibration/test split.

    Returns
    -------
    Quantification
    """
    async def main():
        try:
            return await quantify_async(factors, cases, judge, generator, **kwargs)
        finally:
            await judge.aclose()
            if generator is not judge:
                await generator.aclose()

    return asyncio.run(main())
