"""Recorded oracles: one judge's verdicts on every ordered pair of a pool, with its truth.

The real-judge protocol of [bias-aware-active-topk, Technical Appendix, "Oracle collection
and offline evaluation"] queries a judge once on each of the N(N-1) ordered pairs of a
controlled pool and replays that fixed verdict matrix offline. A recorded oracle is stored
as a folder of three files:

``items.csv``
    The pool as an item table: ``id``, ``text``, ``quality`` (ground truth, #correct -
    #incorrect statements), ``verbose`` (0/1 elaboration covariate), ``length`` (words).
``verdicts.jsonl``
    A verdict table (:mod:`fairjudge.data._schema`), one row per ordered pair the judge
    answered: ``pair_id``, ``item_a`` (shown first), ``item_b``, ``winner``,
    ``outcome_detail``, ``judge``, ``order``, ``sample``, ``strategy``, ``cost``, ``cached``,
    ``raw``, ``parser``. Unparseable outputs are kept with ``outcome_detail`` ``invalid``
    and an empty ``winner``; they are never replayed.
``oracle.json``
    Provenance: judge, backend and model, prompt template and version, temperature, pool
    settings (topic, bank, C, N, seed), counts (ordered pairs, answered, invalid, missing),
    money spent, fairjudge version and date.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._io import load_items, load_verdicts, write_table
from fairjudge.data._simulator import verdicts_to_matrix

ORACLE_FILES = ("items.csv", "verdicts.jsonl", "oracle.json")
#: Columns of a recorded oracle's item table (``id`` is the index).
ORACLE_ITEM_COLUMNS = ("text", "quality", "verbose", "length")
#: ``format`` field of ``oracle.json``.
ORACLE_FORMAT = "fairjudge-recorded-oracle/1"


# The tables are DataFrames: identity equality (a generated __eq__ would compare frames
# elementwise and fail on their truth value).
@dataclass(frozen=True, eq=False)
class RecordedOracle:
    """A judge's verdicts on the ordered pairs of a pool, with the pool's ground truth.

    Attributes
    ----------
    items : pandas.DataFrame
        Indexed by item id (N rows): ``text``, ``quality``, ``verbose``, ``length``.
    verdicts : pandas.DataFrame
        Verdict table, at most one row per ordered pair (see module docstring).
    judge : str
        The judge's name (its ``judge`` column).
    info : dict
        Provenance (``oracle.json``).
    """

    items: pd.DataFrame
    verdicts: pd.DataFrame
    judge: str
    info: dict = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def ordered_pairs(self) -> int:
        """``N (N - 1)``: the calls of a complete oracle."""
        return self.n_items * (self.n_items - 1)

    def usable(self) -> pd.DataFrame:
        """The verdicts with a winner (``a``, ``b`` or ``tie``): what replay can serve."""
        winner = self.verdicts["winner"]
        return self.verdicts[winner.notna() & (winner.astype("string") != "")]

    @property
    def missing(self) -> int:
        """Ordered pairs without a usable verdict (not asked, failed, or invalid)."""
        return self.ordered_pairs - len(self.usable())

    def matrix(self) -> np.ndarray:
        """The verdict matrix, shape (N, N): ``M[i, j]`` is the credit to item ``i`` shown
        before item ``j`` (1, 0 or 0.5 for a tie), NaN where no usable verdict exists."""
        usable = self.usable()
        if len(usable) == 0:
            return np.full((self.n_items, self.n_items), np.nan)
        return verdicts_to_matrix(usable, self.items.index)


def _check_items(items: pd.DataFrame, source: str) -> None:
    missing = [c for c in ORACLE_ITEM_COLUMNS if c not in items.columns]
    if missing:
        raise FairjudgeInputError(f"{source}: missing field `{missing[0]}`; a recorded "
                                  "oracle's items need " + ", ".join(ORACLE_ITEM_COLUMNS))
    if items["quality"].isna().any():
        row = items.index[int(np.flatnonzero(items["quality"].isna().to_numpy())[0])]
        raise FairjudgeInputError(f"{source}: item {row!r}: field `quality` is empty; a "
                                  "recorded oracle needs the ground truth of every item")


def write_recorded_oracle(oracle: RecordedOracle, folder) -> list[Path]:
    """Write ``oracle`` as ``items.csv``, ``verdicts.jsonl`` and ``oracle.json`` in ``folder``.

    Each file is written atomically. Returns the paths written.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _check_items(oracle.items, "items")
    items = oracle.items.reset_index()
    items = items.rename(columns={items.columns[0]: "id"})
    paths = [folder / name for name in ORACLE_FILES]
    write_table(items, paths[0])
    write_table(oracle.verdicts.reset_index(drop=True), paths[1])
    usable = oracle.usable()
    info = {"format": ORACLE_FORMAT, **oracle.info, "judge": oracle.judge,
            "n_items": oracle.n_items, "ordered_pairs": oracle.ordered_pairs,
            "answered": int(len(oracle.verdicts)), "usable": int(len(usable)),
            "invalid": int(len(oracle.verdicts) - len(usable)), "missing": oracle.missing}
    from fairjudge._util._files import atomic_write

    with atomic_write(paths[2]) as handle:
        handle.write(json.dumps(info, indent=2, default=str) + "\n")
    return paths


def load_recorded_oracle(path) -> RecordedOracle:
    """Load a recorded oracle folder (or its ``oracle.json``) written by
    :func:`write_recorded_oracle`.

    Raises
    ------
    FairjudgeInputError
        Naming the folder or file: a missing file, an unreadable ``oracle.json``, an item
        table without ground truth, a verdict naming an unknown item (file and line) or an
        ordered pair recorded twice.
    """
    path = Path(path)
    folder = path.parent if path.name == "oracle.json" else path
    if not folder.is_dir():
        raise FairjudgeInputError(f"recorded oracle {path}: not a folder; give the folder "
                                  "written by `fairjudge experiment oracle`")
    for name in ORACLE_FILES:
        if not (folder / name).is_file():
            raise FairjudgeInputError(f"recorded oracle {folder}: missing {name} (a recorded "
                                      f"oracle holds {', '.join(ORACLE_FILES)})")
    try:
        info = json.loads((folder / "oracle.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise FairjudgeInputError(f"{folder / 'oracle.json'}: not valid JSON ({exc})") from None
    if not isinstance(info, dict) or info.get("format") != ORACLE_FORMAT:
        raise FairjudgeInputError(f"{folder / 'oracle.json'}: field `format` must be "
                                  f"{ORACLE_FORMAT!r}; got {info.get('format')!r}"
                                  if isinstance(info, dict) else
                                  f"{folder / 'oracle.json'}: expected a JSON object")
    items = load_items(folder / "items.csv", covariates=["verbose", "length"])
    _check_items(items, str(folder / "items.csv"))
    verdicts = load_verdicts(folder / "verdicts.jsonl")
    unknown = ~verdicts["item_a"].isin(items.index) | ~verdicts["item_b"].isin(items.index)
    if unknown.any():
        row = int(np.flatnonzero(unknown.to_numpy())[0])
        field_name = "item_a" if verdicts["item_a"].iloc[row] not in items.index else "item_b"
        raise FairjudgeInputError(
            f"{folder / 'verdicts.jsonl'} line {verdicts.index[row]}: field `{field_name}` "
            f"names item {verdicts[field_name].iloc[row]!r}, which is not in items.csv")
    judges = verdicts["judge"].astype(str).unique()
    if len(judges) > 1:
        raise FairjudgeInputError(f"{folder / 'verdicts.jsonl'}: a recorded oracle holds one "
                                  f"judge; found {', '.join(judges)}")
    judge = str(info.get("judge") or (judges[0] if len(judges) else "judge"))
    oracle = RecordedOracle(items=items, verdicts=verdicts, judge=judge, info=info)
    oracle.matrix()  # an ordered pair recorded twice is an error now, not during replay
    return oracle
