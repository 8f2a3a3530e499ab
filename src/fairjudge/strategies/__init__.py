"""Debiasing strategies: which judge calls to make for a pair and how to combine them.

B0 baseline; S1 position swap; S2 same-family ensemble; S3 cross-family ensemble; S4
calibrated rubric; S5 chain of thought; S6 reference-guided; S7 combined full; S8 combined
budget [debiasing-strategies-study §3.3]; CWO consistent wins only [position-bias-swap].
:func:`injection_flags` flags pairs whose answers could steer a judge (verdict tokens,
prompt delimiters) before they are judged. :func:`judge_strategy_selector` is the study's
Algorithm 1 [debiasing-strategies-study §5.4].
"""

from fairjudge.strategies._injection import INJECTION_FLAGS, injection_flags
from fairjudge.strategies._judging import JudgingResult, judge_pairs, judge_pairs_async
from fairjudge.strategies._selector import (
                                            STUDY_MODELS,
                                            TASK_TYPES,
                                            StrategyChoice,
                                            judge_strategy_selector,
                                            study_model,
)
from fairjudge.strategies._strategies import STRATEGIES, Call, Strategy, get_strategy, to_pair_frame

__all__ = ["INJECTION_FLAGS", "STRATEGIES", "STUDY_MODELS", "TASK_TYPES", "Call", "JudgingResult",
           "Strategy", "StrategyChoice", "get_strategy", "injection_flags", "judge_pairs",
           "judge_pairs_async", "judge_strategy_selector", "study_model", "to_pair_frame"]
