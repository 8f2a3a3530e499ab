"""Debiasing baselines of [bias-aware-active-topk §6, Table 2]."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from fairjudge._util._memory import require_dense_memory
from fairjudge._util._warnings import FairjudgeInputError, FairjudgeWarning
from fairjudge.data._encode import Comparisons
from fairjudge.data._schema import TIE_SCORE
from fairjudge.models._bt import (
    BiasEstimate,
    BTFit,
    _check_common,
    bt_pairwise,
    standardise_covariates,
)
from fairjudge.models._registry import ModelSpec, register_model


def swap_majority_comparisons(comparisons: Comparisons) -> Comparisons:
    """One verdict per unordered pair: the majority over all its verdicts, in either order.

    Each verdict is mapped to the frame of the pair's lower-indexed item and weighted; the
    item with more than half the (weighted) credit wins, exact halves are ties. With one
    verdict per presentation order this is the usual order-swap rule: agreement keeps the
    winner, disagreement is a tie. Judges are pooled.
    """
    lo = np.minimum(comparisons.first, comparisons.second)
    hi = np.maximum(comparisons.first, comparisons.second)
    credit_lo = np.where(comparisons.first == lo, comparisons.first_score,
                         1.0 - comparisons.first_score)
    key = lo * comparisons.n_items + hi
    uniq, inverse = np.unique(key, return_inverse=True)
    total = np.bincount(inverse, weights=comparisons.weight)
    share = np.bincount(inverse, weights=comparisons.weight * credit_lo) / total
    score = np.where(np.isclose(share, 0.5), TIE_SCORE, (share > 0.5).astype(float))
    first, second = np.divmod(uniq, comparisons.n_items)
    return Comparisons(first, second, score, np.ones(uniq.size), np.zeros(uniq.size, np.int64),
                       comparisons.item_ids, ("swap-majority",))


def swap_majority_bt(comparisons: Comparisons, *, prior_precision: float = 1.0,
                     check_graph: bool = True) -> BTFit:
    """Order-swap majority vote, then naive Bradley–Terry [bias-aware-active-topk §6, Table 2].

    The standard position-debiasing heuristic: aggregate each pair's verdicts over both
    presentation orders by majority (see :func:`swap_majority_comparisons`) and fit
    :func:`bt_pairwise` to one verdict per pair. It removes position bias but not covariate
    (verbosity) bias.
    """
    _check_common(comparisons, prior_precision)
    if comparisons.covariate_names:
        warnings.warn(f"the swap-majority baseline corrects position only; it ignores the "
                      f"per-verdict covariates {', '.join(comparisons.covariate_names)} (use "
                      "the bias-aware model to correct them)", FairjudgeWarning, stacklevel=2)
    fit = bt_pairwise(swap_majority_comparisons(comparisons), prior_precision=prior_precision,
                      check_graph=check_graph)
    return replace(fit, model="swap-majority", judges=comparisons.judges)


def length_residualized_bt(comparisons: Comparisons, covariates, *, covariate_names=None,
                           prior_precision: float = 1.0, check_graph: bool = True) -> BTFit:
    """Post-hoc residualisation: naive Bradley–Terry, then remove the covariates' linear trend.

    Fits :func:`bt_pairwise`, regresses the scores on ``[1, covariates]`` by least squares
    and keeps the residual as the quality score [bias-aware-active-topk §6, Table 2
    "length-resid."]. With the residual map ``R = I - X (X'X)^{-1} X'`` the reported
    covariance is ``R Sigma R'``; the slopes (score units per covariate unit) are reported
    as bias estimates with standard errors from the posterior of the naive scores only.

    Assumption: the covariate carries no quality signal across items (any linear
    association between quality and the covariate is removed along with the bias).
    """
    _check_common(comparisons, prior_precision)
    if comparisons.covariate_names:
        raise FairjudgeInputError(
            "the residualized baseline removes item-level covariates from the "
            "scores; per-verdict covariates "
            f"({', '.join(comparisons.covariate_names)}) need the bias-aware model")
    _, names, _ = standardise_covariates(covariates, covariate_names, comparisons.n_items)
    x = np.asarray(covariates, dtype=float).reshape(comparisons.n_items, -1)
    # The naive fit's Hessian and covariance, the residual map and R Sigma R'.
    require_dense_memory(comparisons.n_items, 4, what="the residualized baseline",
                         instead="use the bias-aware model, which fits large pools with a "
                         "sparse solver")
    naive = bt_pairwise(comparisons, prior_precision=prior_precision, check_graph=check_graph,
                        solver="dense")
    design = np.hstack([np.ones((x.shape[0], 1)), x])
    projector = np.linalg.solve(design.T @ design, design.T)        # (1+d, N)
    coef = projector @ naive.scores
    resid_map = np.eye(x.shape[0]) - design @ projector
    scores = resid_map @ naive.scores
    covariance = resid_map @ naive.covariance @ resid_map.T
    coef_cov = projector @ naive.covariance @ projector.T
    bias = tuple(
        BiasEstimate(name, "posthoc", float(coef[1 + m]), float(np.sqrt(coef_cov[1 + m, 1 + m])))
        for m, name in enumerate(names))
    return replace(naive, model="residualized", scores=scores, covariance=covariance, bias=bias,
                   covariate_names=names, judges=comparisons.judges, posterior=None)


register_model(ModelSpec(
    "swap-majority", "majority over both presentation orders, then naive Bradley–Terry",
    swap_majority_bt))
register_model(ModelSpec(
    "residualized", "naive Bradley–Terry, then the covariates' linear trend removed",
    length_residualized_bt, covariates="required", acquires_with="naive"))
