"""One audit per judge, gathering every metric that the data allow."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.audit._calibration import has_probabilities, position_prior
from fairjudge.audit._covariates import CovariateBias, covariate_bias, has_verdict_features
from fairjudge.audit._external import ExternalValidity, external_validity
from fairjudge.audit._gold import _pair_keys
from fairjudge.audit._position import (
    consistency_by_gap,
    first_position_rate,
    gold_accuracy,
    position_consistency,
    preference_fairness,
    repetition_stability,
    tie_rate,
)
from fairjudge.audit._self import SelfPreference, self_preference
from fairjudge.data._schema import INJECTION_FLAGS
from fairjudge.stats._bootstrap import bootstrap_rate
from fairjudge.stats._estimate import Estimate


@dataclass(frozen=True)
class JudgeAudit:
    """Every measurement of one judge (``None`` where the data do not allow it).

    Attributes
    ----------
    judge : str
    n_verdicts : int
    invalid_rate : Estimate
        Share of calls whose output could not be parsed.
    position_consistency, first_position_rate, repetition_stability : Estimate
        [position-bias-swap]; the first-slot rate is among decisive verdicts; repetition
        stability is NaN without repeated calls.
    tie_rate : Estimate
        Share of valid verdicts that are ties.
    preference_fairness : Estimate or None
        Shi et al.'s PF in [-1, 1] (negative: first slot preferred), beside the first-slot
        rate; see :func:`preference_fairness`.
    position_prior : Estimate or None
        With ``p_a``/``p_b`` columns: the judge's position prior in logits (positive favours
        the first slot), from its pairs in both orders; see :func:`position_prior` and
        :func:`calibrate_position`.
    accuracy : Estimate or None
        Agreement with gold (exact label match), when gold labels are given.
    length_bias, markdown_bias : Estimate or None
        How much more often the judge picks the longer / more formatted answer than gold
        does (or than 0.5 without gold); see :func:`covariate_bias`. Needs items.
    covariates : CovariateBias or None
    self_preference : SelfPreference or None
        When items carry a ``source`` column.
    consistency_by_gap : pandas.DataFrame or None
        When items carry a ``quality`` column.
    n_pairs : int or None
        Distinct pairs judged (by ``pair_id``, else by the unordered item pair).
    flagged_pairs : int or None
        How many of them have answers holding verdict tokens or prompt delimiters (the
        verdict table's ``answer_has_verdict_tokens`` / ``answer_has_delimiters`` columns,
        written by :func:`fairjudge.strategies.judge_pairs`); None without those columns.
    """

    judge: str
    n_verdicts: int
    invalid_rate: Estimate
    position_consistency: Estimate
    first_position_rate: Estimate
    repetition_stability: Estimate
    tie_rate: Estimate | None = None
    preference_fairness: Estimate | None = None
    position_prior: Estimate | None = None
    accuracy: Estimate | None = None
    length_bias: Estimate | None = None
    markdown_bias: Estimate | None = None
    covariates: CovariateBias | None = None
    self_preference: SelfPreference | None = None
    consistency_by_gap: pd.DataFrame | None = None
    n_pairs: int | None = None
    flagged_pairs: int | None = None
    external_validity: ExternalValidity | None = None
    external_validity_note: str = ""

    def to_dict(self) -> dict:
        def est(e):
            return None if e is None else e.as_dict()

        out = {"judge": self.judge, "n_verdicts": self.n_verdicts,
               "invalid_rate": est(self.invalid_rate),
               "position_consistency": est(self.position_consistency),
               "first_position_rate": est(self.first_position_rate),
               "repetition_stability": est(self.repetition_stability),
               "tie_rate": est(self.tie_rate),
               "preference_fairness": est(self.preference_fairness),
               "position_prior": est(self.position_prior),
               "accuracy": est(self.accuracy), "length_bias": est(self.length_bias),
               "markdown_bias": est(self.markdown_bias), "n_pairs": self.n_pairs,
               "flagged_pairs": self.flagged_pairs}
        if self.covariates is not None:
            out["bias_reference"] = self.covariates.reference
            out["preferences"] = self.covariates.preferences.to_dict(orient="records")
            out["covariate_model"] = self.covariates.coefficients.to_dict(orient="records")
        if self.self_preference is not None:
            sp = self.self_preference
            out["self_preference"] = {"family": sp.family, "judge_rate": est(sp.judge_rate),
                                      "gold_rate": est(sp.gold_rate), "excess": est(sp.excess)}
        if self.consistency_by_gap is not None:
            out["consistency_by_gap"] = self.consistency_by_gap.to_dict(orient="records")
        if self.external_validity is not None:
            out["external_validity"] = self.external_validity.to_dict()
        elif self.external_validity_note:
            out["external_validity"] = {"not_run": self.external_validity_note}
        return out


def _as_bool(column: pd.Series) -> np.ndarray:
    """True/False however a table file stored it (bool, "true", 1; missing is False)."""
    text = column.astype("string").str.strip().str.lower()
    return text.isin(["true", "1", "1.0", "yes"]).fillna(False).to_numpy(dtype=bool)


def flagged_pair_counts(verdicts: pd.DataFrame) -> tuple[int | None, int]:
    """How many distinct pairs have an injection flag set, and how many pairs there are.

    Pairs are told apart by ``pair_id``, else by the unordered (``item_a``, ``item_b``).
    The first number is None when the table has none of the flag columns
    (``answer_has_verdict_tokens``, ``answer_has_delimiters``).
    """
    if "pair_id" in verdicts.columns:
        keys = verdicts["pair_id"].astype(str)
    else:
        keys = pd.Series([" | ".join(sorted(p)) for p in zip(verdicts["item_a"].astype(str),
                                                            verdicts["item_b"].astype(str))],
                         index=verdicts.index, dtype=object)
    present = [c for c in INJECTION_FLAGS if c in verdicts.columns]
    if not present:
        return None, int(keys.nunique())
    flagged = np.zeros(len(verdicts), dtype=bool)
    for column in present:
        flagged |= _as_bool(verdicts[column])
    return int(keys[flagged].nunique()), int(keys.nunique())


def audit_verdicts(verdicts: pd.DataFrame, *, items: pd.DataFrame | None = None,
                   gold: pd.DataFrame | None = None, families: dict | None = None,
                   level: float = 0.95, n_boot: int = 2000, rng=0) -> dict[str, JudgeAudit]:
    """Audit every judge in a verdict table.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        Validated verdicts (``item_a`` shown first); pairs judged in both orders feed the
        position metrics, repeated identical calls the repetition stability.
    items : pandas.DataFrame, optional
        Indexed by id: ``text`` (or length/markdown columns) for covariate bias, ``source``
        for self-preference, ``quality`` for consistency by quality gap.
    gold : pandas.DataFrame, optional
        Gold labels, for accuracy and the gold-adjusted bias.
    families : dict, optional
        Model-family fragments for self-preference.

    With ``answer_has_verdict_tokens`` / ``answer_has_delimiters`` columns (written by
    :func:`fairjudge.strategies.judge_pairs`), each audit counts the pairs whose answers
    could steer the judge (``flagged_pairs``).

    Returns
    -------
    dict of str -> JudgeAudit
    """
    judges = verdicts["judge"].astype(str) if "judge" in verdicts.columns else pd.Series(
        "judge", index=verdicts.index)
    audits = {}
    for judge in sorted(judges.unique()):
        v = verdicts[(judges == judge).to_numpy()]
        invalid = v["winner"].isna().to_numpy(dtype=float)
        kwargs = {"level": level, "n_boot": n_boot, "rng": rng}
        audit = {
            "judge": judge, "n_verdicts": len(v),
            "invalid_rate": bootstrap_rate(invalid, **kwargs),
            "position_consistency": position_consistency(v, **kwargs),
            "first_position_rate": first_position_rate(v, **kwargs),
            "tie_rate": tie_rate(v, **kwargs),
            "preference_fairness": preference_fairness(v, **kwargs),
            "repetition_stability": repetition_stability(v, **kwargs),
        }
        if has_probabilities(v):
            audit["position_prior"] = position_prior(v.drop(columns="judge", errors="ignore"),
                                                     **kwargs)
        audit["flagged_pairs"], audit["n_pairs"] = flagged_pair_counts(v)
        if gold is not None:
            audit["accuracy"] = gold_accuracy(v, gold, **kwargs)
        with_items = items is not None and ("text" in items.columns
                                            or "length" in items.columns)
        if with_items or has_verdict_features(v):
            cov = covariate_bias(v, items if with_items else None, gold, **kwargs)
            audit.update(covariates=cov, length_bias=cov.length_bias,
                         markdown_bias=cov.markdown_bias)
        if gold is not None and with_items:
            audit["external_validity"], audit["external_validity_note"] = \
                _external_validity(v, items, gold, **kwargs)
        if items is not None:
            if "source" in items.columns:
                audit["self_preference"] = self_preference(v, items, judge=judge,
                                                           families=families, gold=gold,
                                                           **kwargs)
            if "quality" in items.columns:
                audit["consistency_by_gap"] = consistency_by_gap(v, items["quality"], **kwargs)
        audits[judge] = JudgeAudit(**audit)
    return audits


#: Fewest decisive gold pairs for the external-validity analysis (5-fold cross-validation).
MIN_EXTERNAL_PAIRS = 20


def _external_validity(verdicts, items, gold, **kwargs) -> tuple:
    """The external-validity analysis on the gold pairs this judge judged, and why it was
    not run when it was not (fewer than :data:`MIN_EXTERNAL_PAIRS` decisive gold pairs, or
    data its cross-validation cannot use, such as gold that always names the first item)."""
    judged = set(_pair_keys(verdicts, with_question=False))
    mine = gold[_pair_keys(gold, with_question=False).isin(judged).to_numpy(dtype=bool)]
    decisive = int(mine["winner"].isin(["a", "b"]).sum())
    if decisive < MIN_EXTERNAL_PAIRS:
        return None, (f"{decisive} decisive gold pairs; the cross-validated analysis needs "
                      f"{MIN_EXTERNAL_PAIRS}")
    try:
        return external_validity(verdicts, items, mine, **kwargs), ""
    except FairjudgeInputError as err:
        return None, str(err)
