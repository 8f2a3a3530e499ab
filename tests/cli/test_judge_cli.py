"""The judge and cache commands (simulated and replay backends; no network)."""

import json

import pandas as pd
import pytest

from fairjudge._cli import main


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    with open(path, "w") as handle:
        for i in range(30):
            handle.write(json.dumps({"id": f"p{i}", "question": f"Q{i}?", "a": "brief",
                                     "b": "a much longer and more elaborate answer " * (i % 3)
                                     + "end"}) + "\n")
    return path


def run(args, capsys):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_judge_writes_calls_and_aggregate(tmp_path, pairs_file, capsys):
    out = tmp_path / "v.jsonl"
    code, _, err = run(["judge", pairs_file, "--backend", "simulated", "--strategy", "S1",
                        "--out", out, "--cache", tmp_path / "c.sqlite", "--no-progress"], capsys)
    assert code == 0, err
    calls = pd.read_json(out, lines=True)
    aggregate = pd.read_json(tmp_path / "v.aggregate.jsonl", lines=True)
    assert len(calls) == 60 and len(aggregate) == 30
    assert set(calls["order"]) == {"ab", "ba"}
    assert {"pair_id", "strategy", "outcome_detail", "cost", "item_a", "item_b", "winner",
            "judge"} <= set(calls.columns)
    assert "60 calls" in err and "wrote" in err


def test_same_seed_same_orders_whatever_the_concurrency(tmp_path, pairs_file, capsys):
    orders = []
    for concurrency, seed in ((1, 4), (32, 4), (8, 5)):
        out = tmp_path / f"v{concurrency}{seed}.jsonl"
        code, _, err = run(["judge", pairs_file, "--backend", "simulated", "--out", out,
                            "--seed", seed, "--concurrency", concurrency, "--cache",
                            tmp_path / f"c{concurrency}{seed}.sqlite", "--no-progress"], capsys)
        assert code == 0, err
        orders.append(pd.read_json(out, lines=True).set_index("pair_id")["order"].sort_index())
    pd.testing.assert_series_equal(orders[0], orders[1])
    assert not orders[0].equals(orders[2])


def test_json_report_and_cache_commands(tmp_path, pairs_file, capsys):
    cache = tmp_path / "c.sqlite"
    code, out, _ = run(["judge", pairs_file, "--backend", "simulated", "--strategy", "CWO",
                        "--out", tmp_path / "v.csv", "--cache", cache, "--json"], capsys)
    assert code == 0
    report = json.loads(out)
    assert report["pairs"] == 30 and report["report"]["requested"] == 60
    assert sum(report["outcomes"].values()) == 30
    # The simulated backend is free to recompute, so it does not fill the cache.
    code, out, _ = run(["cache", "stats", "--cache", cache, "--json"], capsys)
    assert code == 0 and json.loads(out)["entries"] == 0
    code, _, err = run(["cache", "stats", "--cache", tmp_path / "nope.sqlite"], capsys)
    assert code == 2 and "no cache at" in err


def test_usage_errors_are_one_line(tmp_path, pairs_file, capsys):
    code, _, err = run(["judge", pairs_file, "--backend", "simulated", "--strategy", "S9",
                        "--out", tmp_path / "v.jsonl"], capsys)
    assert code == 2 and err.strip() == ("error: unknown strategy 'S9'; choose from B0, S1, "
                                         "S2, S3, S4, S5, S6, S7, S8, CWO, SW")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "question": "q", "a": "x"}\n')
    code, _, err = run(["judge", bad, "--backend", "simulated", "--out", tmp_path / "v.jsonl"],
                       capsys)
    assert code == 2 and "bad.jsonl: missing field `b`" in err and "Traceback" not in err
    code, _, err = run(["judge", pairs_file, "--backend", "openai", "--out",
                        tmp_path / "v.jsonl"], capsys)
    assert code == 2 and "--backend openai needs --judge-model" in err


@pytest.fixture
def probe_file(tmp_path, capsys):
    records = tmp_path / "records.jsonl"
    rows = []
    # Long answers (251 words): the simulated judge adds 2 logits per 100 words, so a LENGTH
    # probe (the answer expanded 2-3x, here by >= 370 words) gives the longer side >= 7
    # logits against a first-slot lean of 0.5: every judge's LENGTH bias is positive (15 of
    # 15 measured seeds; chance of a miss < 1e-5). With the former 31-word answers the lead
    # was ~0.9 logits and the bias was > 0 for only 22 of 30 seeds.
    details = " ".join(f"Detail {k} adds one more short supporting fact to this answer."
                       for k in range(20))
    for q in range(3):
        for source in ("gpt4", "claude"):
            rows.append({"question": f"Question {q}?", "source": source, "answer":
                         f"The first point about topic {q} from {source} is clear. A second "
                         f"sentence adds a detail. A third sentence explains why it matters. "
                         f"{details} Finally, {source} closes the answer to question {q}."})
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "probes.jsonl"
    assert main(["probes", str(records), "--out", str(out), "--seed", "3"]) == 0
    capsys.readouterr()
    return out


def test_audit_a_live_judge_on_probes_and_pairs(tmp_path, pairs_file, probe_file, capsys):
    code, out, err = run(["audit", "--backend", "simulated", "--backend", "simulated",
                          "--model", "j1", "--model", "j2", "--probes", probe_file,
                          "--pairs", pairs_file, "--cache", tmp_path / "c.sqlite", "--json",
                          "--html", tmp_path / "a.html"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert {"simulated:j1", "simulated:j2"} <= set(report)
    for judge in ("simulated:j1", "simulated:j2"):
        for key in ("position_consistency", "first_position_rate"):
            assert set(report[judge][key]) == {"estimate", "ci_low", "ci_high", "level", "n", "method"}
    assert set(report["probes"]) == {"simulated:j1", "simulated:j2"}
    length = [r for judge in report["probes"].values() for r in judge["scores"]
              if r["bias_type"] == "LENGTH"]
    assert len(length) == 2
    assert all(r["bias"]["estimate"] > 0 for r in length)  # the simulated judge rewards words
    assert '<table class="heat">' in (tmp_path / "a.html").read_text()  # the bias heat table


def test_audit_refuses_probes_it_cannot_match(tmp_path, probe_file, capsys):
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(json.dumps({"item_a": "x", "item_b": "y", "winner": "a"}) + "\n")
    code, _, err = run(["audit", "--verdicts", verdicts, "--probes", probe_file], capsys)
    assert code == 2 and "has no `pair_id` and `order` columns" in err


def test_judge_exits_1_and_names_the_missing_pairs_when_calls_fail(tmp_path, pairs_file,
                                                                   capsys, monkeypatch):
    """Every call fails (nothing listens on port 9): the run is incomplete, not a success."""
    pytest.importorskip("aiohttp", reason="the openai backend needs aiohttp")
    monkeypatch.setenv("TEST_KEY", "sk-test")
    code, out, err = run(["judge", pairs_file, "--backend", "openai", "--judge-model", "m",
                          "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "TEST_KEY",
                          "--max-retries", "0", "--timeout", "2", "--out",
                          tmp_path / "v.jsonl", "--cache", tmp_path / "c.sqlite",
                          "--no-progress", "--json"], capsys)
    assert code == 1, err
    assert "error: 30 of 30 pairs are incomplete (p0, p1, p2" in err
    assert "rerun the same command to retry them" in err
    assert json.loads(out)["incomplete_pairs"][:2] == ["p0", "p1"]


def test_cache_clear_answered_no_deletes_nothing(tmp_path, capsys, monkeypatch):
    from fairjudge.judges import CompletionCache

    CompletionCache(tmp_path / "c.sqlite").close()
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("n\n"))
    code, out, _ = run(["cache", "clear", "--cache", tmp_path / "c.sqlite"], capsys)
    assert code == 0 and "nothing deleted" in out


@pytest.mark.parametrize(("raised", "shown", "bug"), [
    (KeyError("an internal bug"), "this is a bug in fairjudge", True),
    (MemoryError("Unable to allocate 74.5 GiB for an array"),
     "error: out of memory (Unable to allocate 74.5 GiB", False),
    (MemoryError(), "error: out of memory (an allocation failed); for a large pool", False),
])
def test_internal_errors_are_bugs_and_running_out_of_memory_is_not(
        tmp_path, pairs_file, capsys, monkeypatch, raised, shown, bug):
    import fairjudge.strategies

    def broken(*args, **kwargs):
        raise raised

    monkeypatch.setattr(fairjudge.strategies, "judge_pairs", broken)
    code, _, err = run(["judge", pairs_file, "--backend", "simulated", "--out",
                        tmp_path / "v.jsonl", "--cache", tmp_path / "c.sqlite"], capsys)
    assert code == 1 and shown in err
    assert ("Traceback" in err) == bug and ("bug" in err) == bug


def test_judge_writes_per_side_features_that_audit_reads(tmp_path, pairs_file, capsys):
    """Answers given inline have no item table: `judge` records each side's length and
    markdown, and `audit` measures length bias from them."""
    out = tmp_path / "v.jsonl"
    code, _, err = run(["judge", pairs_file, "--backend", "simulated", "--strategy", "S1",
                        "--sim-bias", "3", "--out", out, "--cache", tmp_path / "c.sqlite",
                        "--no-progress"], capsys)
    assert code == 0, err
    calls = pd.read_json(out, lines=True)
    brief = calls["item_a"].str.endswith(":a")  # the pair's a is "brief": 1 word
    assert (calls.loc[brief, "length_a"] == 1).all() and (calls.loc[~brief, "length_b"] == 1).all()
    code, out_json, err = run(["audit", out, "--json"], capsys)
    assert code == 0, err
    length = json.loads(out_json)["simulated:biased-judge"]["length_bias"]
    assert length is not None and length["estimate"] > 0  # a judge paid per 100 words


def test_a_missing_repeat_sample_makes_the_run_incomplete(tmp_path, pairs_file, capsys,
                                                          monkeypatch):
    """Every requested call counts, repeats included: a pair whose sample 1 failed is
    incomplete (exit 1) even though its sample 0 was judged."""
    pytest.importorskip("aiohttp", reason="the openai backend needs aiohttp")
    from fairjudge.judges.testing import FakeProviderServer, FaultPlan

    monkeypatch.setenv("TEST_KEY", "sk-test")
    with FakeProviderServer(seed=1) as server:
        code, _, err = run(["judge", pairs_file, "--backend", "openai", "--judge-model", "m",
                            "--base-url", server.base_url, "--api-key-env", "TEST_KEY",
                            "--out", tmp_path / "v.jsonl", "--cache", tmp_path / "c.sqlite",
                            "--no-progress", "--max-retries", "0"], capsys)
        assert code == 0, err
        server.faults = FaultPlan(rate_500=1.0)  # every new call fails from now on
        code, _, err = run(["judge", pairs_file, "--backend", "openai", "--judge-model", "m",
                            "--base-url", server.base_url, "--api-key-env", "TEST_KEY",
                            "--samples", "2", "--out", tmp_path / "v2.jsonl", "--cache",
                            tmp_path / "c.sqlite", "--no-progress", "--max-retries", "0"],
                           capsys)
    assert code == 1
    assert "error: 30 of 30 pairs are incomplete" in err


@pytest.mark.parametrize("command", ["audit", "select"])
def test_live_workflows_with_every_call_failing_exit_1_not_2(tmp_path, pairs_file, capsys,
                                                             monkeypatch, command):
    pytest.importorskip("aiohttp", reason="the openai backend needs aiohttp")
    monkeypatch.setenv("TEST_KEY", "sk-test")
    judge = ["--backend", "openai", "--judge-model", "m", "--base-url", "http://127.0.0.1:9/v1",
             "--api-key-env", "TEST_KEY", "--max-retries", "0", "--cache",
             tmp_path / "c.sqlite", "--no-progress"]
    if command == "audit":
        argv = ["audit", "--pairs", pairs_file, *judge]
        expected = "the audit got no verdict from the judge"
    else:
        items = tmp_path / "items.jsonl"
        items.write_text("".join(json.dumps({"id": f"i{i}", "text": "word " * (i + 1)}) + "\n"
                                 for i in range(5)))
        argv = ["select", items, "--question", "Q?", "--k", "2", "--budget", "4", *judge]
        expected = "no usable verdict was collected (stopped: failures"
    code, _, err = run(argv, capsys)
    assert code == 1, err
    assert expected in err and "could not connect" in err and "Traceback" not in err


def test_a_spend_cap_without_price_or_budget_names_the_flag_to_add(tmp_path, pairs_file, capsys):
    """Formerly "set max tokens" named no flag and the price-file format was only in --help;
    the error comes before any call, with no progress bar drawn above it."""
    out, cache = tmp_path / "v.jsonl", tmp_path / "c.sqlite"
    code, _, err = run(["judge", pairs_file, "--backend", "simulated", "--max-cost", "1",
                        "--out", out, "--cache", cache], capsys)
    assert code == 2 and "--prices FILE" in err and '{"biased-judge": {"input":' in err
    assert "call/s" not in err
    prices = tmp_path / "prices.json"
    prices.write_text('{"biased-judge": {"input": 1.0, "output": 2.0}}')
    code, _, err = run(["judge", pairs_file, "--backend", "simulated", "--max-cost", "1",
                        "--prices", prices, "--out", out, "--cache", cache], capsys)
    assert code == 2 and "set --max-tokens N" in err and "call/s" not in err
    assert not out.exists()
    code, _, err = run(["judge", pairs_file, "--backend", "simulated", "--max-cost", "1",
                        "--prices", prices, "--max-tokens", "50", "--out", out, "--cache",
                        cache], capsys)
    assert code == 0 and out.exists() and "call/s" in err  # the bar is drawn once calls run


def test_probes_names_skipped_records_by_line_for_a_command_line_user(tmp_path, capsys):
    """Formerly the warning told a CLI user to look at `probes.attrs['skipped']`."""
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(json.dumps(r) for r in [
        {"question": "q1?", "answer": "Paris is the capital. It is on the Seine. It is big."},
        {"question": "q2?", "answer": "Too short."}]) + "\n")
    code, out, err = run(["probes", records, "--out", tmp_path / "p.jsonl"], capsys)
    assert code == 0 and "attrs" not in err
    assert "TRUNCATION: records.jsonl line 2 skipped: fewer than 3 sentences" in err
    assert "MODEL_ORIGIN: no probe of this kind could be built" in err


def _commands(group, prefix=()):
    import click
    for name in group.list_commands(None):
        command = group.get_command(None, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))
        else:
            yield " ".join((*prefix, name)), command


def test_every_option_of_every_command_is_described():
    """Formerly `probes --kinds`, `select --refit-every` (and others) had no description."""
    import click

    from fairjudge._cli import cli

    undescribed = [f"{name} {option.opts[0]}" for name, command in _commands(cli)
                   for option in command.params
                   if isinstance(option, click.Option) and not option.hidden
                   and not (option.help or "").strip()]
    assert not undescribed


@pytest.mark.parametrize("command", ["judge", "audit"])
def test_strategy_runs_default_to_the_studys_temperature(tmp_path, pairs_file, capsys,
                                                         monkeypatch, command):
    """The debiasing-strategies study runs single-call strategies at temperature 0.1; a
    strategy run sends that unless told otherwise, and --temperature 0 still sends 0. Read
    from the requests the cache stored, i.e. what went over the wire."""
    pytest.importorskip("aiohttp", reason="the openai backend needs aiohttp")
    from fairjudge.judges import CompletionCache
    from fairjudge.judges.testing import FakeProviderServer

    monkeypatch.setenv("TEST_KEY", "sk-test")
    sent = {}
    with FakeProviderServer(seed=1) as server:
        for given, cache in ((None, "default.sqlite"), ("0", "zero.sqlite")):
            argv = ([command, pairs_file, "--out", tmp_path / f"{cache}.jsonl"]
                    if command == "judge" else [command, "--pairs", pairs_file])
            argv += ["--backend", "openai", "--judge-model", "m", "--base-url",
                     server.base_url, "--api-key-env", "TEST_KEY", "--cache",
                     tmp_path / cache, "--no-progress"]
            if given is not None:
                argv += ["--temperature", given]
            code, _, err = run(argv, capsys)
            assert code == 0, err
            with CompletionCache(tmp_path / cache) as store:
                store.export(tmp_path / f"{cache}.export.jsonl")
            requests = pd.read_json(tmp_path / f"{cache}.export.jsonl", lines=True)["request"]
            sent[given] = {r["settings"]["temperature"] for r in requests}
    assert sent == {None: {0.1}, "0": {0.0}}
