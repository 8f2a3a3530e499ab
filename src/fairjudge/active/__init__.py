"""Active acquisition: which comparison to buy next, and the budgeted top-k loop.

:class:`ActiveTopK` is the loop as an object (``propose`` / ``update`` / ``posterior``);
:func:`run_active_topk` (replay against an oracle), :func:`run_topk_experiment` (the paper's
offline protocol, on simulated oracles or on real-judge oracles recorded by
:func:`build_pool_oracle`) and :func:`run_live_topk` (a real judge through the cached runner)
drive it.
"""

from fairjudge.active._experiment import (
                                           FULL_DATA_MODELS,
                                           TopkExperimentConfig,
                                           make_oracle,
                                           run_topk_experiment,
                                           split_results_by_judge,
)
from fairjudge.active._live import LiveResult, run_live_topk, run_live_topk_async
from fairjudge.active._loop import (
                                           ActiveResult,
                                           MatrixOracle,
                                           oracle_askable,
                                           run_active_topk,
                                           topk_recall,
)
from fairjudge.active._oracle import build_pool_oracle, collect_oracle
from fairjudge.active._panel import (
                                           CompetenceGain,
                                           competence_gain,
                                           cost_frontier,
                                           judge_panel,
                                           money_to_reach,
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
from fairjudge.active._summary import (
                                           DELTA_COLUMNS,
                                           TopkSummary,
                                           paired_delta_table,
                                           summarize_topk_results,
)

__all__ = [
    "DELTA_COLUMNS",
    "FULL_DATA_MODELS",
    "RULES",
    "RULE_DESCRIPTIONS",
    "SCORED_RULES",
    "ActiveResult",
    "ActiveTopK",
    "CompetenceGain",
    "JudgeSpec",
    "LiveResult",
    "Posterior",
    "Proposal",
    "TopkExperimentConfig",
    "TopkSummary",
    "MatrixOracle",
    "binary_entropy",
    "build_pool_oracle",
    "collect_oracle",
    "competence_gain",
    "cost_frontier",
    "judge_panel",
    "make_oracle",
    "money_to_reach",
    "oracle_askable",
    "pair_scores",
    "paired_delta_table",
    "round_robin_schedule",
    "run_active_topk",
    "run_live_topk",
    "run_live_topk_async",
    "run_topk_experiment",
    "split_results_by_judge",
    "summarize_topk_results",
    "topk_recall",
]
