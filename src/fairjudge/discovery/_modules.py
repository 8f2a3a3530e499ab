"""Calls to HUB-J's LLM modules [hubj-bias-discovery App. H]: one object that renders a
module's template, sends it through the judging layer (cached, costed, under the spend
cap) and reads the reply -- strict JSON with bounded re-asks for the structured modules,
free text for the rewriters. Identification (§3.2) and quantification (§3.3) share it, so
that a factor's criteria are written once and a rerun pays for nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges import (
    GenerationSettings,
    JudgeRequest,
    RunOptions,
    RunReport,
    execute_requests,
    generate_structured,
)

LEVELS = (1, 2, 3, 4, 5)
_CRITERIA_SCHEMA = {
    "type": "object", "required": ["likert_criteria"],
    "properties": {"likert_criteria": {
        "type": "object", "required": [str(level) for level in LEVELS],
        "properties": {str(level): {"type": "string", "minLength": 1} for level in LEVELS}}}}
_VERIFY_SCHEMA = {"type": "object", "required": ["same_answer"],
                  "properties": {"same_answer": {"type": "boolean"}}}
_SCORE_SCHEMA = {"type": "object", "required": ["score"],
                 "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}}}


class SpendCapStop(FairjudgeInputError):
    """The spend cap stopped a module stage. Every call paid for is cached: raise the cap and
    rerun to go on from there."""


@dataclass(frozen=True)
class BiasFactor:
    """A bias factor: a name and a definition t_z (what G_crit, G_inj and G_score read)."""

    name: str
    definition: str


#: The pre-discovered bias factors of Table 5, the reference of the novelty analysis (Fig. 2).
PRE_DISCOVERED = (
    BiasFactor("Verbosity", "LLM judge favors longer, verbose responses, even if they are not "
               "as clear, high-quality, or accurate as shorter alternatives."),
    BiasFactor("Beauty", "The inclination that judges tend to prefer visually appealing "
               "content, regardless of its actual validity."),
    BiasFactor("Authority", "The tendency to assign more credibility to statements made by "
               "authority figures, regardless of actual evidence."),
    BiasFactor("Bandwagon", "The tendency to give stronger preference to the majority's "
               "beliefs regardless of whether they are correct or not."),
    BiasFactor("Sentiment", "The preference for expressions of positive or negative emotions, "
               "affecting its judgment of emotional content."),
)


@dataclass
class ModuleCaller:
    """Sends module prompts to the generator LLM.

    Attributes
    ----------
    generator : JudgeBackend
    templates : dict
        Module templates by name (:func:`~fairjudge.discovery.load_module_templates`).
    cache, options, report
        As for :func:`fairjudge.judges.execute_requests`.
    settings : GenerationSettings
        Of every module call (the paper leaves them unstated; temperature 0 by default).
    max_reasks : int
        Re-asks of a structured module after a malformed reply.
    """

    generator: object
    templates: dict
    cache: object = None
    options: RunOptions = RunOptions()
    report: RunReport = field(default_factory=RunReport)
    settings: GenerationSettings = GenerationSettings(temperature=0.0, max_tokens=2048)
    max_reasks: int = 2

    async def structured(self, name: str, values_list, schema: dict) -> list:
        """One structured call of module ``name`` per dict of template values."""
        template = self.templates[name]
        prompts = [template.render(**values) for values in values_list]
        results = await generate_structured(self.generator, prompts, schema, cache=self.cache,
                                         options=self.options, report=self.report,
                                         settings=self.settings, max_reasks=self.max_reasks,
                                         template=template.name,
                                         template_version=template.version)
        self.check_cap(name)
        return results

    async def text(self, name: str, values_list) -> list:
        """One free-text call of module ``name`` per dict of values; None for a call
        without a usable (non-empty) reply."""
        template = self.templates[name]
        requests = [JudgeRequest(messages=template.render(**values), settings=self.settings,
                                 template=template.name, template_version=template.version,
                                 kind="generate") for values in values_list]
        results = await execute_requests(self.generator, requests, cache=self.cache,
                                         options=self.options, report=self.report)
        self.check_cap(name)
        return [None if r is None or not r.completion.text.strip()
                else r.completion.text.strip() for r in results]

    def check_cap(self, name: str) -> None:
        """Stop the workflow when the spend cap held calls back: results computed from a
        part of the calls would read as complete."""
        if self.report.stopped_by_cap:
            raise SpendCapStop(
                f"the spend cap (${self.options.max_cost}) stopped module {name!r} after "
                f"${self.report.cost:.4f} this run; raise the cap and rerun (every call paid "
                "for comes from the cache)")

    async def criteria(self, factor: BiasFactor) -> dict:
        """G_crit: level (1-5) -> the intensity criterion of ``factor``.

        Raises
        ------
        FairjudgeInputError
            When no reply is usable after the re-asks (paid calls stay cached).
        """
        (result,) = await self.structured("hubj-criteria", [
            {"bias_name": factor.name, "definition": factor.definition}], _CRITERIA_SCHEMA)
        if not result.ok:
            raise FairjudgeInputError(f"G_crit gave no usable criteria for {factor.name!r} "
                                      f"after its re-asks: {'; '.join(result.errors)}")
        return {int(k): v for k, v in result.value["likert_criteria"].items()
                if k.isdigit() and int(k) in LEVELS}

    async def verified(self, questions, originals, rewrites) -> tuple[list, list]:
        """The rewrites the verifier finds answer-preserving (the others become None), and
        per rewrite checked (those not None, in order) its outcome: ``"kept"``,
        ``"changed"`` or ``"failed"`` (no usable verifier reply: left out, and not counted
        as a changed answer)."""
        checked = [j for j, text in enumerate(rewrites) if text is not None]
        results = await self.structured("hubj-verify", [
            {"question": questions[j], "original": originals[j], "rewritten": rewrites[j]}
            for j in checked], _VERIFY_SCHEMA)
        kept, outcomes = list(rewrites), []
        for j, result in zip(checked, results):
            outcome = ("failed" if not result.ok else
                       "kept" if result.value["same_answer"] else "changed")
            outcomes.append(outcome)
            if outcome != "kept":
                kept[j] = None
        return kept, outcomes

    async def scores(self, factor: BiasFactor, criteria: dict, questions, responses
                     ) -> np.ndarray:
        """G_score: the intensity (1-5) of ``factor`` in each response, NaN where the
        scorer gave no usable reply after its re-asks. Shape ``(len(responses),)``."""
        criteria_json = json.dumps({str(k): criteria[k] for k in sorted(criteria)}, indent=1)
        results = await self.structured("hubj-score", [
            {"bias_name": factor.name, "definition": factor.definition,
             "criteria_json": criteria_json, "question": q, "response": r}
            for q, r in zip(questions, responses)], _SCORE_SCHEMA)
        return np.array([float(r.value["score"]) if r.ok else np.nan for r in results])


def check_factors(factors) -> list:
    """``factors`` as BiasFactor objects, or an error naming the one at fault."""
    out = []
    for number, factor in enumerate(factors):
        if not isinstance(factor, BiasFactor):
            try:
                factor = BiasFactor(*factor)
            except TypeError:
                raise FairjudgeInputError(f"factor {number}: expected a BiasFactor or a (name, "
                                          f"definition) pair; got {factor!r}") from None
        if not str(factor.name).strip() or not str(factor.definition).strip():
            raise FairjudgeInputError(f"factor {number} needs a name and a definition")
        out.append(factor)
    return out
