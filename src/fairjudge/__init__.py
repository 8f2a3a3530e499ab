"""fairjudge: trustworthy LLM-as-a-judge evaluation.

Measure a judge's biases, remove them statistically, rank items under a comparison budget,
and report every figure with honest uncertainty. The top-level API mirrors the CLI:

- :func:`rank` fits a (bias-aware) Bradley–Terry model to recorded verdicts;
- :func:`select` runs the budgeted active top-k loop against an oracle.

Sub-packages: :mod:`fairjudge.data`, :mod:`fairjudge.models`, :mod:`fairjudge.active`,
:mod:`fairjudge.stats`, :mod:`fairjudge.report`.
"""

from fairjudge._api import Ranking, Selection, rank, select
from fairjudge.data._io import load_items, load_verdicts
from fairjudge.data._schema import Outcome

__version__ = "0.1.0"

__all__ = ["Outcome", "Ranking", "Selection", "load_items", "load_verdicts", "rank", "select"]
