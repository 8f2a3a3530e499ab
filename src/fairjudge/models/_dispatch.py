"""Fit any estimator by name (shared by the ranking API, the active loop and the CLI)."""

from __future__ import annotations

from fairjudge.data._encode import Comparisons
from fairjudge.models._baselines import length_residualized_bt, swap_majority_bt
from fairjudge.models._bt import BTFit, bias_aware_bt, bt_pairwise, hierarchical_bias_aware_bt

MODELS = ("naive", "bias-aware", "hierarchical", "swap-majority", "residualized")


def fit_model(model: str, comparisons: Comparisons, covariates=None, *, covariate_names=None,
              prior_precision: float = 1.0, bias_prior_precision: float = 0.1,
              position: bool = True, init=None, check_graph: bool = True) -> BTFit:
    """Fit the estimator called ``model`` (one of ``MODELS``).

    ``"naive"`` is :func:`bt_pairwise`; ``"bias-aware"`` :func:`bias_aware_bt`;
    ``"hierarchical"`` :func:`hierarchical_bias_aware_bt`; ``"swap-majority"``
    :func:`swap_majority_bt`; ``"residualized"`` :func:`length_residualized_bt`. Estimators
    that ignore covariates or warm starts ignore those arguments.
    """
    if model == "naive":
        return bt_pairwise(comparisons, prior_precision=prior_precision, init=init,
                           check_graph=check_graph)
    if model == "bias-aware":
        return bias_aware_bt(comparisons, covariates, covariate_names=covariate_names,
                             position=position, prior_precision=prior_precision,
                             bias_prior_precision=bias_prior_precision, init=init,
                             check_graph=check_graph)
    if model == "hierarchical":
        return hierarchical_bias_aware_bt(comparisons, covariates, covariate_names=covariate_names,
                                          position=position, prior_precision=prior_precision,
                                          initial_bias_prior_precision=bias_prior_precision,
                                          check_graph=check_graph)
    if model == "swap-majority":
        return swap_majority_bt(comparisons, prior_precision=prior_precision,
                                check_graph=check_graph)
    if model == "residualized":
        if covariates is None:
            raise ValueError("the residualized model needs covariates")
        return length_residualized_bt(comparisons, covariates, covariate_names=covariate_names,
                                      prior_precision=prior_precision, check_graph=check_graph)
    raise ValueError(f"`model` must be one of {', '.join(MODELS)}; got {model!r}")
