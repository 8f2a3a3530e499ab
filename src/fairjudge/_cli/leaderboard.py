"""``fairjudge leaderboard``: a leaderboard kept current as a verdict file grows."""

from __future__ import annotations

import time

import click

from fairjudge._cli._common import echo_json, split_names
from fairjudge._cli._options import json_option, seed_option


@click.command()
@click.argument("verdicts", type=click.Path(dir_okay=False))
@click.option("--items", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Item table: fixes the items and holds the covariates.")
@click.option("--covariates", default=None,
              help="Comma-separated item covariates (default: the item table's default set).")
@click.option("--model", type=click.Choice(["bias-aware", "naive"]), default="bias-aware",
              show_default=True,
              help="bias-aware: per-judge position and covariate terms; naive: Bradley-Terry "
                   "alone.")
@click.option("--k", type=click.IntRange(min=1), default=None,
              help="Top-k membership probabilities.")
@click.option("--follow", is_flag=True,
              help="Keep reading the file as it grows (JSONL or CSV) and refresh the table "
                   "after every batch of new verdicts; Ctrl-C stops.")
@click.option("--poll", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="With --follow: seconds between reads.")
@click.option("--idle-exit", type=click.FloatRange(min=0), default=None,
              help="With --follow: stop after this many seconds without a new verdict.")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="Rows shown per refresh.")
@seed_option
@json_option
def leaderboard(verdicts, items, covariates, model, k, follow, poll, idle_exit, top, seed,
                as_json):
    """Rank the items of VERDICTS, and with --follow keep the ranking current as verdicts
    are appended: counts are added and the posterior refitted from the last fit, so a
    refresh costs the same after a million verdicts as after a thousand."""
    from fairjudge.live import LiveLeaderboard, VerdictTail
    from fairjudge.report import format_ranking

    board = LiveLeaderboard(items, covariates=split_names(covariates), model=model, k=k,
                            rng=seed)
    if not follow:
        board.update(verdicts)
        result = board.snapshot()
        echo_json(result.to_dict()) if as_json else click.echo(format_ranking(result, show=top))
        return
    tail = VerdictTail(verdicts)
    last_new = time.monotonic()
    result = None
    try:
        while True:
            rows = tail.read_new()
            counted = board.update(rows) if rows is not None and len(rows) else 0
            if counted:
                last_new = time.monotonic()
                result = board.snapshot()
                if as_json:
                    echo_json({"n_verdicts": board.n_verdicts, **result.to_dict()})
                else:
                    click.echo(f"--- {board.n_verdicts:,} verdicts ({counted:,} new), "
                               f"{board.n_cells:,} distinct cells ---")
                    click.echo(format_ranking(result, show=top))
            elif idle_exit is not None and time.monotonic() - last_new >= idle_exit:
                break
            else:
                time.sleep(poll)
    except KeyboardInterrupt:
        pass
    if result is None:
        click.echo(f"no verdict with an outcome in {verdicts} yet")
