"""Text features (fairjudge.data._features): hand-counted markdown and length on small texts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairjudge.data._features import FEATURE_COLUMNS, text_features

HEADERS = "\n".join([
    "# One",
    "## Two",
    "###### Six",
    "####### seven hashes is not a header",
    "#no space is not a header",
    "    # four spaces of indentation is code, not a header",
    "text with a # in the middle",
])

LISTS = "\n".join([
    "- dash",
    "* star",
    "+ plus",
    "  - nested dash",
    "    * deeper star",
    "1. one",
    "2) two",
    "10. ten",
    "   3. indented number",
    "-no space",
    "*emphasis* is not a bullet",
    "**bold** is not a bullet",
    "3.14 is not a list item",
    "---",
])

BOLD = ("**a** and __b__ and **c d**; not ** e** nor **f ** nor snake__case__name "
        "nor `**in code**`; ****\n**g**")

CODE = "\n".join([
    "Intro",
    "```python",
    "# a comment, not a header",
    "- not a list item",
    "x = '**not bold**'",
    "```",
    "between",
    "  ```",
    "indented fence",
    "  ```",
    "```unclosed",
    "# Header after an unclosed fence",
])


def _row(text):
    return text_features([text]).iloc[0].to_dict()


def test_columns_and_dtypes():
    out = text_features(["a b", "c"])
    assert tuple(out.columns) == FEATURE_COLUMNS
    assert all(out[c].dtype == np.int64 for c in out.columns)


def test_length_and_chars():
    row = _row("hello  world\n\tfoo ")
    assert row["length"] == 3
    assert row["chars"] == len("hello  world\n\tfoo ") == 18


def test_headers():
    row = _row(HEADERS)
    assert row["md_headers"] == 3
    assert row["md_list_items"] == 0


def test_list_items_bullets_nested_and_numbered():
    row = _row(LISTS)
    assert row["md_list_items"] == 9
    assert row["md_headers"] == 0


def test_bold_spans():
    row = _row(BOLD)
    assert row["md_bold"] == 4  # a, b, c d, g


def test_code_blocks_are_counted_in_pairs_and_their_content_skipped():
    row = _row(CODE)
    assert row["md_code_blocks"] == 2
    assert row["md_headers"] == 1  # only the line after the unclosed fence
    assert row["md_list_items"] == 0
    assert row["md_bold"] == 0


def test_markdown_is_the_sum_of_the_counts():
    text = "\n".join([HEADERS, LISTS, BOLD, CODE])
    row = _row(text)
    assert row["md_headers"] == 4 and row["md_list_items"] == 9
    # BOLD has 4 spans and LISTS one ("**bold** is not a bullet"); BOLD's `**in code**` is
    # an inline code span.
    assert row["md_bold"] == 5 and row["md_code_blocks"] == 2 and row["md_inline_code"] == 1
    assert row["md_links"] == row["md_tables"] == 0
    assert row["markdown"] == 4 + 9 + 5 + 2 + 1


def test_missing_texts_are_empty():
    out = text_features([None, float("nan"), pd.NA, np.nan, ""])
    assert (out.to_numpy() == 0).all()


def test_index_follows_the_series():
    texts = pd.Series(["# h", None, "- x\n- y"], index=["q", "r", "s"])
    out = text_features(texts)
    assert list(out.index) == ["q", "r", "s"]
    assert out.loc["s", "md_list_items"] == 2 and out.loc["q", "md_headers"] == 1


def test_list_input_gets_a_range_index_and_empty_input_works():
    assert list(text_features(["x", "y"]).index) == [0, 1]
    empty = text_features([])
    assert len(empty) == 0 and tuple(empty.columns) == FEATURE_COLUMNS


def test_deterministic():
    texts = [HEADERS, LISTS, BOLD, CODE, None]
    pd.testing.assert_frame_equal(text_features(texts), text_features(list(texts)))


def test_a_single_string_is_rejected():
    with pytest.raises(TypeError, match="got a single string"):
        text_features("# not a list")


def test_non_string_elements_are_rejected():
    with pytest.raises(TypeError, match=r"element 1 is int: 3"):
        text_features(["ok", 3])
