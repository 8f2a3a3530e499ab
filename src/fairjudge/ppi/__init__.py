"""Prediction-powered inference: a judge's predictions and a few human labels give
estimates whose intervals are valid whatever the judge's bias (PPI++ with power tuning):
a mean (:func:`ppi_mean`, win rates) and the Bradley–Terry scores of a ranking
(:func:`ppi_bradley_terry`)."""

from fairjudge.ppi._bradley_terry import PPIScores, ppi_bradley_terry
from fairjudge.ppi._mean import PPIEstimate, ppi_mean

__all__ = ["PPIEstimate", "PPIScores", "ppi_bradley_terry", "ppi_mean"]
