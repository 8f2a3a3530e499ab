"""The verdict and item tables: column names, outcomes, and their validation.

A *verdict table* has one row per judge call that was actually shown to a judge. Every
producer (``fairjudge judge``, the recorded-dataset loaders, probes, the active loop) writes
it and every consumer (``audit``, ``compare``, ``rank``, ``select``) reads it:

================== ======== ============================================================
column             required meaning
================== ======== ============================================================
``item_a``         yes      id of the item shown **first**
``item_b``         yes      id of the item shown **second**
``winner``         yes      ``a`` (first-shown won), ``b`` (second-shown won) or ``tie``;
                            empty when ``outcome_detail`` is ``abstain`` or ``invalid``
``judge``          no       judge name; defaults to ``"judge"``
``question_id``    no       groups comparisons that answer the same prompt
``weight``         no       positive finite weight of the verdict; defaults to 1
``pair_id``        no       the comparison this call belongs to: both presentation orders
                            and every repeated sample of one pair share it
``order``          no       ``ab`` if the pair's own first item was shown first, ``ba`` if
                            it was shown second
``strategy``       no       prompting/aggregation strategy (``B0``, ``S1``, ...)
``sample``         no       index of a deliberate repeat of an identical call (0, 1, ...);
                            defaults to 0
``outcome_detail`` no       ``win``, ``tie``, ``abstain`` or ``invalid``; the last two carry
                            an empty ``winner`` and are kept but never fitted
``cost``           no       dollars the call cost when it was paid (priced from its usage;
                            empty when unknown); a cached row keeps its cost, and
                            ``cached`` says whether this run paid it
``raw``            no       the judge's raw output
``answer_has_``    no       booleans: the pair's answers hold verdict tokens (``[[A]]``,
``verdict_tokens``,         ``Verdict: A``) or prompt delimiters, flagged before judging
``answer_has_``             (:data:`INJECTION_FLAGS`, :func:`fairjudge.strategies.injection_flags`)
``delimiters``
``<name>_a``,      no       a per-verdict covariate (e.g. ``length_a``, ``length_b``): its
``<name>_b``                value for the first- and second-shown answer, when it is a
                            property of this battle rather than of the item (Chatbot Arena's
                            style control); or ``<name>_diff``, the first minus the second
================== ======== ============================================================

Nothing downstream reconstructs a pair or an order from the spelling of item ids: the pair
of a verdict is its ``pair_id`` (or, without that column, its unordered item pair within
``question_id``), and its orientation is its ``order`` (or, without that column, whether it
shows the pair's items in the order of the pair's first verdict in the table). See
:func:`verdict_pairs`.

An *item table* has one row per item: ``id``, optional ``text``, numeric covariate columns
(``length``, ``markdown``, ...) and an optional ``quality`` column holding ground truth, which
is used for evaluation only and never as a covariate.

Item ids are normalised to strings in both tables so that ``1`` in a JSON verdict file and
``"1"`` in a CSV item file name the same item.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError

VERDICT_REQUIRED = ("item_a", "item_b", "winner")
#: Flags of a pair whose answers could steer a judge: verdict tokens, prompt delimiters.
INJECTION_FLAGS = ("answer_has_verdict_tokens", "answer_has_delimiters")
#: Optional fields that validation checks and every consumer may read (not the judge's text).
VERDICT_BOOKKEEPING = ("judge", "question_id", "weight", "pair_id", "order", "strategy",
                       "sample", "outcome_detail", "cost")
VERDICT_OPTIONAL = (*VERDICT_BOOKKEEPING, "raw", *INJECTION_FLAGS)
#: Columns of a Chatbot Arena battle table that stand for ``item_a`` and ``item_b``.
ARENA_COLUMNS = ("model_a", "model_b")
#: Values of the ``order`` column: the pair's own first item shown first, or second.
ORDERS = ("ab", "ba")
#: Suffixes of per-verdict covariate columns (values for the first- and second-shown answer,
#: or their difference).
VERDICT_COVARIATE_SUFFIXES = ("_a", "_b", "_diff")
DEFAULT_JUDGE = "judge"
ITEM_RESERVED = ("id", "text", "quality")
#: Item columns that hold labels, never covariates by default, even when their values look
#: like numbers (``"question_id": 81``).
ITEM_LABELS = ("question_id", "question", "source")
#: Item columns fitted as covariates when none are named: the presentation features that
#: `fairjudge.data.text_features` measures (words, markdown markers) and the simulator's
#: binary verbosity flag [bias-aware-active-topk §4.1]. Other numeric columns are fitted
#: only when named (a score, a count or an id that happens to be a number is not a bias).
DEFAULT_COVARIATES = ("length", "markdown", "verbose")
#: A column is a covariate by default when at least this share of its non-missing values
#: are numbers (see :func:`validate_items`).
NUMERIC_SHARE = 0.5

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
#: The values of a validated ``winner`` column, by position in :data:`WINNER_VALUES`; the
#: last (index -1) stands for a verdict without a winner.
_WINNER_OBJECTS = np.array([*WINNER_VALUES, None], dtype=object)
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


def require_fields(frame: pd.DataFrame, fields, *, noun: str, needs: str) -> str:
    """The table's source name, after checking it has rows and every one of ``fields``.

    Raises
    ------
    FairjudgeInputError
        ``"gold.jsonl: no gold labels found"``, or ``"pairs.jsonl: missing field `b`;
        <needs>"``.
    """
    source = frame.attrs.get("source", noun)
    if len(frame) == 0:
        raise FairjudgeInputError(f"{source}: no {noun} found")
    for field in fields:
        if field not in frame.columns:
            raise FairjudgeInputError(f"{source}: missing field `{field}`; {needs}")
    return source


def _first_bad(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _stripped(values: pd.Series, *, lower: bool = False) -> pd.Series:
    """``values`` as ``"string"`` dtype without surrounding whitespace (and lower-cased),
    missing values as ``<NA>``.

    A column of Python strings is normalised once per distinct value and spread back by
    code: per-row string methods in Python were most of the time it took to validate a
    million verdicts that name a thousand items. Other columns (Arrow-backed strings,
    numbers) are converted whole.
    """
    codes = None
    if values.dtype == object and pd.api.types.infer_dtype(values, skipna=True) == "string":
        codes, uniques = pd.factorize(values)
        original, values = values, pd.Series(np.asarray(uniques, dtype=object), dtype=object)
    out = values.astype("string").str.strip()
    if lower:
        out = out.str.lower()
    if codes is None:
        return out
    # Code -1 (a missing value) becomes <NA>.
    return pd.Series(out.array.take(codes, allow_fill=True), index=original.index,
                     name=original.name)


def _ids_as_str(values: pd.Series) -> pd.Series:
    """Normalise ids: integral floats (1.0 from a CSV with blanks) print as ``1``."""
    if pd.api.types.is_float_dtype(values):
        finite = values.dropna()
        if (finite == np.round(finite)).all():
            values = values.astype("Int64")
    return _stripped(values)


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
    if "item_a" not in frame.columns and set(ARENA_COLUMNS) <= set(frame.columns):
        frame = _from_arena(frame)
    for field in VERDICT_REQUIRED:
        if field not in frame.columns:
            raise FairjudgeInputError(
                f"{source}: missing field `{field}`; a verdict table needs item_a, item_b, winner"
                f" (or the Chatbot Arena columns model_a, model_b, winner); found "
                f"{', '.join(map(str, frame.attrs.get('file_columns', frame.columns)))}"
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
    winner = _stripped(frame["winner"], lower=True)
    winner = winner.mask(winner == "")
    no_verdict = np.zeros(len(frame), dtype=bool)
    if "outcome_detail" in frame.columns:
        detail = _stripped(frame["outcome_detail"], lower=True)
        # A row without a detail (a table where only invalid outputs are marked) takes the
        # one its winner implies.
        implied = winner.map({"a": "win", "b": "win", "tie": "tie"})
        detail = detail.where(detail.notna() & (detail != ""), implied)
        bad = _first_bad(detail.isna().to_numpy(dtype=bool))
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: field `winner` is missing; a call without a verdict "
                "needs `outcome_detail` invalid (unparseable output) or abstain")
        bad = _first_bad((~detail.isin(OUTCOME_DETAILS)).fillna(True).to_numpy(dtype=bool))
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
    outcome = positions_in(winner, pd.Index(WINNER_VALUES))  # -1: missing or not a winner
    bad = _first_bad((outcome < 0) & ~no_verdict)
    if bad is not None:
        raise FairjudgeInputError(
            f"{_where(frame, bad)}: field `winner` must be one of a, b, tie; "
            f"got {frame['winner'].iloc[bad]!r}"
        )
    outcome[no_verdict] = -1
    # Taken from one object per value (not a fresh string per row), so that every later
    # comparison or factorisation of the column is by identity; None where no verdict.
    frame["winner"] = pd.Series(_WINNER_OBJECTS[outcome], index=frame.index, dtype=object)
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
    _validate_call_columns(frame)
    return frame


def _validate_call_columns(frame: pd.DataFrame) -> None:
    """Validate and normalise ``pair_id``, ``order``, ``sample``, ``cost``, ``strategy`` and
    ``raw`` in place, and check that each ``pair_id`` names one pair of items."""
    if "pair_id" in frame.columns:
        bad = _first_bad(frame["pair_id"].isna().to_numpy())
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: field `pair_id` is missing; in a table with pair ids "
                "every verdict needs one")
        frame["pair_id"] = _ids_as_str(frame["pair_id"])
    if "order" in frame.columns:
        order = _stripped(frame["order"], lower=True)
        bad = _first_bad((~order.isin(ORDERS)).fillna(True).to_numpy(dtype=bool))
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: field `order` must be ab (the pair's first item shown "
                f"first) or ba; got {frame['order'].iloc[bad]!r}")
        frame["order"] = order.astype(str)
    if "sample" in frame.columns:
        raw = frame["sample"].where(frame["sample"].notna(), 0)
        sample = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        bad = _first_bad(~(np.isfinite(sample) & (sample >= 0) & (sample == np.round(sample))))
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: field `sample` must be a non-negative integer; got "
                f"{frame['sample'].iloc[bad]!r}")
        frame["sample"] = sample.astype(np.int64)
    if "cost" in frame.columns:
        cost = pd.to_numeric(frame["cost"], errors="coerce").to_numpy(dtype=float)
        given = frame["cost"].notna().to_numpy()
        bad = _first_bad(given & ~(np.isfinite(cost) & (cost >= 0)))
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: field `cost` must be a non-negative number of dollars "
                f"(or empty when unknown); got {frame['cost'].iloc[bad]!r}")
        frame["cost"] = cost
    for field in ("strategy", "raw"):
        if field in frame.columns:
            frame[field] = frame[field].astype("string")
    if "pair_id" in frame.columns:
        _check_pairs_consistent(frame)


def _check_pairs_consistent(frame: pd.DataFrame) -> None:
    """Every verdict with one ``pair_id`` must show the same two items (in the orientation
    its ``order`` states, when the table has that column)."""
    first = frame["item_a"].to_numpy(dtype=object)
    second = frame["item_b"].to_numpy(dtype=object)
    if "order" in frame.columns:
        swapped = (frame["order"] == "ba").to_numpy(dtype=bool)
        own_a = np.where(swapped, second, first)
        own_b = np.where(swapped, first, second)
    else:
        own_a = np.where(first < second, first, second)
        own_b = np.where(first < second, second, first)
    codes, uniques = pd.factorize(frame["pair_id"])
    first_row = np.empty(len(uniques), dtype=np.int64)
    first_row[codes[::-1]] = np.arange(len(codes))[::-1]
    reference = first_row[codes]
    bad = _first_bad((own_a != own_a[reference]) | (own_b != own_b[reference]))
    if bad is not None:
        ref = int(reference[bad])
        stated = " (in the orientation its `order` states)" if "order" in frame.columns else ""
        raise FairjudgeInputError(
            f"{_where(frame, bad)}: pair {frame['pair_id'].iloc[bad]!r} shows items "
            f"({own_a[bad]!r}, {own_b[bad]!r}) but {_where(frame, ref)} shows it as "
            f"({own_a[ref]!r}, {own_b[ref]!r}){stated}; one pair id must name one pair")


@dataclass(frozen=True)
class VerdictPairs:
    """The comparison unit of each verdict, independent of how item ids are spelled.

    Attributes
    ----------
    code : ndarray of int64, shape (M,)
        Index of the verdict's pair (into ``keys``).
    keys : tuple of str
        The pair ids (``pair_id`` values, or ``question_id`` + item pair without them).
    own_order : ndarray of bool, shape (M,)
        True where the verdict shows the pair's own first item first (``order == "ab"``, or
        without an ``order`` column, the orientation of the pair's first verdict).
    own_a, own_b : ndarray of object, shape (M,)
        The pair's own first and second item for each verdict.
    """

    code: np.ndarray
    keys: tuple
    own_order: np.ndarray
    own_a: np.ndarray
    own_b: np.ndarray


def verdict_pairs(verdicts: pd.DataFrame) -> VerdictPairs:
    """The pair and orientation of every verdict of a validated table.

    With a ``pair_id`` column the pair is the pair id; without one it is the unordered pair
    of items within ``question_id`` (when present). With an ``order`` column the orientation
    is ``order``; without one a pair's own order is that of its first verdict in the table.
    Nothing depends on how the ids are spelled, so relabelling items changes no result.

    Examples
    --------
    >>> import pandas as pd
    >>> v = validate_verdicts(pd.DataFrame({"item_a": ["x", "y"], "item_b": ["y", "x"],
    ...                                     "winner": ["a", "b"]}))
    >>> p = verdict_pairs(v)
    >>> p.code.tolist(), p.own_order.tolist()
    ([0, 0], [True, False])
    """
    first = verdicts["item_a"].to_numpy(dtype=object)
    second = verdicts["item_b"].to_numpy(dtype=object)
    if "pair_id" in verdicts.columns:
        codes, uniques = pd.factorize(verdicts["pair_id"].astype(str))
        keys = tuple(str(u) for u in uniques)
    else:
        lo = np.where(first < second, first, second)
        hi = np.where(first < second, second, first)
        label = pd.Series(lo, dtype=object).astype(str) + "\x1f" + pd.Series(hi, dtype=object)\
            .astype(str)
        if "question_id" in verdicts.columns:
            label = verdicts["question_id"].astype(str).reset_index(drop=True) + "\x1f" + label
        codes, uniques = pd.factorize(label)
        keys = tuple(str(u) for u in uniques)
    codes = codes.astype(np.int64)
    if "order" in verdicts.columns:
        own_order = (verdicts["order"].astype(str) == "ab").to_numpy(dtype=bool)
    else:
        first_row = np.empty(len(keys), dtype=np.int64)
        first_row[codes[::-1]] = np.arange(len(codes))[::-1]
        own_order = first == first[first_row[codes]]
    own_a = np.where(own_order, first, second)
    own_b = np.where(own_order, second, first)
    return VerdictPairs(codes, keys, own_order, own_a, own_b)


def verdict_covariate_columns(verdicts: pd.DataFrame, name: str) -> tuple[str, ...] | None:
    """The columns holding per-verdict covariate ``name``: ``(name_a, name_b)``,
    ``(name_diff,)``, or None when the table has neither."""
    if f"{name}_a" in verdicts.columns and f"{name}_b" in verdicts.columns:
        return (f"{name}_a", f"{name}_b")
    if f"{name}_diff" in verdicts.columns:
        return (f"{name}_diff",)
    return None


def verdict_covariate_differences(verdicts: pd.DataFrame, names) -> np.ndarray:
    """Per-verdict covariates as differences, first-shown minus second-shown; shape (M, d).

    Parameters
    ----------
    verdicts : pandas.DataFrame
        A validated verdict table with ``<name>_a`` and ``<name>_b`` (or ``<name>_diff``)
        columns for every name.
    names : sequence of str

    Raises
    ------
    FairjudgeInputError
        When a covariate's columns are missing, or a value of a verdict that carries a
        winner is not a finite number (naming the file, line and column).
    """
    has_winner = verdicts["winner"].notna().to_numpy(dtype=bool)
    out = np.zeros((len(verdicts), len(names)))
    for m, name in enumerate(names):
        columns = verdict_covariate_columns(verdicts, name)
        if columns is None:
            raise FairjudgeInputError(
                f"{verdicts.attrs.get('source', 'verdicts')}: per-verdict covariate `{name}` "
                f"needs columns `{name}_a` and `{name}_b` (values for the first- and "
                f"second-shown answer) or `{name}_diff`")
        values = []
        for column in columns:
            numeric = pd.to_numeric(verdicts[column], errors="coerce").to_numpy(dtype=float)
            bad = _first_bad(has_winner & ~np.isfinite(numeric))
            if bad is not None:
                raise FairjudgeInputError(
                    f"{_where(verdicts, bad)}: covariate column `{column}` must be a finite "
                    f"number; got {verdicts[column].iloc[bad]!r}")
            values.append(numeric)
        out[:, m] = values[0] - values[1] if len(values) == 2 else values[0]
    out[~has_winner] = 0.0
    return out


def _from_arena(frame: pd.DataFrame) -> pd.DataFrame:
    """Map Chatbot Arena battles (``model_a``, ``model_b``, ``winner``) to verdict columns."""
    arena = positions_in(_stripped(frame["winner"], lower=True), pd.Index(list(ARENA_WINNERS)))
    bad = _first_bad(arena < 0)
    if bad is not None:
        raise FairjudgeInputError(
            f"{_where(frame, bad)}: field `winner` must be one of model_a, model_b, tie, "
            f"tie (bothbad) in the Chatbot Arena format; got {frame['winner'].iloc[bad]!r}"
        )
    out = frame.rename(columns={"model_a": "item_a", "model_b": "item_b"})
    out["winner"] = pd.Series(np.array(list(ARENA_WINNERS.values()), dtype=object)[arena],
                              index=out.index, dtype=object)
    return out


def _number(value) -> float | None:
    """``value`` as a float if it is a number, a boolean or a string that reads as a number
    (``"12"``, ``" 3.5 "``: every CSV value is a string, so JSON and CSV agree); NaN if it
    is missing; None if it is anything else (``"long"``, a list, an object)."""
    if is_missing(value) or value is pd.NaT:
        return float("nan")
    if isinstance(value, (bool, np.bool_, int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, str):
        if not value.strip():
            return float("nan")
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _numbers(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Float values of a column and a mask of the values that are not numbers at all."""
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        numeric = values.to_numpy(dtype=float, na_value=np.nan)
        return numeric, np.zeros(len(values), dtype=bool)
    parsed = [_number(v) for v in values]
    not_number = np.array([p is None for p in parsed], dtype=bool)
    numeric = np.array([np.nan if p is None else p for p in parsed], dtype=float)
    return numeric, not_number


def _default_covariates(frame: pd.DataFrame) -> list[str]:
    """The columns of :data:`DEFAULT_COVARIATES` the table has."""
    return [c for c in DEFAULT_COVARIATES if c in frame.columns]


def _numeric_columns(frame: pd.DataFrame) -> list[str]:
    """Every column whose non-missing values are mostly numbers (booleans last), except the
    reserved and label columns: the columns that could be covariates."""
    numeric, flags = [], []
    for column in frame.columns:
        if column in ITEM_RESERVED or column in ITEM_LABELS:
            continue
        values = frame[column]
        if pd.api.types.is_bool_dtype(values):
            flags.append(column)
            continue
        if pd.api.types.is_numeric_dtype(values):
            numeric.append(column)
            continue
        present = values.notna().to_numpy(dtype=bool)
        if not present.any():
            continue
        parsed, not_number = _numbers(values[present])
        if (~not_number & ~np.isnan(parsed)).mean() >= NUMERIC_SHARE:
            # A numeric column with a few bad values: an error below, never a silent drop.
            numeric.append(column)
    return numeric + flags


def _check_text_column(frame: pd.DataFrame, field: str) -> None:
    """Every present value of ``field`` must be a string (not a number, list or object)."""
    if field not in frame.columns:
        return
    values = frame[field]
    bad = _first_bad(np.array([not (isinstance(v, str) or is_missing(v)) for v in values],
                              dtype=bool))
    if bad is not None:
        value = values.iloc[bad]
        kind = ("a boolean" if isinstance(value, (bool, np.bool_)) else
                "a number" if isinstance(value, (int, float, np.number)) else
                "a list" if isinstance(value, (list, tuple, np.ndarray)) else
                "an object" if isinstance(value, dict) else type(value).__name__)
        raise FairjudgeInputError(
            f"{_where(frame, bad)}: field `{field}` must be a string (a text in quotes); got "
            f"{kind}, {value!r}")


def is_missing(value) -> bool:
    """None, NaN or pd.NA: a value the record does not give."""
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def validate_items(frame: pd.DataFrame, covariates: list[str] | None = None) -> pd.DataFrame:
    """Validate and normalise an item table.

    Parameters
    ----------
    frame : pandas.DataFrame
        Raw table with an ``id`` column.
    covariates : list of str, optional
        Covariate columns. By default those of :data:`DEFAULT_COVARIATES` (``length``,
        ``markdown``, ``verbose``) the table has; other numeric columns are listed in
        ``attrs["unused_numeric"]`` and fitted only when named. A number may be written as
        a string (``"12"``) in JSON as it is in CSV; any other value in a covariate column
        (``"long"``, a missing value) is an error, so a stray value never silently removes
        a covariate.

    Returns
    -------
    pandas.DataFrame
        Indexed by the string item id, with every column of the input (``text``,
        ``source``, ``question_id``, ...), ``quality`` and the covariate columns as float;
        ``frame.attrs["covariates"]`` lists the covariates.

    Raises
    ------
    FairjudgeInputError
        On an empty table, a missing or duplicate id, a ``text`` that is not a string, an
        unknown covariate, or a covariate or ``quality`` value that is not a finite number,
        naming file, line and field.

    Examples
    --------
    >>> import pandas as pd
    >>> items = validate_items(pd.DataFrame({"id": [1, 2], "length": [10, "12"],
    ...                                      "source": ["a", "b"]}))
    >>> items.attrs["covariates"], items["length"].tolist()
    (['length'], [10.0, 12.0])
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
    _check_text_column(frame, "text")
    if covariates is None:
        covariates = _default_covariates(frame)
        unused = [c for c in _numeric_columns(frame) if c not in covariates]
    else:
        unused = []
        covariates = list(covariates)
        for name in covariates:
            if name not in frame.columns:
                numeric = _numeric_columns(frame)
                raise FairjudgeInputError(
                    f"{source}: covariate `{name}` is not a column; numeric columns are "
                    f"{', '.join(numeric) or 'none'}"
                )
            if name in ITEM_RESERVED:
                raise FairjudgeInputError(
                    f"{source}: `{name}` cannot be a covariate (reserved column)"
                )
    for name in covariates:
        values, _ = _numbers(frame[name])
        bad = _first_bad(~np.isfinite(values))
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: covariate `{name}` must be a finite number; "
                f"got {frame[name].iloc[bad]!r}"
            )
        frame[name] = values
    if "quality" in frame.columns:
        quality, _ = _numbers(frame["quality"])
        bad = _first_bad(~np.isfinite(quality))
        if bad is not None:
            raise FairjudgeInputError(
                f"{_where(frame, bad)}: field `quality` must be a finite number; "
                f"got {frame['quality'].iloc[bad]!r}"
            )
        frame["quality"] = quality
    # Every column is kept (text, source, family, question_id, ...); only the covariates
    # are coerced to float and listed in attrs["covariates"].
    attrs = dict(frame.attrs)
    out = frame.set_index("id")
    out.attrs = attrs
    out.attrs["covariates"] = list(covariates)
    # Numeric columns left out by default: reported, so a user sees what was not fitted.
    out.attrs["unused_numeric"] = unused
    return out


def positions_in(values: pd.Series, index: pd.Index) -> np.ndarray:
    """Position of each value in ``index`` (a unique index); -1 for a value not in it or
    missing.

    The distinct values are hashed once (``pd.factorize``) and only those are looked up, so a
    column of a million verdicts over a thousand items costs one pass over its rows.

    Returns
    -------
    ndarray of int64, shape (len(values),)
    """
    codes, uniques = pd.factorize(values)
    # Code -1 (a missing value) picks the trailing -1.
    return np.append(index.get_indexer(uniques), -1).astype(np.int64)[codes]


def unknown_item_error(verdicts: pd.DataFrame, items: pd.DataFrame, field: str,
                       position: int) -> FairjudgeInputError:
    """The error for the verdict at ``position`` whose ``field`` is not in ``items``."""
    items_source = items.attrs.get("source", "the item table")
    return FairjudgeInputError(
        f"{_where(verdicts, position)}: field `{field}` names unknown item "
        f"{verdicts[field].iloc[position]!r}; it is not in {items_source}"
    )


def check_verdict_items(verdicts: pd.DataFrame, items: pd.DataFrame) -> None:
    """Raise if a verdict names an item absent from the item table.

    Raises
    ------
    FairjudgeInputError
        ``"verdicts.jsonl line 4: field `item_b` names unknown item 'x'; it is not in
        items.csv"``.
    """
    index = pd.Index(items.index).unique()
    for field in ("item_a", "item_b"):
        bad = _first_bad(positions_in(verdicts[field], index) < 0)
        if bad is not None:
            raise unknown_item_error(verdicts, items, field, bad)
