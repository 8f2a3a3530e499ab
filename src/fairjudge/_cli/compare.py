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


def parse_study_ids(values) -> dict:
    """``NAME=ID`` pairs (``--study-id``) as a dict; a malformed one is a usage error."""
    out = {}
    for value in values:
        name, sep, ident = value.partition("=")
        if not sep or not name.strip() or not ident.strip():
            raise click.BadParameter(f"expected NAME=STRATEGY (e.g. Vanilla_NoRules=B0); got "
                                     f"{value!r}", param_hint="--study-id")
        out[name.strip()] = ident.strip()
    return out


@click.command()
@click.argument("verdicts", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--gold", required=True, type=click.Path(dir_okay=False),
              help="Gold table: item_a, item_b, winner (a, b, tie) per pair.")
@click.option("--cost", "cost_path", type=click.Path(dir_okay=False), default=None,
              help="Dollars per evaluation by name (JSON or CSV name,cost; in --by-judge mode "
                   "a name may be JUDGE/NAME); default: the files' cost column.")
@click.option("--names", default=None, help="Comma-separated names (default: file stems).")
@click.option("--by-judge", is_flag=True,
              help="One Holm family across judges: group the files by their `judge` column "
                   "(splitting files that hold several judges, and several strategies, which "
                   "then name the configurations); compare each judge's configurations with "
                   "its baseline and report Holm within each judge and over all judges' tests.")
@click.option("--judges", "judge_names", default=None,
              help="Comma-separated judge of each file, in place of its `judge` column "
                   "(implies --by-judge).")
@click.option("--baseline", default=None,
              help="Configuration to test the others against (default: the first).")
@click.option("--task", type=click.Choice(["natural", "adversarial", "high-stakes"]),
              default="natural", show_default=True, envvar="FAIRJUDGE_TASK",
              help="Task type for the study's Algorithm 1, shown beside the data's "
                   "recommendation (adversarial = LLMBar-style).")
@click.option("--budget", "budget", type=click.IntRange(min=1), default=None,
              help="Algorithm 1's budget multiplier k, judge calls per pair (default: not "
                   "limited).")
@click.option("--study-id", "study_ids", multiple=True, metavar="NAME=STRATEGY",
              help="The study strategy (B0, S1 ... S8) of a configuration whose name does not "
                   "say it, for Algorithm 1's comparison; repeatable.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write a self-contained HTML report.")
@seed_option
@json_option
def compare(verdicts, gold, cost_path, names, by_judge, judge_names, baseline, task, budget,
            study_ids, html_path, seed, as_json):
    """Compare VERDICTS files (one configuration each; the first is the baseline), or, with
    --by-judge, several judges' configurations as one Holm family."""
    from fairjudge._util._files import atomic_write
    from fairjudge.audit import compare_by_judge, compare_verdicts, load_gold, split_by_judge
    from fairjudge.data import load_verdicts
    from fairjudge.report import (
        comparison_html,
        family_comparison_html,
        render_comparison,
        render_family_comparison,
    )

    check_outputs({"--html": html_path},
                  {**{f"VERDICTS {p}": p for p in verdicts}, "--gold": gold,
                   "--cost": cost_path}, tables=False)
    labels = split_names(names) or [Path(p).stem for p in verdicts]
    if len(labels) != len(verdicts) or len(set(labels)) != len(labels):
        raise click.BadParameter("give one distinct name per verdict file", param_hint="--names")
    judge_list = split_names(judge_names)
    if judge_list is not None and len(judge_list) != len(verdicts):
        raise click.BadParameter(f"give one judge per verdict file ({len(verdicts)}); got "
                                 f"{len(judge_list)}", param_hint="--judges")
    by_judge = by_judge or judge_list is not None
    strategy_ids = parse_study_ids(study_ids)
    tables = {label: load_verdicts(path) for label, path in zip(labels, verdicts)}
    costs = load_costs(cost_path) if cost_path else None
    common = {"rng": seed, "task": task, "budget_multiplier": budget,
              "strategy_ids": strategy_ids or None}
    if by_judge:
        grouped = split_by_judge(tables, baseline=baseline, judges=None if judge_list is None
                                 else dict(zip(labels, judge_list)))
        if costs:
            costs = {j: {n: costs.get(f"{j}/{n}", costs.get(n, float("nan"))) for n in c}
                     for j, c in grouped.items()}
        result = compare_by_judge(grouped, load_gold(gold), costs=costs, **common)
        render, to_html = render_family_comparison, family_comparison_html
    else:
        if baseline is not None:
            if baseline not in tables:
                raise click.BadParameter(f"{baseline!r} is not one of the configurations "
                                         f"({', '.join(tables)})", param_hint="--baseline")
            tables = {baseline: tables[baseline],
                      **{n: t for n, t in tables.items() if n != baseline}}
        if costs:
            path_of = dict(zip(labels, verdicts))
            costs = {label: costs.get(label, costs.get(Path(path_of[label]).name,
                                                       float("nan"))) for label in tables}
        result = compare_verdicts(tables, load_gold(gold), costs=costs, **common)
        render, to_html = render_comparison, comparison_html
    if html_path:
        provenance = report_provenance(*verdicts, gold, cost_path, seed=seed)
        with atomic_write(html_path) as handle:
            handle.write(to_html(result, provenance=provenance))
    if as_json:
        echo_json(result.to_dict())
    else:
        click.echo(render(result))
        if html_path:
            click.echo(f"\nHTML report written to {html_path}")
