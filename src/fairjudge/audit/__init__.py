"""Judge audits and strategy comparisons, with intervals on every figure.

Position metrics, preference fairness, the swap-test plan and position calibration
[position-bias-swap], covariate bias and self-preference from natural data,
agreement with gold, strategy comparison [debiasing-strategies-study], and the external
validity of covariate correction [bias-aware-active-topk §6]. Controlled probes live in
:mod:`fairjudge.probes`.
"""

from fairjudge.audit._audit import JudgeAudit, audit_verdicts, flagged_pair_counts
from fairjudge.audit._calibration import (
                                          PositionCalibration,
                                          calibrate_position,
                                          position_prior,
)
from fairjudge.audit._compare import Comparison, compare_verdicts
from fairjudge.audit._compare_family import FamilyComparison, compare_by_judge, split_by_judge
from fairjudge.audit._covariates import CovariateBias, covariate_bias, item_features
from fairjudge.audit._external import ExternalValidity, external_validity
from fairjudge.audit._gold import gold_choice, load_gold
from fairjudge.audit._position import (
                                       consistency_by_gap,
                                       first_position_rate,
                                       gold_accuracy,
                                       pair_consistency,
                                       position_consistency,
                                       preference_fairness,
                                       repetition_stability,
                                       tie_rate,
)
from fairjudge.audit._run import AuditRun, audit_judge
from fairjudge.audit._selector_check import SelectorCheck, selector_check
from fairjudge.audit._self import DEFAULT_FAMILIES, SelfPreference, model_family, self_preference
from fairjudge.audit._swap import (
                                       DEFAULT_SAMPLE_SIZE,
                                       DEFAULT_THRESHOLD,
                                       SwapPlan,
                                       plan_calls,
                                       run_swap_test,
                                       swap_test_plan,
)

__all__ = [
    "AuditRun",
    "Comparison",
    "CovariateBias",
    "DEFAULT_FAMILIES",
    "DEFAULT_SAMPLE_SIZE",
    "DEFAULT_THRESHOLD",
    "ExternalValidity",
    "FamilyComparison",
    "JudgeAudit",
    "PositionCalibration",
    "SelectorCheck",
    "SelfPreference",
    "SwapPlan",
    "audit_judge",
    "audit_verdicts",
    "calibrate_position",
    "compare_by_judge",
    "compare_verdicts",
    "consistency_by_gap",
    "covariate_bias",
    "external_validity",
    "first_position_rate",
    "flagged_pair_counts",
    "gold_accuracy",
    "gold_choice",
    "item_features",
    "load_gold",
    "model_family",
    "pair_consistency",
    "plan_calls",
    "position_consistency",
    "position_prior",
    "preference_fairness",
    "repetition_stability",
    "run_swap_test",
    "selector_check",
    "self_preference",
    "split_by_judge",
    "swap_test_plan",
    "tie_rate",
]
