"""Many judges, one ranking of contestants [uda-consensus-elo]: answer-level verdicts
lifted to contestants with self-preference covariates (:func:`contestant_verdicts`), and
contestant scores from a joint Bradley–Terry model with per-judge position and
self-preference terms, pooling, majority vote, UDA's baseline Elo or UDA itself (:func:`consensus`;
:func:`train_uda` and :func:`uda_metrics` for the parts), with each judge's own scores and
the dispersion across judges; newcomers placed on a published leaderboard that stays put
(:func:`place_contestants`)."""

from fairjudge.consensus._panel import (
    ELO_SCALE,
    METHODS,
    Consensus,
    consensus,
    contestant_verdicts,
)
from fairjudge.consensus._placement import (
    Placement,
    PublishedLeaderboard,
    place_contestants,
)
from fairjudge.consensus._reliability import ReliabilityFit, reliability_bt
from fairjudge.consensus._uda import (
    JudgeComparisons,
    UdaFit,
    UdaSettings,
    aligned_biases,
    comparison_features,
    elo_ratings,
    train_uda,
    uda_batches,
    uda_metrics,
)

__all__ = [
    "Consensus",
    "ELO_SCALE",
    "JudgeComparisons",
    "METHODS",
    "Placement",
    "PublishedLeaderboard",
    "ReliabilityFit",
    "UdaFit",
    "UdaSettings",
    "aligned_biases",
    "comparison_features",
    "consensus",
    "contestant_verdicts",
    "elo_ratings",
    "place_contestants",
    "reliability_bt",
    "train_uda",
    "uda_batches",
    "uda_metrics",
]
