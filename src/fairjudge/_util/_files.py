"""Small file helpers shared by the loaders of settings files."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fairjudge._util._warnings import FairjudgeInputError


def read_json_file(path: str | os.PathLike, what: str):
    """Parse a JSON file; a missing file or bad JSON is a one-line error naming the file."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FairjudgeInputError(f"{path}: no such {what} file") from None
    except json.JSONDecodeError as err:
        raise FairjudgeInputError(f"{path.name} line {err.lineno}: not valid JSON "
                                  f"({err.msg})") from None
