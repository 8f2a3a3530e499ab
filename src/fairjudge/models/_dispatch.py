"""Fit any registered estimator by name (shared by the ranking API, the active loop and the CLI).

Each estimator module registers its estimators (:func:`register_model`); importing them here
fills the registry before :data:`MODELS` is read.
"""

from __future__ import annotations

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._encode import Comparisons
from fairjudge.models import _baselines, _bt, _reliability  # noqa: F401  (they register the built-ins)
from fairjudge.models._bt import BTFit
from fairjudge.models._registry import model_names, model_spec

#: Names of the built-in estimators. Models registered later are fittable by name too;
#: :func:`~fairjudge.models.model_names` lists them all.
MODELS = model_names()


def fit_model(model: str, comparisons: Comparisons, covariates=None, *, covariate_names=None,
              prior_precision: float = 1.0, bias_prior_precision: float = 0.1,
              position: bool = True, init=None, check_graph: bool = True,
              solver: str = "auto") -> BTFit:
    """Fit the registered estimator called ``model`` (one of :func:`model_names`).

    Built in: ``"naive"`` is :func:`bt_pairwise`; ``"bias-aware"`` :func:`bias_aware_bt`;
    ``"hierarchical"`` :func:`hierarchical_bias_aware_bt`; ``"reliability"``
    :func:`reliability_bt`; ``"swap-majority"``
    :func:`swap_majority_bt`; ``"residualized"`` :func:`length_residualized_bt`. Each
    estimator receives only the arguments its :class:`ModelSpec` says it accepts; the others
    are ignored.

    Raises
    ------
    ValueError
        On an unknown model (listing the registered ones), or ``covariates=None`` for a model
        that requires covariates.
    """
    spec = model_spec(model)
    args = (comparisons,)
    kwargs = {"prior_precision": prior_precision, "check_graph": check_graph}
    if spec.covariates != "ignored":
        if covariates is None and spec.covariates == "required":
            raise FairjudgeInputError(f"the {spec.name} model needs covariates")
        args += (covariates,)
        kwargs["covariate_names"] = covariate_names
    if spec.position:
        kwargs["position"] = position
    if spec.bias_prior:
        kwargs["bias_prior_precision"] = bias_prior_precision
    if spec.warm_start:
        kwargs["init"] = init
    if spec.solver:
        kwargs["solver"] = solver
    return spec.fit(*args, **kwargs)
