"""``fairjudge cache``: inspect, export or clear the verdict cache."""

from __future__ import annotations

import click

from fairjudge._cli._common import echo_json
from fairjudge._cli.judge import DEFAULT_CACHE


def _open(path):
    from pathlib import Path

    from fairjudge.judges import CompletionCache

    path = path or DEFAULT_CACHE
    if not Path(path).exists():
        raise click.UsageError(f"no cache at {path}")
    return CompletionCache(path)


@click.group()
def cache():
    """Inspect, export or clear the SQLite verdict cache."""


cache_option = click.option("--cache", "cache_path", default=None, envvar="FAIRJUDGE_CACHE",
                            help=f"Cache file [default: {DEFAULT_CACHE}]")


@cache.command()
@cache_option
@click.option("--json", "as_json", is_flag=True)
def stats(cache_path, as_json):
    """Entries per backend/model and outcome, tokens and file size."""
    with _open(cache_path) as store:
        info = store.stats()
    if as_json:
        echo_json(info)
        return
    click.echo(f"{info['path']}: {info['entries']} verdicts, {info['bytes'] / 1e6:.1f} MB")
    for row in info["by_model"]:
        click.echo(f"  {row['backend']}:{row['model']}  {row['entries']} verdicts, "
                   f"{row['input_tokens']} in / {row['output_tokens']} out tokens")
    click.echo("  outcomes: " + ", ".join(f"{k} {v}" for k, v in info["by_outcome"].items()))


@cache.command()
@click.argument("out", type=click.Path(dir_okay=False))
@cache_option
def export(out, cache_path):
    """Write every cached call (request, raw output, outcome, usage) to OUT as JSONL."""
    with _open(cache_path) as store:
        n = store.export(out)
    click.echo(f"exported {n} verdicts to {out}")


@cache.command()
@cache_option
@click.option("--backend", default=None, help="Only this backend's entries.")
@click.option("--model", default=None, help="Only this model's entries.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def clear(cache_path, backend, model, yes):
    """Delete cached verdicts (paid verdicts are gone for good)."""
    if not yes:
        click.confirm("delete cached verdicts? they cost money to recreate", abort=True)
    with _open(cache_path) as store:
        n = store.clear(backend=backend, model=model)
    click.echo(f"deleted {n} verdicts")
