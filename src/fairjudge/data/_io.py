"""Readers for verdict and item tables in JSONL, CSV and Parquet."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pandas as pd

from fairjudge._util._files import atomic_write, not_utf8_error, open_text
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._schema import (
    ARENA_COLUMNS,
    VERDICT_BOOKKEEPING,
    VERDICT_REQUIRED,
    validate_items,
    validate_verdicts,
)


def read_table(path: str | os.PathLike, columns=None) -> pd.DataFrame:
    """Read a JSONL, JSON-array, CSV/TSV or Parquet file into a DataFrame.

    ``columns`` (a collection of names), when given, keeps only those of them the file has;
    the others are never held in memory (a verdict file's judge explanations can be most of
    its bytes). The index holds the line number of each record in the file (``attrs["location"]`` is
    ``"line"``) or, for Parquet, the row number (``"row"``); ``attrs["source"]`` holds the
    file name. Both feed the error messages of the validators.

    Raises
    ------
    FairjudgeInputError
        If the file is missing, a folder, empty, of an unknown format, not UTF-8 (naming
        the line of the first bad byte), or a line is not valid JSON. A UTF-8 byte-order
        mark at the start is skipped in every text format.
    """
    path = Path(path)
    if path.is_dir():
        raise FairjudgeInputError(f"{path}: is a folder; expected a table file")
    if not path.is_file():
        raise FairjudgeInputError(f"{path}: no such file")
    suffix = "".join(s for s in path.suffixes[-2:] if s != ".gz").lower() or path.suffix
    suffix = suffix.rsplit(".", 1)[-1]
    if path.stat().st_size == 0:
        raise FairjudgeInputError(f"{path.name}: file is empty")
    try:
        frame, location = _read_by_suffix(path, suffix, None if columns is None
                                          else frozenset(columns))
    except UnicodeDecodeError:
        raise not_utf8_error(path) from None
    except PermissionError:
        raise FairjudgeInputError(f"{path}: permission denied") from None
    frame.attrs["source"] = path.name
    frame.attrs["location"] = location
    return frame


def _read_by_suffix(path: Path, suffix: str, keep: frozenset | None):
    if suffix in ("jsonl", "ndjson"):
        frame, location = _read_jsonl(path, keep), "line"
    elif suffix == "json":
        frame, location = _keep_columns(_read_json_array(path), keep), "record"
    elif suffix in ("csv", "tsv"):
        sep = "\t" if suffix == "tsv" else ","
        try:
            # Ids are names, not numbers: "007" must stay "007"; and an answer that reads
            # "42" is the text "42", not the number 42.0.
            header: dict[str, None] = {}  # pandas may ask about a column more than once

            def wanted(column: str) -> bool:
                header[column] = None
                return column in keep

            with open_text(path) as handle:
                frame = pd.read_csv(handle, sep=sep,
                                    dtype={c: str for c in ID_COLUMNS + TEXT_COLUMNS},
                                    usecols=None if keep is None else wanted)
            if keep is not None:
                frame.attrs["file_columns"] = list(header)
        except pd.errors.EmptyDataError:
            raise FairjudgeInputError(f"{path.name}: file is empty") from None
        except pd.errors.ParserError as err:
            raise FairjudgeInputError(f"{path.name}: not a valid CSV file ({err})") from None
        frame.index = _csv_record_lines(path, sep, len(frame))
        location = "line"
    elif suffix in ("parquet", "pq"):
        try:
            frame = _read_parquet(path, keep)
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
#: Columns holding texts (answers, questions), read from CSV as strings whatever they look like.
TEXT_COLUMNS = ("text", "question", "answer", "a", "b", "reference")


def _csv_record_lines(path: Path, sep: str, n_records: int) -> pd.Index:
    """The line on which each CSV record starts (blank lines and quoted newlines counted)."""
    starts = []
    with open_text(path) as handle:
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
        Naming the file and line of invalid JSON, of a byte that is not UTF-8, or of a
        record that is not an object.
    """
    with open_text(path) as handle:
        try:
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
        except UnicodeDecodeError:  # raised by the decoder while reading a line
            raise not_utf8_error(path) from None


#: Records turned into a DataFrame at a time: Python dicts take about ten times the memory of
#: the frame they become, so a file is never held as one list of them.
JSONL_CHUNK = 20_000


def _read_jsonl(path: Path, keep: frozenset | None = None) -> pd.DataFrame:
    chunks, records, lines, seen = [], [], [], {}
    for number, record in iter_jsonl(path):
        if keep is not None:
            seen.update(dict.fromkeys(record))
            record = {key: value for key, value in record.items() if key in keep}
        records.append(record)
        lines.append(number)
        if len(records) == JSONL_CHUNK:
            chunks.append(pd.DataFrame.from_records(records, index=lines))
            records, lines = [], []
    if not records and not chunks:
        raise FairjudgeInputError(f"{path.name}: file is empty (no JSON records)")
    if records:
        chunks.append(pd.DataFrame.from_records(records, index=lines))
    frame = chunks[0] if len(chunks) == 1 else pd.concat(chunks)
    frame.index.name = "line"
    if keep is not None:
        frame.attrs["file_columns"] = list(seen)
    return frame


def _read_parquet(path: Path, keep: frozenset | None) -> pd.DataFrame:
    """A Parquet file, reading only the columns in ``keep`` (all when None)."""
    if keep is None:
        return pd.read_parquet(path)
    import pyarrow.parquet as pq

    names = pq.ParquetFile(path).schema_arrow.names
    frame = pd.read_parquet(path, columns=[c for c in names if c in keep])
    frame.attrs["file_columns"] = list(names)
    return frame


def _keep_columns(frame: pd.DataFrame, keep: frozenset | None) -> pd.DataFrame:
    """``frame`` with only the columns in ``keep``; ``attrs["file_columns"]`` lists them all
    (error messages name what the file has, not what was kept)."""
    if keep is None:
        return frame
    kept = frame[[c for c in frame.columns if c in keep]]
    kept.attrs["file_columns"] = list(frame.columns)
    return kept


def _read_json_array(path: Path) -> pd.DataFrame:
    try:
        with open_text(path) as handle:
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


def load_verdicts(source, columns=None) -> pd.DataFrame:
    """Load and validate a verdict table.

    Parameters
    ----------
    source : path or pandas.DataFrame
        JSONL, JSON, CSV/TSV or Parquet file, or a DataFrame, with columns ``item_a``
        (shown first), ``item_b`` (shown second), ``winner`` in {a, b, tie}, and optional
        ``judge``, ``question_id``, ``weight``; or a Chatbot Arena battle table
        (``model_a``, ``model_b``, ``winner`` in {model_a, model_b, tie, tie (bothbad)}).
    columns : collection of str, optional
        Read only these columns of a file, besides the ones validation needs (the required
        and bookkeeping fields, and the Arena ones); for fits that never look at the judge's
        explanations. A DataFrame is taken whole.

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
    if columns is not None and isinstance(source, (str, os.PathLike)):
        source = read_table(source, columns={*VERDICT_REQUIRED, *VERDICT_BOOKKEEPING,
                                             *ARENA_COLUMNS, *columns})
    return validate_verdicts(_as_frame(source, "verdicts"))


def load_items(source, covariates: list[str] | None = None) -> pd.DataFrame:
    """Load and validate an item table.

    Parameters
    ----------
    source : path or pandas.DataFrame
        Table with ``id``, optional ``text``, numeric covariates and optional ``quality``.
    covariates : list of str, optional
        Which numeric columns are covariates; default: every mostly-numeric column but
        ``quality`` and the label columns (see :func:`fairjudge.data.validate_items`).

    Returns
    -------
    pandas.DataFrame
        Indexed by string id; ``attrs["covariates"]`` names the covariate columns.
    """
    frame = _as_frame(source, "items")
    return validate_items(frame, covariates)


#: Suffixes :func:`write_table` writes.
WRITE_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet", ".pq")


def check_table_suffix(path: str | os.PathLike) -> None:
    """Raise :class:`FairjudgeInputError` unless :func:`write_table` can write ``path``'s
    format (checked before a long run, not after it)."""
    path = Path(path)
    if path.suffix.lower() not in WRITE_SUFFIXES:
        raise FairjudgeInputError(
            f"{path}: unknown table format {path.suffix!r}; use .jsonl, .csv or .parquet")


def write_table(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a table as JSONL, CSV or Parquet according to the file suffix.

    The file is written atomically: a run killed while writing leaves the previous file (or
    none), never a truncated one.

    Raises
    ------
    FairjudgeInputError
        For a suffix other than ``.jsonl``, ``.ndjson``, ``.csv``, ``.parquet``, ``.pq``.
    """
    check_table_suffix(path)
    suffix = Path(path).suffix.lower()
    if suffix in (".parquet", ".pq"):
        with atomic_write(path, "wb") as handle:
            frame.to_parquet(handle, index=False)
    else:
        with atomic_write(path) as handle:
            if suffix == ".csv":
                frame.to_csv(handle, index=False)
            else:
                # A slice at a time: the JSON text of a large table is never held whole.
                for start in range(0, max(len(frame), 1), JSONL_CHUNK):
                    frame.iloc[start:start + JSONL_CHUNK].to_json(
                        handle, orient="records", lines=True, force_ascii=False)
