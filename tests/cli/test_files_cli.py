"""Input files with bad values, and output paths checked before any work (the commands)."""

from __future__ import annotations

import json

import pytest

from fairjudge._cli import main


def run(args, capsys):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "question": f"Q{i}?", "a": "brief",
                                        "b": "a longer answer " * (i % 3) + "end"}) + "\n"
                            for i in range(6)))
    return path


@pytest.fixture
def verdicts_file(tmp_path):
    path = tmp_path / "v.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        {"item_a": "x", "item_b": "y", "winner": "a", "pair_id": "p1", "order": "ab"},
        {"item_a": "y", "item_b": "x", "winner": "b", "pair_id": "p1", "order": "ba"},
        {"item_a": "y", "item_b": "z", "winner": "a", "pair_id": "p2", "order": "ab"},
        {"item_a": "z", "item_b": "y", "winner": "a", "pair_id": "p2", "order": "ba"}]))
    return path


def _judge(pairs_file, tmp_path, *extra):
    return ["judge", pairs_file, "--backend", "simulated", "--cache", tmp_path / "c.sqlite",
            "--no-progress", *extra]


# --------------------------------------------------------------------------- output paths


@pytest.mark.parametrize("extra, message", [
    (["--out", "{pairs}"], r"--out .*pairs\.jsonl: is also the input PAIRS, which would be "
                           r"overwritten"),
    (["--out", "{d}/o.jsonl", "--aggregate", "{d}/./o.jsonl"],
     r"--aggregate .*o\.jsonl: is the same file as --out"),
    (["--out", "{d}/o.jsonl", "--strategy", "S1", "--aggregate", "{pairs}"],
     r"--aggregate .*pairs\.jsonl: is also the input PAIRS"),
    (["--out", "{d}/o.jsonl", "--strategy", "S6", "--aggregate", "{d}/o.references.jsonl"],
     r"the reference answers table .*o\.references\.jsonl: is the same file as --aggregate"),
    (["--out", "{d}/c.jsonl", "--cache", "{d}/c.jsonl"],
     r"--out .*c\.jsonl: is also the input --cache"),
    (["--out", "{d}/missing/o.jsonl"], r"--out .*o\.jsonl: folder .*missing does not exist"),
    (["--out", "{pairs}/o.jsonl"], r"--out .*o\.jsonl: .*pairs\.jsonl is not a folder"),
    (["--out", "{d}/o.xlsx"], r"--out .*o\.xlsx: unknown table format '\.xlsx'"),
])
def test_judge_checks_its_outputs_before_any_call(tmp_path, pairs_file, capsys, extra,
                                                  message):
    before = pairs_file.read_bytes()
    args = [a.format(d=tmp_path, pairs=pairs_file) for a in extra]
    code, _, err = run(_judge(pairs_file, tmp_path, *args), capsys)
    assert code == 2, err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert __import__("re").search(message, err), err
    assert pairs_file.read_bytes() == before  # never overwritten
    assert not (tmp_path / "c.sqlite").exists()  # no call was made


def test_judge_checks_outputs_before_a_paid_backend_is_even_built(tmp_path, pairs_file,
                                                                  capsys):
    code, _, err = run(["judge", pairs_file, "--backend", "openai", "--judge-model", "m",
                        "--api-key-env", "FAIRJUDGE_TEST_NO_SUCH_KEY", "--out", pairs_file,
                        "--cache", tmp_path / "c.sqlite"], capsys)
    assert code == 2 and "is also the input PAIRS" in err


def test_audit_and_compare_html_may_not_overwrite_an_input(tmp_path, verdicts_file, capsys):
    before = verdicts_file.read_bytes()
    code, _, err = run(["audit", verdicts_file, "--html", verdicts_file], capsys)
    assert code == 2 and "--html" in err and "is also the input VERDICTS" in err
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"pair_id": "p1", "item_a": "x", "item_b": "y",
                                "winner": "a"}) + "\n")
    code, _, err = run(["compare", verdicts_file, "--gold", gold, "--html", gold], capsys)
    assert code == 2 and "is also the input --gold" in err
    code, _, err = run(["audit", verdicts_file, "--html", tmp_path / "no" / "a.html"], capsys)
    assert code == 2 and "folder" in err and "does not exist" in err
    assert verdicts_file.read_bytes() == before


def test_probes_checks_its_output_before_building(tmp_path, capsys):
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"question": "Q?", "answer": "One. Two. Three."}) + "\n")
    before = records.read_bytes()
    code, _, err = run(["probes", records, "--out", records], capsys)
    assert code == 2 and "is also the input RECORDS" in err
    code, _, err = run(["probes", records, "--out", tmp_path / "none" / "p.jsonl"], capsys)
    assert code == 2 and "does not exist" in err
    assert records.read_bytes() == before


def test_cache_export_may_not_overwrite_the_cache(tmp_path, capsys):
    from fairjudge.judges import CompletionCache

    cache = tmp_path / "c.sqlite"
    CompletionCache(cache).close()
    before = cache.read_bytes()
    code, _, err = run(["cache", "export", cache, "--cache", cache], capsys)
    assert code == 2 and "is also the input --cache" in err
    assert cache.read_bytes() == before
    code, out, err = run(["cache", "export", tmp_path / "dump.jsonl", "--cache", cache], capsys)
    assert code == 0 and "exported 0 completions" in out


@pytest.mark.parametrize("command", [["experiment", "topk", "--oracles", "1"], ["demo"]])
def test_an_output_folder_inside_a_file_fails_before_the_run(tmp_path, capsys, command):
    """Formerly found only when the results were written, after the whole run."""
    existing = tmp_path / "results"
    existing.write_text("not a folder")
    code, _, err = run([*command, "--out", existing / "topk"], capsys)
    assert code == 2 and "results is not a folder" in err, err


# --------------------------------------------------------------------------- input files


@pytest.mark.parametrize("content, message", [
    ('{"m": {"input": NaN, "output": 1}}', r"p\.json: `input` price of `m` must be a "
                                           r"non-negative finite number"),
    ('{"m": {"input": 1, "output": -2}}', r"`output` price of `m` must be a non-negative"),
    ('{"m": {"input": Infinity, "output": 1}}', r"`input` price of `m` .* got inf"),
    ('{"m": {"input": true, "output": 1}}', r"`input` price of `m` .* got True"),
    ('{\n "m": {"input": 1\n}', r"p\.json line 3: not valid JSON in the price file"),
])
def test_bad_prices_name_the_file_and_model(tmp_path, pairs_file, capsys, content, message):
    prices = tmp_path / "p.json"
    prices.write_text(content)
    code, _, err = run(_judge(pairs_file, tmp_path, "--out", tmp_path / "o.jsonl", "--prices",
                              prices), capsys)
    assert code == 2 and __import__("re").search(message, err), err


def test_settings_files_with_a_byte_order_mark_are_read(tmp_path, pairs_file, capsys):
    prices = tmp_path / "p.json"
    prices.write_bytes(b'\xef\xbb\xbf{"m": {"input": 1, "output": 2}}')
    templates = tmp_path / "t.json"
    templates.write_bytes(b'\xef\xbb\xbf{"mine": {"user": "{{question}} A: {{answer_a}} B: '
                          b'{{answer_b}}"}}')
    code, _, err = run(_judge(pairs_file, tmp_path, "--out", tmp_path / "o.jsonl", "--prices",
                              prices, "--templates", templates, "--template", "mine"), capsys)
    assert code == 0, err


@pytest.mark.parametrize("name, content, message", [
    ("cost.json", '{"S1": "cheap"}', r"cost\.json: cost of `S1` must be a non-negative "
                                     r"number of dollars; got 'cheap'"),
    ("cost.json", '{"S1": -1}', r"cost\.json: cost of `S1` must be a non-negative"),
    ("cost.json", '{"S1": 1,,}', r"cost\.json line 1: not valid JSON in the cost file"),
    ("cost.csv", "name,cost\nS1,0.1\nS2,cheap\n", r"cost\.csv line 3: field `cost` must be a "
                                                  r"non-negative number of dollars; got 'cheap'"),
    ("cost.csv", "name,dollars\nS1,1\n", r"cost\.csv: expected columns name, cost"),
])
def test_compare_cost_errors_name_the_file(tmp_path, verdicts_file, capsys, name, content,
                                           message):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"pair_id": "p1", "item_a": "x", "item_b": "y",
                                "winner": "a"}) + "\n")
    cost = tmp_path / name
    cost.write_text(content)
    code, _, err = run(["compare", verdicts_file, "--gold", gold, "--cost", cost], capsys)
    assert code == 2 and "Traceback" not in err
    assert __import__("re").search(message, err), err


def test_audit_of_one_pair_reports_no_interval(tmp_path, capsys):
    """A bootstrap over one pair can only repeat it: "n/a" (null in JSON), not [1.000, 1.000]."""
    path = tmp_path / "one.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        {"item_a": "x", "item_b": "y", "winner": "a", "pair_id": "p", "order": "ab"},
        {"item_a": "y", "item_b": "x", "winner": "b", "pair_id": "p", "order": "ba"}]))
    code, out, err = run(["audit", path], capsys)
    assert code == 0, err
    assert "position consistency   1.000 [n/a] n=1" in out
    code, out, _ = run(["audit", path, "--json"], capsys)
    consistency = json.loads(out)["judge"]["position_consistency"]
    assert consistency["ci_low"] is None and consistency["ci_high"] is None
