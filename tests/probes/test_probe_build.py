"""Building probes: construction rules of each built-in kind, seeding, caps and errors."""

import itertools
import json
import re
from collections import Counter

import pandas as pd
import pytest
from probe_answers import RECORDS, SOURCES

from fairjudge.data import read_table, text_features
from fairjudge.data._statement_banks import ELABORATION_CLAUSES
from fairjudge.probes import (BIAS_TYPES, PROBE_COLUMNS, ProbeWarning, build_probes,
                              content_words, split_sentences)

# ------------------------------------------------------------------ construction and seeding

def test_table_shape_and_kinds(probes):
    assert list(probes.columns) == list(PROBE_COLUMNS)
    counts = probes["bias_type"].value_counts().to_dict()
    assert counts == {"POSITION": 12, "STYLE": 12, "STYLE_BA": 12, "LENGTH": 12,
                      "TRUNCATION": 12, "MODEL_ORIGIN": 12}
    assert list(dict.fromkeys(probes["bias_type"])) == list(BIAS_TYPES)
    assert probes["id"].is_unique
    assert all(re.fullmatch(rf"{kind}-\d+", i) for i, kind in zip(probes["id"],
                                                                  probes["bias_type"]))
    expected = probes.set_index("bias_type")["expected_verdict"]
    assert set(expected.drop("TRUNCATION")) == {"tie"}
    assert probes["construction_notes"].str.len().min() > 20
    assert probes.attrs["skipped"] == []


def test_same_seed_is_byte_identical_and_another_seed_differs():
    first = build_probes(RECORDS, seed=7)
    assert first.to_json() == build_probes(RECORDS, seed=7).to_json()
    assert first.to_json() == build_probes(pd.DataFrame(RECORDS), seed=7).to_json()
    other = build_probes(RECORDS, seed=8)
    assert first.to_json() != other.to_json()
    slots = {seed: tuple(build_probes(RECORDS, seed=seed, kinds=["LENGTH", "TRUNCATION"])
                         ["target"]) for seed in range(4)}
    assert len(set(slots.values())) > 1


def test_position_probes_repeat_the_answer(probes):
    position = probes[probes["bias_type"] == "POSITION"]
    assert (position["a"] == position["b"]).all()
    assert set(position["target"]) == {"a"}
    assert sorted(position["a"]) == sorted(r["answer"] for r in RECORDS)


def test_style_keeps_the_words_in_both_directions(probes):
    style = probes[probes["bias_type"] == "STYLE"]
    originals = {r["id"]: r["answer"] for r in RECORDS}
    directions = Counter()
    for row in style.itertuples():
        original = originals[row.record_id]
        assert original in (row.a, row.b)  # the record's own answer is one side
        directions["md->prose" if original == row.a else "prose->md"] += 1
        assert content_words(row.a) == content_words(row.b)
        features = text_features([row.a, row.b])
        assert features.loc[0, "markdown"] > 0 and features.loc[1, "markdown"] == 0
        if original == row.b:  # built markdown: a bullet per sentence, lead-ins bolded
            assert features.loc[0, "md_list_items"] == len(split_sentences(original))
            assert features.loc[0, "md_bold"] == features.loc[0, "md_list_items"]
        assert "**" not in row.b and "`" not in row.b and "#" not in row.b
        assert row.target == "a" and row.expected_verdict == "tie"
    assert directions["md->prose"] == 4 and directions["prose->md"] == 8


def test_style_ba_mirrors_style(probes):
    style = probes[probes["bias_type"] == "STYLE"].reset_index(drop=True)
    mirror = probes[probes["bias_type"] == "STYLE_BA"].reset_index(drop=True)
    assert (mirror["a"] == style["b"]).all() and (mirror["b"] == style["a"]).all()
    assert set(mirror["target"]) == {"b"}
    assert list(mirror["id"].str.split("-").str[1]) == list(style["id"].str.split("-").str[1])


def test_truncation_is_a_sentence_prefix_near_40_percent(probes):
    truncation = probes[probes["bias_type"] == "TRUNCATION"]
    originals = {r["id"]: r["answer"] for r in RECORDS}
    for row in truncation.itertuples():
        complete = getattr(row, row.target)
        short = row.b if row.target == "a" else row.a
        assert complete == originals[row.record_id] and row.expected_verdict == row.target
        sentences = split_sentences(complete)
        k = len(split_sentences(short))
        assert 1 <= k < len(sentences)
        assert split_sentences(short) == sentences[:k]
        assert complete.startswith(short) and complete[len(short)].isspace()
        share = len(short.split()) / len(complete.split())
        assert 0.25 <= share <= 0.55
        # no other sentence boundary is closer to 40% of the words
        cumulative = [len(" ".join(sentences[:j]).split()) for j in range(1, len(sentences))]
        goal = 0.4 * len(complete.split())
        assert abs(len(short.split()) - goal) == min(abs(c - goal) for c in cumulative)
    assert set(truncation["target"]) == {"a", "b"}


def test_truncation_skips_short_answers_and_says_so():
    records = [{"id": "long", "question": "Q?", "answer": "One here. Two here. Three here."},
               {"id": "short", "question": "Q?", "answer": "Only one sentence. And two."}]
    with pytest.warns(ProbeWarning, match=r"TRUNCATION: 1 record\(s\) skipped \(fewer than 3"):
        probes = build_probes(records, kinds=["TRUNCATION"])
    assert list(probes["record_id"]) == ["long"]
    assert probes.attrs["skipped"] == [{"bias_type": "TRUNCATION", "record_id": "short",
                                        "reason": "fewer than 3 sentences (2)"}]


def test_length_expansion_is_2_to_3x_and_keeps_the_sentences(probes):
    length = probes[probes["bias_type"] == "LENGTH"]
    originals = {r["id"]: r["answer"] for r in RECORDS}
    for row in length.itertuples():
        original = originals[row.record_id]
        expanded = row.a if row.b == original else row.b
        assert original in (row.a, row.b) and expanded != original
        ratio = len(expanded.split()) / len(original.split())
        assert 2.0 <= ratio <= 3.0
        assert getattr(row, row.target) == expanded  # the longer side is the target
        assert not Counter(content_words(original)) - Counter(content_words(expanded))
        for sentence in split_sentences(original):
            assert sentence.rstrip(".!") in expanded
        assert any(clause in expanded for clause in ELABORATION_CLAUSES)
    assert (length["target"] == "a").sum() == 6  # slots balanced: half of 12, by construction


def test_length_uses_a_rewriter_and_targets_the_actually_longer_side():
    def rewriter(question, answer):
        return answer.split(".")[0] + "." if "short" in question else answer + " " + answer

    records = [{"id": "x", "question": "make it long", "answer": "Alpha beta. Gamma delta."},
               {"id": "y", "question": "make it short", "answer": "Alpha beta. Gamma delta."}]
    probes = build_probes(records, kinds=["LENGTH"], rewriter=rewriter, seed=3)
    for row in probes.itertuples():
        longer = row.a if len(row.a.split()) > len(row.b.split()) else row.b
        assert getattr(row, row.target) == longer
    assert "rewriter" in probes["construction_notes"].iloc[0]


def test_model_origin_covers_every_source_pair_and_randomises_slots(probes):
    origin = probes[probes["bias_type"] == "MODEL_ORIGIN"]
    by_record = {r["id"]: r for r in RECORDS}
    pairs = Counter(tuple(sorted(p)) for p in zip(origin["source_a"], origin["source_b"]))
    assert pairs == {pair: 4 for pair in itertools.combinations(SOURCES, 2)}
    for row in origin.itertuples():
        rec_a, rec_b = (by_record[r] for r in row.record_id.split("+"))
        assert (rec_a["answer"], rec_b["answer"]) == (row.a, row.b)
        assert rec_a["question"] == rec_b["question"] == row.question
        assert (rec_a["source"], rec_b["source"]) == (row.source_a, row.source_b)
        assert row.source_a != row.source_b and row.target is None
    for pair in itertools.combinations(SOURCES, 2):
        firsts = origin.loc[[tuple(sorted(p)) == pair for p in
                             zip(origin["source_a"], origin["source_b"])], "source_a"]
        assert set(firsts) == set(pair)  # each source of the pair sits in slot a sometimes
        questions = origin.loc[[tuple(sorted(p)) == pair for p in
                                zip(origin["source_a"], origin["source_b"])], "question"]
        assert questions.nunique() == 4
    other = build_probes(RECORDS, seed=1, kinds=["MODEL_ORIGIN"])
    assert list(other["source_a"]) != list(origin["source_a"])


def test_model_origin_needs_two_sources():
    records = [{"question": "Q?", "answer": "One. Two. Three.", "source": "gpt4"}]
    with pytest.warns(ProbeWarning, match="MODEL_ORIGIN: none built .fewer than two sources"):
        probes = build_probes(records, kinds=["POSITION", "MODEL_ORIGIN"])
    assert list(probes["bias_type"]) == ["POSITION"]


def test_per_kind_caps_and_round_robin():
    probes = build_probes(RECORDS, per_kind=3, seed=2)
    counts = probes["bias_type"].value_counts().to_dict()
    assert counts == {kind: 3 for kind in BIAS_TYPES}
    origin = probes[probes["bias_type"] == "MODEL_ORIGIN"]
    assert len({tuple(sorted(p)) for p in zip(origin["source_a"], origin["source_b"])}) == 3
    capped = build_probes(RECORDS, per_kind={"LENGTH": 2}, kinds=["LENGTH", "POSITION"])
    assert capped["bias_type"].value_counts().to_dict() == {"LENGTH": 2, "POSITION": 12}


# ------------------------------------------------------------------ argument validation

@pytest.mark.parametrize("kwargs, error, message", [
    ({"kinds": ["POSITION", "SHOUTING"]}, ValueError, "`kinds` must be chosen from"),
    ({"kinds": []}, ValueError, "`kinds` must be a non-empty list"),
    ({"kinds": ["STYLE_BA"]}, ValueError, "`kinds` names STYLE_BA"),
    ({"seed": -1}, ValueError, "`seed` must be a non-negative integer"),
    ({"seed": 1.5}, ValueError, "`seed` must be a non-negative integer"),
    ({"per_kind": 0}, ValueError, "`per_kind` must be a positive integer"),
    ({"per_kind": {"LENGTH": 2}, "kinds": ["POSITION"]}, ValueError,
     "`per_kind` names 'LENGTH'"),
    ({"rewriter": "gpt-4"}, TypeError, "`rewriter` must be a callable"),
])
def test_build_argument_errors(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        build_probes(RECORDS, **kwargs)


@pytest.mark.parametrize("records, error, message", [
    ("answers.jsonl", TypeError, "`records` must be a pandas DataFrame or a list of dicts"),
    ([], ValueError, "`records` is empty"),
    ([{"question": "Q?"}], ValueError, "`records` record 0: field `answer` must be a "
                                       "non-empty string"),
    ([{"question": " ", "answer": "A."}], ValueError, "field `question` must be"),
    ([{"id": 1, "question": "Q?", "answer": "A."}, {"id": 1, "question": "Q?", "answer": "B."}],
     ValueError, "`records` records 0 and 1 share the id '1'"),
])
def test_record_errors(records, error, message):
    with pytest.raises(error, match=re.escape(message)):
        build_probes(records)


def test_rewriter_must_return_text():
    with pytest.raises(ValueError, match="`rewriter` returned None for record 'vaccines-gpt4'"):
        build_probes(RECORDS[:1], kinds=["LENGTH"], rewriter=lambda q, a: None)


def test_record_errors_of_a_file_name_the_file_and_line(tmp_path):
    """Formerly "`records` record 6" (counted from 0, no file) for line 7 of the file."""
    rows = [json.dumps({"question": "Q?", "answer": "One. Two. Three."})] * 6
    rows.insert(2, "")  # a blank line still counts
    rows[6] = json.dumps({"question": "Q?", "answer": 5})
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"^answers\.jsonl line 7: field `answer` must be a "
                                         r"non-empty string; got 5$"):
        build_probes(read_table(path))
    path = tmp_path / "ids.csv"
    path.write_text("id,question,answer\n1,Q?,A. B. C.\n2,Q?,A. B. C.\n1,Q?,D. E. F.\n")
    with pytest.raises(ValueError, match=r"^ids\.csv lines 2 and 4 share the id '1'"):
        build_probes(read_table(path))
