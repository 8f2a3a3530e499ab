"""Many judges, one ranking of contestants [uda-consensus-elo]: answer-level verdicts
lifted to contestants with self-preference covariates (:func:`contestant_verdicts`), and
contestant scores from a joint Bradley–Terry model with per-judge position and
self-preference terms, pooling, majority vote or UDA's baseline Elo (:func:`consensus`),
with each judge's own scores and the dispersion across judges."""

from fairjudge.consensus._panel import (
    ELO_SCALE,
    METHODS,
    Consensus,
    consensus,
    contestant_verdicts,
)
from fairjudge.consensus._reliability import ReliabilityFit, reliability_bt

__all__ = ["Consensus", "ELO_SCALE", "METHODS", "ReliabilityFit", "consensus",
           "contestant_verdicts", "reliability_bt"]
