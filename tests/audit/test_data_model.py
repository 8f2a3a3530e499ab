"""One verdict data model: what `judge` writes, `audit` reads, whatever the ids are called."""

import json
import secrets

import pandas as pd
import pytest

pytest.importorskip("aiohttp", reason="provider backends need the [openai] extra (aiohttp)")

from fairjudge._cli import main  # noqa: E402
from fairjudge.judges.testing import FakeProviderServer  # noqa: E402


def run(argv, capsys):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def judged(tmp_path, monkeypatch, capsys):
    """S1 over 40 pairs against the loopback server, two samples per call at T = 0.7."""
    monkeypatch.setenv("TEST_KEY", "sk-test")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({
        "id": f"p{i}", "question": f"Question {i}?", "a": "alpha " * (3 + i % 7),
        "b": "beta " * (3 + (i * 5) % 9)}) + "\n" for i in range(40)))
    out = tmp_path / "calls.jsonl"
    with FakeProviderServer(seed=4, first_slot_lean=0.8) as server:
        code, _, err = run(["judge", pairs, "--backend", "openai", "--judge-model", "j",
                            "--base-url", server.base_url, "--api-key-env", "TEST_KEY",
                            "--strategy", "S1", "--samples", "2", "--temperature", "0.7",
                            "--out", out, "--cache", tmp_path / "c.sqlite", "--no-progress"],
                           capsys)
    assert code == 0, err
    return pd.read_json(out, lines=True)


def audit_json(path, capsys):
    code, out, err = run(["audit", path, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


def test_judge_writes_the_data_model_columns(judged):
    assert {"pair_id", "order", "sample", "strategy", "outcome_detail", "cost", "raw",
            "judge"} <= set(judged.columns)
    assert len(judged) == 40 * 2 * 2
    assert set(judged["order"]) == {"ab", "ba"} and set(judged["sample"]) == {0, 1}
    assert (judged.groupby("pair_id").size() == 4).all()
    assert set(judged["strategy"]) == {"S1"}


def test_audit_does_not_depend_on_how_ids_are_spelled(judged, tmp_path, capsys):
    original = tmp_path / "original.jsonl"
    judged.to_json(original, orient="records", lines=True)
    before = audit_json(original, capsys)["openai:j"]
    # Every item id and pair id becomes an opaque random string (one per id).
    relabel = {name: secrets.token_hex(6) for name in
               pd.unique(pd.concat([judged["item_a"], judged["item_b"], judged["pair_id"]]))}
    opaque = judged.assign(item_a=judged["item_a"].map(relabel),
                           item_b=judged["item_b"].map(relabel),
                           pair_id=judged["pair_id"].map(relabel))
    relabelled = tmp_path / "opaque.jsonl"
    opaque.sample(frac=1.0, random_state=3).to_json(relabelled, orient="records", lines=True)
    after = audit_json(relabelled, capsys)["openai:j"]
    for metric in ("position_consistency", "first_position_rate", "repetition_stability",
                   "invalid_rate"):
        assert after[metric]["estimate"] == pytest.approx(before[metric]["estimate"])
        assert after[metric]["n"] == before[metric]["n"]
    # Repeated samples make repetition stability measurable from fairjudge's own runs.
    assert before["repetition_stability"]["n"] == 80
    assert 0 < before["position_consistency"]["estimate"] < 1
