"""The verdict and item tables: column names, outcomes, and their validation.

A *verdict table* has one row per judge call that was actually shown to a judge:

=============== ======== ===============================================================
column          required meaning
=============== ======== ===============================================================
``item_a``      yes      id of the item shown **first**
``item_b``      yes      id of the item shown **second**
``winner``      yes      ``a`` (first-shown won), ``b`` (second-shown won) or ``tie``
``judge``       no       judge name; defaults to ``"judge"``
``question_id`` no       groups comparisons that answer the same prompt
``weight``      no       positive finite weight of the verdict; defaults to 1
``outcome_detail`` no    ``win``, ``tie``, ``abstain`` or ``invalid``; the last two carry
                         an empty ``winner`` and are kept but never fitted
=============== ======== ===============================================================

An *item table* has one row per item: ``id``, optional ``text``, numeric covariate columns
(``length``, ``markdown``, ...) and an optional ``quality`` column holding ground truth, which
is used for evaluation only and never as a covariate.

Item ids are normalised to strings in both tables so that ``1`` in a JSON verdict file and
``"1"`` in a CSV item file name the same item.
"""

from __future__ import annotations

from enum import Enum

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError

VERDICT_REQUIRED = ("item_a", "item_b", "winner")
VERDICT_OPTIONAL = ("judge", "question_id", "weight")
DEFAULT_JUDGE = "judge"
ITEM_RESERVED = ("id", "text", "quality")

#: Score credited to the first-shown item for each outcome.  A tie is half a win for each
#: side; this one rule is used by every model in :mod:`fairjudge.models`.
TIE_SCORE = 0.5


class Outcome(str, Enum):
    """The outcome of one judge call, in the frame of the order shown."""

    A = "a"
    """The first-shown item won."""
    B = "b"
    """The second-shown item won."""
    TIE = "tie"
    """The judge declared a tie."""
    ABSTAIN = "abstain"
    """No verdict by design (e.g. an order-inconsistent pair under consistent-wins-only)."""
    INVALID = "invalid"
    """The judge's output could not be parsed; never mapped to a side."""

    @property
    def first_score(self) -> float:
        """Credit to the first-shown item: 1, 0 or :data:`TIE_SCORE`; NaN if no verdict."""
        return {Outcome.A: 1.0, Outcome.B: 0.0, Outcome.TIE: TIE_SCORE}.get(self, float("nan"))

    def swapped(self) -> "Outcome":
        """The same verdict expressed in the other presentation order."""
        return {Outcome.A: Outcome.B, Outcome.B: Outcome.A}.get(self, self)


WINNER_VALUES = (Outcome.A.value, Outcome.B.value, Outcome.TIE.value)
#: Values of the optional ``outcome_detail`` column: a decisive verdict, a declared tie, an
#: abstention by design (order-inconsistent pair) or an unparseable output.
OUTCOME_DETAILS = ("win", "tie", "abstain", "invalid")
ARENA_WINNERS = {
    "model_a": Outcome.A.value,
    "model_b": Outcome.B.value,
    "tie": Outcome.TIE.value,
    "tie (bothbad)": Outcome.TIE.value,
}


def _where(frame: pd.DataFrame, position: int) -> str:
    """``"verdicts.jsonl line 17"`` for the row at ``position`` of a loaded table."""
    source = frame.attrs.get("source", "<table>")
    unit = frame.attrs.get("location", "row")
    return f"{source} {unit} {frame.index[position]}"


def _first_bad(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _ids_as_str(values: pd.Series) -> pd.Series:
    """Normalise ids: integral floats (1.0 from a CSV with blanks) print as ``1``."""
    if pd.api.types.is_float_dtype(values):
        finite = values.dropna()
        if (finite == np.round(finite)).all():
            values = values.astype("Int64")
    out = values.astype("string")
    return out.str.strip()


def validate_verdicts(frame: pd.DataFrame) -> pd.DataFrame:
    """Validate and normalise a verdict table (or a Chatbot Arena battle table).

    Parameters
    ----------
    frame : pandas.DataFrame
        Raw table. ``frame.attrs["source"]`` (a file name) and ``frame.attrs["location"]``
        (``"line"`` or ``"row"``) are used in error messages; the index holds line numbers.

    Returns
    -------
    pandas.DataFrame
        Columns ``item_a``, ``item_b`` (strings), ``winner`` (``a``/``b``/``tie``),
        ``judge`` (string), ``weight`` (float), ``question_id`` if present, and any other
        columns unchanged.

    Raises
    ------
    FairjudgeInputError
        Naming the file, line and field of the first bad record.
    """
    source = frame.attrs.get("source", "<table>")
    if len(frame) == 0:
        raise FairjudgeInputError(f"{source}: no verdicts found; expected one verdict per row")
    frame = frame.copy()
    if "item_a" not in frame.columns and {"model_a", "model_b"} <= set(frame.columns):
        frame = _from_arena(frame)
    for field in VERDICT_REQUIRED:
        if field not in frame.columns:
            raise FairjudgeInputError(
                f"{source}: missing field `{field}`; a verdict table needs item_a, item_b, winner"
                f" (or the Chatbot Arena columns model_a, model_b, winner); found "
                f"{', '.join(map(str, frame.columns))}"
            )
    for field in ("item_a", "item_b"):
        bad = _first_bad(frame[field].isna().to_numpy())
        if bad is not None:
            raise FairjudgeInputError(f"{_where(frame, bad)}: field `{field}` is missing")
        frame[field] = _ids_as_str(frame[field])
        bad = _first_bad((frame[field] == "").to_numpy(dtype=bool))
        if bad is not None:
            raise FairjudgeInputError(f"{_where(frame, bad)}: field `{field}` is empty")
    same = _first_bad((frame["item_a"] == frame["item_b"]).to_numpy(dtype=bool))
    if same is not None:
        raise FairjudgeInputError(
            f"{_where(frame, same)}: `item_a` and `item_b` are the same item "
            f"{frame['item_a'].iloc[same]!r}; a comparison needs two different items"
        )
    winner = frame["winner"].astype("string").str.strip().str.lower()
    no_verdict = np.zeros(len(frame), dtype=bool)
    if "outcome_detail" in frame.columns:
        detail = frame["outcome_detail"].astype("string").str.strip().str.lower()
        bad = _first_bad((~detail.isin(OUTCOME_DETAILS)).to_numpy(dtype=bool))
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: field `outcome_detail` must be one of "
                f"{', '.join(OUTCOME_DETAILS)}; got {frame['outcome_detail'].iloc[bad]!r}")
        # Abstentions and unparseable outputs are kept in the table with an empty winner.
        no_verdict = detail.isin(("abstain", "invalid")).to_numpy(dtype=bool)
        expected = detail.map({"win": "decisive", "tie": "tie"})
        given = winner.map({"a": "decisive", "b": "decisive", "tie": "tie"})
        clash = (~no_verdict) & (expected != given).fillna(True).to_numpy(dtype=bool)
        clash |= no_verdict & winner.notna().to_numpy(dtype=bool)
        bad = _first_bad(clash)
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: field `winner` {frame['winner'].iloc[bad]!r} does not "
                f"match `outcome_detail` {frame['outcome_detail'].iloc[bad]!r} (win needs a or "
                "b, tie needs tie, abstain and invalid need an empty winner)")
        frame["outcome_detail"] = detail.astype(str)
    bad = _first_bad(((~winner.isin(WINNER_VALUES)) & ~no_verdict).to_numpy(dtype=bool))
    if bad is not None:
        raise FairjudgeInputError(
            f"{_where(frame, bad)}: field `winner` must be one of a, b, tie; "
            f"got {frame['winner'].iloc[bad]!r}"
        )
    frame["winner"] = winner.where(~pd.Series(no_verdict, index=frame.index)).astype(object)
    frame.loc[no_verdict, "winner"] = None
    if "judge" in frame.columns:
        missing = frame["judge"].isna()
        frame["judge"] = frame["judge"].astype("string").fillna(DEFAULT_JUDGE).astype(str)
        frame.loc[missing.to_numpy(), "judge"] = DEFAULT_JUDGE
    else:
        frame["judge"] = DEFAULT_JUDGE
    if "weight" in frame.columns:
        # A record that omits the optional weight (a JSONL line without it) weighs 1.
        raw = frame["weight"].where(frame["weight"].notna(), 1.0)
        weight = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        bad = _first_bad(~(np.isfinite(weight) & (weight > 0)))
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: field `weight` must be a positive finite number; "
                f"got {frame['weight'].iloc[bad]!r}"
            )
        frame["weight"] = weight
    else:
        frame["weight"] = 1.0
    if "question_id" in frame.columns:
        frame["question_id"] = _ids_as_str(frame["question_id"])
    return frame


def _from_arena(frame: pd.DataFrame) -> pd.DataFrame:
    """Map Chatbot Arena battles (``model_a``, ``model_b``, ``winner``) to verdict columns."""
    raw = frame["winner"].astype("string").str.strip().str.lower()
    mapped = raw.map(ARENA_WINNERS)
    bad = _first_bad(mapped.isna().to_numpy(dtype=bool))
    if bad is not None:
        raise FairjudgeInputError(
            f"{_where(frame, bad)}: field `winner` must be one of model_a, model_b, tie, "
            f"tie (bothbad) in the Chatbot Arena format; got {frame['winner'].iloc[bad]!r}"
        )
    out = frame.rename(columns={"model_a": "item_a", "model_b": "item_b"})
    out["winner"] = mapped.astype(str)
    return out


def validate_items(frame: pd.DataFrame, covariates: list[str] | None = None) -> pd.DataFrame:
    """Validate and normalise an item table.

    Parameters
    ----------
    frame : pandas.DataFrame
        Raw table with an ``id`` column.
    covariates : list of str, optional
        Covariate columns to keep. By default every numeric column other than ``quality``
        is a covariate.

    Returns
    -------
    pandas.DataFrame
        Indexed by the string item id, with ``text`` and ``quality`` if present and the
        covariate columns as float; ``frame.attrs["covariates"]`` lists the covariates.

    Raises
    ------
    FairjudgeInputError
        On an empty table, a missing or duplicate id, an unknown or non-numeric covariate,
        or a missing (NaN) covariate value, naming file, line and field.
    """
    source = frame.attrs.get("source", "<table>")
    if len(frame) == 0:
        raise FairjudgeInputError(f"{source}: no items found; expected one item per row")
    if "id" not in frame.columns:
        raise FairjudgeInputError(
            f"{source}: missing field `id`; found {', '.join(map(str, frame.columns))}"
        )
    frame = frame.copy()
    bad = _first_bad(frame["id"].isna().to_numpy())
    if bad is not None:
        raise FairjudgeInputError(f"{_where(frame, bad)}: field `id` is missing")
    frame["id"] = _ids_as_str(frame["id"])
    duplicated = frame["id"].duplicated(keep=False).to_numpy(dtype=bool)
    if duplicated.any():
        rows = np.flatnonzero(duplicated)
        dup_id = frame["id"].iloc[rows[0]]
        rows = rows[(frame["id"].iloc[rows] == dup_id).to_numpy(dtype=bool)]
        unit = frame.attrs.get("location", "row")
        where = ", ".join(str(frame.index[r]) for r in rows[:5])
        raise FairjudgeInputError(
            f"{source}: duplicate item id {dup_id!r} at {unit}s {where}; ids must be unique"
        )
    if covariates is None:
        covariates = [
            c
            for c in frame.columns
            if c not in ITEM_RESERVED
            and pd.api.types.is_numeric_dtype(frame[c])
            and not pd.api.types.is_bool_dtype(frame[c])
        ] + [c for c in frame.columns if pd.api.types.is_bool_dtype(frame[c])]
    else:
        covariates = list(covariates)
        for name in covariates:
            if name not in frame.columns:
                numeric = [
                    c
                    for c in frame.columns
                    if c not in ITEM_RESERVED and pd.api.types.is_numeric_dtype(frame[c])
                ]
                raise FairjudgeInputError(
                    f"{source}: covariate `{name}` is not a column; numeric columns are "
                    f"{', '.join(numeric) or 'none'}"
                )
            if name in ITEM_RESERVED:
                raise FairjudgeInputError(
                    f"{source}: `{name}` cannot be a covariate (reserved column)"
                )
    for name in covariates:
        values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
        bad = _first_bad(~np.isfinite(values))
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: covariate `{name}` must be a finite number; "
                f"got {frame[name].iloc[bad]!r}"
            )
        frame[name] = values
    if "quality" in frame.columns:
        quality = pd.to_numeric(frame["quality"], errors="coerce").to_numpy(dtype=float)
        bad = _first_bad(~np.isfinite(quality))
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: field `quality` must be a finite number; "
                f"got {frame['quality'].iloc[bad]!r}"
            )
        frame["quality"] = quality
    keep = ["id"] + [c for c in ("text", "quality") if c in frame.columns] + covariates
    attrs = dict(frame.attrs)
    out = frame[keep].set_index("id")
    out.attrs = attrs
    out.attrs["covariates"] = list(covariates)
    return out


def check_verdict_items(verdicts: pd.DataFrame, items: pd.DataFrame) -> None:
    """Raise if a verdict names an item absent from the item table.

    Raises
    ------
    FairjudgeInputError
        ``"verdicts.jsonl line 4: field `item_b` names unknown item 'x'; it is not in
        items.csv"``.
    """
    for field in ("item_a", "item_b"):
        unknown = ~verdicts[field].isin(items.index).to_numpy(dtype=bool)
        bad = _first_bad(unknown)
        if bad is not None:
            items_source = items.attrs.get("source", "the item table")
            raise FairjudgeInputError(
                f"{_where(verdicts, bad)}: field `{field}` names unknown item "
                f"{verdicts[field].iloc[bad]!r}; it is not in {items_source}"
            )
