"""Pairs to be judged: questions and the two answers to compare."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._io import _as_frame, load_items
from fairjudge.data._schema import (
    _check_text_column,
    _first_bad,
    _ids_as_str,
    _where,
    require_fields,
)

PAIR_COLUMNS = ("id", "question_id", "question", "item_a", "item_b", "text_a", "text_b",
                "reference")


def load_pairs(source, *, questions=None, items=None) -> pd.DataFrame:
    """Load and validate the pairs to judge.

    Each record has ``id``, the question (``question``, or ``question_id`` with a
    ``questions`` table of ``question_id`` and ``question``), the two answers ``a`` and
    ``b`` (texts, or item ids when an ``items`` table with a ``text`` column is given), and
    an optional ``reference`` answer. Texts must be strings: a JSON number, list or object
    given as an answer is an error, not judged as its Python spelling. A ``question_id``
    may repeat in ``questions`` only with the same text.

    Returns
    -------
    pandas.DataFrame
        Columns ``id``, ``question_id``, ``question``, ``item_a``, ``item_b`` (ids; for
        inline texts ``<id>:a`` and ``<id>:b``), ``text_a``, ``text_b``, ``reference``
        (None where absent), in the input's own a/b frame.

    Raises
    ------
    FairjudgeInputError
        Naming the file, line and field of the first bad record.
    """
    frame = _as_frame(source, "pairs")
    src = require_fields(frame, ("id", "a", "b"), noun="pairs",
                         needs="a pair needs id, question (or question_id), a, b")
    for field in ("id", "a", "b"):
        bad = _first_bad(frame[field].isna().to_numpy())
        if bad is not None:
            raise FairjudgeInputError(f"{_where(frame, bad)}: field `{field}` is missing")
    ids = _ids_as_str(frame["id"])
    dup = ids.duplicated(keep=False).to_numpy(dtype=bool)
    if dup.any():
        rows = np.flatnonzero(ids.to_numpy() == ids.iloc[np.flatnonzero(dup)[0]])
        unit = frame.attrs.get("location", "row")
        raise FairjudgeInputError(
            f"{src}: duplicate pair id {ids.iloc[rows[0]]!r} at {unit}s "
            f"{', '.join(str(frame.index[r]) for r in rows[:4])}; ids must be unique")
    out = pd.DataFrame({"id": ids.to_numpy()}, index=frame.index)
    out.attrs = dict(frame.attrs)
    _check_text_column(frame, "question")
    if items is None:
        _check_text_column(frame, "a")
        _check_text_column(frame, "b")
    _check_text_column(frame, "reference")
    if "question" in frame.columns:
        question = frame["question"]
        qid = _ids_as_str(frame["question_id"]) if "question_id" in frame.columns else ids
    elif "question_id" in frame.columns:
        if questions is None:
            raise FairjudgeInputError(f"{src}: records give `question_id` but no questions "
                                      "table was provided (--questions)")
        table = _as_frame(questions, "questions")
        for field in ("question_id", "question"):
            if field not in table.columns:
                raise FairjudgeInputError(f"{table.attrs.get('source')}: missing field "
                                          f"`{field}`")
        lookup = _question_lookup(table)
        qid = _ids_as_str(frame["question_id"])
        bad = _first_bad((~qid.isin(list(lookup))).to_numpy(dtype=bool))
        if bad is not None:
            raise FairjudgeInputError(f"{_where(frame, bad)}: field `question_id` names "
                                      f"unknown question {qid.iloc[bad]!r}")
        question = qid.map(lookup)
    else:
        raise FairjudgeInputError(f"{src}: missing field `question` (or `question_id` with a "
                                  "questions table)")
    bad = _first_bad(question.isna().to_numpy() | (question.astype(str).str.strip() == ""))
    if bad is not None:
        raise FairjudgeInputError(f"{_where(frame, bad)}: field `question` is empty")
    out["question_id"] = qid.to_numpy()
    out["question"] = question.astype(str).to_numpy()
    if items is not None:
        table = load_items(items)
        if "text" not in table.columns:
            raise FairjudgeInputError(f"{table.attrs.get('source', 'items')}: answers given as "
                                      "item ids need a `text` column in the item table")
        for field, side in (("a", "item_a"), ("b", "item_b")):
            ref = _ids_as_str(frame[field])
            bad = _first_bad((~ref.isin(table.index)).to_numpy(dtype=bool))
            if bad is not None:
                raise FairjudgeInputError(
                    f"{_where(frame, bad)}: field `{field}` names unknown item "
                    f"{ref.iloc[bad]!r}; it is not in {table.attrs.get('source', 'the items')}")
            texts = table.loc[ref, "text"]
            bad = _first_bad(texts.isna().to_numpy(dtype=bool))
            if bad is not None:
                raise FairjudgeInputError(
                    f"{_where(frame, bad)}: field `{field}` names item {ref.iloc[bad]!r}, "
                    f"whose `text` is missing in {table.attrs.get('source', 'the items')}")
            out[side] = ref.to_numpy()
            out[f"text_{field}"] = texts.astype(str).to_numpy()
    else:
        out["item_a"] = [f"{i}:a" for i in ids]
        out["item_b"] = [f"{i}:b" for i in ids]
        out["text_a"] = frame["a"].astype(str).to_numpy()
        out["text_b"] = frame["b"].astype(str).to_numpy()
    for field in ("text_a", "text_b"):
        bad = _first_bad((out[field].str.strip() == "").to_numpy(dtype=bool))
        if bad is not None:
            raise FairjudgeInputError(f"{_where(frame, bad)}: answer `{field[-1]}` is empty")
    if "reference" in frame.columns:
        out["reference"] = [r if isinstance(r, str) and r.strip() else None
                            for r in frame["reference"]]
    else:
        out["reference"] = None
    return out[list(PAIR_COLUMNS)]


def _question_lookup(table: pd.DataFrame) -> dict:
    """``question_id -> question`` of a questions table.

    A question id may repeat only with the same text (e.g. two files concatenated); two
    different texts under one id are an error naming both lines, never a silent choice.
    """
    _check_text_column(table, "question")
    bad = _first_bad(table["question_id"].isna().to_numpy(dtype=bool))
    if bad is not None:
        raise FairjudgeInputError(f"{_where(table, bad)}: field `question_id` is missing")
    qid = _ids_as_str(table["question_id"])
    lookup, first = {}, {}
    for position, (key, text) in enumerate(zip(qid, table["question"])):
        if key in lookup and lookup[key] != text:
            unit = table.attrs.get("location", "row")
            raise FairjudgeInputError(
                f"{table.attrs.get('source', 'questions')}: question id {key!r} is given "
                f"twice with different texts, at {unit}s {table.index[first[key]]} and "
                f"{table.index[position]}; question ids must be unique")
        lookup.setdefault(key, text)
        first.setdefault(key, position)
    return lookup
