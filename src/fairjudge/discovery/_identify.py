"""Bias factor identification with a generator LLM [hubj-bias-discovery §3.2, Algorithm 1,
§4.2, App. C].

Model. A judge disagrees with the humans on a case because the response it preferred has
properties the humans did not reward. G_extract names such properties per case (features);
the features are embedded, clustered, and the feature nearest each k-means centroid is
shown to G_construct, which proposes factors with definitions t_z. A candidate whose
embedding has cosine similarity >= τ with a factor already in the pool is dropped.
G_assign maps every feature to one pooled factor or abstains; a factor's coverage C(z) is
the features assigned to it. Greedy selection adds the factor maximising
α·|C(z) \\ U(Z)| − λ_u·|F_unc| until K are chosen. The λ_u term does not depend on z, so it
never changes the choice; it is kept (and defaults to 0) only to match the paper's
objective. Stages 1-3 repeat on the features the chosen factors leave uncovered, the
candidate pool growing, until the chosen factors cover a share ρ of all features or T
iterations have run.

Validation (Table 2, Table 7): on held-out disagreement cases (the calibration/test split
keeps a question on one side), each chosen factor's criteria come from G_crit, G_score
rates the judge-preferred and the human-preferred response 1-5, and
Δ = G_score(judge-preferred) − G_score(human-preferred). Mean Δ has a t interval and a
one-sided paired t-test (Holm-adjusted over the chosen factors). Novelty (Fig. 2) is the
Pearson correlation, across held-out cases, between a chosen factor's Δ and each
pre-discovered factor's Δ (Table 5), scored the same way.

Inferred where the paper is silent (each an option):

- Algorithm 1 initialises Z once, so after the first iteration it would already hold K
  factors and later iterations could not change it. Z is re-selected from the grown pool in
  every iteration instead, which is what "retaining and updating the candidate factor pool
  across iterations" needs to mean anything.
- A factor that covers no feature not already covered is not chosen, even when fewer than
  K are: it explains nothing the others do not.
- G_construct is asked for ``proposals`` factors per iteration (default 2K), M = 20
  clusters, T = 3 iterations, ρ = 0.8, α = 1.
- The loop stops early when an iteration adds no factor to the pool (its assignments, and
  so its selection, would be the previous ones).
- Besides the τ filter, a proposal named like a pooled factor (case aside) is dropped.
- With fewer than two clusters, or no more features than clusters, every remaining feature
  is shown to G_construct (there is nothing to summarise).
- Novelty correlates the per-case Δ of two factors (the paper's "instance-level bias
  scores" could also mean per-response scores; Δ is what Table 2 validates).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.discovery._modules import (
    PRE_DISCOVERED,
    BiasFactor,
    ModuleCaller,
    check_factors,
)
from fairjudge.discovery._templates import load_module_templates
from fairjudge.discovery._validate import check_text_columns, mean_delta_test, split_by_group
from fairjudge.judges import GenerationSettings, RunOptions, RunReport
from fairjudge.stats import Estimate

_FEATURES_SCHEMA = {
    "type": "object", "required": ["features"],
    "properties": {"features": {"type": "array", "items": {
        "type": "object", "required": ["feature_name"],
        "properties": {"feature_name": {"type": "string", "minLength": 1},
                       "reason": {"type": "string"}, "definition": {"type": "string"}}}},
        "definitions": {"type": "object", "additionalProperties": {"type": "string"}}}}
_FACTORS_SCHEMA = {
    "type": "object", "required": ["factors"],
    "properties": {"factors": {"type": "array", "minItems": 1, "items": {
        "type": "object", "required": ["name", "definition"],
        "properties": {"name": {"type": "string", "minLength": 1},
                       "definition": {"type": "string", "minLength": 1}}}}}}
_CASE_COLUMNS = ("id", "question", "response_a", "response_b", "human", "judge_pick")


@dataclass(frozen=True)
class IdentifiedFactor:
    """A chosen factor, validated on held-out disagreement cases.

    Attributes
    ----------
    factor : BiasFactor
        Its name and definition t_z.
    iteration : int
        The iteration whose G_construct proposed it (1-based; 0 for a reference factor).
    coverage : int
        Features G_assign mapped to it in the last iteration.
    examples : tuple of str
        Names of some of those features.
    criteria : dict
        Level (1-5) -> the intensity criterion G_crit wrote (G_score reads it).
    mean_delta : Estimate
        Mean Δ of the 1-5 G_score over the held-out cases it could score, t interval.
    p_value, p_adjusted : float
        One-sided paired t-test of mean Δ > 0; Holm-adjusted over the chosen factors.
    """

    factor: BiasFactor
    iteration: int
    coverage: int
    examples: tuple
    criteria: dict
    mean_delta: Estimate
    p_value: float
    p_adjusted: float

    @property
    def name(self) -> str:
        return self.factor.name


@dataclass(frozen=True)
class Identification:
    """What Algorithm 1 found and how it validated.

    Attributes
    ----------
    factors : list of IdentifiedFactor
        The chosen factors, largest held-out mean Δ first.
    baselines : list of IdentifiedFactor
        The reference factors (default: Table 5's pre-discovered ones) scored on the same
        held-out cases (Table 2's comparison); empty without a novelty analysis.
    novelty : pandas.DataFrame or None
        Pearson r of Δ across held-out cases: rows the chosen factors, columns the
        reference factors (Fig. 2); NaN where a Δ is constant.
    features : pandas.DataFrame
        Every feature: ``case_id``, ``feature_name``, ``definition``, ``reason`` and the
        factor G_assign gave it in the last iteration (``factor``, "" if it abstained).
    candidates : pandas.DataFrame
        The factor pool Z̃: ``name``, ``definition``, ``iteration``, ``coverage``,
        ``selected``.
    history : pandas.DataFrame
        Per iteration: features clustered, clusters, factors proposed and kept after the
        τ filter, pool size, factors chosen, coverage ratio.
    n_calibration, n_test : int
        Disagreement cases features were extracted from, and cases held out.
    failures : dict
        Calls without a usable reply after their re-asks, per module (left out, counted).
    embedder : str
        Name of the feature embedder.
    report : RunReport
        The run's calls, cache hits and cost.
    """

    factors: list
    baselines: list
    novelty: pd.DataFrame | None
    features: pd.DataFrame
    candidates: pd.DataFrame
    history: pd.DataFrame
    n_calibration: int
    n_test: int
    failures: dict
    embedder: str
    report: RunReport = field(repr=False, default=None)

    def to_frame(self) -> pd.DataFrame:
        """One row per chosen factor, then per reference factor: Table 2 with p-values."""
        return pd.DataFrame([{
            "factor": f.name, "source": source, "definition": f.factor.definition,
            "coverage": f.coverage, "mean delta": f.mean_delta.estimate,
            "ci_low": f.mean_delta.ci_low, "ci_high": f.mean_delta.ci_high,
            "p": f.p_value, "p (Holm)": f.p_adjusted, "n test": f.mean_delta.n}
            for source, group in (("discovered", self.factors), ("reference", self.baselines))
            for f in group])

    def to_dict(self) -> dict:
        """JSON-ready (``fairjudge quantify`` and :func:`load_factor_definitions` read it)."""
        def finite(value):  # JSON has no NaN
            return value if not isinstance(value, float) or np.isfinite(value) else None

        def factor(f):
            return {"name": f.name, "definition": f.factor.definition,
                    "iteration": f.iteration, "coverage": f.coverage,
                    "examples": list(f.examples),
                    "criteria": {str(k): v for k, v in f.criteria.items()},
                    "mean_delta": {k: finite(v) for k, v in f.mean_delta.as_dict().items()},
                    "p_value": finite(f.p_value), "p_adjusted": finite(f.p_adjusted)}

        return {"method": "llm", "embedder": self.embedder,
                "n_calibration": self.n_calibration, "n_test": self.n_test,
                "factors": [factor(f) for f in self.factors],
                "reference_factors": [factor(f) for f in self.baselines],
                "novelty": None if self.novelty is None else {
                    row: {col: (None if not np.isfinite(v) else float(v))
                          for col, v in values.items()}
                    for row, values in self.novelty.to_dict(orient="index").items()},
                "candidates": self.candidates.to_dict(orient="records"),
                "history": self.history.to_dict(orient="records"),
                "failures": self.failures}


async def identify_async(cases: pd.DataFrame, generator, *, cache=None,
                         options: RunOptions = RunOptions(), report: RunReport | None = None,
                         embedder="minilm", top_k: int = 5, proposals: int | None = None,
                         clusters: int = 20, similarity_threshold: float = 0.7,
                         coverage: float = 0.8, iterations: int = 3, alpha: float = 1.0,
                         lambda_u: float = 0.0, calibration_share: float = 0.8,
                         reference_factors=PRE_DISCOVERED, level: float = 0.95,
                         templates: dict | None = None,
                         generator_settings: GenerationSettings = GenerationSettings(
                             temperature=0.0, max_tokens=2048),
                         max_reasks: int = 2, rng=0) -> Identification:
    """Asynchronous :func:`identify` (the generator stays open)."""
    from fairjudge.discovery._offline import _kmeans, resolve_embedder
    from fairjudge.stats import holm_bonferroni

    cases = _checked_cases(cases)
    _check_options(top_k=top_k, clusters=clusters, iterations=iterations,
                   proposals=proposals, similarity_threshold=similarity_threshold,
                   coverage=coverage)
    references = check_factors(reference_factors or ())
    proposals = 2 * top_k if proposals is None else proposals
    generator_rng = as_generator(rng)
    groups = cases["group"].tolist() if "group" in cases.columns else None
    calibration, test = split_by_group(len(cases), groups, calibration_share, generator_rng)
    report = report if report is not None else RunReport()
    modules = ModuleCaller(generator, load_module_templates() if templates is None
                           else templates, cache, options, report, generator_settings,
                           max_reasks)
    failures = {"extract": 0, "construct": 0, "assign": 0, "score": 0}

    # Algorithm 1, line 1: features of every calibration case.
    rows = cases.iloc[calibration]
    extracted = await modules.structured("hubj-extract", [
        {"question": r.question, "response_1": r.response_a, "response_2": r.response_b,
         "human_label": "r1" if r.human == "a" else "r2",
         "model_chose": "r1" if r.judge_pick == "a" else "r2"}
        for r in rows.itertuples()], _FEATURES_SCHEMA)
    features = []
    for case_id, result in zip(rows["id"], extracted):
        if not result.ok:
            failures["extract"] += 1
            continue
        named = result.value.get("definitions") or {}
        for entry in result.value["features"]:
            name = entry["feature_name"].strip()
            definition = (entry.get("definition") or named.get(name) or
                          entry.get("reason") or "").strip()
            features.append({"case_id": case_id, "feature_name": name,
                             "definition": definition,
                             "reason": (entry.get("reason") or "").strip()})
    if not features:
        raise FairjudgeInputError(
            f"G_extract gave no features for the {len(rows)} calibration cases "
            f"({failures['extract']} replies unusable after their re-asks; the paid calls "
            "are cached, see the run report)")
    features = pd.DataFrame(features)
    texts = [_feature_text(f) for f in features.itertuples()]
    embed = resolve_embedder(embedder, texts)
    vectors = _unit(embed(texts))

    pool: list[BiasFactor] = []
    pool_vectors = np.zeros((0, vectors.shape[1]))
    proposed_in: dict[str, int] = {}
    assignment = np.full(len(features), -1)
    chosen: list[int] = []
    history = []
    remaining = np.arange(len(features))
    for iteration in range(1, iterations + 1):
        # Stage 1: cluster the remaining features, show G_construct the representatives.
        representatives = _representatives(vectors[remaining], min(clusters, len(remaining)),
                                           generator_rng, _kmeans)
        examples = "\n".join(f"- {texts[remaining[i]]}" for i in representatives)
        previous = "\n".join(f"- {z.name}: {z.definition}" for z in pool) or "(none)"
        (proposal,) = await modules.structured("hubj-construct", [
            {"num_factors": proposals, "feature_examples": examples,
             "prev_factors": previous}], _FACTORS_SCHEMA)
        if not proposal.ok:
            failures["construct"] += 1
            raise FairjudgeInputError(
                f"G_construct gave no usable factors in iteration {iteration} after its "
                f"re-asks: {'; '.join(proposal.errors)} (the paid calls are cached)")
        candidates = [BiasFactor(z["name"].strip(), z["definition"].strip())
                      for z in proposal.value["factors"]]
        candidate_vectors = _unit(embed([f"{z.name}: {z.definition}" for z in candidates]))
        added = 0
        for z, v in zip(candidates, candidate_vectors):
            known = {p.name.lower() for p in pool}
            if z.name.lower() in known or (len(pool_vectors)
                                           and (pool_vectors @ v).max() >= similarity_threshold):
                continue
            pool.append(z)
            pool_vectors = np.vstack([pool_vectors, v])
            proposed_in[z.name] = iteration
            added += 1
        if added == 0 and iteration > 1:
            history.append(_history_row(iteration, remaining, representatives, candidates, 0,
                                        pool, chosen, assignment, note="no new factor"))
            break
        # Stage 2: every feature to a pooled factor, or none.
        listing = "\n".join(f"{n}. {z.name}: {z.definition}" for n, z in enumerate(pool, 1))
        replies = await modules.structured("hubj-assign", [
            {"feature": text, "formatted_factors": listing} for text in texts],
            _assign_schema(len(pool)))
        assignment = np.array([_assigned(r, len(pool)) for r in replies])
        failures["assign"] += sum(not r.ok for r in replies)
        # Stage 3: greedy coverage selection (re-selected from the grown pool).
        chosen = _greedy(assignment, len(pool), top_k, alpha, lambda_u)
        history.append(_history_row(iteration, remaining, representatives, candidates, added,
                                    pool, chosen, assignment))
        covered = np.isin(assignment, chosen)
        if covered.mean() >= coverage:
            break
        remaining = np.flatnonzero(~covered)
        if not len(remaining):
            break

    features["factor"] = [pool[a].name if a >= 0 else "" for a in assignment]
    # Validation on the held-out cases (Table 2), the reference factors alike.
    held_out = cases.iloc[test]
    judge_side = np.where(held_out["judge_pick"] == "a", held_out["response_a"],
                          held_out["response_b"])
    human_side = np.where(held_out["judge_pick"] == "a", held_out["response_b"],
                          held_out["response_a"])
    questions = held_out["question"].tolist() * 2

    async def validated(factor):
        criteria = await modules.criteria(factor)
        scores = await modules.scores(factor, criteria, questions,
                                      [*judge_side, *human_side])
        failures["score"] += int(np.isnan(scores).sum())
        delta = scores[:len(held_out)] - scores[len(held_out):]
        return criteria, delta

    # One factor at a time: a reference factor that is also chosen is then paid once.
    results = [await validated(z) for z in [*(pool[c] for c in chosen), *references]]
    deltas = {}
    found, baselines = [], []
    for position, (criteria, delta) in enumerate(results):
        is_chosen = position < len(chosen)
        factor = pool[chosen[position]] if is_chosen else references[position - len(chosen)]
        estimate, p = mean_delta_test(delta, level)
        members = features["feature_name"][assignment == chosen[position]] if is_chosen else []
        entry = IdentifiedFactor(
            factor, proposed_in.get(factor.name, 0),
            int((assignment == chosen[position]).sum()) if is_chosen else 0,
            tuple(dict.fromkeys(members))[:5], criteria, estimate, p, p)
        (found if is_chosen else baselines).append(entry)
        deltas[(is_chosen, factor.name)] = delta
    found = _holm(found, holm_bonferroni)
    baselines = _holm(baselines, holm_bonferroni)
    found.sort(key=lambda f: -np.nan_to_num(f.mean_delta.estimate, nan=-np.inf))
    novelty = None
    if references and found:
        novelty = pd.DataFrame(
            [[_pearson(deltas[(True, f.name)], deltas[(False, z.name)]) for z in references]
             for f in found], index=[f.name for f in found],
            columns=[z.name for z in references])
    candidates = pd.DataFrame([{
        "name": z.name, "definition": z.definition, "iteration": proposed_in[z.name],
        "coverage": int((assignment == i).sum()), "selected": i in chosen}
        for i, z in enumerate(pool)])
    return Identification(found, baselines, novelty, features, candidates,
                          pd.DataFrame(history), len(calibration), len(test), failures,
                          getattr(embed, "name", "custom"), report)


def identify(cases: pd.DataFrame, generator, **kwargs) -> Identification:
    """Find a judge's bias factors with a generator LLM [Algorithm 1] and validate them on
    held-out cases [Table 2], with the novelty analysis of Fig. 2.

    Parameters
    ----------
    cases : pandas.DataFrame
        Disagreement cases (:func:`~fairjudge.discovery.disagreement_cases`): ``id``,
        ``question``, ``response_a``, ``response_b``, ``human`` and ``judge_pick`` (``a``
        or ``b``; they differ), optionally ``group`` (the question: cases of one group stay
        on one side of the split).
    generator : JudgeBackend
        The LLM behind the modules (G_extract, G_construct, G_assign, G_crit, G_score).
    cache, options, report
        As for :func:`fairjudge.judges.execute_requests`: every call is cached, costed and
        under the spend cap, so a rerun pays nothing.
    embedder : "minilm", "hashing", a sentence-transformers model name, or callable
        Embeds features and factors (default: the offline all-MiniLM-L6-v2 of the
        ``embeddings`` extra).
    top_k : int
        K, factors chosen (paper: 5).
    proposals : int, optional
        Factors G_construct proposes per iteration (default 2K; unstated in the paper).
    clusters : int
        M, k-means clusters of features per iteration (default 20; unstated).
    similarity_threshold : float
        τ: a candidate this similar (cosine) to a pooled factor is dropped (paper: 0.7).
    coverage : float
        ρ: stop once the chosen factors cover this share of the features (default 0.8).
    iterations : int
        T, at most (default 3).
    alpha, lambda_u : float
        Weights of the greedy objective (λ_u does not change the choice; see the module
        docstring).
    calibration_share : float
        Share of cases features are extracted from (paper: 80%); the rest validate.
    reference_factors : sequence of BiasFactor
        Scored on the held-out cases for Table 2's comparison and the novelty analysis
        (default: Table 5's :data:`PRE_DISCOVERED`); empty to skip.
    level : float
        Of the mean-Δ intervals.
    templates : dict, optional
        :func:`~fairjudge.discovery.load_module_templates` (user overrides).
    generator_settings : GenerationSettings
    max_reasks : int
        Re-asks of a module after a malformed reply.
    rng : seed
        Seeds the split and k-means.

    Returns
    -------
    Identification

    Raises
    ------
    FairjudgeInputError
        For cases without the columns above, too few cases to split, no usable features,
        or G_construct without a usable reply after its re-asks (calls paid for stay
        cached, so a rerun resumes).
    SpendCapStop
        When the spend cap held calls back (a subclass of FairjudgeInputError; raise the
        cap and rerun).
    """
    async def main():
        try:
            return await identify_async(cases, generator, **kwargs)
        finally:
            await generator.aclose()

    return asyncio.run(main())


def _checked_cases(cases: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(cases, pd.DataFrame):
        raise FairjudgeInputError("disagreement cases must be a DataFrame")
    missing = [c for c in _CASE_COLUMNS if c not in cases.columns]
    if missing:
        raise FairjudgeInputError(
            f"the disagreement cases lack column `{missing[0]}` (need {', '.join(_CASE_COLUMNS)}"
            "; fairjudge.discovery.disagreement_cases builds them from verdicts and items)")
    if not len(cases):
        raise FairjudgeInputError("there are no disagreement cases: every judge agrees with "
                                  "the humans, or no pair was decided in both orders")
    for column in ("human", "judge_pick"):
        bad = ~cases[column].isin(["a", "b"])
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise FairjudgeInputError(f"disagreement cases row {row}: `{column}` must be 'a' "
                                      f"or 'b'; got {cases[column].iloc[row]!r}")
    same = (cases["human"] == cases["judge_pick"]).to_numpy()
    if same.any():
        raise FairjudgeInputError(f"disagreement cases row {int(np.flatnonzero(same)[0])}: "
                                  "the judge picks what the humans pick (not a disagreement)")
    check_text_columns(cases, ("question", "response_a", "response_b"), "disagreement cases")
    return cases.reset_index(drop=True).assign(id=cases["id"].astype(str).to_numpy())


def _check_options(**values) -> None:
    for name in ("top_k", "clusters", "iterations", "proposals"):
        value = values[name]
        if value is None and name == "proposals":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise FairjudgeInputError(f"`{name}` must be a count >= 1; got {value!r}")
    for name in ("similarity_threshold", "coverage"):
        if not 0 < values[name] <= 1:
            raise FairjudgeInputError(f"`{name}` must be in (0, 1]; got {values[name]!r}")


def _feature_text(feature) -> str:
    return f"{feature.feature_name}: {feature.definition}" if feature.definition \
        else feature.feature_name


def _unit(vectors) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=float)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _representatives(vectors: np.ndarray, k: int, generator, kmeans) -> list[int]:
    """Per non-empty k-means cluster, the position of the member nearest its centroid."""
    if k < 2 or len(vectors) <= k:
        return list(range(len(vectors)))
    centroids, labels = kmeans(vectors, k, generator)
    out = []
    for c in range(k):
        members = np.flatnonzero(labels == c)
        if len(members):
            distance = ((vectors[members] - centroids[c]) ** 2).sum(axis=1)
            out.append(int(members[np.argmin(distance)]))
    return sorted(out)


def _assign_schema(n: int) -> dict:
    """G_assign's reply: a factor's number (1-n) or 0 for none, as an integer or a string
    (the paper's example shows a string); anything else is re-asked."""
    numbers = "|".join(str(i) for i in range(n + 1))
    return {"type": "object", "required": ["assignments"], "properties": {"assignments": {
        "anyOf": [{"type": "integer", "minimum": 0, "maximum": n},
                  {"type": "string", "pattern": rf"^\s*({numbers})?\s*$"}]}}}


def _assigned(result, n: int) -> int:
    """The pool position G_assign chose, or -1 (abstained, out of range, or no reply)."""
    if not result.ok:
        return -1
    value = str(result.value["assignments"]).strip()
    number = int(value) if value.isdigit() else 0
    return number - 1 if 1 <= number <= n else -1


def _greedy(assignment: np.ndarray, n: int, top_k: int, alpha: float,
            lambda_u: float) -> list[int]:
    """Greedy top-K coverage selection (Algorithm 1, Stage 3); ties go to the earlier
    factor; a factor adding no covered feature is not chosen."""
    uncovered = int((assignment < 0).sum())
    covered = np.zeros(len(assignment), dtype=bool)
    chosen: list[int] = []
    while len(chosen) < top_k:
        gains = [(alpha * int(((assignment == z) & ~covered).sum()) - lambda_u * uncovered, z)
                 for z in range(n) if z not in chosen]
        if not gains:
            break
        best_gain, best = max(gains, key=lambda g: (g[0], -g[1]))
        if not ((assignment == best) & ~covered).any():
            break
        chosen.append(best)
        covered |= assignment == best
    return chosen


def _history_row(iteration, remaining, representatives, candidates, added, pool, chosen,
                 assignment, note="") -> dict:
    return {"iteration": iteration, "features clustered": int(len(remaining)),
            "representatives": len(representatives), "proposed": len(candidates),
            "added to pool": added, "pool": len(pool), "chosen": len(chosen),
            "coverage": float(np.isin(assignment, chosen).mean()) if chosen else 0.0,
            "note": note}


def _holm(entries: list, holm_bonferroni) -> list:
    from dataclasses import replace

    if not entries:
        return entries
    adjusted = holm_bonferroni([e.p_value for e in entries])
    return [replace(e, p_adjusted=float(a)) for e, a in zip(entries, adjusted)]


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    both = np.isfinite(x) & np.isfinite(y)
    if both.sum() < 3 or np.std(x[both]) == 0 or np.std(y[both]) == 0:
        return float("nan")
    return float(np.corrcoef(x[both], y[both])[0, 1])


def factor_column(name: str) -> str:
    """The covariate column of a factor: ``factor_`` and its name in lower snake case."""
    import re

    return "factor_" + (re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "x")


async def score_items_async(factors, items: pd.DataFrame, generator, *, criteria=None,
                            cache=None, options: RunOptions = RunOptions(),
                            report: RunReport | None = None, templates: dict | None = None,
                            generator_settings: GenerationSettings = GenerationSettings(
                                temperature=0.0, max_tokens=2048),
                            max_reasks: int = 2) -> pd.DataFrame:
    """Asynchronous :func:`score_items`."""
    factors = check_factors(factors)
    if "text" not in items.columns:
        raise FairjudgeInputError("scoring factors needs the item table's `text` column")
    questions = (items["question"].astype(str).tolist() if "question" in items.columns
                 else [""] * len(items))
    modules = ModuleCaller(generator, load_module_templates() if templates is None
                           else templates, cache, options,
                           report if report is not None else RunReport(), generator_settings,
                           max_reasks)
    columns = {}
    for number, factor in enumerate(factors):
        given = (criteria or [None] * len(factors))[number]
        levels = ({int(k): v for k, v in given.items()} if given
                  else await modules.criteria(factor))
        columns[factor_column(factor.name)] = await modules.scores(
            factor, levels, questions, items["text"].astype(str).tolist())
    return pd.DataFrame(columns, index=items.index)


def score_items(factors, items: pd.DataFrame, generator, **kwargs) -> pd.DataFrame:
    """G_score of every item for every factor: per-item covariates that let the bias-aware
    ranking remove a bias fairjudge discovered [§3.4, "closing the loop"].

    Parameters
    ----------
    factors : sequence of BiasFactor
    items : pandas.DataFrame
        Item table with ``text`` (and ``question``, shown to the scorer when present).
    generator : JudgeBackend
        The LLM behind G_crit and G_score (cached, costed, under the spend cap).
    criteria : sequence of dict, optional
        Per factor, its G_crit criteria (level -> text) when already written (a
        ``discover --out`` file keeps them); otherwise G_crit is called.

    Returns
    -------
    pandas.DataFrame
        Indexed like ``items``; a column per factor (:func:`factor_column`) with scores 1-5,
        NaN where the scorer gave no usable reply after its re-asks.
    """
    async def main():
        try:
            return await score_items_async(factors, items, generator, **kwargs)
        finally:
            await generator.aclose()

    return asyncio.run(main())
