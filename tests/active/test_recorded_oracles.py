"""Real-judge oracles [bias-aware-active-topk, Technical Appendix]: record every ordered pair
of a controlled pool through the cached, spend-capped runner (against the loopback provider
with a scripted biased judge), then replay the recording in ``experiment topk``."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("aiohttp", reason="provider backends need the [openai] extra (aiohttp)")

from fairjudge._cli import main  # noqa: E402
from fairjudge.active import (  # noqa: E402
    MatrixOracle,
    TopkExperimentConfig,
    build_pool_oracle,
    run_active_topk,
    run_topk_experiment,
)
from fairjudge.data import (  # noqa: E402
    FairjudgeInputError,
    RecordedOracle,
    load_recorded_oracle,
    write_recorded_oracle,
)
from fairjudge.data._statement_banks import ELABORATION_CLAUSES, TOPICS  # noqa: E402
from fairjudge.judges import CompletionCache, RunOptions, get_backend  # noqa: E402
from fairjudge.judges.testing import FakeProviderServer  # noqa: E402

N_ITEMS = 12
ORDERED = N_ITEMS * (N_ITEMS - 1)
POOL_SEED = 1
_A = re.compile(r"\[The Start of Assistant A's Answer\]\n(.*?)\n\[The End of Assistant A", re.S)
_B = re.compile(r"\[The Start of Assistant B's Answer\]\n(.*?)\n\[The End of Assistant B", re.S)
_TRUE = [s.rstrip(".") for s in TOPICS["the Moon"]["true"]]


def features(text: str) -> tuple[int, bool]:
    """(#correct statements, elaborated) of an answer, read from its text."""
    return sum(s in text for s in _TRUE), any(c in text for c in ELABORATION_CLAUSES)


def biased_judge(prompt: str):
    """A verbosity-biased judge, deterministic given the prompt: between a terse and an
    elaborated answer it picks the elaborated one when a hash of the prompt falls below 0.7;
    otherwise (and between answers of equal verbosity) the one with more correct statements,
    the first-shown one on a tie."""
    a, b = _A.search(prompt), _B.search(prompt)
    if a is None or b is None:
        return None
    (qa, va), (qb, vb) = features(a.group(1)), features(b.group(1))
    u = int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16) / 16 ** 8
    if va != vb and u < 0.7:
        return "A" if va else "B"
    return "A" if qa >= qb else "B"


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("TEST_KEY", "sk-test")
    with FakeProviderServer(seed=0, responder=biased_judge) as srv:
        yield srv


def oracle_command(server, tmp_path, *extra):
    return ["experiment", "oracle", "--topic", "the Moon", "--n-items", str(N_ITEMS),
            "--seed", str(POOL_SEED), "--backend", "openai", "--judge-model", "judge-mini",
            "--base-url", server.base_url, "--api-key-env", "TEST_KEY",
            "--cache", str(tmp_path / "cache.sqlite"), "--out", str(tmp_path / "oracle"),
            "--no-progress", "--json", *extra]


def test_record_rerun_from_cache_and_replay_in_experiment_topk(server, tmp_path, capsys):
    code = main(oracle_command(server, tmp_path))
    payload = json.loads(capsys.readouterr().out)
    assert code == 0, payload
    assert server.request_count() == ORDERED  # every ordered pair asked once
    assert payload["usable"] == ORDERED and payload["missing"] == 0

    oracle = load_recorded_oracle(tmp_path / "oracle")
    assert oracle.judge == "openai:judge-mini" and oracle.n_items == N_ITEMS
    assert oracle.info["temperature"] == 0.0 and oracle.info["template"] == "letter"
    assert oracle.info["topic"] == "the Moon" and oracle.info["seed"] == POOL_SEED
    table = oracle.verdicts
    assert len(table) == ORDERED
    assert not table[["item_a", "item_b"]].duplicated().any()
    assert set(table["order"]) == {"ab", "ba"}
    # The recorded verdict is the judge's: where both answers have the same verbosity the
    # scripted judge picks the more correct one (the first shown on a tie).
    items = oracle.items
    for row in table.itertuples():
        a, b = items.loc[row.item_a], items.loc[row.item_b]
        if a["verbose"] == b["verbose"]:
            assert row.winner == ("a" if a["quality"] >= b["quality"] else "b"), row
    # Ground truth travels with the verdicts.
    assert {"text", "quality", "verbose", "length"} <= set(items.columns)
    assert items["quality"].tolist() == [2 * features(t)[0] - 6 for t in items["text"]]
    assert items["verbose"].tolist() == [float(features(t)[1]) for t in items["text"]]

    # The same command again: every call from the cache, nothing sent.
    code = main(oracle_command(server, tmp_path))
    again = json.loads(capsys.readouterr().out)
    assert code == 0 and server.request_count() == ORDERED
    assert again["report"]["cache_hits"] == ORDERED and again["report"]["fresh"] == 0
    pd.testing.assert_frame_equal(
        load_recorded_oracle(tmp_path / "oracle").verdicts.drop(columns="cached"),
        table.drop(columns="cached"))

    # Replayed offline: on this verbosity-biased judge the bias-aware model recovers the
    # top-3 on full data (recall 1) where the naive one ranks presentation (recall 1/3).
    code = main(["experiment", "topk", "--oracle", str(tmp_path / "oracle"), "--k", "3",
                 "--seeds", "1", "--budgets", "30,60", "--rules", "topk,random",
                 "--k-values", "3", "--samples", "200", "--jobs", "1",
                 "--out", str(tmp_path / "topk"), "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0
    assert server.request_count() == ORDERED  # replay asks no judge
    full = pd.read_csv(tmp_path / "topk" / "full.csv").set_index("model")["recall"]
    assert full["bias-aware"] == pytest.approx(1.0)
    assert full["naive"] == pytest.approx(1 / 3)
    budget = pd.read_csv(tmp_path / "topk" / "budget.csv")
    assert set(budget["judge"]) == {"openai:judge-mini"}
    assert set(budget["budget"]) == {30, 60}
    assert summary["config"]["k"] == 3


def test_replay_serves_exactly_the_recorded_verdicts(server, tmp_path):
    backend = get_backend("openai", model="judge-mini", base_url=server.base_url,
                          api_key_env="TEST_KEY")
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        oracle = build_pool_oracle("the Moon", backend, n_items=8, seed=4, cache=cache,
                                   options=RunOptions(concurrency=8))
    assert oracle.missing == 0
    recorded = {(r.item_a, r.item_b): r.winner for r in oracle.verdicts.itertuples()}
    result = run_active_topk(MatrixOracle(oracle.matrix()), 8, k=2, budget=28,
                             covariates=oracle.items[["verbose"]].to_numpy(),
                             item_ids=list(oracle.items.index), rule="topk", n_samples=200,
                             rng=3)
    history = result.history
    assert len(history) == 28  # every unordered pair once, in the order the rule chose
    ids = list(oracle.items.index)
    served = {(ids[first], ids[second]): outcome.value
              for (first, second), outcome in zip(result.shown, result.outcomes)}
    assert served == {pair: recorded[pair] for pair in served}
    assert len({frozenset(p) for p in served}) == 28


def test_the_spend_cap_stops_then_a_rerun_completes_without_paying_twice(server, tmp_path,
                                                                          capsys):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-mini": {"input": 1.0, "output": 1.0}}))
    capped = oracle_command(server, tmp_path, "--prices", str(prices), "--max-tokens", "4",
                            "--concurrency", "2")
    code = main([*capped, "--max-cost", "0.004"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 3
    partial = load_recorded_oracle(tmp_path / "oracle")
    assert 0 < len(partial.verdicts) < ORDERED and partial.missing == ORDERED - len(
        partial.verdicts)
    assert payload["report"]["stopped_by_cap"]
    paid = server.request_count()
    code = main(capped)
    capsys.readouterr()
    assert code == 0
    assert load_recorded_oracle(tmp_path / "oracle").missing == 0
    assert server.request_count() == ORDERED  # the rerun asked only what was missing
    assert paid < ORDERED


# --------------------------------------------------------------------------- bad input


def _tiny_oracle() -> RecordedOracle:
    items = pd.DataFrame({"text": ["x", "y", "z"], "quality": [1.0, 0.0, -1.0],
                          "verbose": [0.0, 1.0, 0.0], "length": [1.0, 1.0, 1.0]},
                         index=pd.Index(["i0", "i1", "i2"], name="id"))
    verdicts = pd.DataFrame({"item_a": ["i0", "i1"], "item_b": ["i1", "i2"],
                             "winner": ["a", "b"], "judge": ["j", "j"]})
    return RecordedOracle(items=items, verdicts=verdicts, judge="j", info={"seed": 0})


def test_write_and_load_round_trip(tmp_path):
    write_recorded_oracle(_tiny_oracle(), tmp_path / "o")
    back = load_recorded_oracle(tmp_path / "o" / "oracle.json")
    assert back.judge == "j" and back.info["seed"] == 0 and back.missing == 6 - 2
    expected = np.full((3, 3), np.nan)
    expected[0, 1], expected[1, 2] = 1.0, 0.0
    np.testing.assert_array_equal(back.matrix(), expected)


def test_load_names_the_missing_file(tmp_path):
    write_recorded_oracle(_tiny_oracle(), tmp_path / "o")
    (tmp_path / "o" / "items.csv").unlink()
    with pytest.raises(FairjudgeInputError, match=r"o: missing items.csv"):
        load_recorded_oracle(tmp_path / "o")


def test_load_names_file_line_and_field_of_an_unknown_item(tmp_path):
    write_recorded_oracle(_tiny_oracle(), tmp_path / "o")
    path = tmp_path / "o" / "verdicts.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace('"item_b":"i2"', '"item_b":"ghost"')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FairjudgeInputError,
                       match=r"verdicts.jsonl line 2: field `item_b` names item 'ghost'"):
        load_recorded_oracle(tmp_path / "o")


def test_load_refuses_items_without_ground_truth(tmp_path):
    write_recorded_oracle(_tiny_oracle(), tmp_path / "o")
    items = pd.read_csv(tmp_path / "o" / "items.csv").drop(columns="quality")
    items.to_csv(tmp_path / "o" / "items.csv", index=False)
    with pytest.raises(FairjudgeInputError, match=r"items.csv: missing field `quality`"):
        load_recorded_oracle(tmp_path / "o")


def test_experiment_refuses_a_budget_beyond_the_pool(tmp_path):
    config = TopkExperimentConfig(k=1, budgets=(4,), n_seeds=1)
    with pytest.raises(FairjudgeInputError, match=r"budget 4 exceeds the 3 unordered pairs"):
        run_topk_experiment(config, oracles=[_tiny_oracle()])


def test_cli_oracle_folder_errors_exit_2(tmp_path, capsys):
    code = main(["experiment", "topk", "--oracle", str(tmp_path / "nothing"), "--out",
                 str(tmp_path / "out")])
    assert code == 2
    assert "nothing: not a folder" in capsys.readouterr().err


def test_cli_oracle_needs_one_backend(tmp_path, capsys):
    code = main(["experiment", "oracle", "--out", str(tmp_path / "o"), "--backend",
                 "simulated", "--backend", "simulated"])
    assert code == 2
    assert "exactly one --backend" in capsys.readouterr().err


@pytest.mark.slow
def test_a_collection_killed_midway_resumes_from_the_cache(server, tmp_path, kill_hard):
    """SIGKILL while every worker waits on a held request, then the same command: only the
    calls not cached before the kill are asked again (the held ones at most twice)."""
    import os
    import signal
    import subprocess
    import sys

    n_items, answered, concurrency = 10, 30, 4
    command = [sys.executable, "-m", "fairjudge",
               *oracle_command(server, tmp_path, "--concurrency", str(concurrency))]
    command[command.index("--n-items") + 1] = str(n_items)
    env = dict(os.environ, TEST_KEY="sk-test")
    server.hold(after=answered)
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        assert server.wait_for_requests(answered + concurrency, timeout=120)
        before = server.counts
    finally:
        kill_hard(first)
    assert first.returncode == -signal.SIGKILL
    assert not (tmp_path / "oracle" / "oracle.json").exists()  # killed before writing
    server.release()
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    oracle = load_recorded_oracle(tmp_path / "oracle")
    pairs = n_items * (n_items - 1)
    assert oracle.missing == 0 and len(oracle.verdicts) == pairs
    counts = server.counts
    repeated = {key for key, n in counts.items() if n > 1}
    assert len(counts) == pairs and repeated <= set(before)
    assert len(repeated) <= concurrency and max(counts.values()) <= 2
    assert json.loads(second.stdout)["report"]["cache_hits"] == answered


def test_invalid_outputs_are_kept_but_never_replayed(tmp_path):
    tiny = _tiny_oracle()
    invalid = pd.DataFrame({"item_a": ["i2"], "item_b": ["i0"], "winner": [None],
                            "judge": ["j"], "outcome_detail": ["invalid"]})
    verdicts = pd.concat([tiny.verdicts.assign(outcome_detail="win"), invalid],
                         ignore_index=True)
    write_recorded_oracle(RecordedOracle(tiny.items, verdicts, "j"), tmp_path / "o")
    back = load_recorded_oracle(tmp_path / "o")
    assert len(back.verdicts) == 3 and len(back.usable()) == 2 and back.missing == 4
    assert np.isnan(back.matrix()[2, 0])
    info = json.loads((tmp_path / "o" / "oracle.json").read_text())
    assert (info["answered"], info["usable"], info["invalid"], info["missing"]) == (3, 2, 1, 4)
