"""``fairjudge compare``: several strategies or judges on the same pairs, against gold."""

from __future__ import annotations

import json
from pathlib import Path

import click

from fairjudge._cli._common import echo_json, report_provenance, split_names
from fairjudge._cli._options import json_option, seed_option


def load_costs(path) -> dict:
    """Dollars per evaluation by configuration name (JSON object, or CSV name,cost)."""
    import pandas as pd

    from fairjudge._util._warnings import FairjudgeInputError

    path = Path(path)
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise FairjudgeInputError(f"{path.name} line {err.lineno}: not valid JSON") from None
        if not isinstance(data, dict):
            raise FairjudgeInputError(f"{path.name}: expected an object name -> dollars")
        return {str(k): float(v) for k, v in data.items()}
    table = pd.read_csv(path)
    if not {"name", "cost"} <= set(table.columns):
        raise FairjudgeInputError(f"{path.name}: expected columns name, cost")
    return dict(zip(table["name"].astype(str), table["cost"].astype(float)))


@click.command()
@click.argument("verdicts", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--gold", required=True, type=click.Path(dir_okay=False),
              help="Gold table: item_a, item_b, winner (a, b, tie) per pair.")
@click.option("--cost", "cost_path", type=click.Path(dir_okay=False), default=None,
              help="Dollars per evaluation by name (JSON or CSV name,cost); default: the "
                   "files' cost column.")
@click.option("--names", default=None, help="Comma-separated names (default: file stems).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write a self-contained HTML report.")
@seed_option
@json_option
def compare(verdicts, gold, cost_path, names, html_path, seed, as_json):
    """Compare VERDICTS files (one configuration each; the first is the baseline)."""
    from fairjudge.audit import compare_verdicts, load_gold
    from fairjudge.data import load_verdicts
    from fairjudge.report import comparison_html, render_comparison

    labels = split_names(names) or [Path(p).stem for p in verdicts]
    if len(labels) != len(verdicts) or len(set(labels)) != len(labels):
        raise click.BadParameter("give one distinct name per verdict file", param_hint="--names")
    tables = {label: load_verdicts(path) for label, path in zip(labels, verdicts)}
    costs = load_costs(cost_path) if cost_path else None
    if costs:
        costs = {label: costs.get(label, costs.get(Path(path).name, float("nan")))
                 for label, path in zip(labels, verdicts)}
    result = compare_verdicts(tables, load_gold(gold), costs=costs, rng=seed)
    if html_path:
        provenance = report_provenance(*verdicts, gold, cost_path, seed=seed)
        Path(html_path).write_text(comparison_html(result, provenance=provenance),
                                   encoding="utf-8")
    if as_json:
        echo_json(result.to_dict())
    else:
        click.echo(render_comparison(result))
        if html_path:
            click.echo(f"\nHTML report written to {html_path}")
