"""The HTML reports' provenance header and table formatting (fairjudge.report)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest

import fairjudge
from fairjudge._cli import main
from fairjudge.audit import compare_verdicts, load_gold
from fairjudge.data import FairjudgeInputError, load_verdicts
from fairjudge.report import InputFile, Provenance, comparison_html
from fairjudge.report._html import format_cell, html_table


def small_comparison(n=60, seed=0):
    rng = np.random.default_rng(seed)
    gold = pd.DataFrame({"item_a": [f"a{i}" for i in range(n)],
                         "item_b": [f"b{i}" for i in range(n)],
                         "winner": rng.choice(["a", "b"], n)})
    tables = {name: pd.DataFrame({"item_a": gold["item_a"], "item_b": gold["item_b"],
                                  "winner": rng.choice(["a", "b"], n)})
              for name in ("B0", "S1")}
    return gold, tables


def test_collect_hashes_inputs_and_stamps_version_date_and_seed(tmp_path):
    path = tmp_path / "v.jsonl"
    path.write_bytes(b'{"item_a": "x", "item_b": "y", "winner": "a"}\n')
    before = datetime.now(timezone.utc)
    p = Provenance.collect(command=["fairjudge", "compare", str(path)], inputs=[path], seed=4)
    assert p.command == ("fairjudge", "compare", str(path))
    assert p.inputs == (InputFile(str(path), hashlib.sha256(path.read_bytes()).hexdigest()),)
    assert p.seed == 4 and p.version == fairjudge.__version__
    assert p.created.tzinfo is not None and p.created.utcoffset() == timedelta(0)
    assert before <= p.created <= datetime.now(timezone.utc)


def test_header_shows_every_field_or_says_it_was_not_recorded(tmp_path):
    gold, tables = small_comparison()
    result = compare_verdicts({k: load_verdicts(t) for k, t in tables.items()},
                              load_gold(gold), n_boot=50)
    bare = comparison_html(result)
    assert bare.count("not recorded") == 3  # command, inputs and seed
    assert f"<dd>{fairjudge.__version__}</dd>" in bare and " UTC</dd>" in bare
    path = tmp_path / "gold file.jsonl"
    path.write_text("{}\n")
    created = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    p = Provenance(("fairjudge", "compare", str(path)),
                   (InputFile(str(path), "ab" * 32),), 9, "9.9.9", created)
    page = comparison_html(result, provenance=p)
    assert "not recorded" not in page
    assert f"<code>fairjudge compare &#39;{path}&#39;</code>" in page  # shell-quoted
    assert f"<code>{path}</code> sha256 <code>{'ab' * 32}</code>" in page
    assert "<dd>9.9.9</dd>" in page and "<dd>9</dd>" in page
    assert "<dd>2024-05-01 12:00:00 UTC</dd>" in page  # converted to UTC


def test_collect_validates_its_arguments(tmp_path):
    with pytest.raises(FairjudgeInputError, match=r"`command` must be a list of argument "
                                                  r"strings, program name first; got 'fairjudge audit'"):
        Provenance.collect(command="fairjudge audit")
    with pytest.raises(FairjudgeInputError, match=r"`command` must be a list"):
        Provenance.collect(command=["fairjudge", 3])
    with pytest.raises(FairjudgeInputError, match=r"`seed` must be an integer or None; got '3'"):
        Provenance.collect(seed="3")
    with pytest.raises(FairjudgeInputError, match=r"`inputs`: cannot read '.*nope.jsonl' to "
                                                  r"hash it \(No such file or directory\)"):
        Provenance.collect(inputs=[tmp_path / "nope.jsonl"])


def test_compare_command_records_its_provenance(tmp_path, capsys):
    gold, tables = small_comparison()
    paths = []
    for name, frame in {"gold": gold, **tables}.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict(orient="records")))
        paths.append(path)
    args = ["compare", str(paths[1]), str(paths[2]), "--gold", str(paths[0]), "--seed", "11",
            "--html", str(tmp_path / "r.html")]
    assert main(args) == 0, capsys.readouterr().err
    page = (tmp_path / "r.html").read_text()
    assert f"<code>fairjudge {' '.join(args)}</code>" in page
    for path in paths:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert f"<code>{path}</code> sha256 <code>{digest}</code>" in page
    assert "<dt>seed</dt>\n<dd>11</dd>" in page


def test_tables_are_formatted_to_text_before_the_template():
    frame = pd.DataFrame({"x": [0.12345, np.nan], "n": [3, 4], "label": ["a<b", None]},
                         index=pd.Index(["j1", "j2"], name="judge"))
    table = html_table(frame)
    assert table.header == ("judge", "x", "n", "label")
    assert table.rows == (("j1", "0.123", "3", "a<b"), ("j2", "", "4", ""))
    assert html_table(frame.reset_index(drop=True)).header[0] == ""
    assert format_cell(np.float32(2.5), digits=1) == "2.5" and format_cell(True) == "True"


def test_ranking_report_escapes_names_and_lists_the_leaderboard(tmp_path, capsys):
    """`rank --html`: item and judge names are text, never markup; every item is listed
    with its Elo interval, and the header records the command."""
    from fairjudge._cli import main

    hostile = "<script>alert(1)</script>"
    verdicts = pd.DataFrame({"item_a": ["x", "y", hostile, "x"] * 5,
                             "item_b": ["y", hostile, "x", hostile] * 5,
                             "winner": ["a", "b", "a", "b"] * 5,
                             "judge": ['judge"<b>', "j2", 'judge"<b>', "j2"] * 5})
    path = tmp_path / "v.jsonl"
    verdicts.to_json(path, orient="records", lines=True)
    page = tmp_path / "r.html"
    assert main(["rank", str(path), "--html", str(page)]) == 0
    html = page.read_text()
    assert hostile not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'judge"<b>' not in html and "judge&#34;&lt;b&gt;" in html
    assert html.count("<tr>") >= 3 + 1 and "Elo [95%]" in html
    assert "fairjudge rank" in html  # provenance: the command line
    capsys.readouterr()


def test_a_large_leaderboard_page_shows_the_best_rows_and_counts_the_rest(monkeypatch):
    from fairjudge.report import _ranking_html

    rng = np.random.default_rng(0)
    a = rng.integers(0, 30, 600)
    b = (a + rng.integers(1, 30, 600)) % 30
    verdicts = pd.DataFrame({"item_a": [f"i{i}" for i in a], "item_b": [f"i{i}" for i in b],
                             "winner": np.where(rng.random(600) < 0.5, "a", "b")})
    ranking = fairjudge.rank(verdicts, n_samples=50)
    monkeypatch.setattr(_ranking_html, "BOARD_ROWS", 12)
    html = _ranking_html.ranking_html(ranking)
    best = list(ranking.to_frame().index)
    assert f">{best[11]}<" in html and f">{best[12]}<" not in html.split("Predicted win")[0]
    assert "The 18 lower-ranked items are left out of this page" in html
