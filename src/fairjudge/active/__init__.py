"""Active acquisition: which comparison to buy next, and the budgeted top-k loop."""

from fairjudge.active._loop import ActiveResult, MatrixOracle, run_active_topk, topk_recall
from fairjudge.active._scores import (RULE_DESCRIPTIONS, RULES, SCORED_RULES, binary_entropy,
                                      pair_scores, round_robin_schedule)

__all__ = [
    "RULES",
    "RULE_DESCRIPTIONS",
    "SCORED_RULES",
    "ActiveResult",
    "MatrixOracle",
    "binary_entropy",
    "pair_scores",
    "round_robin_schedule",
    "run_active_topk",
    "topk_recall",
]
