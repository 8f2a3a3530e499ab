"""Bias correction anchored on human labels [the multi-fidelity issue §2; bias-aware-active-
topk §3, §6 "Limitations"].

The bias-aware model identifies a judge's covariate effect c_j only through its prior on
quality, theta ~ N(0, 1/lambda): it assumes quality is uncorrelated with the covariate.
Real answers break that (better answers are often longer), and the correction then removes
real quality. Human labels on some pairs identify the split without that assumption.

Model: for a verdict of judge j on a shown before b, and for a human label on (a, b),

    judge:  P(a preferred) = sigmoid(u_a - u_b + sum_m C_{j,m} dx_m + kappa_j)
    human:  P(a preferred) = sigmoid(u_a - u_b + sum_m beta_m dx_m)

with dx the standardised covariate differences. Quality is theta_i = u_i + sum_m beta_m
x_{i,m} (item covariates): humans' own association with the covariate counts as quality,
whatever its cause. A judge's bias is its excess over humans, e_{j,m} = C_{j,m} - beta_m,
and its position term kappa_j; humans carry no position term (pinned at 0 by a prior of
precision ``PINNED``). The prior on u is the bias-aware model's N(0, 1/lambda); on C, beta
and kappa its N(0, 1/lambda_b). The human labels thus decide how much of the judge's
covariate preference is quality: with none, beta = 0 and this is the bias-aware model.

Fitted as one penalised Bradley–Terry model with the human labels as one more judge
(:func:`~fairjudge.models._bt.fit_penalised_bt`), then reparametrised; the Laplace
covariance is carried by the same linear map. Assumed: the labels are a fair sample of
what humans prefer on these items (any pairs; not chosen by the judge's verdicts), and
biases are linear on the logit scale.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fairjudge._util._memory import require_dense_memory
from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._encode import Comparisons
from fairjudge.models._bt import (
    POSITION,
    BiasEstimate,
    BTFit,
    bias_aware_bt,
    bt_pairwise,
    fit_penalised_bt,
    standardise_covariates,
)
from fairjudge.models._gate import anchor_credit

#: Prior precision that holds a parameter at 0 (the humans' position term).
PINNED = 1e8
#: The judge name the human labels are fitted under.
HUMANS = "humans"


def anchored_bt(comparisons: Comparisons, anchors: Comparisons, covariates=None, *,
                covariate_names=None, position: bool = True, prior_precision: float = 1.0,
                bias_prior_precision: float = 0.1, check_graph: bool = True) -> BTFit:
    """Judge verdicts and human labels in one bias-aware fit (see the module docstring).

    Parameters
    ----------
    comparisons : Comparisons
        The judges' verdicts.
    anchors : Comparisons
        Human labels over the same items (and per-verdict covariates); their judge column
        is ignored: every label is a human's.
    covariates : array_like, shape (N, d), optional
        Raw item covariates.
    covariate_names : sequence of str, optional
    position : bool
        Each judge's position term.
    prior_precision, bias_prior_precision : float
        lambda and lambda_b.

    Returns
    -------
    BTFit
        ``model`` ``"anchored"``; ``scores`` and ``covariance`` of theta = u + beta x;
        ``bias`` each judge's excess over humans per covariate and its position term,
        then the humans' own coefficients (judge ``"humans"``: the quality association).
    """
    if anchors.item_ids != comparisons.item_ids:
        raise FairjudgeInputError("the human labels must be encoded against the verdicts' "
                                  "items")
    if comparisons.covariate_names or anchors.covariate_names:
        raise FairjudgeInputError(
            "human labels anchor item covariates only; per-verdict covariates ("
            f"{', '.join(comparisons.covariate_names or anchors.covariate_names)}) vary "
            "within an item, so a human's preference for them is no part of an item's "
            "quality and the likelihood identifies them without labels: give the "
            "covariate per item, or rank without --anchors")
    if len(anchors) == 0:
        raise FairjudgeInputError("no human label names a winner or a tie")
    humans = HUMANS if HUMANS not in comparisons.judges else f"{HUMANS} (labels)"
    n_judges = comparisons.n_judges
    joined = Comparisons(
        np.concatenate([comparisons.first, anchors.first]),
        np.concatenate([comparisons.second, anchors.second]),
        np.concatenate([comparisons.first_score, anchors.first_score]),
        np.concatenate([comparisons.weight, anchors.weight]),
        np.concatenate([comparisons.judge, np.full(len(anchors), n_judges)]),
        comparisons.item_ids, comparisons.judges + (humans,),
        np.vstack([comparisons.covariate_diff, anchors.covariate_diff]),
        comparisons.covariate_names)
    x, names, scale = standardise_covariates(covariates, covariate_names,
                                             comparisons.n_items)
    d_item = x.shape[1]
    d = d_item + len(comparisons.covariate_names)
    q = d + int(position)
    precision = np.full((n_judges + 1) * q, float(bias_prior_precision))
    if position:
        precision[n_judges * q + d] = PINNED
    # The fit's Hessian and covariance, and the reparametrisation's transform and product.
    require_dense_memory(comparisons.n_items + (n_judges + 1) * q, 4,
                         what="the anchored model (the bias correction fitted to human labels)",
                         instead="it has no sparse solver; rank fewer items with --anchors, "
                         "or fit the bias-aware model without them")
    raw = fit_penalised_bt(joined, x, names, scale, model="anchored", position=position,
                           prior_precision=prior_precision, bias_prior_precision=precision,
                           check_graph=check_graph, solver="dense")
    n = comparisons.n_items
    # theta = u + x beta; e_j = C_j - beta; kappa and beta unchanged.
    transform = np.eye(raw.params.size)
    human = n + n_judges * q
    transform[:n, human:human + d_item] = x
    for j in range(n_judges):
        start = n + j * q
        transform[start:start + d, human:human + d] -= np.eye(d)
    params = transform @ raw.params
    covariance = transform @ raw.param_covariance @ transform.T
    covariance = (covariance + covariance.T) / 2
    se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    counts = np.bincount(joined.judge, minlength=n_judges + 1)
    all_names = raw.covariate_names
    bias = []
    for j, judge in enumerate(joined.judges):
        start = n + j * q
        for m, name in enumerate(all_names):
            bias.append(BiasEstimate(name, judge, float(params[start + m] / raw.covariate_scale[m]),
                                     float(se[start + m] / raw.covariate_scale[m]),
                                     int(counts[j])))
        if position and j < n_judges:
            bias.append(BiasEstimate(POSITION, judge, float(params[start + q - 1]),
                                     float(se[start + q - 1]), int(counts[j])))
    note = (f"anchored on {len(anchors)} human label(s): each judge's covariate terms are its "
            "excess over the humans' own association (judge `humans`), which counts as "
            "quality")
    return replace(raw, scores=params[:n].copy(), covariance=covariance[:n, :n].copy(),
                   bias=tuple(bias), params=params, param_covariance=covariance,
                   notes=raw.notes + (note,), posterior=None)


@dataclass(frozen=True)
class AnchoredAgreement:
    """Agreement with held-out human labels by cross-validation.

    Attributes
    ----------
    naive, bias_aware, anchored : float
        Share of held-out decisive labels each fit orders correctly (a score tie counts
        half); ``anchored`` fits the other folds' labels, the other two fit none.
    n_labels, folds : int
    per_label : dict of numpy.ndarray
        Fit name -> credit per held-out label (0, 0.5 or 1), for paired comparisons.
    pair : numpy.ndarray
        The unordered pair of each held-out label (a key), for intervals that count
        pairs, not labels: both orders of a pair are one unit.
    """

    naive: float
    bias_aware: float
    anchored: float
    n_labels: int
    folds: int
    per_label: dict
    pair: np.ndarray


def anchored_agreement(comparisons: Comparisons, anchors: Comparisons, covariates=None, *,
                       covariate_names=None, position: bool = True,
                       prior_precision: float = 1.0, bias_prior_precision: float = 0.1,
                       folds: int = 5, rng=0, naive: BTFit | None = None,
                       bias_aware: BTFit | None = None) -> AnchoredAgreement:
    """K-fold agreement with held-out human labels of the naive, the bias-aware and the
    anchored fit. Folds split unordered pairs (both orders of a pair stay in one fold).
    ``naive`` and ``bias_aware``: those fits of ``comparisons`` with these settings, when
    the caller has them (they use no label, so they are the same in every fold).

    Raises
    ------
    FairjudgeInputError
        With fewer decisive labelled pairs than folds.
    """
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise FairjudgeInputError(f"`folds` must be an integer >= 2; got {folds!r}")
    decisive = anchors.first_score != 0.5
    low = np.minimum(anchors.first, anchors.second)
    high = np.maximum(anchors.first, anchors.second)
    pair_key = low * comparisons.n_items + high
    keys = np.unique(pair_key[decisive])
    if keys.size < folds:
        raise FairjudgeInputError(f"{keys.size} labelled pair(s) with a winner: "
                                  f"cross-validation over {folds} folds needs at least "
                                  f"{folds}")
    fold_of_key = dict(zip(keys, as_generator(rng).permutation(keys.size) % folds))
    fold = np.array([fold_of_key.get(k, -1) for k in pair_key])
    common = dict(prior_precision=prior_precision, check_graph=False)
    # The two label-free fits do not change across folds; a caller that has them passes them.
    naive = naive or bt_pairwise(comparisons, **common)
    aware = bias_aware or bias_aware_bt(comparisons, covariates,
                                        covariate_names=covariate_names, position=position,
                                        bias_prior_precision=bias_prior_precision, **common)
    credit = {"naive": [], "bias_aware": [], "anchored": []}
    for f in range(folds):
        held = anchors.subset(fold == f)
        fit = anchored_bt(comparisons, anchors.subset(fold != f), covariates,
                          covariate_names=covariate_names, position=position,
                          bias_prior_precision=bias_prior_precision, **common)
        for name, model in (("naive", naive), ("bias_aware", aware), ("anchored", fit)):
            credit[name].append(anchor_credit(model, held))
    per_label = {name: np.concatenate(values) for name, values in credit.items()}
    held_keys = np.concatenate([pair_key[(fold == f) & decisive] for f in range(folds)])
    return AnchoredAgreement(naive=float(per_label["naive"].mean()),
                             bias_aware=float(per_label["bias_aware"].mean()),
                             anchored=float(per_label["anchored"].mean()),
                             n_labels=int(per_label["naive"].size), folds=folds,
                             per_label=per_label, pair=held_keys)
