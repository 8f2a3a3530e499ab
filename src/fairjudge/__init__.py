"""fairjudge: trustworthy LLM-as-a-judge evaluation.

Measure a judge's biases, remove them statistically, rank items under a comparison budget,
and report every figure with honest uncertainty. The top-level API mirrors the CLI:

- :func:`rank` fits a (bias-aware) Bradley–Terry model to recorded verdicts;
- :func:`select` runs the budgeted active top-k loop against an oracle or a live judge;
- :func:`judge_report` audits a judge, ranks with and without the correction and compares
  strategies, for one report (:meth:`JudgeReport.to_html`).

Sub-packages: :mod:`fairjudge.data`, :mod:`fairjudge.judges`, :mod:`fairjudge.strategies`,
:mod:`fairjudge.probes`, :mod:`fairjudge.models`, :mod:`fairjudge.active`,
:mod:`fairjudge.audit`, :mod:`fairjudge.stats`, :mod:`fairjudge.report`.

Names are imported on first use (PEP 562), so ``import fairjudge`` and the command line start
fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "ApproximationWarning": "fairjudge._util._warnings",
    "ComparisonGraphWarning": "fairjudge._util._warnings",
    "ConvergenceWarning": "fairjudge._util._warnings",
    "CorrectionAssumptionWarning": "fairjudge._util._warnings",
    "FairjudgeInputError": "fairjudge._util._warnings",
    "FairjudgeWarning": "fairjudge._util._warnings",
    "JudgeReport": "fairjudge._judge_report",
    "ManyJudgesWarning": "fairjudge._util._warnings",
    "WeakIdentificationWarning": "fairjudge._util._warnings",
    "Outcome": "fairjudge.data._schema",
    "Ranking": "fairjudge._api",
    "Selection": "fairjudge._api",
    "judge_report": "fairjudge._judge_report",
    "load_items": "fairjudge.data._io",
    "load_verdicts": "fairjudge.data._io",
    "rank": "fairjudge._api",
    "select": "fairjudge._api",
}
_SUBPACKAGES = ("active", "audit", "data", "judges", "models", "probes", "report", "stats",
                "strategies")

__all__ = ["ApproximationWarning", "ComparisonGraphWarning", "ConvergenceWarning",
           "CorrectionAssumptionWarning", "FairjudgeInputError",
           "FairjudgeWarning", "JudgeReport", "ManyJudgesWarning", "Outcome", "Ranking",
           "Selection", "WeakIdentificationWarning", "judge_report", "load_items",
           "load_verdicts", "rank", "select"]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"fairjudge.{name}")
    raise AttributeError(f"module 'fairjudge' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBPACKAGES))
