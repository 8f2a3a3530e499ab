"""Humans as a judge: comparisons go to an annotation sheet, labels come back from it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd

from fairjudge._util._errors import RequestRejected
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._io import check_table_suffix, read_table, write_table
from fairjudge.data._schema import Outcome
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._types import Completion, JudgeRequest

#: Columns of an annotation sheet; annotators fill ``winner``.
SHEET_COLUMNS = ["item_a", "item_b", "sample", "question", "answer_a", "answer_b", "winner"]
_LABELS = {"a": Outcome.A, "b": Outcome.B, "tie": Outcome.TIE}


class HumanBackend(JudgeBackend):
    """A judge whose verdicts people give, through an annotation sheet (CSV or JSONL).

    A request whose comparison is labelled in the sheet is answered with that label. One
    that is not is written to the sheet (``item_a`` shown first, ``item_b``, the question and
    both answers, an empty ``winner``) and fails as *awaiting a label*; :attr:`awaiting`
    lists those comparisons. Annotators write ``a`` (the first-shown answer is better),
    ``b`` or ``tie`` in ``winner``; a later request reads them back (the sheet is read
    again whenever it changed), and a loop that stopped for labels (``select`` with a
    ``human`` judge), run again, resumes: every other judge's calls come from the cache,
    so the run retraces its path and goes on from the labels.

    Nothing is cached: the sheet is the record, and reading it again costs nothing.

    Parameters
    ----------
    labels : path
        The annotation sheet (``.csv`` or ``.jsonl``); created when missing.
    model : str
        The judge's name after ``human:`` in verdict tables.
    """

    name = "human"
    cacheable = False
    billed = False

    def __init__(self, labels, *, model: str = "annotators"):
        if labels is None:
            raise FairjudgeInputError("the human backend needs an annotation sheet "
                                      "(--human-labels FILE.csv or .jsonl)")
        self.path = Path(labels)
        check_table_suffix(self.path)
        self.model = str(model)
        self.awaiting: list[tuple] = []
        self._lock = asyncio.Lock()
        self._sheet = self._read()

    def _read(self) -> pd.DataFrame:
        self._mtime = self.path.stat().st_mtime_ns if self.path.exists() else None
        if not self.path.exists():
            return pd.DataFrame(columns=SHEET_COLUMNS)
        sheet = read_table(self.path)
        missing = [c for c in ("item_a", "item_b", "sample", "winner") if c not in sheet]
        if missing:
            raise FairjudgeInputError(f"{self.path}: an annotation sheet needs the column "
                                      f"`{missing[0]}` (columns: {', '.join(SHEET_COLUMNS)})")
        winner = sheet["winner"].astype("string").str.strip().str.lower()
        bad = winner.notna() & (winner != "") & ~winner.isin(list(_LABELS))
        if bad.any():
            row = sheet.index[bad.to_numpy()][0]
            raise FairjudgeInputError(
                f"{self.path} {sheet.attrs.get('location', 'row')} {row}: `winner` is "
                f"{sheet.loc[row, 'winner']!r}; write a (the first answer is better), b or "
                "tie, or leave it empty")
        return sheet.assign(winner=winner.where(winner != "", pd.NA))

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model, "sheet": str(self.path)}

    async def complete(self, request: JudgeRequest) -> Completion:
        meta = request.metadata
        try:
            key = (str(meta["item_a"]), str(meta["item_b"]), int(request.sample))
        except KeyError:
            raise FairjudgeInputError("a human judge needs request metadata `item_a` and "
                                      "`item_b`") from None
        async with self._lock:
            if self.path.exists() and self.path.stat().st_mtime_ns != self._mtime:
                self._sheet = self._read()  # annotators wrote labels since
            sheet = self._sheet
            match = sheet[(sheet["item_a"].astype(str) == key[0])
                          & (sheet["item_b"].astype(str) == key[1])
                          & (pd.to_numeric(sheet["sample"]) == key[2])]
            label = match["winner"].dropna()
            if len(label):
                if key in self.awaiting:
                    self.awaiting.remove(key)
                outcome = _LABELS[str(label.iloc[0])]
                return Completion(text=str(label.iloc[0]), outcome=outcome,
                                  finish_reason="human")
            if match.empty:
                row = {"item_a": key[0], "item_b": key[1], "sample": key[2],
                       "question": meta.get("question", ""),
                       "answer_a": meta.get("answer_a", ""),
                       "answer_b": meta.get("answer_b", ""), "winner": pd.NA}
                self._sheet = pd.concat([sheet, pd.DataFrame([row])], ignore_index=True)
                write_table(self._sheet[SHEET_COLUMNS], self.path)
                self._mtime = self.path.stat().st_mtime_ns
            if key not in self.awaiting:
                self.awaiting.append(key)
        raise RequestRejected(f"awaiting a human label in {self.path}: {key[0]} (shown first) "
                              f"vs {key[1]}")
