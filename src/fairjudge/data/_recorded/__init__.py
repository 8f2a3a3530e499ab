"""Loaders of recorded LLM-judge datasets, one module per dataset, and a registry by name.

The datasets are real, already-recorded judge outputs staged byte-for-byte in ``../shared/data``
next to the repository (see its ``MANIFEST.md``). They are read in place, never copied, and
turned into the tables of a :class:`RecordedBenchmark` (see :mod:`._common`). Adding a dataset
is a new module that defines its loader and registers it with :func:`register_recorded`, plus
one import line here.
"""

from fairjudge.data._recorded._common import (
                                              SHARED_DATA_ENV,
                                              VERDICT_COLUMNS,
                                              RecordedBenchmark,
                                              shared_data_dir,
)
from fairjudge.data._recorded._registry import (
                                              RECORDED_DATASETS,
                                              RecordedDataset,
                                              load_recorded,
                                              recorded_dataset,
                                              register_recorded,
)

# Importing a dataset module registers the datasets it loads.
from fairjudge.data._recorded.alpacaeval import load_alpacaeval
from fairjudge.data._recorded.judgebench import load_judgebench
from fairjudge.data._recorded.llmbar import llmbar_subsets, load_llmbar
from fairjudge.data._recorded.prd import PRD_MODELS, load_prd

__all__ = [
    "PRD_MODELS",
    "RECORDED_DATASETS",
    "SHARED_DATA_ENV",
    "VERDICT_COLUMNS",
    "RecordedBenchmark",
    "RecordedDataset",
    "llmbar_subsets",
    "load_alpacaeval",
    "load_judgebench",
    "load_llmbar",
    "load_prd",
    "load_recorded",
    "recorded_dataset",
    "register_recorded",
    "shared_data_dir",
]
