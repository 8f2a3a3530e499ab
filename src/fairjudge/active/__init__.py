"""Active acquisition: which comparison to buy next, and the budgeted top-k loop."""

from fairjudge.active._experiment import (FULL_DATA_MODELS, TopkExperimentConfig,
                                           make_oracle, run_topk_experiment)
from fairjudge.active._loop import ActiveResult, MatrixOracle, run_active_topk, topk_recall
from fairjudge.active._scores import (RULE_DESCRIPTIONS, RULES, SCORED_RULES, binary_entropy,
                                      pair_scores, round_robin_schedule)
from fairjudge.active._summary import TopkSummary, summarize_topk_results

__all__ = [
    "FULL_DATA_MODELS",
    "RULES",
    "RULE_DESCRIPTIONS",
    "SCORED_RULES",
    "ActiveResult",
    "TopkExperimentConfig",
    "TopkSummary",
    "MatrixOracle",
    "binary_entropy",
    "make_oracle",
    "pair_scores",
    "round_robin_schedule",
    "run_active_topk",
    "run_topk_experiment",
    "summarize_topk_results",
    "topk_recall",
]
