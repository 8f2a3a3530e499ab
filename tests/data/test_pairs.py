"""Loading the pairs to judge."""

import json

import pytest

from fairjudge.data import FairjudgeInputError, load_pairs


def write(tmp_path, name, records):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_inline_texts(tmp_path):
    path = write(tmp_path, "p.jsonl", [{"id": 1, "question": "Q?", "a": "x", "b": "y",
                                        "reference": "r"}])
    pairs = load_pairs(path)
    row = pairs.iloc[0]
    assert (row.id, row.question_id, row.item_a, row.item_b) == ("1", "1", "1:a", "1:b")
    assert (row.text_a, row.text_b, row.reference) == ("x", "y", "r")


def test_question_ids_and_item_ids(tmp_path):
    pairs_path = write(tmp_path, "p.jsonl", [{"id": "p", "question_id": 7, "a": "i1", "b": "i2"}])
    questions = write(tmp_path, "q.jsonl", [{"question_id": 7, "question": "Why?"}])
    items = tmp_path / "items.csv"
    items.write_text("id,text,length\ni1,first answer,2\ni2,second answer,2\n")
    pairs = load_pairs(pairs_path, questions=questions, items=items)
    row = pairs.iloc[0]
    assert (row.question, row.item_a, row.text_b, row.reference) == ("Why?", "i1",
                                                                     "second answer", None)


@pytest.mark.parametrize("records, kwargs, message", [
    ([{"id": 1, "question": "Q", "a": "x"}], {}, r"p.jsonl: missing field `b`"),
    ([{"id": 1, "question": "Q", "a": "x", "b": "y"}, {"id": 1, "question": "Q", "a": "x",
                                                       "b": "z"}], {},
     r"duplicate pair id '1' at lines 1, 2"),
    ([{"id": 1, "a": "x", "b": "y"}], {}, r"missing field `question`"),
    ([{"id": 1, "question_id": 3, "a": "x", "b": "y"}], {}, r"no questions table"),
    ([{"id": 1, "question": "Q", "a": "x", "b": "  "}], {}, r"p.jsonl line 1: answer `b` is empty"),
    ([{"id": 1, "question": "Q", "a": "x", "b": "y"}, {"id": 2, "question": "Q", "a": None,
                                                       "b": "y"}], {},
     r"p.jsonl line 2: field `a` is missing"),
])
def test_errors_name_file_line_and_field(tmp_path, records, kwargs, message):
    with pytest.raises(FairjudgeInputError, match=message):
        load_pairs(write(tmp_path, "p.jsonl", records), **kwargs)


def test_unknown_item_and_question(tmp_path):
    items = tmp_path / "items.csv"
    items.write_text("id,text\ni1,t\n")
    path = write(tmp_path, "p.jsonl", [{"id": 1, "question": "Q", "a": "i1", "b": "i9"}])
    with pytest.raises(FairjudgeInputError, match=r"line 1: field `b` names unknown item 'i9'"):
        load_pairs(path, items=items)
    questions = write(tmp_path, "q.jsonl", [{"question_id": 1, "question": "Q"}])
    path = write(tmp_path, "p2.jsonl", [{"id": 1, "question_id": 2, "a": "x", "b": "y"}])
    with pytest.raises(FairjudgeInputError, match=r"names unknown question '2'"):
        load_pairs(path, questions=questions)


@pytest.mark.parametrize("value, kind", [({"text": "hi"}, "an object"), (["x", "y"], "a list"),
                                         (True, "a boolean"), (42, "a number")])
def test_an_answer_that_is_not_a_string_is_an_error(tmp_path, value, kind):
    """Formerly judged as its Python spelling ("{'text': 'hi'}")."""
    path = write(tmp_path, "p.jsonl", [{"id": 1, "question": "Q", "a": "x", "b": "y"},
                                       {"id": 2, "question": "Q", "a": "x", "b": value}])
    with pytest.raises(FairjudgeInputError, match=rf"^p\.jsonl line 2: field `b` must be a "
                                                  rf"string \(a text in quotes\); got {kind}"):
        load_pairs(path)


def test_a_question_or_reference_that_is_not_a_string_is_an_error(tmp_path):
    path = write(tmp_path, "p.jsonl", [{"id": 1, "question": ["Q"], "a": "x", "b": "y"}])
    with pytest.raises(FairjudgeInputError, match=r"line 1: field `question` must be a string"):
        load_pairs(path)
    path = write(tmp_path, "r.jsonl", [{"id": 1, "question": "Q", "a": "x", "b": "y",
                                        "reference": {"answer": "r"}}])
    with pytest.raises(FairjudgeInputError, match=r"line 1: field `reference` must be a string"):
        load_pairs(path)


def test_csv_answers_are_texts_not_numbers(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id,question,a,b\n1,How much?,1.50,2\n")
    row = load_pairs(path).iloc[0]
    assert (row.text_a, row.text_b) == ("1.50", "2")


def test_a_question_id_given_twice_with_different_texts_is_an_error(tmp_path):
    pairs = write(tmp_path, "p.jsonl", [{"id": "p", "question_id": 7, "a": "x", "b": "y"}])
    questions = write(tmp_path, "q.jsonl", [{"question_id": 7, "question": "Why?"},
                                            {"question_id": 8, "question": "How?"},
                                            {"question_id": "7", "question": "Why not?"}])
    with pytest.raises(FairjudgeInputError, match=r"^q\.jsonl: question id '7' is given twice with "
                                                  r"different texts, at lines 1 and 3"):
        load_pairs(pairs, questions=questions)
    same = write(tmp_path, "same.jsonl", [{"question_id": 7, "question": "Why?"},
                                          {"question_id": 7, "question": "Why?"}])
    assert load_pairs(pairs, questions=same).iloc[0].question == "Why?"  # a harmless repeat


def test_an_item_without_text_is_an_error(tmp_path):
    items = tmp_path / "items.csv"
    items.write_text("id,text\ni1,first\ni2,\n")
    path = write(tmp_path, "p.jsonl", [{"id": 1, "question": "Q", "a": "i1", "b": "i2"}])
    with pytest.raises(FairjudgeInputError, match=r"p\.jsonl line 1: field `b` names item 'i2', "
                                                  r"whose `text` is missing in items\.csv"):
        load_pairs(path, items=items)
