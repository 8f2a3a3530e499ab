"""The one-page judge report: what it measures (naive vs corrected rankings, the sections a
reader needs, in order) and that it escapes what it shows."""

import html

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

import fairjudge
from fairjudge._cli import main
from fairjudge.data import load_verdicts


def length_biased_judge(seed=0, n_items=14, length_effect=1.5, lean=0.6):
    """Every ordered pair of ``n_items`` answers, judged twice by a judge whose logit is
    2 (q_first - q_second) + length_effect (z_first - z_second) + lean, where z is the
    standardised word count (independent of quality q); gold follows quality."""
    rng = np.random.default_rng(seed)
    ids = [f"answer {i}" for i in range(n_items - 1)] + ["<script>x</script>"]
    quality = rng.normal(size=n_items)
    words = rng.integers(20, 400, n_items)
    z = (words - words.mean()) / words.std()
    items = pd.DataFrame({"id": ids, "text": [" ".join(["w"] * int(w)) for w in words]})
    rows, gold = [], []
    for i in range(n_items):
        for j in range(n_items):
            if i == j:
                continue
            eta = 2 * (quality[i] - quality[j]) + length_effect * (z[i] - z[j]) + lean
            for _ in range(2):
                rows.append({"item_a": ids[i], "item_b": ids[j], "judge": "judge <one>",
                             "winner": "a" if rng.random() < 1 / (1 + np.exp(-eta)) else "b"})
            if i < j:
                gold.append({"item_a": ids[i], "item_b": ids[j],
                             "winner": "a" if quality[i] > quality[j] else "b"})
    return load_verdicts(pd.DataFrame(rows)), items, pd.DataFrame(gold), quality, words


@pytest.fixture(scope="module")
def biased():
    return length_biased_judge()


@pytest.fixture(scope="module")
def report(biased):
    verdicts, items, gold, _, _ = biased
    return fairjudge.judge_report(verdicts, items, gold=gold, n_samples=300)


def test_changes_set_the_naive_ranking_beside_the_corrected_one(report):
    changes = report.changes()
    naive, corrected = report.naive.to_frame(), report.ranking.to_frame()
    assert list(changes.index) == list(corrected.index)
    assert (changes["rank_change"] == changes["rank_naive"] - changes["rank"]).all()
    assert (changes["rank_naive"] == naive.loc[changes.index, "rank"]).all()
    overlap = [max(naive.loc[i, "rank_low"], corrected.loc[i, "rank_low"])
               <= min(naive.loc[i, "rank_high"], corrected.loc[i, "rank_high"])
               for i in changes.index]
    assert list(changes["intervals_overlap"]) == overlap
    assert report.naive.fit.model == "naive" and report.ranking.fit.model == "bias-aware"


def test_the_correction_removes_what_length_explained(biased, report):
    """The judge rewards length: the naive scores follow word count, the corrected ones much
    less (Spearman with word count 0.24 to 0.85 lower over eight seeds of this design)."""
    _, items, _, _, words = biased
    ids = items["id"]
    naive = report.naive.to_frame().loc[ids, "score"]
    corrected = report.ranking.to_frame().loc[ids, "score"]
    assert spearmanr(naive, words)[0] > spearmanr(corrected, words)[0]
    assert "length" in report.ranking.diagnostics["covariates"]  # measured from the text


def test_the_page_answers_the_readers_questions_in_order(report):
    page = report.to_html()
    headings = ["1. Is the judge biased", "2. How consistent is it?",
                "3. What does correcting it change?", "4. Which strategy should I use",
                "5. Leaderboard"]
    positions = [page.index(h) for h in headings]
    assert positions == sorted(positions)
    assert "Does the correction agree better with gold?" in page  # gold was given
    assert "No strategies were compared" in page
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "judge &lt;one&gt;" in page
    # Heat tables carry every value on hover.
    win = report.ranking.win_probability_matrix()
    first, second = win.index[0], win.columns[1]
    assert f'title="{first} / {second}: {win.iloc[0, 1]:.3f}"' in page.replace(
        "&lt;", "<").replace("&gt;", ">")


def test_strategies_are_compared_against_gold(biased):
    verdicts, items, gold, _, _ = biased
    first = verdicts.groupby(["item_a", "item_b"]).head(1).reset_index(drop=True)
    second = verdicts.groupby(["item_a", "item_b"]).tail(1).reset_index(drop=True)
    result = fairjudge.judge_report(verdicts, items, gold=gold, n_samples=200,
                                    strategies={"first": first, "second": second})
    assert list(result.comparison.names) == ["first", "second"]
    page = result.to_html()
    assert "Recommendation:" in page and "No strategies were compared" not in page
    with pytest.raises(fairjudge.FairjudgeInputError, match="needs gold"):
        fairjudge.judge_report(verdicts, items, strategies={"first": first})


def test_the_report_command(biased, tmp_path, capsys):
    verdicts, items, gold, _, _ = biased
    verdicts.to_json(tmp_path / "v.jsonl", orient="records", lines=True)
    items.to_csv(tmp_path / "items.csv", index=False)
    gold.to_csv(tmp_path / "gold.csv", index=False)
    out = tmp_path / "report.html"
    code = main(["report", str(tmp_path / "v.jsonl"), "--items", str(tmp_path / "items.csv"),
                 "--gold", str(tmp_path / "gold.csv"), "--html", str(out)])
    assert code == 0, capsys.readouterr().err
    assert "items:" in capsys.readouterr().out and "v.jsonl" in out.read_text()
    code = main(["report", str(tmp_path / "v.jsonl"), "--strategy", str(tmp_path / "v.jsonl"),
                 "--html", str(tmp_path / "other.html")])
    assert code == 2 and "needs gold" in capsys.readouterr().err


def test_a_large_pool_keeps_the_change_table_and_board_to_the_best_rows(report, monkeypatch):
    """Like the leaderboard, the table of what the correction changes lists the best
    BOARD_ROWS items by corrected rank and counts the rest."""
    from fairjudge.report import _judge_report

    monkeypatch.setattr(_judge_report, "BOARD_ROWS", 5)
    page = report.to_html()
    section = page.split("3. What does correcting it change?")[1].split("5. Leaderboard")[0]
    order = [html.escape(i, quote=False) for i in report.changes().index]
    assert f">{order[4]}<" in section and f">{order[5]}<" not in section
    assert f"The {len(order) - 5} lower-ranked items are left out of this table" in section
