"""Shared CLI plumbing: error handling, JSON output, option parsing."""

from __future__ import annotations

import contextlib
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
    from fairjudge._util._errors import JudgeBackendError, RunIncomplete, SpendCapReached
    from fairjudge._util._warnings import FairjudgeInputError, FairjudgeWarning

    def show_warning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, FairjudgeWarning):
            click.echo(f"warning: {message}", err=True)
        else:
            click.echo(warnings.formatwarning(message, category, filename, lineno, line),
                       err=True, nl=False)

    warnings.showwarning = show_warning
    try:
        # The arguments ride along in the context object, for the reports' provenance.
        result = command.main(args=list(argv), prog_name="fairjudge", standalone_mode=False,
                              obj={"argv": ("fairjudge", *argv)})
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
    except SpendCapReached as err:
        click.echo(f"error: {err}", err=True)
        return ExitCode.SPEND_CAP
    except (JudgeBackendError, RunIncomplete) as err:
        click.echo(f"error: {err}", err=True)
        return ExitCode.INCOMPLETE
    except sqlite3.Error as err:
        click.echo(f"error: the completion cache could not be used: {err}", err=True)
        return ExitCode.INCOMPLETE
    except OSError as err:
        click.echo(f"error: {err.filename or ''}: {err.strerror or err}", err=True)
        return ExitCode.INCOMPLETE
    except MemoryError as err:
        from fairjudge.models import model_names, model_spec

        sparse = ", ".join(name for name in model_names() if model_spec(name).solver)
        click.echo(f"error: out of memory ({str(err) or 'an allocation failed'}); for a large "
                   f"pool of items, the models with a sparse solver ({sparse}) form no N x N "
                   "matrices (--solver auto or sparse)", err=True)
        return ExitCode.INCOMPLETE
    except Exception:  # noqa: BLE001 - an internal bug: show it as one
        traceback.print_exc()
        click.echo(f"\nerror: {BUG_REPORT}", err=True)
        return ExitCode.INCOMPLETE
    return int(result) if isinstance(result, int) else ExitCode.OK


def incomplete_exit(report, incomplete, what: str = "pairs", total: int | None = None) -> int:
    """The exit code of a run that may be incomplete, with its errors and missing units on
    stderr: 0 when complete, 3 when the spend cap stopped it, 1 otherwise."""
    if report is None or not incomplete:
        return ExitCode.OK
    for error in report.errors[:5]:
        click.echo(f"error: {error}", err=True)
    if len(report.errors) > 5:
        click.echo(f"... and {len(report.errors) - 5} more errors", err=True)
    shown = ", ".join(map(str, incomplete[:10]))
    more = f" and {len(incomplete) - 10} more" if len(incomplete) > 10 else ""
    count = f"{len(incomplete)} of {total}" if total is not None else str(len(incomplete))
    if report.stopped_by_cap:
        click.echo(f"error: the spend cap stopped the run; {count} {what} are "
                   f"incomplete ({shown}{more}). The cap limits what one run spends: raise "
                   "--max-cost and rerun (answers already paid come from the cache)", err=True)
        return ExitCode.SPEND_CAP
    if getattr(report, "batch_pending", 0):
        click.echo(f"{count} {what} are incomplete ({shown}{more}): {report.batch_pending} "
                   "calls wait in provider batches. Rerun with the batch option they were "
                   "submitted with (--batch or --batch-dir) to collect them; nothing is "
                   "submitted twice", err=True)
        return ExitCode.INCOMPLETE
    click.echo(f"error: {count} {what} are incomplete ({shown}{more}); rerun the "
               "same command to retry them (completed calls come from the cache)", err=True)
    return ExitCode.INCOMPLETE


def command_line() -> list[str] | None:
    """The command line of this run, program name first, as :func:`run_guarded` received
    it; None when the command was invoked some other way (e.g. click's test runner)."""
    context = click.get_current_context(silent=True)
    obj = None if context is None else context.find_root().obj
    return list(obj["argv"]) if isinstance(obj, dict) and "argv" in obj else None


def report_provenance(*inputs, seed: int | None):
    """The :class:`fairjudge.report.Provenance` of a report this command writes: its
    command line, the input files it read (None entries skipped), and its seed."""
    from fairjudge.report import Provenance

    return Provenance.collect(command=command_line(), inputs=[p for p in inputs if p],
                              seed=seed)


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


@contextlib.contextmanager
def task_progress(n_tasks: int, label: str):
    """A progress bar with ETA on stderr for a long step of ``n_tasks`` tasks; yields the
    callback that :func:`fairjudge.active.run_topk_experiment` calls with the count done."""
    import sys

    from tqdm import tqdm

    with tqdm(total=n_tasks, desc=label, unit="task", file=sys.stderr,
              dynamic_ncols=True) as bar:
        def progress(done: int) -> None:
            bar.update(done - bar.n)

        yield progress


def read_question_table(path):
    """A question table (``question_id``, ``question``) indexed by question id, or None
    without a path."""
    if not path:
        return None
    from fairjudge.data import read_table

    table = read_table(path)
    if "question_id" in table.columns:
        table = table.set_index(table["question_id"].astype(str))
    return table
