"""Data model, loaders, the synthetic judge and controlled item pools.

Tables users hand in (verdicts, items) are validated here; the models receive
:class:`Comparisons`, the array form of a verdict table.
"""

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._encode import Comparisons, encode_verdicts
from fairjudge.data._features import text_features
from fairjudge.data._io import load_items, load_verdicts, read_table, write_table
from fairjudge.data._oracle import RecordedOracle, load_recorded_oracle, write_recorded_oracle
from fairjudge.data._pairs import PAIR_COLUMNS, load_pairs
from fairjudge.data._pools import (
                                      BANKS,
                                      QUESTION_TEMPLATE,
                                      TrueTopK,
                                      boundary_distance,
                                      controlled_pool,
                                      pool_bank,
                                      pool_question,
                                      pool_topics,
                                      true_topk,
)
from fairjudge.data._recorded import (
                                      RECORDED_DATASETS,
                                      RecordedBenchmark,
                                      llmbar_subsets,
                                      load_alpacaeval,
                                      load_judgebench,
                                      load_llmbar,
                                      load_prd,
                                      load_recorded,
                                      shared_data_dir,
)
from fairjudge.data._schema import (
                                      DEFAULT_COVARIATES,
                                      TIE_SCORE,
                                      WINNER_VALUES,
                                      Outcome,
                                      check_verdict_items,
                                      validate_items,
                                      validate_verdicts,
)
from fairjudge.data._simulator import (
                                      SimulatedJudge,
                                      balanced_binary_covariate,
                                      matrix_to_verdicts,
                                      simulate_items,
                                      verdicts_to_matrix,
)

__all__ = [
    "BANKS",
    "DEFAULT_COVARIATES",
    "PAIR_COLUMNS",
    "QUESTION_TEMPLATE",
    "RECORDED_DATASETS",
    "TIE_SCORE",
    "WINNER_VALUES",
    "Comparisons",
    "FairjudgeInputError",
    "Outcome",
    "RecordedBenchmark",
    "RecordedOracle",
    "SimulatedJudge",
    "TrueTopK",
    "balanced_binary_covariate",
    "boundary_distance",
    "check_verdict_items",
    "controlled_pool",
    "encode_verdicts",
    "llmbar_subsets",
    "load_alpacaeval",
    "load_items",
    "load_judgebench",
    "load_llmbar",
    "load_pairs",
    "load_prd",
    "load_recorded_oracle",
    "load_recorded",
    "load_verdicts",
    "matrix_to_verdicts",
    "pool_bank",
    "pool_question",
    "pool_topics",
    "read_table",
    "shared_data_dir",
    "simulate_items",
    "text_features",
    "true_topk",
    "validate_items",
    "validate_verdicts",
    "verdicts_to_matrix",
    "write_recorded_oracle",
    "write_table",
]
