"""The registry of recorded datasets (fairjudge.data.RECORDED_DATASETS, load_recorded)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fairjudge.data import (RECORDED_DATASETS, FairjudgeInputError, RecordedBenchmark,
                            llmbar_subsets, load_llmbar, load_recorded, shared_data_dir)
from fairjudge.data._recorded import RecordedDataset, recorded_dataset, register_recorded
from fairjudge.data._recorded import _registry


def _natural_root(tmp_path: Path) -> Path:
    base = tmp_path / "llmbar" / "Dataset" / "LLMBar" / "Natural"
    base.mkdir(parents=True)
    dataset = [{"input": "q0", "output_1": "one", "output_2": "two", "label": 2}]
    (base / "dataset.json").write_text(json.dumps(dataset), encoding="utf-8")
    run = base / "evaluators" / "J" / "S"
    run.mkdir(parents=True)
    results = [dict(dataset[0], results=[{"swap = False": {"completion": ["b"], "winner": "2"},
                                          "swap = True": {"completion": ["a"], "winner": "2"}}])]
    (run / "result.json").write_text(json.dumps(results), encoding="utf-8")
    return tmp_path


def test_every_recorded_benchmark_is_registered_under_its_name():
    expected = ({f"llmbar/{s}" for s in llmbar_subsets()}
                | {"judgebench/claude", "judgebench/gpt-4o", "prd-vicuna80"})
    assert set(RECORDED_DATASETS) == expected
    for name, dataset in RECORDED_DATASETS.items():
        assert dataset.name == name and recorded_dataset(name) is dataset
        assert dataset.description and "\n" not in dataset.description


def test_load_recorded_is_the_dataset_loader(tmp_path):
    root = _natural_root(tmp_path)
    bench = load_recorded("llmbar/Natural", root=root, judges="J")
    direct = load_llmbar("Natural", root=root, judges="J")
    assert bench.name == "llmbar/Natural"
    pd.testing.assert_frame_equal(bench.verdicts, direct.verdicts)
    assert bench.verdicts[["pair_id", "order", "sample"]].values.tolist() == [
        ["llmbar/Natural/0", "ab", 0], ["llmbar/Natural/0", "ba", 0]]
    # The loader's own filters pass through, with its own errors.
    with pytest.raises(FairjudgeInputError, match=r"`judges` names 'K'.*available: J"):
        load_recorded("llmbar/Natural", root=root, judges="K")


def test_unknown_dataset_lists_the_registered_names():
    with pytest.raises(FairjudgeInputError,
                       match=r"`name` must be one of .*llmbar/Natural.*prd-vicuna80.*; got "
                             r"'llmbar/natural'"):
        load_recorded("llmbar/natural")
    with pytest.raises(FairjudgeInputError, match=r"`name` must be one of .*; got None"):
        recorded_dataset(None)


def test_registering_a_dataset_makes_it_loadable(monkeypatch):
    monkeypatch.setattr(_registry._DATASETS, "_entries", dict(_registry._DATASETS._entries))
    empty = pd.DataFrame()
    calls = []

    def load(*, root=None, **filters):
        calls.append((root, filters))
        return RecordedBenchmark("toy", empty, empty, empty, empty, empty)

    register_recorded(RecordedDataset("toy", "a toy dataset", load))
    assert load_recorded("toy", root="/nowhere", judges="J").name == "toy"
    assert calls == [("/nowhere", {"judges": "J"})]
    with pytest.raises(ValueError, match="a recorded dataset named 'toy' is already registered"):
        register_recorded(RecordedDataset("toy", "again", load))
    with pytest.raises(TypeError, match="registered as a RecordedDataset; got str"):
        register_recorded("toy")


@pytest.mark.shared_data
@pytest.mark.skipif(shared_data_dir() is None,
                    reason="needs the recorded datasets in ../shared/data")
def test_load_recorded_reads_the_staged_data():
    bench = load_recorded("judgebench/claude", judges="claude-3-haiku-20240307")
    assert bench.name == "judgebench/claude" and len(bench.verdicts) == 540
    assert set(bench.verdicts["order"]) == {"ab", "ba"}
