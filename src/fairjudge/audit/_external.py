"""External validity of covariate correction on recorded judgements
[bias-aware-active-topk §6 "External validity on LLMBAR", Fig. 6, Technical Appendix]."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._rng import content_seed
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.audit._covariates import item_features
from fairjudge.audit._gold import _pair_keys
from fairjudge.stats._bootstrap import bootstrap_mean, bootstrap_rate
from fairjudge.stats._estimate import Estimate


@dataclass(frozen=True)
class ExternalValidity:
    """Raw vs corrected agreement with gold, with the two controls.

    Attributes
    ----------
    judge : str
    n : int
        Pairs with a decisive gold label.
    raw : Estimate
        The judge alone: its order-averaged preference decides (an exact 0.5 counts half).
    corrected : Estimate
        Cross-validated l2 logistic model on the judge's preference plus the length and
        markdown differences.
    recalibrated : Estimate
        Control 1: the same model on the judge's preference alone.
    covariates_only : Estimate
        Control 2: the same model on the length and markdown differences alone, no judge.
    gain : Estimate
        corrected - raw (paired bootstrap).
    gain_over_covariates : Estimate
        corrected - covariates_only (paired bootstrap).
    judge_prefers_longer, gold_prefers_longer : Estimate
        P(the judge's preferred / the gold answer is the longer one).
    conclusion : str
        What the numbers support, in words.
    """

    judge: str
    n: int
    raw: Estimate
    corrected: Estimate
    recalibrated: Estimate
    covariates_only: Estimate
    gain: Estimate
    gain_over_covariates: Estimate
    judge_prefers_longer: Estimate
    gold_prefers_longer: Estimate
    conclusion: str

    def to_dict(self) -> dict:
        out = {"judge": self.judge, "n": self.n, "conclusion": self.conclusion}
        for name in ("raw", "corrected", "recalibrated", "covariates_only", "gain",
                     "gain_over_covariates", "judge_prefers_longer", "gold_prefers_longer"):
            out[name] = getattr(self, name).as_dict()
        return out


def _excludes_zero(e: Estimate) -> bool:
    return e.ci_low > 0 or e.ci_high < 0


def external_validity(verdicts: pd.DataFrame, items: pd.DataFrame, gold: pd.DataFrame, *,
                      n_folds: int = 5, l2: float = 1.0, level: float = 0.95,
                      n_boot: int = 2000, extra_covariates=(), rng=0) -> ExternalValidity:
    """Does modelling length and markdown recover gold preferences from one judge?

    For each gold pair (in a frame of the analysis's own, since which item a gold file lists
    first is arbitrary: sorted ids, turned around for the half of the pairs a hash picks;
    the first item is "output 1"): the judge score
    is the order-averaged credit to output 1 over its valid verdicts (1 chosen, 0 not, 0.5
    tie; 0.5 when no valid verdict); the features are ``log2((x_1 + 1) / (x_2 + 1))`` for
    word count and for markdown markers. The corrected prediction is the out-of-fold
    probability of an l2-regularised logistic model through the origin (``n_folds``-fold,
    seeded, features scaled within each training fold) of the gold label on
    [score - 0.5, features]: every input changes sign when a pair is turned around, so the
    model cannot learn a frame.

    ``extra_covariates`` names further numeric item columns (a discovered factor's score,
    say) whose differences ``x_1 - x_2`` join the features in the corrected and the
    covariates-only models.

    Two controls always accompany it: the same model on the score alone (recalibration)
    and on the features alone (no judge). On data built so that the worse answer is longer,
    length alone predicts gold: a gain that the covariates-only model matches measures the
    dataset, not a debiased judge, and ``conclusion`` says so. Pairs whose gold label is a
    tie are left out.
    """
    from fairjudge.stats._logistic import cross_validated_predictions

    features = item_features(items)
    g = gold[gold["winner"].isin(["a", "b"])].reset_index(drop=True)
    first, second = g["item_a"].to_numpy(), g["item_b"].to_numpy()
    y = (g["winner"] == "a").to_numpy(dtype=float)
    # Which item a gold file lists first is arbitrary (chosen/rejected data lists the
    # better one first every time), so the analysis sets its own frame: the pair's items
    # in sorted order, turned around for the half of the pairs a hash of the pair picks.
    # No model can then learn the file's frame instead of the judge.
    lo, hi = np.minimum(first, second), np.maximum(first, second)
    turn = np.array([content_seed("external-validity", a, b) % 2 == 1
                     for a, b in zip(lo, hi)], dtype=bool)
    new_first = np.where(turn, hi, lo)
    y = np.where(new_first == first, y, 1.0 - y)
    first, second = new_first, np.where(turn, lo, hi)
    valid = verdicts[verdicts["winner"].isin(["a", "b", "tie"]).fillna(False).to_numpy(bool)]
    chosen = np.where(valid["winner"] == "a", valid["item_a"],
                      np.where(valid["winner"] == "b", valid["item_b"], ""))
    frame = pd.DataFrame({"key": _pair_keys(valid, with_question=False).to_numpy(),
                          "chosen": chosen})
    gkey = _pair_keys(g, with_question=False)
    credit = frame.merge(pd.DataFrame({"key": gkey, "first": first}), on="key", how="inner")
    credit["c"] = np.where(credit["chosen"] == credit["first"], 1.0,
                           np.where(credit["chosen"] == "", 0.5, 0.0))
    score = credit.groupby("key")["c"].mean().reindex(gkey).fillna(0.5).to_numpy()
    dlen = np.log2((features.loc[first, "length"].to_numpy() + 1)
                   / (features.loc[second, "length"].to_numpy() + 1))
    dmd = np.log2((features.loc[first, "markdown"].to_numpy() + 1)
                  / (features.loc[second, "markdown"].to_numpy() + 1))
    kwargs = {"level": level, "n_boot": n_boot, "rng": rng}
    extra = []
    for name in extra_covariates:
        if name not in items.columns:
            raise FairjudgeInputError(f"the item table has no column `{name}` (an extra "
                                      "covariate)")
        values = pd.to_numeric(items[name], errors="coerce")
        difference = (values.reindex(first).to_numpy(float)
                      - values.reindex(second).to_numpy(float))
        extra.append(np.nan_to_num(difference))  # a missing score adds nothing

    def cv(columns):
        # Through the origin: every column changes sign when a pair is turned around,
        # so the prediction does too, and no intercept can learn the frame.
        p = cross_validated_predictions(np.column_stack(columns), y, l2=l2, n_folds=n_folds,
                                        rng=rng, fit_intercept=False)
        return np.where(p == 0.5, 0.5, ((p > 0.5) == (y == 1)).astype(float))

    raw = np.where(score == 0.5, 0.5, ((score > 0.5) == (y == 1)).astype(float))
    corrected = cv([score - 0.5, dlen, dmd, *extra])
    recalibrated = cv([score - 0.5])
    covariates = cv([dlen, dmd, *extra])
    judge_longer = ((score > 0.5) == (dlen > 0))[(score != 0.5) & (dlen != 0)]
    gold_longer = ((y == 1) == (dlen > 0))[dlen != 0]
    result = dict(
        raw=bootstrap_rate(raw, **kwargs), corrected=bootstrap_rate(corrected, **kwargs),
        recalibrated=bootstrap_rate(recalibrated, **kwargs),
        covariates_only=bootstrap_rate(covariates, **kwargs),
        gain=bootstrap_mean(corrected - raw, **kwargs),
        gain_over_covariates=bootstrap_mean(corrected - covariates, **kwargs),
        judge_prefers_longer=bootstrap_rate(judge_longer.astype(float), **kwargs),
        gold_prefers_longer=bootstrap_rate(gold_longer.astype(float), **kwargs))
    judge = str(verdicts["judge"].iloc[0]) if "judge" in verdicts.columns and len(verdicts) \
        else "judge"
    return ExternalValidity(judge=judge, n=len(g), conclusion=_conclusion(**result), **result)


def _conclusion(*, raw, corrected, covariates_only, gain, gain_over_covariates, recalibrated,
                **_) -> str:
    if not _excludes_zero(gain):
        if gain.estimate < 0:
            return (f"correction does not help: {raw.estimate:.2f} -> {corrected.estimate:.2f}"
                    " (the covariates are not a spurious preference of this judge here)")
        return (f"no reliable change: {raw.estimate:.2f} -> {corrected.estimate:.2f}, "
                f"gain {gain.estimate:+.2f} [{gain.ci_low:+.2f}, {gain.ci_high:+.2f}]")
    if gain.estimate < 0:
        return (f"correction hurts: {raw.estimate:.2f} -> {corrected.estimate:.2f}; the "
                "covariates carry real quality signal on this set")
    if not _excludes_zero(gain_over_covariates) or gain_over_covariates.estimate <= 0:
        return (f"agreement rises {raw.estimate:.2f} -> {corrected.estimate:.2f}, but the "
                f"covariates alone reach {covariates_only.estimate:.2f}: the gain measures "
                "the dataset (the features predict gold on this set), not a debiased judge")
    if corrected.estimate - recalibrated.estimate < 0.01:
        return (f"agreement rises {raw.estimate:.2f} -> {corrected.estimate:.2f}, but "
                f"recalibrating the judge's score alone reaches {recalibrated.estimate:.2f}")
    return (f"correction helps: {raw.estimate:.2f} -> {corrected.estimate:.2f}, beyond "
            f"covariates alone ({covariates_only.estimate:.2f}) and recalibration "
            f"({recalibrated.estimate:.2f})")
