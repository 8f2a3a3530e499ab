"""Statistical estimators of latent quality from pairwise verdicts.

Every estimator takes :class:`fairjudge.data.Comparisons` (and item covariates as arrays)
and returns a :class:`BTFit`; none does I/O.
"""

from fairjudge.models._anchored import AnchoredAgreement, anchored_agreement, anchored_bt
from fairjudge.models._assumption import AssumptionCheck, check_independence_assumption
from fairjudge.models._baselines import (
                                         length_residualized_bt,
                                         swap_majority_bt,
                                         swap_majority_comparisons,
)
from fairjudge.models._bt import (
                                         POSITION,
                                         SPARSE_MIN_ITEMS,
                                         BiasEstimate,
                                         BTFit,
                                         bias_aware_bt,
                                         bt_pairwise,
                                         hierarchical_bias_aware_bt,
)
from fairjudge.models._dispatch import MODELS, fit_model
from fairjudge.models._engine import DenseFactor
from fairjudge.models._gate import AnchorGate, anchor_agreement, trusted_anchor_gate
from fairjudge.models._graph import comparison_components
from fairjudge.models._membership import topk_membership
from fairjudge.models._registry import ModelSpec, model_names, model_spec, register_model
from fairjudge.models._reliability import LOG_RELIABILITY, reliability_bt
from fairjudge.models._sparse import LaplacianSystem, SparsePosterior

__all__ = [
    "LOG_RELIABILITY",
    "MODELS",
    "POSITION",
    "SPARSE_MIN_ITEMS",
    "AnchorGate",
    "AnchoredAgreement",
    "AssumptionCheck",
    "BTFit",
    "BiasEstimate",
    "DenseFactor",
    "LaplacianSystem",
    "ModelSpec",
    "SparsePosterior",
    "anchor_agreement",
    "anchored_agreement",
    "anchored_bt",
    "bias_aware_bt",
    "bt_pairwise",
    "check_independence_assumption",
    "comparison_components",
    "fit_model",
    "hierarchical_bias_aware_bt",
    "length_residualized_bt",
    "model_names",
    "model_spec",
    "register_model",
    "reliability_bt",
    "swap_majority_bt",
    "swap_majority_comparisons",
    "topk_membership",
    "trusted_anchor_gate",
]
