"""Shared CLI plumbing: error handling, JSON output, option parsing."""

from __future__ import annotations

import sqlite3
import traceback
import warnings

import click

from fairjudge._cli._exit import ExitCode

BUG_REPORT = ("this is a bug in fairjudge, not a problem with your input; please report it "
              "with the command you ran and the traceback above")


def run_guarded(command: click.Command, argv) -> int:
    """Run a click command and map its outcome to an :class:`ExitCode`.

    Usage and input errors print one readable line (exit 2); a provider that refuses the
    run, a cache or file-system failure print one line (exit 1); an interrupt exits 130; a
    command may return an exit code of its own (1 incomplete, 3 spend cap). Anything else is
    an internal bug: its traceback is printed with a bug-report hint (exit 1), never
    disguised as a usage error.
    """
    from fairjudge._util._errors import JudgeBackendError
    from fairjudge._util._warnings import FairjudgeInputError, FairjudgeWarning

    def show_warning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, FairjudgeWarning):
            click.echo(f"warning: {message}", err=True)
        else:
            click.echo(warnings.formatwarning(message, category, filename, lineno, line),
                       err=True, nl=False)

    warnings.showwarning = show_warning
    try:
        result = command.main(args=list(argv), prog_name="fairjudge", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("interrupted: rerun the same command to resume from the cache", err=True)
        return ExitCode.INTERRUPTED
    except click.ClickException as err:
        err.show()
        return ExitCode.USAGE if err.exit_code == 2 else err.exit_code
    except FairjudgeInputError as err:
        click.echo(f"error: {err}", err=True)
        return ExitCode.USAGE
    except ImportError as err:
        if "fairjudge[" not in str(err):
            raise  # a broken installation, not a missing optional extra
        click.echo(f"error: {err}", err=True)
        return ExitCode.USAGE
    except JudgeBackendError as err:
        click.echo(f"error: {err}", err=True)
        return ExitCode.INCOMPLETE
    except sqlite3.Error as err:
        click.echo(f"error: the completion cache could not be used: {err}", err=True)
        return ExitCode.INCOMPLETE
    except OSError as err:
        click.echo(f"error: {err.filename or ''}: {err.strerror or err}", err=True)
        return ExitCode.INCOMPLETE
    except Exception:  # noqa: BLE001 - an internal bug: show it as one
        traceback.print_exc()
        click.echo(f"\nerror: {BUG_REPORT}", err=True)
        return ExitCode.INCOMPLETE
    return int(result) if isinstance(result, int) else ExitCode.OK


def echo_json(payload: dict) -> None:
    """Print one JSON object (NaN and infinity become null; result shapes become dicts)."""
    from fairjudge._util._json import dumps

    click.echo(dumps(payload))


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


def input_options(params: dict) -> dict:
    """The files a command reads through the shared options (``--replay``, ``--prices``,
    ``--templates`` and the completion cache, the default one included), by option name,
    for :func:`check_outputs`."""
    from fairjudge._cli._options import default_cache_path

    return {"--replay": params.get("replay"), "--prices": params.get("prices"),
            "--templates": params.get("templates"),
            "--cache": params.get("cache_path") or default_cache_path()}


def check_outputs(outputs: dict, inputs: dict, *, tables: bool = True) -> None:
    """Check every output file of a command before any call is made (or paid for).

    Parameters
    ----------
    outputs, inputs : dict
        Option name (or description) -> path; None values are skipped.
    tables : bool
        Outputs are tables written by :func:`fairjudge.data.write_table`, so their suffix
        must name a format it writes.

    Raises
    ------
    FairjudgeInputError
        See :func:`fairjudge._util._files.check_output_paths` (an output that is a folder,
        in a missing or read-only folder, equal to an input or to another output).
    """
    from fairjudge._util._files import check_output_paths
    from fairjudge._util._warnings import FairjudgeInputError

    if tables:
        from fairjudge.data._io import check_table_suffix

        for label, path in outputs.items():
            if path:
                try:
                    check_table_suffix(path)
                except FairjudgeInputError as err:
                    raise FairjudgeInputError(f"{label} {err}") from None
    check_output_paths(outputs.items(), inputs.items())
