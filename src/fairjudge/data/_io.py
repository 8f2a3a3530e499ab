"""Readers for verdict and item tables in JSONL, CSV and Parquet."""

from __future__ import annotations

import csv
import gzip
import json
import os
from pathlib import Path

import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._schema import validate_items, validate_verdicts


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a JSONL, JSON-array, CSV/TSV or Parquet file into a DataFrame.

    The index holds the line number of each record in the file (``attrs["location"]`` is
    ``"line"``) or, for Parquet, the row number (``"row"``); ``attrs["source"]`` holds the
    file name. Both feed the error messages of the validators.

    Raises
    ------
    FairjudgeInputError
        If the file is missing, empty, of an unknown format, or a line is not valid JSON.
    """
    path = Path(path)
    if not path.is_file():
        raise FairjudgeInputError(f"{path}: no such file")
    suffix = "".join(s for s in path.suffixes[-2:] if s != ".gz").lower() or path.suffix
    suffix = suffix.rsplit(".", 1)[-1]
    if path.stat().st_size == 0:
        raise FairjudgeInputError(f"{path.name}: file is empty")
    try:
        frame, location = _read_by_suffix(path, suffix)
    except UnicodeDecodeError as err:
        raise FairjudgeInputError(f"{path.name}: not UTF-8 text ({err.reason} at byte "
                                  f"{err.start}); save the file as UTF-8") from None
    frame.attrs["source"] = path.name
    frame.attrs["location"] = location
    return frame


def _open_text(path: Path):
    """Text handle for a file; ``.gz`` files are decompressed."""
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8", newline="")


def _read_by_suffix(path: Path, suffix: str):
    if suffix in ("jsonl", "ndjson"):
        frame, location = _read_jsonl(path), "line"
    elif suffix == "json":
        frame, location = _read_json_array(path), "record"
    elif suffix in ("csv", "tsv"):
        sep = "\t" if suffix == "tsv" else ","
        try:
            # Ids are names, not numbers: "007" must stay "007".
            with _open_text(path) as handle:
                frame = pd.read_csv(handle, sep=sep, dtype={c: str for c in ID_COLUMNS})
        except pd.errors.EmptyDataError:
            raise FairjudgeInputError(f"{path.name}: file is empty") from None
        except pd.errors.ParserError as err:
            raise FairjudgeInputError(f"{path.name}: not a valid CSV file ({err})") from None
        frame.index = _csv_record_lines(path, sep, len(frame))
        location = "line"
    elif suffix in ("parquet", "pq"):
        try:
            frame = pd.read_parquet(path)
        except ImportError:
            raise FairjudgeInputError(
                f"{path.name}: reading Parquet needs pyarrow: pip install 'fairjudge[parquet]'"
            ) from None
        except Exception as err:  # pyarrow raises its own error types for corrupt files
            raise FairjudgeInputError(f"{path.name}: not a readable Parquet file ({err})") \
                from None
        frame.index = frame.index + 1
        location = "row"
    else:
        raise FairjudgeInputError(
            f"{path.name}: unknown table format {path.suffix!r}; "
            "expected .jsonl, .json, .csv, .tsv or .parquet (optionally .gz)"
        )
    return frame, location


ID_COLUMNS = ("id", "item_a", "item_b", "model_a", "model_b", "judge", "question_id")


def _csv_record_lines(path: Path, sep: str, n_records: int) -> pd.Index:
    """The line on which each CSV record starts (blank lines and quoted newlines counted)."""
    starts = []
    with _open_text(path) as handle:
        reader = csv.reader(handle, delimiter=sep)
        next(reader, None)  # header
        previous = reader.line_num
        for row in reader:
            if row:  # pandas skips blank lines
                starts.append(previous + 1)
            previous = reader.line_num
    if len(starts) != n_records:  # an unusual dialect: fall back to record order
        return pd.RangeIndex(2, n_records + 2, name="line")
    return pd.Index(starts, name="line")


def iter_jsonl(path: Path):
    """``(line number, record)`` for each non-blank line of a JSONL file (``.gz`` too).

    Raises
    ------
    FairjudgeInputError
        Naming the file and line of invalid JSON or of a record that is not an object.
    """
    with _open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise FairjudgeInputError(
                    f"{path.name} line {number}: not valid JSON ({err.msg})"
                ) from None
            if not isinstance(record, dict):
                raise FairjudgeInputError(
                    f"{path.name} line {number}: expected a JSON object, got "
                    f"{type(record).__name__}"
                )
            yield number, record


def _read_jsonl(path: Path) -> pd.DataFrame:
    records, lines = [], []
    for number, record in iter_jsonl(path):
        records.append(record)
        lines.append(number)
    if not records:
        raise FairjudgeInputError(f"{path.name}: file is empty (no JSON records)")
    return pd.DataFrame.from_records(records, index=pd.Index(lines, name="line"))


def _read_json_array(path: Path) -> pd.DataFrame:
    try:
        with _open_text(path) as handle:
            data = json.loads(handle.read())
    except json.JSONDecodeError as err:
        raise FairjudgeInputError(
            f"{path.name} line {err.lineno}: not valid JSON ({err.msg})"
        ) from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise FairjudgeInputError(f"{path.name}: expected a JSON array of objects")
    if not data:
        raise FairjudgeInputError(f"{path.name}: file is empty (no JSON records)")
    return pd.DataFrame.from_records(data, index=pd.RangeIndex(1, len(data) + 1))


def _as_frame(source, what: str) -> pd.DataFrame:
    if isinstance(source, pd.DataFrame):
        frame = source.copy()
        if frame.index.name == "id" and "id" not in frame.columns:
            frame = frame.reset_index()  # an item table indexed by id (e.g. simulate_items)
        frame.attrs.setdefault("source", what)
        frame.attrs.setdefault("location", "row")
        return frame
    if isinstance(source, (str, os.PathLike)):
        return read_table(source)
    raise TypeError(f"{what} must be a file path or a pandas DataFrame; got {type(source)!r}")


def load_verdicts(source) -> pd.DataFrame:
    """Load and validate a verdict table.

    Parameters
    ----------
    source : path or pandas.DataFrame
        JSONL, JSON, CSV/TSV or Parquet file, or a DataFrame, with columns ``item_a``
        (shown first), ``item_b`` (shown second), ``winner`` in {a, b, tie}, and optional
        ``judge``, ``question_id``, ``weight``; or a Chatbot Arena battle table
        (``model_a``, ``model_b``, ``winner`` in {model_a, model_b, tie, tie (bothbad)}).

    Returns
    -------
    pandas.DataFrame
        The validated table (see :func:`fairjudge.data.validate_verdicts`).

    Examples
    --------
    >>> import pandas as pd
    >>> v = load_verdicts(pd.DataFrame({"item_a": ["x"], "item_b": ["y"], "winner": ["A"]}))
    >>> v[["item_a", "item_b", "winner", "judge"]].iloc[0].tolist(), float(v["weight"].iloc[0])
    (['x', 'y', 'a', 'judge'], 1.0)
    """
    return validate_verdicts(_as_frame(source, "verdicts"))


def load_items(source, covariates: list[str] | None = None) -> pd.DataFrame:
    """Load and validate an item table.

    Parameters
    ----------
    source : path or pandas.DataFrame
        Table with ``id``, optional ``text``, numeric covariates and optional ``quality``.
    covariates : list of str, optional
        Which numeric columns are covariates; default: every numeric column but ``quality``.

    Returns
    -------
    pandas.DataFrame
        Indexed by string id; ``attrs["covariates"]`` names the covariate columns.
    """
    frame = _as_frame(source, "items")
    return validate_items(frame, covariates)


def write_table(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a table as JSONL, CSV or Parquet according to the file suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
    elif suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix in (".parquet", ".pq"):
        frame.to_parquet(path, index=False)
    else:
        raise FairjudgeInputError(
            f"{path.name}: unknown table format {suffix!r}; expected .jsonl, .csv or .parquet"
        )
