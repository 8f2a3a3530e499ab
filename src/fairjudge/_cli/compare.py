"""``fairjudge compare``: several strategies or judges on the same pairs, against gold."""

from __future__ import annotations

from pathlib import Path

import click

from fairjudge._cli._common import check_outputs, echo_json, report_provenance, split_names
from fairjudge._cli._options import json_option, seed_option


def load_costs(path) -> dict:
    """Dollars per evaluation by configuration name (JSON object, or CSV name,cost).

    Raises
    ------
    FairjudgeInputError
        Naming the file (and the line or name) when it cannot be read or a cost is not a
        non-negative finite number.
    """
    import math

    from fairjudge._util._files import read_json_file
    from fairjudge._util._warnings import FairjudgeInputError
    from fairjudge.data import read_table

    path = Path(path)
    if path.suffix.lower() == ".json":
        data = read_json_file(path, "cost")
        if not isinstance(data, dict):
            raise FairjudgeInputError(f"{path.name}: expected an object name -> dollars per "
                                      "evaluation")
        entries = [(f"{path.name}: cost of `{name}`", name, value)
                   for name, value in data.items()]
    else:
        table = read_table(path)
        if not {"name", "cost"} <= set(table.columns):
            raise FairjudgeInputError(f"{path.name}: expected columns name, cost; found "
                                      f"{', '.join(map(str, table.columns))}")
        unit = table.attrs.get("location", "row")
        entries = [(f"{path.name} {unit} {where}: field `cost`", name, value)
                   for where, name, value in zip(table.index, table["name"], table["cost"])]
    costs = {}
    for where, name, value in entries:
        try:
            number = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if not (math.isfinite(number) and number >= 0):
            raise FairjudgeInputError(f"{where} must be a non-negative number of dollars; got "
                                      f"{value!r}")
        costs[str(name)] = number
    return costs


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
    from fairjudge._util._files import atomic_write
    from fairjudge.audit import compare_verdicts, load_gold
    from fairjudge.data import load_verdicts
    from fairjudge.report import comparison_html, render_comparison

    check_outputs({"--html": html_path},
                  {**{f"VERDICTS {p}": p for p in verdicts}, "--gold": gold,
                   "--cost": cost_path}, tables=False)
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
        with atomic_write(html_path) as handle:
            handle.write(comparison_html(result, provenance=provenance))
    if as_json:
        echo_json(result.to_dict())
    else:
        click.echo(render_comparison(result))
        if html_path:
            click.echo(f"\nHTML report written to {html_path}")
