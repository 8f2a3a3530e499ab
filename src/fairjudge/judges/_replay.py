"""Replaying recorded verdicts as a judge, so every pipeline can run offline."""

from __future__ import annotations

import pandas as pd

from fairjudge._util._errors import JudgeBackendError
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._io import load_verdicts
from fairjudge.data._schema import Outcome
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._types import Completion, JudgeRequest

_OUTCOMES = {"a": Outcome.A, "b": Outcome.B, "tie": Outcome.TIE}
_LABEL_TEXT = {Outcome.A: "A", Outcome.B: "B", Outcome.TIE: "tie"}


class ReplayBackend(JudgeBackend):
    """Answers each request with the verdict recorded for the same ordered pair.

    The request's ``metadata`` must name the items as shown (``item_a`` first,
    ``item_b`` second). The ``sample``-th recorded verdict of that ordered pair is served
    (cycling if fewer were recorded); recorded parse failures (an empty ``winner``) come
    back as ``INVALID``.

    Parameters
    ----------
    verdicts : path or pandas.DataFrame
        Any fairjudge verdict table, or the ``verdicts`` of a recorded benchmark from
        :mod:`fairjudge.data` (rows with an empty winner are kept as invalid outputs).
    judge : str, optional
        Keep only this judge's verdicts (required if the table holds several judges).
    strategy : str, optional
        Keep only rows of this ``strategy`` column value.
    """

    name = "replay"
    cacheable = False

    def __init__(self, verdicts, *, judge: str | None = None, strategy: str | None = None):
        table = _load(verdicts)
        if strategy is not None:
            if "strategy" not in table.columns:
                raise FairjudgeInputError("`strategy` given but the verdict table has no strategy "
                                          "column")
            table = table[table["strategy"] == strategy]
        if "judge" in table.columns:
            judges = sorted(table["judge"].dropna().astype(str).unique())
            if judge is not None:
                table = table[table["judge"].astype(str) == judge]
            elif len(judges) > 1:
                raise FairjudgeInputError(f"the recorded verdicts come from several judges "
                                          f"({', '.join(judges[:6])}); choose one with `judge`")
            judge = judge or (judges[0] if judges else "recorded")
        if table.empty:
            raise FairjudgeInputError("no recorded verdicts left after filtering by judge/strategy")
        self.model = judge or "recorded"
        self._table: dict[tuple[str, str], list] = {}
        raw = table["raw"] if "raw" in table.columns else pd.Series(None, index=table.index)
        for a, b, w, r in zip(table["item_a"].astype(str), table["item_b"].astype(str),
                              table["winner"], raw):
            outcome = _OUTCOMES.get(str(w).strip().lower()) if pd.notna(w) else Outcome.INVALID
            if outcome is None:
                outcome = Outcome.INVALID
            text = r if isinstance(r, str) and r else _LABEL_TEXT.get(outcome, "")
            self._table.setdefault((a, b), []).append((outcome, text))

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model}

    def recorded(self, item_a: str, item_b: str) -> bool:
        """Whether a verdict with ``item_a`` shown first was recorded."""
        return (str(item_a), str(item_b)) in self._table

    async def complete(self, request: JudgeRequest) -> Completion:
        try:
            key = (str(request.metadata["item_a"]), str(request.metadata["item_b"]))
        except KeyError:
            raise JudgeBackendError("replay needs request metadata `item_a` and `item_b`") \
                from None
        recorded = self._table.get(key)
        if not recorded:
            raise JudgeBackendError(f"replay: no verdict recorded for {key[0]!r} shown before "
                                    f"{key[1]!r}")
        outcome, text = recorded[request.sample % len(recorded)]
        return Completion(text=text, outcome=outcome, finish_reason="recorded")


def _load(verdicts) -> pd.DataFrame:
    if isinstance(verdicts, pd.DataFrame) and verdicts["winner"].isna().any():
        return verdicts  # a recorded benchmark with parse failures: keep them as invalid
    return load_verdicts(verdicts)
