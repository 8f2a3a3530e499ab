"""Follow a verdict file as it grows (``fairjudge leaderboard --follow``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError

FORMATS = (".jsonl", ".csv")


class VerdictTail:
    """The complete lines appended to a JSONL or CSV verdict file since the last read.

    A line still being written (no newline yet) waits for the next read; a CSV's header
    is read once and reused. Reading never holds more than the new lines in memory.

    Parameters
    ----------
    path : path
        A ``.jsonl`` or ``.csv`` verdict file (it may not exist yet).
    """

    def __init__(self, path):
        self.path = Path(path)
        if self.path.suffix.lower() not in FORMATS:
            raise FairjudgeInputError(f"{self.path}: following needs a file that grows by "
                                      f"lines ({', '.join(FORMATS)}); got "
                                      f"{self.path.suffix or 'no suffix'}")
        self._offset = 0
        self._header: str | None = None
        self._line = 0

    def read_new(self) -> pd.DataFrame | None:
        """The rows appended since the last call (None when there are none).

        Raises
        ------
        FairjudgeInputError
            For a line that does not parse, naming the file and the line.
        """
        if not self.path.exists():
            return None
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        end = chunk.rfind(b"\n")
        if end < 0:
            return None
        self._offset += end + 1
        text = chunk[:end + 1].decode("utf-8-sig" if self._offset == end + 1 else "utf-8")
        lines = [line for line in text.splitlines() if line.strip()]
        if self.path.suffix.lower() == ".csv" and self._header is None and lines:
            self._header, lines = lines[0], lines[1:]
            self._line += 1
        if not lines:
            return None
        first_line = self._line + 1
        self._line += len(lines)
        if self.path.suffix.lower() == ".csv":
            try:
                return pd.read_csv(io.StringIO("\n".join([self._header, *lines])))
            except (pd.errors.ParserError, ValueError) as error:
                raise FairjudgeInputError(f"{self.path} lines {first_line}-{self._line}: "
                                          f"{error}") from None
        rows = []
        for number, line in enumerate(lines, start=first_line):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise FairjudgeInputError(f"{self.path} line {number}: not JSON "
                                          f"({error.msg})") from None
        return pd.DataFrame(rows)
