"""Active acquisition: which comparison to buy next, and the budgeted top-k loop.

:class:`ActiveTopK` is the loop as an object (``propose`` / ``update`` / ``posterior``);
:func:`run_active_topk` (replay against an oracle), :func:`run_topk_experiment` (the paper's
offline protocol) and :func:`run_live_topk` (a real judge through the cached runner) drive
it.
"""

from fairjudge.active._experiment import (
                                           FULL_DATA_MODELS,
                                           TopkExperimentConfig,
                                           make_oracle,
                                           run_topk_experiment,
)
from fairjudge.active._live import LiveResult, run_live_topk, run_live_topk_async
from fairjudge.active._loop import (
                                           ActiveResult,
                                           MatrixOracle,
                                           oracle_askable,
                                           run_active_topk,
                                           topk_recall,
)
from fairjudge.active._ranker import ActiveTopK, JudgeSpec, Posterior, Proposal
from fairjudge.active._scores import (
                                           RULE_DESCRIPTIONS,
                                           RULES,
                                           SCORED_RULES,
                                           binary_entropy,
                                           pair_scores,
                                           round_robin_schedule,
)
from fairjudge.active._summary import TopkSummary, summarize_topk_results

__all__ = [
    "FULL_DATA_MODELS",
    "RULES",
    "RULE_DESCRIPTIONS",
    "SCORED_RULES",
    "ActiveResult",
    "ActiveTopK",
    "JudgeSpec",
    "LiveResult",
    "Posterior",
    "Proposal",
    "TopkExperimentConfig",
    "TopkSummary",
    "MatrixOracle",
    "binary_entropy",
    "make_oracle",
    "oracle_askable",
    "pair_scores",
    "round_robin_schedule",
    "run_active_topk",
    "run_live_topk",
    "run_live_topk_async",
    "run_topk_experiment",
    "summarize_topk_results",
    "topk_recall",
]
