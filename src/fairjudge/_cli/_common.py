"""Shared CLI plumbing: error handling, JSON output, option parsing."""

from __future__ import annotations

import json
import sqlite3
import math
import warnings

import click
import numpy as np

from fairjudge._util._warnings import FairjudgeInputError, FairjudgeWarning
from fairjudge.judges._base import JudgeBackendError


def run_guarded(command: click.Command, argv) -> int:
    """Run a click command; bad input exits 2 with one readable line, never a traceback."""
    def show_warning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, FairjudgeWarning):
            click.echo(f"warning: {message}", err=True)
        else:
            click.echo(warnings.formatwarning(message, category, filename, lineno, line),
                       err=True, nl=False)

    warnings.showwarning = show_warning
    try:
        command.main(args=list(argv), prog_name="fairjudge", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        return 130
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except FairjudgeInputError as err:
        click.echo(f"error: {err}", err=True)
        return 2
    except ValueError as err:
        click.echo(f"error: {err}", err=True)
        return 2
    except ImportError as err:  # an optional extra is missing; the message names it
        click.echo(f"error: {err}", err=True)
        return 2
    except JudgeBackendError as err:
        click.echo(f"error: {err}", err=True)
        return 1
    except sqlite3.Error as err:
        click.echo(f"error: the verdict cache could not be used: {err}", err=True)
        return 1
    except OSError as err:
        click.echo(f"error: {err.filename or ''}: {err.strerror or err}", err=True)
        return 1
    return 0


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def echo_json(payload: dict) -> None:
    """Print one JSON object (NaN and infinity become null)."""
    click.echo(json.dumps(_jsonable(payload), indent=2))


def parse_int_list(text: str, name: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers; got {text!r}",
                                 param_hint=name) from None
    if not values or min(values) < 1:
        raise click.BadParameter(f"expected positive integers; got {text!r}", param_hint=name)
    return values


def split_names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]
