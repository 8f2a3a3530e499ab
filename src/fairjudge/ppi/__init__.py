"""Prediction-powered inference: a judge's predictions and a few human labels give
estimates whose intervals are valid whatever the judge's bias (:func:`ppi_mean`, PPI++
with power tuning)."""

from fairjudge.ppi._mean import PPIEstimate, ppi_mean

__all__ = ["PPIEstimate", "ppi_mean"]
