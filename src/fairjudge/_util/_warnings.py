"""Typed warnings and errors, handled the same way everywhere."""

from __future__ import annotations


class FairjudgeWarning(UserWarning):
    """Base class for warnings about degenerate-but-legal input."""


class ComparisonGraphWarning(FairjudgeWarning):
    """The comparison graph does not connect every item.

    Scores of items in different connected components are then fixed relative to each other
    only by the prior, not by any verdict.
    """


class ManyJudgesWarning(FairjudgeWarning):
    """The ``judge`` column has so many values that it probably holds annotators or users,
    each of whom would get bias terms of its own."""


class WeakIdentificationWarning(FairjudgeWarning):
    """The covariates explain away most of what the verdicts say about the items, so the
    ranking rests on the prior rather than on the data."""


class CorrectionAssumptionWarning(FairjudgeWarning):
    """A covariate correction fitted without human labels rests on the assumption that
    quality is uncorrelated with the covariate, and the verdicts show signs that it does
    (:func:`fairjudge.models.check_independence_assumption`)."""


class ConvergenceWarning(FairjudgeWarning):
    """An iterative fit stopped before meeting its tolerance."""


class ApproximationWarning(FairjudgeWarning):
    """A figure computed by a stated approximation (the sparse solver's estimated marginal
    variances) is less accurate than its target on this input."""


class FairjudgeInputError(ValueError):
    """Bad user input: the message names the file, line or argument and what was expected."""
