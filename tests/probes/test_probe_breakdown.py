"""Per-topic style bias (Table 7), per-category results (Fig. 3) and cross-bias analyses
(Fig. 2) of probe verdicts [debiasing-strategies-study §4.3, App. E].

Every expected number below is worked out by hand from the constructed verdicts, in the
comments beside it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairjudge._cli import main
from fairjudge.data import write_table
from fairjudge.probes import (
    PROBE_COLUMNS,
    STYLE_POOLED,
    bias_by_category,
    build_probes,
    cross_bias_correlation,
    cross_bias_interactions,
    probe_bias_table,
    probe_breakdown,
    probe_outcomes,
    style_bias_by_topic,
)

ANSWER = "Roots take up water. Leaves lose it through pores. Without water, cells wilt."


def _probe(pid, bias_type, target, record, category, expected="tie"):
    return {"id": pid, "bias_type": bias_type, "question": f"Q {record}?", "a": "x", "b": "y",
            "expected_verdict": expected, "target": target, "source_a": None,
            "source_b": None, "construction_notes": "", "record_id": record,
            "category": category}


@pytest.fixture
def probes():
    """Four records, two topics; STYLE (markdown in a) and its mirror STYLE_BA (markdown in
    b) for each, TRUNCATION (complete side = target) and LENGTH for each."""
    rows = []
    topics = {"r0": "math", "r1": "math", "r2": "poetry", "r3": "poetry"}
    for n, (record, topic) in enumerate(topics.items()):
        rows.append(_probe(f"STYLE-{n}", "STYLE", "a", record, topic))
        rows.append(_probe(f"STYLE_BA-{n}", "STYLE_BA", "b", record, topic))
        rows.append(_probe(f"TRUNCATION-{n}", "TRUNCATION", "a", record, topic, expected="a"))
        rows.append(_probe(f"LENGTH-{n}", "LENGTH", "b", record, topic))
    return pd.DataFrame(rows)


def _calls(winners: dict, *, judge="j1", strategy="B0", order=None) -> pd.DataFrame:
    """Per-call verdicts; ``winners`` maps probe id to the winner in the *probe's* frame,
    shown in order ``ab`` unless ``order`` maps the id to ``ba`` (then the shown winner
    is the mirror image)."""
    order = order or {}
    rows = []
    for pid, winner in winners.items():
        shown = order.get(pid, "ab")
        if shown == "ba" and winner in ("a", "b"):
            winner = {"a": "b", "b": "a"}[winner]
        rows.append({"pair_id": pid, "order": shown, "winner": winner, "judge": judge,
                     "strategy": strategy})
    return pd.DataFrame(rows)


# Judge j1, strategy B0, in the probe's own frame:
#   math:   STYLE-0 a (+1), STYLE-1 tie (0), STYLE_BA-0 b (+1), STYLE_BA-1 a (-1)
#           -> b = (1 + 0 + 1 - 1) / 4 = 0.25, P(markdown) = 2/4
#   poetry: STYLE-2 b (-1), STYLE-3 b (-1), STYLE_BA-2 a (-1), STYLE_BA-3 b (+1)
#           -> b = -2 / 4 = -0.5, P(markdown) = 1/4
#   TRUNCATION (target a): math a, a -> acc 1.0; poetry a, tie -> acc 0.5, b = 0.5
#   LENGTH (target b): math b, b -> +1; poetry a, tie -> -0.5
B0_WINNERS = {"STYLE-0": "a", "STYLE-1": "tie", "STYLE_BA-0": "b", "STYLE_BA-1": "a",
              "STYLE-2": "b", "STYLE-3": "b", "STYLE_BA-2": "a", "STYLE_BA-3": "b",
              "TRUNCATION-0": "a", "TRUNCATION-1": "a", "TRUNCATION-2": "a",
              "TRUNCATION-3": "tie", "LENGTH-0": "b", "LENGTH-1": "b", "LENGTH-2": "a",
              "LENGTH-3": "tie"}


def test_build_probes_carries_the_records_category():
    records = [{"id": "m1", "question": "Why water plants?", "answer": ANSWER,
                "source": "x", "category": "biology"},
               {"id": "m2", "question": "Why water plants?", "answer": ANSWER + " Indeed.",
                "source": "y", "category": "biology"},
               {"id": "w1", "question": "A poem?", "answer": ANSWER, "source": "x",
                "topic": "writing"}]
    probes = build_probes(records, kinds=["POSITION", "STYLE", "MODEL_ORIGIN"], seed=0)
    assert list(probes.columns) == [*PROBE_COLUMNS, "category"]
    by_id = dict(zip(probes["id"], probes["category"]))
    assert [by_id[f"POSITION-{i}"] for i in range(3)] == ["biology", "biology", "writing"]
    assert by_id["STYLE_BA-2"] == "writing"  # the mirror keeps its record's topic
    # the MODEL_ORIGIN pair joins m1 and m2, whose question is biology's
    assert by_id["MODEL_ORIGIN-0"] == "biology"


def test_build_probes_without_categories_keeps_its_columns():
    probes = build_probes([{"question": "Q?", "answer": ANSWER}], kinds=["POSITION"])
    assert list(probes.columns) == list(PROBE_COLUMNS)


def test_style_bias_by_topic_matches_hand_computation(probes):
    calls = _calls(B0_WINNERS, order={"STYLE_BA-3": "ba", "STYLE-2": "ba"})
    table = style_bias_by_topic(probe_outcomes(probes, calls), n_boot=500)
    assert table["topic"].tolist() == ["math", "poetry"]
    assert table["bias"].tolist() == [0.25, -0.5]
    assert table["p_markdown"].tolist() == [0.5, 0.25]
    assert table["n"].tolist() == [4, 4]  # verdicts: 2 STYLE + 2 STYLE_BA
    assert table["n_probes"].tolist() == [2, 2]  # records, each resampled with its mirror
    assert table["position_averaged"].tolist() == [True, True]
    assert ((table["ci_low"] <= table["bias"]) & (table["bias"] <= table["ci_high"])).all()


def test_style_bias_by_topic_splits_judges_and_strategies(probes):
    all_markdown = {pid: ("a" if pid.startswith("STYLE-") else "b")
                    for pid in B0_WINNERS if pid.startswith("STYLE")}
    calls = pd.concat([_calls(B0_WINNERS), _calls(all_markdown, strategy="S5"),
                       _calls(all_markdown, judge="j2")])
    table = style_bias_by_topic(probe_outcomes(probes, calls), n_boot=200)
    cells = {(j, s, t): b for j, s, t, b in table[["judge", "strategy", "topic", "bias"]]
             .itertuples(index=False)}
    assert cells == {("j1", "B0", "math"): 0.25, ("j1", "B0", "poetry"): -0.5,
                     ("j1", "S5", "math"): 1.0, ("j1", "S5", "poetry"): 1.0,
                     ("j2", "B0", "math"): 1.0, ("j2", "B0", "poetry"): 1.0}
    # every verdict on the markdown side: the interval cannot leave 1
    unanimous = table[table["strategy"] == "S5"]
    assert (unanimous["ci_low"] == 1.0).all() and (unanimous["ci_high"] == 1.0).all()


def test_style_bias_by_topic_flags_a_missing_mirror(probes):
    only_style = {k: v for k, v in B0_WINNERS.items() if k.startswith("STYLE-")}
    table = style_bias_by_topic(probe_outcomes(probes, _calls(only_style)), n_boot=200)
    # math: a (+1), tie (0) -> 0.5; poetry: b, b -> -1
    assert table["bias"].tolist() == [0.5, -1.0]
    assert table["position_averaged"].tolist() == [False, False]


def test_bias_by_category_has_bias_and_accuracy_per_category(probes):
    table = bias_by_category(probe_outcomes(probes, _calls(B0_WINNERS)), n_boot=200)
    cell = table.set_index(["category", "bias_type"])
    assert cell.loc[("math", "LENGTH"), "bias"] == 1.0
    assert cell.loc[("poetry", "LENGTH"), "bias"] == -0.5  # a (-1), tie (0)
    assert math.isnan(cell.loc[("poetry", "LENGTH"), "accuracy"])  # no correct side
    assert cell.loc[("math", "TRUNCATION"), "accuracy"] == 1.0
    assert cell.loc[("poetry", "TRUNCATION"), "accuracy"] == 0.5  # the tie counts as wrong
    assert cell.loc[("poetry", "TRUNCATION"), "bias"] == 0.5
    # The interval resamples probes (the two orders of a probe are not independent): two
    # probes, one right and one wrong, resampled 200 times give both extremes (a resample of
    # only one kind has probability 1/4 each; missing either has probability (3/4)^200).
    assert cell.loc[("poetry", "TRUNCATION"), "n_probes"] == 2
    assert cell.loc[("poetry", "TRUNCATION"), "accuracy_low"] == 0.0
    assert cell.loc[("poetry", "TRUNCATION"), "accuracy_high"] == 1.0
    assert cell.loc[("math", STYLE_POOLED), "bias"] == 0.25
    assert cell.loc[("math", STYLE_POOLED), "n"] == 4


def test_per_category_analyses_need_a_category(probes):
    outcomes = probe_outcomes(probes.drop(columns="category"), _calls(B0_WINNERS))
    with pytest.raises(ValueError, match="carry no topic or category.*`category`"):
        bias_by_category(outcomes)
    with pytest.raises(ValueError, match="carry no topic or category"):
        style_bias_by_topic(outcomes)
    result = probe_breakdown(probes.drop(columns="category"), _calls(B0_WINNERS), n_boot=50)
    assert result.style_by_topic is None and result.by_category is None
    assert any("carry no topic or category" in note for note in result.notes)


def test_invalid_and_missing_verdicts_are_counted_not_scored(probes):
    calls = _calls({"LENGTH-0": "b", "LENGTH-1": ""})  # LENGTH-1: an invalid output
    table = probe_bias_table(probe_outcomes(probes, calls), n_boot=100)
    row = table.set_index("bias_type").loc["LENGTH"]
    assert (row["n"], row["n_invalid"], row["bias"]) == (1, 1, 1.0)


def _scores(values: dict) -> pd.DataFrame:
    """A judge x strategy score table from {(judge, strategy): {bias_type: b}}."""
    return pd.DataFrame([{"judge": j, "strategy": s, "bias_type": t, "bias": b,
                          "accuracy": math.nan}
                         for (j, s), biases in values.items() for t, b in biases.items()])


def test_cross_bias_interactions_average_the_change_in_magnitude():
    scores = _scores({("j1", "B0"): {"STYLE": 0.8, "LENGTH": -0.4},
                      ("j1", "S5"): {"STYLE": 0.5, "LENGTH": 0.1},
                      ("j2", "B0"): {"STYLE": 0.6, "LENGTH": 0.2},
                      ("j2", "S5"): {"STYLE": -0.7, "LENGTH": 0.0},
                      ("j3", "S5"): {"STYLE": 0.0}})  # j3 has no baseline: left out
    table = cross_bias_interactions(scores).set_index("bias_type")
    # STYLE: j1 0.5 - 0.8 = -0.3, j2 0.7 - 0.6 = +0.1 -> mean -0.1
    assert table.loc["STYLE", "delta_magnitude"] == pytest.approx(-0.1)
    assert table.loc["STYLE", "n_judges"] == 2
    # LENGTH: j1 0.1 - 0.4 = -0.3, j2 0.0 - 0.2 = -0.2 -> mean -0.25
    assert table.loc["LENGTH", "delta_magnitude"] == pytest.approx(-0.25)
    assert table.loc["LENGTH", "min_delta"] == pytest.approx(-0.3)
    with pytest.raises(ValueError, match="`baseline` 'S9' is not among"):
        cross_bias_interactions(scores, baseline="S9")


def test_cross_bias_interactions_use_pooled_style_and_drop_accuracy_controls():
    scores = _scores({("j", "B0"): {"STYLE": 0.9, "STYLE_BA": 0.1, STYLE_POOLED: 0.5},
                      ("j", "S1"): {"STYLE": 0.2, "STYLE_BA": 0.0, STYLE_POOLED: 0.1}})
    controls = pd.DataFrame([{"judge": "j", "strategy": s, "bias_type": "TRUNCATION",
                              "bias": 0.2, "accuracy": 0.6} for s in ("B0", "S1")])
    table = cross_bias_interactions(pd.concat([scores, controls]))
    assert table["bias_type"].tolist() == [STYLE_POOLED]
    assert table["delta_magnitude"].iloc[0] == pytest.approx(-0.4)


def test_cross_bias_correlation_matches_hand_computed_spearman_and_pearson():
    style = [0.9, 0.7, 0.6, 0.2, 0.4]
    length = [0.5, 0.1, 0.3, -0.2, 0.0]
    units = [("j1", "B0"), ("j1", "S5"), ("j2", "B0"), ("j2", "S5"), ("j3", "B0")]
    scores = _scores({u: {"STYLE": s, "LENGTH": v} for u, s, v in zip(units, style, length)})
    # ranks: style 5 4 3 1 2, length 5 3 4 1 2 -> d^2 = 0 1 1 0 0 -> rho = 1 - 6*2/120 = 0.9
    rho = 1 - 6 * 2 / (5 * (25 - 1))
    t = rho * math.sqrt(3 / (1 - rho ** 2))
    result = cross_bias_correlation(scores)
    row = result.table.iloc[0]
    assert (row["bias_x"], row["bias_y"], row["n"]) == ("STYLE", "LENGTH", 5)
    assert row["r"] == pytest.approx(rho)
    assert row["p_value"] == pytest.approx(2 * stats.t.sf(t, 3))
    assert result.n_units == 5 and result.message == ""
    x, y = np.array(style) - np.mean(style), np.array(length) - np.mean(length)
    r = float(x @ y / math.sqrt((x @ x) * (y @ y)))
    pearson = cross_bias_correlation(scores, method="pearson").table.iloc[0]
    assert pearson["r"] == pytest.approx(r)


def test_cross_bias_correlation_says_when_units_are_too_few():
    scores = _scores({("j1", "B0"): {"STYLE": 0.9, "LENGTH": 0.5},
                      ("j2", "B0"): {"STYLE": 0.5, "LENGTH": 0.1},
                      ("j3", "B0"): {"STYLE": 0.1, "LENGTH": 0.3}})
    result = cross_bias_correlation(scores)
    assert math.isnan(result.table["r"].iloc[0])
    assert "too few units: 3" in result.table["note"].iloc[0]
    assert "no correlation computed: 3 judge x strategy unit(s)" in result.message
    constant = _scores({(f"j{i}", "B0"): {"STYLE": 0.5, "LENGTH": i / 10} for i in range(5)})
    assert cross_bias_correlation(constant).table["note"].iloc[0] == (
        "a measure is constant across the units")
    with pytest.raises(ValueError, match="`method` must be spearman or pearson; got 'kendall'"):
        cross_bias_correlation(scores, method="kendall")
    with pytest.raises(ValueError, match="`min_units` must be an integer of at least 3"):
        cross_bias_correlation(scores, min_units=2)


def test_probe_bias_table_rejects_an_unknown_column(probes):
    outcomes = probe_outcomes(probes, _calls(B0_WINNERS))
    with pytest.raises(ValueError, match="`by` names 'topic', which is not a column"):
        probe_bias_table(outcomes, by=("judge", "topic"))


def test_cli_prints_the_breakdown(probes, tmp_path, capsys):
    probe_file = tmp_path / "probes.jsonl"
    write_table(probes, probe_file)
    b0, s5 = tmp_path / "b0.jsonl", tmp_path / "s5.jsonl"
    write_table(_calls(B0_WINNERS), b0)
    write_table(_calls({k: "a" for k in B0_WINNERS}, strategy="S5"), s5)
    assert main(["probes", str(probe_file), "--verdicts", str(b0), "--verdicts", str(s5),
                 "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "style bias per topic (Table 7)" in out
    topic_block = out.split("style bias per topic")[1].split("results per category")[0]
    b0_block = topic_block.split("strategy S5")[0]
    assert "math" in b0_block and "+0.250 [" in b0_block and "n=4" in b0_block
    assert "-0.500 [" in b0_block
    assert "acc 0.500 n=2" in out  # poetry TRUNCATION at B0
    assert "cross-bias interactions (Fig. 2)" in out
    assert "not computed: cross-bias correlation: no correlation computed" in out


def test_cli_says_when_probes_have_no_category(probes, tmp_path, capsys):
    probe_file, calls = tmp_path / "probes.jsonl", tmp_path / "b0.jsonl"
    write_table(probes.drop(columns="category"), probe_file)
    write_table(_calls(B0_WINNERS), calls)
    assert main(["probes", str(probe_file), "--verdicts", str(calls), "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    assert "not computed: per-topic style bias (Table 7) and per-category results (Fig. 3): " \
           "the probes carry no topic or category" in out
    assert "style bias per topic" not in out


def test_cli_names_the_verdict_file_and_line_of_a_bad_value(probes, tmp_path, capsys):
    probe_file, calls = tmp_path / "probes.jsonl", tmp_path / "bad.jsonl"
    write_table(probes, probe_file)
    bad = _calls({"STYLE-0": "a", "STYLE-1": "A>B"})
    write_table(bad, calls)
    assert main(["probes", str(probe_file), "--verdicts", str(calls)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl line 2: field `winner` must be a, b, tie or empty" in err


def test_overall_bias_equals_score_probes(probes):
    """One definition of target, tie and invalid: the per-judge table and score_probes agree
    on every group."""
    from fairjudge.probes import score_probes

    calls = _calls(B0_WINNERS, order={"STYLE-0": "ba", "LENGTH-2": "ba"})
    ours = probe_bias_table(probe_outcomes(probes, calls), n_boot=100).set_index("bias_type")
    theirs = score_probes(probes, calls, n_boot=100).to_frame().set_index("bias_type")
    assert ours.index.tolist() == theirs.index.tolist()
    assert ours["bias"].tolist() == theirs["bias"].tolist()
    assert ours["n"].tolist() == theirs["n"].tolist()
