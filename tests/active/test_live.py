"""The live driver: select against a real judge over the loopback provider."""

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("aiohttp", reason="provider backends need the [openai] extra (aiohttp)")

import fairjudge  # noqa: E402
from fairjudge._cli import main  # noqa: E402
from fairjudge.judges import (CompletionCache, Price, PriceTable, RunOptions,  # noqa: E402
                              get_backend)
from fairjudge.judges.testing import FakeProviderServer  # noqa: E402

QUESTION = "Describe the water cycle."


def pool(n=10):
    """Answers whose word count is their quality: the scripted judge prefers longer ones."""
    words = np.arange(3, 3 + 4 * n, 4)
    return pd.DataFrame({"id": [f"ans{i:02d}" for i in range(n)],
                         "text": [" ".join(["water"] * int(w)) for w in words],
                         "quality": words.astype(float)})


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("TEST_KEY", "sk-test")
    with FakeProviderServer(seed=1, first_slot_lean=0.3) as srv:
        yield srv


def backend(server):
    return get_backend("openai", model="judge-mini", base_url=server.base_url,
                       api_key_env="TEST_KEY")


def test_every_pair_judged_live_gives_the_true_order(server):
    """With a budget of every pair, the deterministic length-loving judge orders the pool."""
    result = fairjudge.select(pool(), backend=backend(server), question=QUESTION, k=3,
                              budget=45, options=RunOptions(concurrency=8), n_samples=300)
    assert result.topk == ["ans09", "ans08", "ans07"] and result.stopped == "budget"
    assert len(result.queried) == 45 and server.request_count() == 45
    # one call more than there are pairs: the pool is exhausted
    more = fairjudge.select(pool(), backend=backend(server), question=QUESTION, k=3,
                            budget=50, options=RunOptions(concurrency=8), n_samples=300)
    assert more.stopped == "exhausted" and len(more.queried) == 45


def test_a_rerun_pays_nothing_and_retraces_the_same_run(server, tmp_path):
    items = pool()
    options = RunOptions(concurrency=4, backoff_base=0.001)
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        first = fairjudge.select(items, backend=backend(server), question=QUESTION, k=3,
                                 budget=30, cache=cache, options=options, n_samples=300, rng=5)
    paid = server.request_count()
    assert len(first.queried) == 30 and paid == 30 and first.stopped == "budget"
    assert set(first.queried["order"]) == {"ab", "ba"}
    assert {"pair_id", "cost", "cached", "raw"} <= set(first.queried.columns)
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        again = fairjudge.select(items, backend=backend(server), question=QUESTION, k=3,
                                 budget=30, cache=cache, options=options, n_samples=300, rng=5)
    assert server.request_count() == paid  # every call came from the cache
    assert again.report.cache_hits == 30 and again.report.fresh == 0
    pd.testing.assert_frame_equal(first.queried.drop(columns=["cached", "cost"]),
                                  again.queried.drop(columns=["cached", "cost"]))
    assert again.topk == first.topk


def test_the_spend_cap_stops_a_live_run(server, tmp_path):
    options = RunOptions(concurrency=2, backoff_base=0.001, max_cost=0.003,
                         prices=PriceTable({"judge-mini": Price(1.0, 1.0)}))
    from fairjudge.judges import GenerationSettings

    result = fairjudge.select(pool(), backend=backend(server), question=QUESTION, k=3,
                              budget=40, options=options, n_samples=100,
                              settings=GenerationSettings(max_tokens=20), rng=0)
    assert result.stopped == "spend cap" and result.report.stopped_by_cap
    assert 0 < len(result.queried) < 40
    assert result.report.cost <= 0.003


def test_live_select_from_the_command_line(server, tmp_path, capsys):
    items = tmp_path / "items.jsonl"
    pool().assign(question=QUESTION).to_json(items, orient="records", lines=True)
    argv = ["select", items, "--backend", "openai", "--judge-model", "judge-mini",
            "--base-url", server.base_url, "--api-key-env", "TEST_KEY", "--k", "3",
            "--budget", "45", "--concurrency", "4", "--cache", tmp_path / "c.sqlite",
            "--posterior-samples", "200", "--no-progress", "--json"]
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    payload = json.loads(captured.out)
    assert payload["topk"] == ["ans09", "ans08", "ans07"] and payload["budget_spent"] == 45
    assert all(call["judge"] == "openai:judge-mini" for call in payload["queried"])
    assert "cache:" in captured.err


def test_live_select_needs_answer_texts_and_one_question(server, tmp_path):
    with pytest.raises(ValueError, match="needs the answers in a `text` column"):
        fairjudge.select(pool().drop(columns="text"), backend=backend(server), k=2, budget=4,
                         question=QUESTION)
    with pytest.raises(ValueError, match="holds 2 different questions"):
        fairjudge.select(pool().assign(question=["q1"] * 5 + ["q2"] * 5),
                         backend=backend(server), k=2, budget=4)
    with pytest.raises(ValueError, match="either an oracle or a live judge"):
        fairjudge.select(pool(), "oracle.jsonl", backend=backend(server), k=2, budget=4)


@pytest.mark.slow
def test_a_killed_live_select_resumes_from_the_cache_to_the_same_result(tmp_path, fake_server,
                                                                        kill_hard):
    """SIGKILL at a known point (every worker waits on a held request after 20 answers), then
    the same command again: it replays the 20 cached calls, pays again only the 4 that were
    in flight, and ends with the result of an uninterrupted run."""
    import os
    import signal
    import subprocess
    import sys

    items = tmp_path / "items.jsonl"
    pool(12).assign(question=QUESTION).to_json(items, orient="records", lines=True)

    def command(cache):
        return [sys.executable, "-m", "fairjudge", "select", str(items), "--backend", "openai",
                "--judge-model", "judge-mini", "--base-url", fake_server.base_url,
                "--api-key-env", "TEST_KEY", "--k", "3", "--budget", "40", "--concurrency",
                "4", "--cache", str(cache), "--posterior-samples", "300", "--seed", "7",
                "--no-progress", "--json"]

    env = dict(os.environ, TEST_KEY="sk-test")
    fake_server.hold(after=20)
    first = subprocess.Popen(command(tmp_path / "c.sqlite"), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert fake_server.wait_for_requests(24, timeout=120), fake_server.request_count()
        assert first.poll() is None
        held = fake_server.counts
        assert len(held) == fake_server.request_count() == 24
    finally:
        kill_hard(first)
    assert first.returncode == -signal.SIGKILL
    fake_server.release()
    resumed = subprocess.run(command(tmp_path / "c.sqlite"), env=env, capture_output=True,
                             text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    counts = fake_server.counts
    repeated = {k for k, n in counts.items() if n > 1}
    assert len(counts) == 40 and max(counts.values()) == 2
    assert len(repeated) == 4 and repeated <= set(held)  # only the calls in flight
    assert "20 from cache" in resumed.stderr
    reference = subprocess.run(command(tmp_path / "fresh.sqlite"), env=env,
                               capture_output=True, text=True, timeout=120)
    assert reference.returncode == 0, reference.stderr
    got, want = json.loads(resumed.stdout), json.loads(reference.stdout)
    assert got["topk"] == want["topk"]
    strip = [{k: v for k, v in q.items() if k not in ("cached", "cost")} for q in got["queried"]]
    assert strip == [{k: v for k, v in q.items() if k not in ("cached", "cost")}
                     for q in want["queried"]]


def test_live_select_with_two_judges_of_different_cost(server, tmp_path, capsys):
    """Two backends with --judge-cost each and a --max-cost: every call names the judge that
    answered and its cost, and the planned money is never exceeded."""
    items = tmp_path / "items.jsonl"
    pool().assign(question=QUESTION).to_json(items, orient="records", lines=True)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-mini": {"input": 0.15, "output": 0.6},
                                  "judge-max": {"input": 2.5, "output": 10.0}}))
    argv = ["select", items, "--prices", prices, "--backend", "openai", "--judge-model",
            "judge-mini", "--backend", "openai", "--judge-model", "judge-max", "--base-url", server.base_url,
            "--base-url", server.base_url, "--api-key-env", "TEST_KEY", "--api-key-env",
            "TEST_KEY", "--judge-cost", "0.1", "--judge-cost", "1", "--max-cost", "6", "--k",
            "3", "--max-tokens", "50", "--concurrency", "4", "--cache", tmp_path / "c.sqlite",
            "--posterior-samples", "200", "--no-progress", "--json"]
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    payload = json.loads(captured.out)
    calls = pd.DataFrame(payload["queried"])
    assert payload["model"] == "reliability" and payload["stopped"] in ("money", "exhausted")
    assert calls["judge_cost"].sum() <= 6 + 1e-9
    assert dict(zip(calls["judge"], calls["judge_cost"])) == {
        "openai:judge-mini": 0.1, "openai:judge-max": 1.0} or \
        set(calls["judge"]) == {"openai:judge-mini"}
    assert server.request_count() == len(calls)
    assert 0 < calls["cost"].sum() <= 6  # billed, from the price table: the hard cap
    # the cheap judge covers its 45 pairs before the strong one is bought
    assert (calls["judge"] == "openai:judge-mini").sum() == 45


def test_a_human_judge_pauses_the_loop_until_its_labels_are_in(server, tmp_path, capsys):
    """A cheap LLM judge and a human annotator (20x the cost): the loop stops when the
    human is asked, the comparisons wait in the sheet, and each rerun after labelling
    replays every LLM call from the cache and goes on from the labels."""
    items = tmp_path / "items.jsonl"
    answers = pool(6).assign(question=QUESTION)
    answers.to_json(items, orient="records", lines=True)
    sheet = tmp_path / "labels.csv"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-mini": {"input": 0.15, "output": 0.6}}))
    argv = [str(a) for a in [
        "select", items, "--prices", prices, "--max-tokens", "50", "--backend", "openai", "--judge-model", "judge-mini", "--base-url",
        server.base_url, "--api-key-env", "TEST_KEY", "--backend", "human",
        "--human-labels", sheet, "--judge-cost", "0.1", "--judge-cost", "2", "--max-cost",
        "7.5", "--k", "2", "--concurrency", "2", "--cache", tmp_path / "c.sqlite",
        "--posterior-samples", "200", "--no-progress", "--json"]]
    quality = dict(zip(answers["id"], answers["quality"]))
    for rerun in range(10):
        code = main(argv)
        captured = capsys.readouterr()
        if code == 0:
            break
        assert code == 1 and "await human labels" in captured.err, captured.err
        labels = pd.read_csv(sheet)
        labels["winner"] = labels["winner"].astype(object)
        todo = labels["winner"].isna()
        assert todo.any() and set(labels.columns) >= {"question", "answer_a", "answer_b"}
        labels.loc[todo, "winner"] = [
            "a" if quality[a] > quality[b] else "b"
            for a, b in zip(labels.loc[todo, "item_a"], labels.loc[todo, "item_b"])]
        labels.to_csv(sheet, index=False)
    assert code == 0 and rerun >= 1
    payload = json.loads(captured.out)
    calls = pd.DataFrame(payload["queried"])
    human = calls[calls["judge"] == "human:annotators"]
    assert len(human) == len(pd.read_csv(sheet)) >= 1
    assert calls["judge_cost"].sum() <= 7.5 + 1e-9
    # each LLM comparison was paid once, however many reruns
    assert server.request_count() == (calls["judge"] == "openai:judge-mini").sum() == 15
    assert payload["topk"] == ["ans05", "ans04"]
