"""Recorded datasets by name: each loader module registers the datasets it can load."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from fairjudge._util._registry import Registry
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._recorded._common import RecordedBenchmark


@dataclass(frozen=True)
class RecordedDataset:
    """One loadable recorded dataset.

    Attributes
    ----------
    name : str
        The name it is looked up by, equal to the ``name`` of the benchmark it loads
        (``"llmbar/Natural"``, ``"judgebench/claude"``, ``"prd-vicuna80"``).
    description : str
        One line: what the pairs are and who labelled them.
    load : callable
        ``load(*, root=None, **filters) -> RecordedBenchmark``; ``filters`` are the
        loader's own keyword arguments (``judges=``, ``strategies=``, ``reviewers=``).
    """

    name: str
    description: str
    load: Callable[..., RecordedBenchmark]


_DATASETS: Registry[RecordedDataset] = Registry("recorded dataset", "name", RecordedDataset,
                                                error=FairjudgeInputError)

#: Every registered recorded dataset, by name (a read-only, live view of the registry).
#: AlpacaEval is not here: it publishes aggregate tables, not verdicts
#: (:func:`~fairjudge.data.load_alpacaeval`).
RECORDED_DATASETS = _DATASETS.view


def register_recorded(dataset: RecordedDataset) -> RecordedDataset:
    """Add ``dataset`` to :data:`RECORDED_DATASETS`; a name can be registered once."""
    return _DATASETS.register(dataset)


def recorded_dataset(name: str) -> RecordedDataset:
    """The registered dataset called ``name``.

    Raises
    ------
    FairjudgeInputError
        If no dataset has that name; the message lists the names there are.
    """
    return _DATASETS.get(name)


def load_recorded(name: str, *, root=None, **filters) -> RecordedBenchmark:
    """Load a recorded dataset by name.

    Parameters
    ----------
    name : str
        One of :data:`RECORDED_DATASETS`, e.g. ``"llmbar/Natural"``, ``"judgebench/claude"``
        or ``"prd-vicuna80"``.
    root : path, optional
        The shared data directory; default :func:`~fairjudge.data.shared_data_dir`.
    **filters
        The dataset loader's own filters: ``judges=`` and ``strategies=`` for LLMBar,
        ``judges=`` for JudgeBench, ``reviewers=`` for PRD.

    Returns
    -------
    RecordedBenchmark
        As the dataset's loader returns it; ``.name == name``.

    Raises
    ------
    FairjudgeInputError
        On an unknown name (listing the registered ones) or a filter naming a judge the
        dataset does not hold.
    FileNotFoundError
        If the dataset's files are missing.

    Examples
    --------
    >>> bench = load_recorded("llmbar/Natural", judges="GPT-4")  # doctest: +SKIP
    >>> bench.name  # doctest: +SKIP
    'llmbar/Natural'
    """
    return recorded_dataset(name).load(root=root, **filters)
