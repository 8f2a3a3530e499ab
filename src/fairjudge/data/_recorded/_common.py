"""What every recorded-dataset loader shares: the data location, readers and table builders.

A loader turns a dataset's files into a :class:`RecordedBenchmark`, whose tables are:

* ``items``: one row per answer, indexed by a string id, with its text and
  :func:`~fairjudge.data.text_features` covariates;
* ``questions``: one row per prompt;
* ``pairs``: one row per judged pair in the dataset's own frame (its first/second answer);
* ``verdicts``: one row per recorded judge call *as shown* (``item_a`` is the answer the judge
  saw first), in the verdict-table format of :mod:`fairjudge.data._schema`, with the pair it
  belongs to (``pair_id``), the order relative to the pair's frame (``order``), the prompting
  strategy, the sample number and the judge's raw text;
* ``gold``: the ground-truth label of each pair, in the pair's frame.

A judge output that could not be parsed is kept as a row with ``winner`` ``<NA>`` and
``outcome_detail`` ``"invalid"``: it is part of what the judge did (null rates are a bias
statistic), but it is never mapped to a side; :func:`~fairjudge.data.validate_verdicts`
accepts these rows as they are.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fairjudge._util._files import open_text
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._features import text_features
from fairjudge.data._io import iter_jsonl
from fairjudge.data._schema import Outcome

#: Environment variable that points at the staged datasets (the ``shared/data`` directory).
SHARED_DATA_ENV = "FAIRJUDGE_SHARED_DATA"

WHERE_DATA = (
    "the recorded datasets live in ../shared/data next to the repository (see its "
    f"MANIFEST.md); pass `root=` or set {SHARED_DATA_ENV} to read them from elsewhere"
)

#: Columns of every loader's verdict table, in this order. ``sample`` numbers repeated calls
#: on the same shown pair; the recorded datasets hold one call each, so it is always 0.
VERDICT_COLUMNS = ("item_a", "item_b", "winner", "judge", "question_id", "pair_id", "strategy",
                   "order", "sample", "outcome_detail", "raw")
GOLD_COLUMNS = ("pair_id", "question_id", "item_a", "item_b", "winner")


# The tables hold DataFrames, so the generated __eq__ (which compares fields as a tuple) would
# raise on DataFrame truthiness; identity equality is the honest choice, and the generated repr
# would print every table in full.
@dataclass(frozen=True, eq=False, repr=False)
class RecordedBenchmark:
    """A recorded judge dataset as fairjudge tables.

    Attributes
    ----------
    name : str
        ``"llmbar/<subset>"``, ``"judgebench/<pairs>"`` or ``"prd-vicuna80"``.
    items : pandas.DataFrame
        Indexed by the string item id. Columns ``text``, ``question_id``, ``source`` (the
        model that wrote the answer, or the dataset slot such as ``"output_1"`` when the
        model is unknown) and every :func:`~fairjudge.data.text_features` column.
    questions : pandas.DataFrame
        Indexed by ``question_id``. Column ``question`` (the prompt) and ``category`` when
        the dataset has one.
    pairs : pandas.DataFrame
        One row per judged pair in the dataset's own frame: ``id``, ``question_id``,
        ``item_a`` (the dataset's first answer) and ``item_b`` (its second answer).
    verdicts : pandas.DataFrame
        One row per recorded judge call, as shown: ``item_a`` (shown first), ``item_b``
        (shown second), ``winner`` in {``a``, ``b``, ``tie``} or ``<NA>`` when the output was
        unparseable, ``judge``, ``question_id``, ``pair_id`` (``pairs.id``), ``strategy``
        (prompting strategy), ``order`` (``"ab"`` if shown in the pair's frame, ``"ba"`` if
        swapped), ``sample`` (integer; 0, one recorded call per shown pair),
        ``outcome_detail`` in {``win``, ``tie``, ``invalid``} and ``raw`` (the judge's raw
        text; ``<NA>`` when the file holds none or an empty string). No ``cost``: the
        datasets do not record it.
    gold : pandas.DataFrame
        One row per pair with a ground-truth label, in the pair's frame: ``pair_id``,
        ``question_id``, ``item_a``, ``item_b`` and ``winner`` in {``a``, ``b``, ``tie``}
        naming the better item of that row; PRD adds ``n_annotators``.
    """

    name: str
    items: pd.DataFrame
    questions: pd.DataFrame
    pairs: pd.DataFrame
    verdicts: pd.DataFrame
    gold: pd.DataFrame

    def __repr__(self) -> str:
        judges = sorted(self.verdicts["judge"].dropna().unique()) if len(self.verdicts) else []
        return (f"RecordedBenchmark(name={self.name!r}, items={len(self.items)}, "
                f"questions={len(self.questions)}, pairs={len(self.pairs)}, "
                f"verdicts={len(self.verdicts)}, gold={len(self.gold)}, judges={judges})")


# ----------------------------------------------------------------------------- locating data

def _repo_root() -> Path | None:
    """The nearest ancestor of this file holding a ``pyproject.toml``."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "pyproject.toml").is_file():
            return parent
    return None


def shared_data_dir(root: str | os.PathLike | None = None) -> Path | None:
    """Locate the staged recorded datasets (the ``shared/data`` directory).

    Parameters
    ----------
    root : path, optional
        Use this directory. It is returned as given, whether or not it exists.

    Returns
    -------
    pathlib.Path or None
        ``root`` if given; else the directory named by the environment variable
        ``FAIRJUDGE_SHARED_DATA``; else the first existing of ``<cwd>/../shared/data`` and
        ``<repository root>/../shared/data``, where the repository root is the nearest
        ancestor of this module holding a ``pyproject.toml``. None if none of those exists.

    Raises
    ------
    TypeError
        If ``root`` is not a path.

    Examples
    --------
    >>> shared_data_dir("/data/shared").as_posix()
    '/data/shared'
    """
    if root is not None:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"`root` must be a path to the shared data directory; got "
                            f"{type(root).__name__}")
        return Path(root).expanduser()
    env = os.environ.get(SHARED_DATA_ENV)
    if env:
        return Path(env).expanduser()
    candidates = [Path.cwd() / ".." / "shared" / "data"]
    repo = _repo_root()
    if repo is not None:
        candidates.append(repo.parent / "shared" / "data")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    return None


def data_root(root) -> Path:
    """:func:`shared_data_dir`, or a :class:`FileNotFoundError` saying where to put the data."""
    found = shared_data_dir(root)
    if found is None:
        raise FileNotFoundError(
            f"recorded datasets not found: neither ../shared/data (from the working directory "
            f"or the repository) exists nor is {SHARED_DATA_ENV} set; {WHERE_DATA}"
        )
    return found


def require(path: Path) -> Path:
    """``path`` if it is a file, else a :class:`FileNotFoundError` naming it."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; {WHERE_DATA}")
    return path


def read_json(path: Path):
    with open_text(require(path)) as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as err:
            raise FairjudgeInputError(
                f"{path.name} line {err.lineno}: not valid JSON ({err.msg})") from None


def read_jsonl(path: Path) -> list[dict]:
    return [record for _, record in iter_jsonl(require(path))]


def first_record(path: Path) -> dict:
    """The first JSON line of a file, to learn a run's judge before reading it in full."""
    records = iter_jsonl(require(path))
    try:
        return next(records)[1]
    except StopIteration:
        raise FairjudgeInputError(f"{path.name}: file is empty (no JSON records)") from None
    finally:
        records.close()


def name_filter(names, what: str) -> tuple[str, ...] | None:
    """Normalise a ``judges=``/``strategies=``/``reviewers=`` argument (one name or several)."""
    if names is None:
        return None
    if isinstance(names, str):
        return (names,)
    try:
        names = tuple(names)
    except TypeError:
        raise TypeError(f"`{what}` must be a name or a list of names; got "
                        f"{type(names).__name__}") from None
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"`{what}` must be a non-empty list of names; got {names!r}")
    return names


def check_known(requested, available, what: str, where: str) -> None:
    """Raise if a filter names something the dataset does not hold, listing what it holds."""
    if requested is None:
        return
    unknown = [n for n in requested if n not in available]
    if unknown:
        raise FairjudgeInputError(
            f"`{what}` names {', '.join(map(repr, unknown))}, not found in {where}; "
            f"available: {', '.join(sorted(available)) or 'none'}"
        )


# ----------------------------------------------------------------------------- table builders

def _str_index(values, name: str) -> pd.Index:
    return pd.Index(values, dtype="string", name=name)


def items_frame(ids, texts, question_ids, sources) -> pd.DataFrame:
    items = pd.DataFrame(
        {
            "text": pd.array(texts, dtype="string"),
            "question_id": pd.array(question_ids, dtype="string"),
            "source": pd.array(sources, dtype="string"),
        },
        index=_str_index(ids, "id"),
    )
    features = text_features(list(texts))
    features.index = items.index
    return pd.concat([items, features], axis=1)


def questions_frame(question_ids, questions, **extra) -> pd.DataFrame:
    columns = {"question": pd.array(questions, dtype="string")}
    columns.update({k: pd.array(v, dtype="string") for k, v in extra.items()})
    return pd.DataFrame(columns, index=_str_index(question_ids, "question_id"))


def pairs_frame(ids, question_ids, items_a, items_b) -> pd.DataFrame:
    return pd.DataFrame({
        "id": pd.array(ids, dtype="string"),
        "question_id": pd.array(question_ids, dtype="string"),
        "item_a": pd.array(items_a, dtype="string"),
        "item_b": pd.array(items_b, dtype="string"),
    })


class GoldRows:
    """Column-wise accumulator of gold rows (``GOLD_COLUMNS`` plus integer extras)."""

    def __init__(self, *extra: str) -> None:
        self.columns: dict[str, list] = {c: [] for c in GOLD_COLUMNS + extra}

    def add(self, **row) -> None:
        for column, values in self.columns.items():
            values.append(row[column])

    def __getitem__(self, column: str) -> list:
        return self.columns[column]

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame({c: pd.array(self.columns[c], dtype="string")
                              for c in GOLD_COLUMNS})
        for extra in self.columns.keys() - set(GOLD_COLUMNS):
            frame[extra] = pd.array(self.columns[extra], dtype="int64")
        return frame


class VerdictRows:
    """Column-wise accumulator of verdict rows (cheaper than one dict per row)."""

    def __init__(self) -> None:
        self.columns: dict[str, list] = {c: [] for c in VERDICT_COLUMNS}

    def add(self, *, item_a, item_b, winner, judge, question_id, pair_id, strategy, order,
            raw, sample: int = 0) -> None:
        if winner is None:
            detail = Outcome.INVALID.value
        elif winner == Outcome.TIE.value:
            detail = "tie"
        else:
            detail = "win"
        row = dict(item_a=item_a, item_b=item_b, winner=winner, judge=judge,
                   question_id=question_id, pair_id=pair_id, strategy=strategy, order=order,
                   sample=sample, outcome_detail=detail, raw=raw)
        for column, value in row.items():
            self.columns[column].append(value)

    def frame(self, name: str) -> pd.DataFrame:
        frame = pd.DataFrame({c: pd.array(v, dtype="int64" if c == "sample" else "string")
                              for c, v in self.columns.items()})
        frame.attrs["source"] = f"{name} verdicts"
        frame.attrs["location"] = "row"
        return frame


def raw_text(value):
    """The judge's raw text, or None (-> <NA>) when the file holds none (missing or empty)."""
    return value if isinstance(value, str) and value != "" else None
