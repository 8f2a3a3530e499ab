"""Loaders and validators of verdict and item tables (fairjudge.data._io, _schema, _encode).

Every validation error is matched on its message, and where the error concerns a record the
test checks that the file name and the physical line (or record/row) number appear.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pandas as pd
import pytest

import fairjudge
from fairjudge.data import (TIE_SCORE, FairjudgeInputError, encode_verdicts, load_items,
                            load_verdicts, matrix_to_verdicts, read_table, verdicts_to_matrix,
                            write_table)


def _jsonl(path, records):
    """Write JSONL; a record that is a str is written verbatim (blank or broken lines)."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _ok(a="x", b="y", winner="a", **extra):
    return {"item_a": a, "item_b": b, "winner": winner, **extra}


VERDICTS = pd.DataFrame({
    "item_a": ["x", "y", "z", "x"],
    "item_b": ["y", "z", "x", "z"],
    "winner": ["a", "b", "tie", "a"],
    "judge": ["gpt", "gpt", "claude", "claude"],
    "weight": [1.0, 2.5, 0.5, 1.0],
    "question_id": ["q1", "q1", "q2", "q2"],
})

ITEMS = pd.DataFrame({
    "id": ["x", "y", "z"],
    "text": ["first answer", "second answer", "third answer"],
    "quality": [1.0, -2.0, 0.5],
    "length": [10.0, 200.0, 35.0],
    "markdown": [0.0, 1.0, 1.0],
})


def _write(frame, path):
    """Write ``frame`` in the format named by the suffix (TSV and JSON arrays by hand)."""
    if path.suffix == ".tsv":
        frame.to_csv(path, sep="\t", index=False)
    elif path.suffix == ".json":
        path.write_text(json.dumps(frame.to_dict(orient="records")), encoding="utf-8")
    else:
        write_table(frame, path)
    return path


FORMATS = ["jsonl", "csv", "tsv", "json", "parquet"]


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("fmt", FORMATS)
def test_verdict_round_trip(tmp_path, fmt):
    path = _write(VERDICTS, tmp_path / f"verdicts.{fmt}")
    loaded = load_verdicts(path)
    cols = ["item_a", "item_b", "winner", "judge", "weight", "question_id"]
    got = loaded[cols].reset_index(drop=True)
    expected = VERDICTS[cols]
    assert got["item_a"].tolist() == expected["item_a"].tolist()
    assert got["item_b"].tolist() == expected["item_b"].tolist()
    assert got["winner"].tolist() == expected["winner"].tolist()
    assert got["judge"].tolist() == expected["judge"].tolist()
    assert got["question_id"].tolist() == expected["question_id"].tolist()
    np.testing.assert_array_equal(got["weight"].to_numpy(dtype=float), expected["weight"])
    assert loaded.attrs["source"] == path.name


@pytest.mark.parametrize("fmt", FORMATS)
def test_item_round_trip(tmp_path, fmt):
    path = _write(ITEMS, tmp_path / f"items.{fmt}")
    items = load_items(path)
    assert items.index.tolist() == ["x", "y", "z"]
    assert items.attrs["covariates"] == ["length", "markdown"]
    assert items["text"].tolist() == ITEMS["text"].tolist()
    np.testing.assert_array_equal(items["quality"].to_numpy(), ITEMS["quality"].to_numpy())
    np.testing.assert_array_equal(items["length"].to_numpy(), ITEMS["length"].to_numpy())
    np.testing.assert_array_equal(items["markdown"].to_numpy(), ITEMS["markdown"].to_numpy())
    # quality is ground truth, never a covariate
    assert "quality" not in items.attrs["covariates"]


def test_selected_covariates_only_are_kept(tmp_path):
    path = _write(ITEMS, tmp_path / "items.csv")
    items = load_items(path, covariates=["length"])
    assert items.attrs["covariates"] == ["length"]
    assert items["length"].dtype == np.float64
    # other columns are kept as they are (not coerced, not covariates)
    assert "markdown" in items.columns


def test_write_table_rejects_unknown_suffix(tmp_path):
    with pytest.raises(FairjudgeInputError, match=r"out\.xlsx: unknown table format '\.xlsx'"):
        write_table(VERDICTS, tmp_path / "out.xlsx")


# --------------------------------------------------------------------------- normalisation


def test_int_json_ids_match_string_csv_ids(tmp_path):
    verdicts = _jsonl(tmp_path / "v.jsonl", [_ok(1, 2), _ok(2, 3, "b"), _ok(3, 1, "tie")])
    (tmp_path / "items.csv").write_text("id,length\n3,30\n1,10\n2,20\n", encoding="utf-8")
    v = load_verdicts(verdicts)
    items = load_items(tmp_path / "items.csv")
    assert v["item_a"].tolist() == ["1", "2", "3"]
    assert items.index.tolist() == ["3", "1", "2"]
    comparisons = encode_verdicts(v, items)
    assert comparisons.item_ids == ("3", "1", "2")
    # "1" is index 1 of the item table, "2" index 2, "3" index 0
    assert comparisons.first.tolist() == [1, 2, 0]
    assert comparisons.second.tolist() == [2, 0, 1]


def test_string_json_ids_match_int_csv_ids(tmp_path):
    (tmp_path / "v.csv").write_text("item_a,item_b,winner\n1,2,a\n", encoding="utf-8")
    _jsonl(tmp_path / "items.jsonl", [{"id": "1"}, {"id": "2"}])
    comparisons = encode_verdicts(load_verdicts(tmp_path / "v.csv"),
                                  load_items(tmp_path / "items.jsonl"))
    assert comparisons.item_ids == ("1", "2")
    assert comparisons.first.tolist() == [0] and comparisons.second.tolist() == [1]


def test_integral_float_ids_print_as_integers(tmp_path):
    # A blank in an id-like column makes pandas read floats; 1.0 must still name item "1".
    (tmp_path / "v.csv").write_text(
        "item_a,item_b,winner,question_id\n1,2,a,7\n2,3,b,\n", encoding="utf-8")
    v = load_verdicts(tmp_path / "v.csv")
    assert v["question_id"].iloc[0] == "7"
    assert pd.isna(v["question_id"].iloc[1])


def test_csv_ids_with_leading_zeros_keep_their_spelling(tmp_path):
    # Ids are strings: "007" in an item CSV must name the same item as "007" in a JSONL
    # verdict file (not "7").
    (tmp_path / "items.csv").write_text("id,length\n007,1\n008,2\n", encoding="utf-8")
    _jsonl(tmp_path / "v.jsonl", [_ok("007", "008")])
    items = load_items(tmp_path / "items.csv")
    assert items.index.tolist() == ["007", "008"]
    comparisons = encode_verdicts(load_verdicts(tmp_path / "v.jsonl"), items)
    assert comparisons.first.tolist() == [0]


def test_winner_is_normalised(tmp_path):
    path = _jsonl(tmp_path / "v.jsonl", [_ok(winner="A"), _ok(winner=" tie "),
                                         _ok(winner="B "), _ok(winner="TIE")])
    assert load_verdicts(path)["winner"].tolist() == ["a", "tie", "b", "tie"]


def test_winner_is_normalised_in_csv(tmp_path):
    (tmp_path / "v.csv").write_text("item_a,item_b,winner\nx,y, tie \nx,z,A\n",
                                    encoding="utf-8")
    assert load_verdicts(tmp_path / "v.csv")["winner"].tolist() == ["tie", "a"]


@pytest.mark.parametrize("dtype", [object, "string"])
def test_text_columns_normalised_per_distinct_value_match_the_whole_column(dtype):
    """An object column of strings is stripped and lower-cased once per distinct value;
    the result is the one of normalising every row (missing stays missing)."""
    from fairjudge.data._schema import _stripped

    values = pd.Series([" A", "b ", None, " A", "TIE", "", "b "] * 3, dtype=dtype,
                       index=range(10, 31), name="winner")
    expected = values.astype("string").str.strip().str.lower()
    got = _stripped(values, lower=True)
    pd.testing.assert_series_equal(got, expected)
    mixed = pd.Series([" x", 7, ["a list"], None], dtype=object)  # not all strings
    pd.testing.assert_series_equal(_stripped(mixed), mixed.astype("string").str.strip())


def test_chatbot_arena_format(tmp_path):
    path = _jsonl(tmp_path / "arena.jsonl", [
        {"model_a": "gpt-4", "model_b": "llama", "winner": "model_a"},
        {"model_a": "gpt-4", "model_b": "llama", "winner": "model_b"},
        {"model_a": "llama", "model_b": "gpt-4", "winner": "tie"},
        {"model_a": "llama", "model_b": "gpt-4", "winner": "tie (bothbad)"},
    ])
    v = load_verdicts(path)
    assert v["item_a"].tolist() == ["gpt-4", "gpt-4", "llama", "llama"]
    assert v["item_b"].tolist() == ["llama", "llama", "gpt-4", "gpt-4"]
    assert v["winner"].tolist() == ["a", "b", "tie", "tie"]
    assert "model_a" not in v.columns


def test_defaults_for_judge_and_weight(tmp_path):
    path = _jsonl(tmp_path / "v.jsonl", [_ok(), _ok("y", "z", "b")])
    v = load_verdicts(path)
    assert v["judge"].tolist() == ["judge", "judge"]
    assert v["weight"].tolist() == [1.0, 1.0]


def test_missing_judge_value_defaults(tmp_path):
    path = _jsonl(tmp_path / "v.jsonl", [_ok(judge="gpt"), _ok(judge=None)])
    assert load_verdicts(path)["judge"].tolist() == ["gpt", "judge"]


def test_read_table_index_holds_line_numbers(tmp_path):
    path = _jsonl(tmp_path / "v.jsonl", [_ok(), "", "   ", _ok()])
    frame = read_table(path)
    assert frame.index.tolist() == [1, 4]
    assert frame.attrs["location"] == "line"
    (tmp_path / "v.csv").write_text("item_a,item_b,winner\nx,y,a\nx,z,b\n", encoding="utf-8")
    assert read_table(tmp_path / "v.csv").index.tolist() == [2, 3]


# --------------------------------------------------------------------------- file-level errors


def _lines(*records):
    """JSONL text; a record that is a str is written verbatim (blank or broken lines)."""
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"


# (file name, content, loader, error message pattern): each bad file names itself, and a bad
# record its physical line (or JSON record) number.
BAD_FILES = {
    "empty_file": ("pairs.jsonl", "", load_verdicts, r"^pairs\.jsonl: file is empty"),
    "empty_csv": ("pairs.csv", "\n\n", load_verdicts, r"^pairs\.csv: file is empty"),
    "csv_with_header_only": ("pairs.csv", "item_a,item_b,winner\n", load_verdicts,
                             r"^pairs\.csv: no verdicts found"),
    "blank_only_jsonl": ("pairs.jsonl", "\n   \n\t\n", load_verdicts,
                         r"^pairs\.jsonl: file is empty \(no JSON records\)"),
    "invalid_json_line": ("pairs.jsonl", _lines(_ok(), "", '{"item_a": "x", "item_b": '),
                          load_verdicts, r"^pairs\.jsonl line 3: not valid JSON"),
    "invalid_json_array_names_line": (
        "pairs.json", '[\n{"item_a": "x", "item_b": "y", "winner": "a"},\n{"item_a": }\n]\n',
        load_verdicts, r"^pairs\.json line 3: not valid JSON"),
    "json_that_is_not_an_array_of_objects": (
        "pairs.json", '{"item_a": "x"}', load_verdicts,
        r"^pairs\.json: expected a JSON array of objects"),
    "non_object_json_line": ("pairs.jsonl", _lines(_ok(), '["x", "y", "a"]'), load_verdicts,
                             r"^pairs\.jsonl line 2: expected a JSON object, got list"),
    "unknown_suffix": ("pairs.xlsx", "x", load_verdicts,
                       r"^pairs\.xlsx: unknown table format '\.xlsx'"),
    "missing_winner_column": ("pairs.jsonl", _lines({"item_a": "x", "item_b": "y"}),
                              load_verdicts,
                              r"^pairs\.jsonl: missing field `winner`; a verdict table needs"),
    "missing_winner_in_one_record": (
        "pairs.jsonl", _lines(_ok(), _ok(), "", {"item_a": "x", "item_b": "z"}), load_verdicts,
        r"^pairs\.jsonl line 4: field `winner`"),
    "missing_item_b_in_one_record": (
        "pairs.jsonl", _lines(_ok(), {"item_a": "x", "winner": "a"}), load_verdicts,
        r"^pairs\.jsonl line 2: field `item_b` is missing"),
    "same_item_twice": ("pairs.jsonl", _lines(_ok(), _ok(), _ok("q", "q")), load_verdicts,
                        r"^pairs\.jsonl line 3: `item_a` and `item_b` are the same item 'q'"),
    # 1 and "1" are one item.
    "same_item_twice_after_id_normalisation": (
        "pairs.jsonl", _lines(_ok(), _ok(1, "1")), load_verdicts,
        r"^pairs\.jsonl line 2: `item_a` and `item_b`"),
    "infinite_weight_in_csv": (
        "pairs.csv", "item_a,item_b,winner,weight\nx,y,a,1\nx,z,a,inf\n", load_verdicts,
        r"^pairs\.csv line 3: field `weight` must be a positive finite"),
    "arena_winner_outside_allowed_values": (
        "arena.jsonl", _lines({"model_a": "m1", "model_b": "m2", "winner": "model_a"},
                              {"model_a": "m1", "model_b": "m2", "winner": "both good"}),
        load_verdicts, r"^arena\.jsonl line 2: field `winner` must be one of model_a, "
                       r"model_b, tie, tie \(bothbad\) in the Chatbot Arena format; "
                       r"got 'both good'"),
    "csv_first_data_row_is_line_2": ("pairs.csv", "item_a,item_b,winner\nx,y,maybe\nx,z,a\n",
                                     load_verdicts, r"^pairs\.csv line 2: field `winner`.*'maybe'"),
    "csv_fourth_data_row_is_line_5": (
        "pairs.tsv", "item_a\titem_b\twinner\nx\ty\ta\nx\tz\ta\ny\tz\tb\nz\tz\ta\n", load_verdicts,
        r"^pairs\.tsv line 5: `item_a` and `item_b`"),
    # A blank line is still a line of the file; the bad row below is on line 4.
    "csv_line_numbers_count_blank_lines": (
        "pairs.csv", "item_a,item_b,winner\nx,y,a\n\nx,z,maybe\n", load_verdicts,
        r"^pairs\.csv line 4: field `winner`"),
    # Answer texts often span lines; item "b" starts on physical line 4.
    "csv_line_numbers_count_quoted_newlines": (
        "items.csv", 'id,text,length\na,"line one\nline two",1\nb,plain,\n', load_items,
        r"^items\.csv line 4: covariate `length`"),
    "json_array_errors_name_the_record": (
        "pairs.json", json.dumps([_ok(), _ok(), _ok(winner="nope")]), load_verdicts,
        r"^pairs\.json record 3: field `winner`"),
}


@pytest.mark.parametrize("file_name, content, loader, message", list(BAD_FILES.values()),
                         ids=list(BAD_FILES))
def test_bad_file_is_named_with_its_line(tmp_path, file_name, content, loader, message):
    path = tmp_path / file_name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(FairjudgeInputError, match=message):
        loader(path)


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere.jsonl"
    with pytest.raises(FairjudgeInputError, match=r"nowhere\.jsonl: no such file"):
        load_verdicts(path)


def test_loader_rejects_non_path_non_frame():
    with pytest.raises(TypeError, match="verdicts must be a file path or a pandas DataFrame"):
        load_verdicts(42)


# --------------------------------------------------------------------------- record errors


def test_winner_outside_allowed_values_on_line_17(tmp_path):
    # 14 good records and two blank lines, so the bad record sits on physical line 17.
    records = [_ok("x", f"y{i}") for i in range(10)] + ["", ""]
    records += [_ok("x", f"z{i}") for i in range(4)] + [_ok("x", "w", "A>B")]
    path = _jsonl(tmp_path / "pairs.jsonl", records)
    with pytest.raises(FairjudgeInputError) as info:
        load_verdicts(path)
    assert str(info.value) == ("pairs.jsonl line 17: field `winner` must be one of a, b, tie; "
                               "got 'A>B'")


@pytest.mark.parametrize("bad", [0, -1.5, "heavy"], ids=str)
def test_bad_weight(tmp_path, bad):
    records = [_ok(weight=1.0), _ok(weight=2.0), _ok(weight=bad)]
    path = _jsonl(tmp_path / "pairs.jsonl", records)
    with pytest.raises(FairjudgeInputError,
                       match=r"^pairs\.jsonl line 3: field `weight` must be a positive finite"):
        load_verdicts(path)


def test_a_record_without_the_optional_weight_weighs_one(tmp_path):
    records = [_ok(weight=2.0), {k: v for k, v in _ok().items() if k != "weight"},
               _ok(weight=None)]
    path = _jsonl(tmp_path / "pairs.jsonl", records)
    assert load_verdicts(path)["weight"].tolist() == [2.0, 1.0, 1.0]


def test_gzipped_and_non_utf8_files(tmp_path):
    import gzip
    with gzip.open(tmp_path / "v.jsonl.gz", "wt") as handle:
        handle.write(json.dumps(_ok()) + "\n")
    assert len(load_verdicts(tmp_path / "v.jsonl.gz")) == 1
    (tmp_path / "latin.csv").write_bytes("item_a,item_b,winner\nx\xe9,y,a\n".encode("latin-1"))
    with pytest.raises(FairjudgeInputError, match=r"^latin\.csv line 2: not UTF-8 text"):
        load_verdicts(tmp_path / "latin.csv")


def test_parquet_errors_name_the_row(tmp_path):
    frame = pd.DataFrame([_ok(), _ok(winner="nope"), _ok()])
    path = tmp_path / "pairs.parquet"
    write_table(frame, path)
    with pytest.raises(FairjudgeInputError, match=r"^pairs\.parquet row 2: field `winner`"):
        load_verdicts(path)


def test_dataframe_errors_name_the_row():
    frame = pd.DataFrame([_ok(), _ok(winner="nope")])
    with pytest.raises(FairjudgeInputError, match=r"^verdicts row 1: field `winner`"):
        load_verdicts(frame)


# --------------------------------------------------------------------------- item errors


def _items_csv(path, body):
    path.write_text(body, encoding="utf-8")
    return path


def test_unknown_item_b_via_rank(tmp_path):
    verdicts = _jsonl(tmp_path / "pairs.jsonl",
                      [_ok("x", "y"), _ok("y", "z"), _ok("x", "ghost"), _ok("y", "x")])
    items = _items_csv(tmp_path / "items.csv", "id,length\nx,1\ny,2\nz,3\n")
    with pytest.raises(FairjudgeInputError) as info:
        fairjudge.rank(verdicts, items, k=2)
    assert str(info.value) == ("pairs.jsonl line 3: field `item_b` names unknown item 'ghost'; "
                               "it is not in items.csv")


def test_unknown_item_a_via_encode(tmp_path):
    verdicts = _jsonl(tmp_path / "pairs.jsonl", [_ok("x", "y"), "", _ok("ghost", "y")])
    items = _items_csv(tmp_path / "items.csv", "id,length\nx,1\ny,2\n")
    with pytest.raises(FairjudgeInputError,
                       match=r"^pairs\.jsonl line 3: field `item_a` names unknown item 'ghost'; "
                             r"it is not in items\.csv"):
        encode_verdicts(load_verdicts(verdicts), load_items(items))


def test_duplicate_item_ids(tmp_path):
    items = _items_csv(tmp_path / "items.csv", "id,length\na,1\nb,2\na,3\nc,4\n")
    with pytest.raises(FairjudgeInputError,
                       match=r"^items\.csv: duplicate item id 'a' at lines 2, 4; ids must be unique"):
        load_items(items)


def test_duplicate_item_ids_after_normalisation(tmp_path):
    _jsonl(tmp_path / "items.jsonl", [{"id": 1}, {"id": 2}, {"id": "1"}])
    with pytest.raises(FairjudgeInputError,
                       match=r"^items\.jsonl: duplicate item id '1' at lines 1, 3"):
        load_items(tmp_path / "items.jsonl")


def test_nan_covariate(tmp_path):
    items = _items_csv(tmp_path / "items.csv", "id,length,markdown\na,1,0\nb,,1\nc,3,0\n")
    with pytest.raises(FairjudgeInputError,
                       match=r"^items\.csv line 3: covariate `length` must be a finite number"):
        load_items(items)


def test_non_numeric_selected_covariate(tmp_path):
    items = _items_csv(tmp_path / "items.csv", "id,style\na,plain\nb,fancy\n")
    with pytest.raises(FairjudgeInputError,
                       match=r"^items\.csv line 2: covariate `style` must be a finite number; "
                             r"got 'plain'"):
        load_items(items, covariates=["style"])


def test_nan_quality(tmp_path):
    items = _items_csv(tmp_path / "items.csv", "id,quality\na,1\nb,2\nc,\n")
    with pytest.raises(FairjudgeInputError, match=r"^items\.csv line 4: field `quality`"):
        load_items(items)


def test_unknown_covariate_column(tmp_path):
    items = _items_csv(tmp_path / "items.csv", "id,length,markdown\na,1,0\nb,2,1\n")
    with pytest.raises(FairjudgeInputError,
                       match=r"^items\.csv: covariate `verbosity` is not a column; numeric "
                             r"columns are length, markdown"):
        load_items(items, covariates=["length", "verbosity"])


def test_reserved_column_cannot_be_covariate(tmp_path):
    items = _items_csv(tmp_path / "items.csv", "id,quality\na,1\nb,2\n")
    with pytest.raises(FairjudgeInputError,
                       match=r"^items\.csv: `quality` cannot be a covariate"):
        load_items(items, covariates=["quality"])


def test_items_without_id(tmp_path):
    items = _items_csv(tmp_path / "items.csv", "name,length\na,1\n")
    with pytest.raises(FairjudgeInputError, match=r"^items\.csv: missing field `id`; found name, length"):
        load_items(items)


def test_missing_item_id_value(tmp_path):
    _jsonl(tmp_path / "items.jsonl", [{"id": "a"}, {"id": None}])
    with pytest.raises(FairjudgeInputError, match=r"^items\.jsonl line 2: field `id` is missing"):
        load_items(tmp_path / "items.jsonl")


# --------------------------------------------------------------------------- encode_verdicts


def test_encode_follows_item_table_order_and_scores(tmp_path):
    verdicts = load_verdicts(pd.DataFrame({
        "item_a": ["x", "y", "z", "w"],
        "item_b": ["y", "z", "x", "x"],
        "winner": ["a", "b", "tie", "A"],
        "judge": ["zeta", "alpha", "zeta", "mid"],
        "weight": [1.0, 2.5, 0.25, 3.0],
    }))
    items = load_items(pd.DataFrame({"id": ["z", "w", "y", "x"], "length": [1, 2, 3, 4]}))
    c = encode_verdicts(verdicts, items)
    assert c.item_ids == ("z", "w", "y", "x")
    assert c.first.tolist() == [3, 2, 0, 1]
    assert c.second.tolist() == [2, 0, 3, 3]
    assert c.first_score.tolist() == [1.0, 0.0, TIE_SCORE, 1.0]
    assert TIE_SCORE == 0.5
    assert c.judges == ("alpha", "mid", "zeta")
    assert c.judge.tolist() == [2, 0, 2, 1]
    assert c.weight.tolist() == [1.0, 2.5, 0.25, 3.0]
    assert c.first.dtype == np.int64 and c.judge.dtype == np.int64
    assert len(c) == 4 and c.n_items == 4 and c.n_judges == 3


def test_encode_without_items_orders_by_first_appearance():
    verdicts = load_verdicts(pd.DataFrame({"item_a": ["b", "c"], "item_b": ["a", "b"],
                                           "winner": ["a", "b"]}))
    c = encode_verdicts(verdicts)
    assert c.item_ids == ("b", "c", "a")
    assert c.first.tolist() == [0, 1] and c.second.tolist() == [2, 0]
    assert c.judges == ("judge",)


def test_encode_leaves_uncompared_items_in_the_table():
    verdicts = load_verdicts(pd.DataFrame({"item_a": ["a"], "item_b": ["b"], "winner": ["b"]}))
    items = load_items(pd.DataFrame({"id": ["a", "lonely", "b"]}))
    c = encode_verdicts(verdicts, items)
    assert c.item_ids == ("a", "lonely", "b")
    assert c.first.tolist() == [0] and c.second.tolist() == [2]


# --------------------------------------------------------------------------- verdict matrices


def test_matrix_round_trip(tmp_path):
    nan = np.nan
    matrix = np.array([
        [nan, 1.0, 0.0, 0.5],
        [0.0, nan, nan, 1.0],
        [1.0, 0.5, nan, nan],
        [nan, 0.0, 1.0, nan],
    ])
    ids = ["p", "q", "r", "s"]
    table = matrix_to_verdicts(matrix, ids, judge="sim")
    assert len(table) == int(np.isfinite(matrix).sum())
    assert set(table["judge"]) == {"sim"}
    row = table[(table["item_a"] == "p") & (table["item_b"] == "s")]
    assert row["winner"].tolist() == ["tie"]
    path = tmp_path / "m.jsonl"
    write_table(table, path)
    back = verdicts_to_matrix(load_verdicts(path), ids)
    np.testing.assert_array_equal(back, matrix)  # NaNs compare equal here


def test_matrix_to_verdicts_winner_frame():
    matrix = np.array([[np.nan, 1.0], [0.0, np.nan]])
    table = matrix_to_verdicts(matrix, ["u", "v"])
    assert table[["item_a", "item_b", "winner"]].values.tolist() == [["u", "v", "a"],
                                                                    ["v", "u", "b"]]
    assert table["judge"].tolist() == ["judge", "judge"]


def test_matrix_rejects_duplicate_ordered_pair(tmp_path):
    path = _jsonl(tmp_path / "oracle.jsonl", [
        _ok("x", "y"), _ok("x", "y", "b"), _ok("y", "x"), "", _ok("x", "y", "tie"),
    ])
    verdicts = load_verdicts(path)
    with pytest.raises(FairjudgeInputError) as info:
        verdicts_to_matrix(verdicts, ["x", "y"])
    message = str(info.value)
    assert message.startswith("oracle.jsonl: ordered pair ('x' shown first, 'y' second) is "
                              "recorded more than once (lines 1, 2, 5)")


def test_matrix_accepts_both_orders_of_a_pair():
    verdicts = load_verdicts(pd.DataFrame({"item_a": ["x", "y"], "item_b": ["y", "x"],
                                           "winner": ["a", "tie"]}))
    matrix = verdicts_to_matrix(verdicts, ["x", "y"])
    assert matrix[0, 1] == 1.0 and matrix[1, 0] == 0.5
    assert np.isnan(matrix[0, 0]) and np.isnan(matrix[1, 1])


def test_matrix_rejects_unknown_item(tmp_path):
    path = _jsonl(tmp_path / "oracle.jsonl", [_ok("x", "y"), _ok("y", "nobody")])
    with pytest.raises(FairjudgeInputError,
                       match=re.escape("oracle.jsonl line 2: field `item_b` names unknown item "
                                       "'nobody'")):
        verdicts_to_matrix(load_verdicts(path), ["x", "y"])


# --------------------------------------------------------------------------- covariate values


def _items_with_length(tmp_path, name, bad_value, bad_line=7):
    """Eight items, `length` numeric except on ``bad_line``."""
    rows = [{"id": f"i{n}", "text": "an answer", "length": 10 + n, "source": "m"}
            for n in range(8)]
    rows[bad_line - 1]["length"] = bad_value
    path = tmp_path / name
    if path.suffix == ".csv":
        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        _jsonl(path, rows)
    return path


@pytest.mark.parametrize("name", ["items.jsonl", "items.csv"])
def test_a_word_in_a_numeric_covariate_is_an_error_not_a_dropped_covariate(tmp_path, name):
    """Formerly `length` silently left the default covariates, changing rank/select."""
    path = _items_with_length(tmp_path, name, "long")
    line = 7 if name.endswith(".jsonl") else 8  # the CSV header is line 1
    with pytest.raises(FairjudgeInputError,
                       match=rf"^{re.escape(name)} line {line}: covariate `length` must be a "
                             r"finite number; got 'long'$"):
        load_items(path)


def test_a_numeric_string_is_a_covariate_value(tmp_path):
    """"12" in JSON is read as 12, as every CSV value is: the covariate is kept."""
    items = load_items(_items_with_length(tmp_path, "items.jsonl", "12"))
    assert items.attrs["covariates"] == ["length"]
    assert items.loc["i6", "length"] == 12.0 and items["length"].dtype == np.float64


def test_a_mostly_numeric_column_with_a_list_or_missing_value_is_an_error(tmp_path):
    with pytest.raises(FairjudgeInputError, match=r"line 3: covariate `length` must be a finite "
                                                  r"number; got \[1, 2\]"):
        load_items(_items_with_length(tmp_path, "a.jsonl", [1, 2], bad_line=3))
    flags = _jsonl(tmp_path / "b.jsonl", [{"id": "x", "verbose": True},
                                          {"id": "y", "verbose": None},
                                          {"id": "z", "verbose": False}])
    with pytest.raises(FairjudgeInputError, match=r"b\.jsonl line 2: covariate `verbose`"):
        load_items(flags)


def test_text_and_label_columns_are_not_default_covariates(tmp_path):
    path = _jsonl(tmp_path / "items.jsonl", [
        {"id": "x", "text": "one", "question_id": 81, "source": "gpt", "family": "a",
         "length": 3},
        {"id": "y", "text": "two", "question_id": 82, "source": "7", "family": "b",
         "length": 5}])
    items = load_items(path)
    assert items.attrs["covariates"] == ["length"]
    assert items.loc["x", "question_id"] == 81  # kept, just not a covariate


def test_item_text_must_be_a_string(tmp_path):
    path = _jsonl(tmp_path / "items.jsonl", [{"id": "x", "text": "fine"},
                                             {"id": "y", "text": True},
                                             {"id": "z", "text": None}])
    with pytest.raises(FairjudgeInputError, match=r"^items\.jsonl line 2: field `text` must be a "
                                                  r"string \(a text in quotes\); got a boolean, "
                                                  r"True$"):
        load_items(path)
    path = _jsonl(tmp_path / "obj.jsonl", [{"id": "x", "text": {"answer": "hi"}}])
    with pytest.raises(FairjudgeInputError, match=r"line 1: field `text` must be a string .*got "
                                                  r"an object"):
        load_items(path)


# --------------------------------------------------------------------------- encodings


def test_a_folder_is_not_a_table(tmp_path):
    with pytest.raises(FairjudgeInputError, match=r"is a folder; expected a table file"):
        load_verdicts(tmp_path)


@pytest.mark.parametrize("name", ["v.jsonl", "v.json", "v.csv"])
def test_a_utf8_byte_order_mark_is_accepted(tmp_path, name):
    plain = _write(VERDICTS, tmp_path / f"plain{name[1:]}")
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    with_bom = load_verdicts(path)
    assert list(with_bom.columns) == list(load_verdicts(plain).columns)
    assert with_bom["item_a"].tolist() == VERDICTS["item_a"].tolist()


def test_non_utf8_error_names_the_line_not_a_byte_offset(tmp_path):
    """The bad byte sits past the decoder's first chunk (8 kB), on line 300."""
    lines = [json.dumps(_ok(a=f"x{n}")) for n in range(299)]
    body = ("\n".join(lines) + "\n").encode() + '{"item_a": "caf\xe9", "item_b": "y", ' \
        '"winner": "a"}\n'.encode("latin-1")
    path = tmp_path / "v.jsonl"
    path.write_bytes(body)
    with pytest.raises(FairjudgeInputError, match=r"^v\.jsonl line 300: not UTF-8 text \(byte "
                                                  r"0xE9: .*\); save the file as UTF-8$"):
        load_verdicts(path)


# --------------------------------------------------------------------------- writing


@pytest.mark.parametrize("name", ["out.jsonl", "out.csv", "out.parquet"])
def test_a_failure_while_writing_leaves_the_previous_table(tmp_path, monkeypatch, name):
    """A run killed while writing must not leave a truncated table: here the writer fails
    half-way through; the previous complete file survives and no temporary file stays."""
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    path = tmp_path / name
    write_table(VERDICTS, path)
    before = path.read_bytes()

    def half_written(self, target, *args, **kwargs):
        if isinstance(target, (str, os.PathLike)):
            with open(target, "w") as handle:
                handle.write("item_a,it")
        else:
            target.write(b"PAR1" if "b" in getattr(target, "mode", "") else "item_a,it")
        raise OSError(28, "No space left on device")

    for method in ("to_json", "to_csv", "to_parquet"):
        monkeypatch.setattr(pd.DataFrame, method, half_written)
    with pytest.raises(OSError, match="No space left"):
        write_table(VERDICTS.assign(winner="b"), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [name]


# --------------------------------------------------------------------------- outcome_detail


def test_only_invalid_rows_carry_outcome_detail(tmp_path):
    """Regression: a file where only unparseable calls carry `outcome_detail` (the others
    omit the key) failed on line 1; the detail of a row without one follows its winner."""
    path = _jsonl(tmp_path / "v.jsonl", [
        _ok(winner="a"), _ok(winner="tie"),
        {"item_a": "x", "item_b": "y", "winner": None, "outcome_detail": "invalid"},
        _ok(winner="b")])
    verdicts = load_verdicts(path)
    assert verdicts["outcome_detail"].tolist() == ["win", "tie", "invalid", "win"]
    assert verdicts["winner"].isna().tolist() == [False, False, True, False]


# --------------------------------------------------------------------------- large files


def test_a_jsonl_file_read_in_chunks_is_the_file_read_whole(tmp_path, monkeypatch):
    """Records become a DataFrame a chunk at a time; keys missing from a whole chunk, blank
    lines and a bad line in a late chunk must read as they do in one piece."""
    import fairjudge.data._io as io

    records = [_ok(winner="ab"[i % 2], judge=f"j{i % 3}") for i in range(11)]
    records[2]["weight"] = 2.0  # a key present in the first chunk only
    records[9]["note"] = "late"  # ... and one in the last chunk only
    path = _jsonl(tmp_path / "v.jsonl", records[:5] + [""] + records[5:])
    whole = read_table(path)
    monkeypatch.setattr(io, "JSONL_CHUNK", 3)
    chunked = read_table(path)
    pd.testing.assert_frame_equal(chunked, whole)
    assert chunked.index.tolist() == [1, 2, 3, 4, 5, *range(7, 13)]
    assert chunked.loc[11, "note"] == "late" and pd.isna(chunked.loc[12, "note"])
    _jsonl(path, records + ["{broken"])
    with pytest.raises(FairjudgeInputError, match="v.jsonl line 12: not valid JSON"):
        read_table(path)


@pytest.mark.parametrize("fmt", FORMATS)
def test_reading_named_columns_keeps_those_and_the_line_numbers(tmp_path, fmt):
    frame = VERDICTS.assign(raw=["a long explanation"] * 4)
    path = _write(frame, tmp_path / f"verdicts.{fmt}")
    kept = read_table(path, columns=["item_a", "winner", "weight", "absent"])
    full = read_table(path)
    assert kept.columns.tolist() == ["item_a", "winner", "weight"]
    pd.testing.assert_frame_equal(kept, full[["item_a", "winner", "weight"]],
                                  check_index_type=False)
    assert kept.attrs["file_columns"] == full.columns.tolist()


def test_rank_reads_only_the_columns_a_fit_uses(tmp_path, monkeypatch):
    """`rank` skips a verdict file's explanations, yet errors still list what the file has,
    and per-verdict covariates named in `covariates` are read."""
    import fairjudge.data._io as io

    rng = np.random.default_rng(0)
    records = [_ok(*rng.choice(["x", "y", "z", "w"], size=2, replace=False),
                   winner=str(rng.choice(["a", "b"])), raw="because " * 50,
                   length_a=int(rng.integers(5, 50)), length_b=int(rng.integers(5, 50)))
               for _ in range(60)]
    path = _jsonl(tmp_path / "v.jsonl", records)
    seen = []
    real = io._read_jsonl
    monkeypatch.setattr(io, "_read_jsonl", lambda p, keep=None: seen.append(keep) or real(p, keep))
    from_file = fairjudge.rank(path, k=2, covariates=["length"])
    from_frame = fairjudge.rank(pd.DataFrame(records), k=2, covariates=["length"])
    assert seen[0] is not None and "raw" not in seen[0] and {"length_a", "length_b"} <= seen[0]
    pd.testing.assert_series_equal(from_file.scores, from_frame.scores)
    assert from_file.diagnostics["per_verdict_covariates"] == ["length"]
    _jsonl(path, [{"model": "x", "opponent": "y", "winner": "a", "raw": "r"}])
    with pytest.raises(FairjudgeInputError, match="found model, opponent, winner, raw"):
        fairjudge.rank(path, k=1)


def test_only_the_default_covariates_are_fitted_unless_others_are_named(tmp_path):
    """Formerly every numeric column was a covariate: a score or a count in the item table
    was fitted as a bias without a word. Now only `length`, `markdown` (and the simulator's
    `verbose`) are, others are listed as not fitted, and rank's output says which."""
    from fairjudge.report import format_ranking

    items = ITEMS.assign(votes=[3, 50, 7], reviewer_score=[0.2, 0.9, 0.4])
    loaded = load_items(_write(items, tmp_path / "items.jsonl"))
    assert loaded.attrs["covariates"] == ["length", "markdown"]
    assert loaded.attrs["unused_numeric"] == ["votes", "reviewer_score"]
    named = load_items(tmp_path / "items.jsonl", covariates=["votes"])
    assert named.attrs["covariates"] == ["votes"] and named.attrs["unused_numeric"] == []
    verdicts = pd.concat([VERDICTS] * 5, ignore_index=True)
    ranking = fairjudge.rank(verdicts, loaded.reset_index(), k=1, n_samples=50)
    assert ranking.diagnostics["covariates"] == ["length", "markdown"]
    line = format_ranking(ranking).splitlines()[1]
    assert line.startswith("covariates: length, markdown (the default set)")
    assert "not fitted: votes, reviewer_score" in line
