"""The trusted-anchor gate [bias-aware-active-topk §6 "Gating"]."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._encode import Comparisons
from fairjudge.models._bt import BTFit


@dataclass(frozen=True)
class AnchorGate:
    """Decision of the trusted-anchor gate.

    Attributes
    ----------
    enabled : bool
        True when covariate correction is switched on (the bias-aware fit agrees with the
        anchors at least as well as the naive fit).
    naive_agreement, bias_aware_agreement : float
        Share of decisive anchor labels each fit orders correctly (an exact score tie counts
        half).
    n_anchors : int
        Number of decisive (non-tie) anchor labels used.
    chosen : BTFit
        The fit the gate selects.
    """

    enabled: bool
    naive_agreement: float
    bias_aware_agreement: float
    n_anchors: int
    chosen: BTFit


def anchor_credit(fit: BTFit, anchors: Comparisons) -> np.ndarray:
    """Per decisive anchor (ties left out): 1 when the fit scores its winner higher, 0 when
    lower, 0.5 on an exact score tie."""
    decisive = anchors.first_score != 0.5
    diff = fit.scores[anchors.first[decisive]] - fit.scores[anchors.second[decisive]]
    first_won = anchors.first_score[decisive] == 1.0
    return np.where(diff == 0, 0.5, ((diff > 0) == first_won).astype(float))


def anchor_agreement(fit: BTFit, anchors: Comparisons) -> tuple[float, int]:
    """Share of decisive anchors whose winner the fit scores higher, and their count."""
    decisive = anchors.first_score != 0.5
    if not decisive.any():
        raise FairjudgeInputError("`anchors` has no decisive label (all ties); the gate needs "
                                  "winners")
    weight = anchors.weight[decisive]
    return float(np.dot(weight, anchor_credit(fit, anchors)) / weight.sum()), \
        int(decisive.sum())


def trusted_anchor_gate(naive: BTFit, bias_aware: BTFit, anchors: Comparisons) -> AnchorGate:
    """Enable covariate correction only if it does not lose agreement with trusted labels.

    A covariate can be spurious (a presentation artefact the judge rewards) or legitimate
    (it tracks real quality). Given a few trusted pairwise labels (from humans or a strong
    judge), the gate keeps the bias-aware fit when it agrees with them at least as well as
    the naive fit, and falls back to the naive fit otherwise [bias-aware-active-topk §6
    "Gating"]. Anchors are for evaluation only and are not fitted. Tie labels are ignored.

    Parameters
    ----------
    naive, bias_aware : BTFit
        Fits on the same items (same ``item_ids`` order).
    anchors : Comparisons
        Trusted labels over the same items.
    """
    if naive.item_ids != bias_aware.item_ids or anchors.item_ids != naive.item_ids:
        raise FairjudgeInputError(
            "`naive`, `bias_aware` and `anchors` must index the same items in the "
            "same order")
    naive_rate, n = anchor_agreement(naive, anchors)
    aware_rate, _ = anchor_agreement(bias_aware, anchors)
    enabled = aware_rate >= naive_rate
    return AnchorGate(enabled, naive_rate, aware_rate, n, bias_aware if enabled else naive)
