"""The probe-kind registry: kinds from data, custom kinds, and its errors."""

import re

import pandas as pd
import pytest
from probe_answers import RECORDS

import fairjudge.judges
import fairjudge.strategies
from fairjudge.data import load_pairs
from fairjudge.probes import (PROBE_KINDS, Probe, ProbeKind, ProbeWarning, build_probes,
                              factor_probe_kind, get_probe_kind, probe_kinds,
                              register_probe_kind, score_probes, unregister_probe_kind)

HEDGE = "It may be that "


def _hedge(question, answer):
    """Rewrite an answer to carry more hedging: qualify its first claim."""
    return HEDGE + answer[0].lower() + answer[1:]


@pytest.fixture
def hedging():
    """A discovered bias factor registered from data, removed again after the test."""
    kind = register_probe_kind(factor_probe_kind(
        "HEDGING", "the answer qualifies its claims instead of stating them", _hedge))
    yield kind
    unregister_probe_kind("HEDGING")


def test_the_built_in_kinds_are_registered_in_table_order():
    assert tuple(k.name for k in probe_kinds()) == PROBE_KINDS
    assert get_probe_kind("style").bias_types == ("STYLE", "STYLE_BA")
    assert get_probe_kind("TRUNCATION").expected == "target"


def test_a_kind_from_data_builds_probes(hedging):
    probes = build_probes(RECORDS, seed=0, kinds=["HEDGING", "POSITION"])
    assert list(dict.fromkeys(probes["bias_type"])) == ["POSITION", "HEDGING"]  # registry order
    hedged = probes[probes["bias_type"] == "HEDGING"]
    assert hedged["id"].tolist() == [f"HEDGING-{n}" for n in range(12)]
    by_record = {r["id"]: r["answer"] for r in RECORDS}
    for row in hedged.itertuples():
        original = by_record[row.record_id]
        target = getattr(row, row.target)
        assert target.startswith(HEDGE) and {row.a, row.b} == {original, target}
        assert row.expected_verdict == "tie"
        assert "the answer qualifies its claims" in row.construction_notes
    assert 4 <= (hedged["target"] == "a").sum() <= 8  # slots balanced by the seed
    # A registered kind joins the default kinds, after the built-in ones; the built-in
    # probes are unchanged by it.
    everything = build_probes(RECORDS, seed=0)
    assert list(dict.fromkeys(everything["bias_type"]))[-1] == "HEDGING"
    built_in = everything[everything["bias_type"] != "HEDGING"].reset_index(drop=True)
    assert built_in.to_json() == build_probes(RECORDS, seed=0, kinds=PROBE_KINDS).to_json()


def test_a_kind_from_data_is_scored_end_to_end(hedging):
    probes = build_probes(RECORDS, seed=1, kinds=["HEDGING", "LENGTH"])
    # The simulated judge rewards words (here 1 logit per word), and a hedged answer has
    # four more of them: P(prefer it) = 0.98.
    backend = fairjudge.judges.get_backend("simulated", bias=100.0, position=0.0)
    result = fairjudge.strategies.judge_pairs(
        load_pairs(probes[["id", "question", "a", "b"]]), "S1", [backend])
    scores = score_probes(probes, result.calls, n_boot=300)
    assert [s.bias_type for s in scores] == ["LENGTH", "HEDGING"]
    hedge = scores["HEDGING"]
    assert hedge.kind == "HEDGING" and hedge.target == "the answer with more HEDGING"
    assert hedge.n == 24 and hedge.bias.estimate > 0.5 and hedge.bias.ci_low > 0
    assert pd.isna(hedge.accuracy)


def test_a_factor_that_is_removed_targets_the_original():
    less = factor_probe_kind("PLAIN", "the answer without its first sentence",
                             lambda q, a: a.split(". ", 1)[1], direction="less",
                             expected="target")
    register_probe_kind(less)
    try:
        probes = build_probes(RECORDS[:4], seed=2, kinds=["PLAIN"])
        originals = {r["id"]: r["answer"] for r in RECORDS}
        for row in probes.itertuples():
            assert getattr(row, row.target) == originals[row.record_id]
            assert row.expected_verdict == row.target
        verdicts = pd.DataFrame({"id": probes["id"], "winner": probes["target"]})
        score = score_probes(probes, verdicts, n_boot=100)["PLAIN"]
        assert score.accuracy == 1.0 and score.bias.estimate == 1.0
    finally:
        unregister_probe_kind("PLAIN")


def test_a_rewrite_that_declines_skips_the_record_and_a_bad_one_fails(hedging):
    declining = factor_probe_kind("PICKY", "only rewrites vaccine answers",
                                  lambda q, a: _hedge(q, a) if "vaccine" in q else None)
    register_probe_kind(declining)
    try:
        with pytest.warns(ProbeWarning, match=r"PICKY: 9 record\(s\) skipped \(`rewrite` "
                                              r"returned None\)"):
            probes = build_probes(RECORDS, kinds=["PICKY"])
        assert len(probes) == 3
        broken = factor_probe_kind("PICKY", "broken", lambda q, a: 42)
        register_probe_kind(broken, replace=True)
        with pytest.raises(ValueError, match=re.escape(
                "kind PICKY: `rewrite` returned 42 for record 'vaccines-gpt4'")):
            build_probes(RECORDS, kinds=["PICKY"])
    finally:
        unregister_probe_kind("PICKY")


def test_a_hand_written_kind_with_its_own_builder():
    def build(records, context):
        return [Probe("ECHO", r.question, r.answer, r.answer + " " + r.answer, "tie", "b",
                      f"record {r.id} said twice in slot b", r.id)
                for r in context.select(records)]

    register_probe_kind(ProbeKind("ECHO", build, target="the repeated answer"))
    try:
        probes = build_probes(RECORDS, kinds=["ECHO"], per_kind=5)
        assert len(probes) == 5 and set(probes["target"]) == {"b"}
        calls = pd.DataFrame({"pair_id": probes["id"], "order": "ba", "winner": "a"})
        score = score_probes(probes, calls, n_boot=100)["ECHO"]
        assert (score.target, score.bias.estimate) == ("the repeated answer", 1.0)
    finally:
        unregister_probe_kind("ECHO")


def test_unknown_kinds_list_the_registered_ones(hedging):
    with pytest.raises(ValueError, match=re.escape(
            "`kinds` must be chosen from the registered probe kinds POSITION, STYLE, LENGTH, "
            "TRUNCATION, MODEL_ORIGIN, HEDGING (add one with register_probe_kind); got "
            "'SHOUTING'")):
        build_probes(RECORDS, kinds=["SHOUTING"])
    with pytest.raises(ValueError, match=re.escape(
            "no probe kind named 'shouting'; registered kinds: POSITION, STYLE, LENGTH, "
            "TRUNCATION, MODEL_ORIGIN, HEDGING")):
        get_probe_kind("shouting")


def test_scoring_a_kind_that_is_not_registered_says_which_are():
    kind = register_probe_kind(factor_probe_kind("GONE", "soon unregistered", _hedge))
    probes = build_probes(RECORDS[:2], kinds=["GONE"])
    unregister_probe_kind(kind.name)
    with pytest.raises(ValueError, match=re.escape(
            "`probes` column `bias_type` must be one of the registered kinds' bias types "
            "POSITION, STYLE, STYLE_BA, LENGTH, TRUNCATION, MODEL_ORIGIN (register a kind "
            "with register_probe_kind); got 'GONE'")):
        score_probes(probes, pd.DataFrame({"id": probes["id"], "winner": "a"}))


def test_registry_errors(hedging):
    def build(records, context):
        return []

    cases = [
        (lambda: register_probe_kind(factor_probe_kind("HEDGING", "again", _hedge)),
         ValueError, "a probe kind named HEDGING is already registered"),
        (lambda: register_probe_kind(ProbeKind("MIRROR", build, bias_types=("STYLE_BA",))),
         ValueError, "kind MIRROR: bias type STYLE_BA already belongs to kind STYLE"),
        (lambda: ProbeKind("hedging", build), ValueError, "`name` must be upper-case"),
        (lambda: ProbeKind("X", build, bias_types=("X", "X")), ValueError,
         "kind X: `bias_types` must be distinct upper-case names"),
        (lambda: ProbeKind("X", build, score="target column"), TypeError,
         "kind X: `score` must be a callable"),
        (lambda: ProbeKind("X", build, expected="a"), ValueError,
         "kind X: `expected` must be tie or target"),
        (lambda: ProbeKind("X", "build"), TypeError, "kind X: `build` must be a callable"),
        (lambda: register_probe_kind("X"), TypeError, "`kind` must be a ProbeKind"),
        (lambda: unregister_probe_kind("X"), ValueError, "no probe kind named 'X'"),
        (lambda: factor_probe_kind("X", "", _hedge), ValueError,
         "`definition` must be a non-empty string"),
        (lambda: factor_probe_kind("X", "d", _hedge, direction="up"), ValueError,
         "`direction` must be more or less"),
        (lambda: factor_probe_kind("X", "d", "rewrite"), TypeError,
         "`rewrite` must be a callable"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=re.escape(message)):
            call()


@pytest.mark.parametrize("probe, error, message", [
    (Probe("STYLE", "Q?", "a", "b", "tie", "a", "notes", "r"), ValueError,
     "kind ROGUE: `build` returned a probe with bias_type 'STYLE', not one of its bias_types "
     "ROGUE"),
    (Probe("ROGUE", "Q?", "a", "b", "A", "a", "notes", "r"), ValueError,
     "kind ROGUE: `expected_verdict` must be a, b or tie; got 'A'"),
    (Probe("ROGUE", "Q?", "a", "b", "tie", None, "notes", "r"), ValueError,
     "kind ROGUE: `target` must be a or b; got None"),
    ({"bias_type": "ROGUE"}, TypeError, "kind ROGUE: `build` must return Probe objects"),
])
def test_a_builder_must_return_well_formed_probes_of_its_own_bias_types(probe, error, message):
    register_probe_kind(ProbeKind("ROGUE", lambda records, context: [probe]))
    try:
        with pytest.raises(error, match=re.escape(message)):
            build_probes(RECORDS, kinds=["ROGUE"])
    finally:
        unregister_probe_kind("ROGUE")
