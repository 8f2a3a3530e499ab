"""``fairjudge winrate``: win rates against a baseline, raw and controlled for length (or
another factor), from AlpacaEval annotation files or verdict tables."""

from __future__ import annotations

from pathlib import Path

import click

from fairjudge._cli._common import check_outputs, echo_json, report_provenance
from fairjudge._cli._options import json_option


def _is_alpacaeval(path: str) -> bool:
    """Whether ``path`` is an AlpacaEval annotation file (a JSON list of records with
    ``generator_1``) rather than a verdict table."""
    if Path(path).suffix.lower() != ".json":
        return False
    try:
        with open(path, encoding="utf-8-sig") as handle:
            head = handle.read(4096).lstrip()
    except OSError:
        return False
    return head.startswith("[") and "generator_1" in head


@click.command()
@click.argument("source", type=click.Path(dir_okay=False, exists=True))
@click.option("--baseline", default=None,
              help="The reference model every other model is compared with (an AlpacaEval "
                   "file's generator_1; required for verdict tables).")
@click.option("--items", type=click.Path(dir_okay=False), default=None,
              help="Item table for a verdict table: `source` names each answer's model, and "
                   "the control column when the verdicts do not carry <control>_a/_b.")
@click.option("--control", default="length", show_default=True,
              help="The factor to control: AlpacaEval files have `length` (characters); a "
                   "verdict table any covariate it or the item table carries.")
@click.option("--no-standardize", is_flag=True,
              help="tanh of the raw differential (a bias intensity on its own scale) "
                   "instead of the differential divided by its standard deviation.")
@click.option("--estimator", type=click.Choice(["auto", "marginal", "two-stage"]),
              default="auto", show_default=True,
              help="marginal: one joint fit with the query effects integrated out (valid "
                   "intervals with few models); two-stage: the papers' plug-in query "
                   "effects; auto: marginal up to 50 models.")
@click.option("--paper-stage-one", is_flag=True,
              help="Two-stage, with query effects from every model's preferences, each "
                   "model's own included (the paper's Stage I), instead of cross-fitting.")
@click.option("--gold", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Human preferences for a random subset of the same records, in SOURCE's "
                   "format: adds the humans' win rate by prediction-powered inference "
                   "(PPI++), valid whatever the judge's bias.")
@click.option("--level", type=float, default=0.95, show_default=True,
              help="Level of every interval.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write the per-model table (.csv, .jsonl or .parquet).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write the win-rate decomposition as an HTML report.")
@json_option
def winrate(source, baseline, items, control, no_standardize, estimator, paper_stage_one,
            gold, level, out, html_path, as_json):
    """Raw and controlled win rates of every model in SOURCE against --baseline.

    SOURCE is an AlpacaEval annotation file (JSON list with instruction, output_1,
    output_2, generator_1, generator_2, preference in [1, 2]) or a verdict table. The
    controlled win rate is the GLM's prediction at no difference in the factor:
    AlpacaEval's length-controlled win rate with length, HUB-J's bias-controlled win rate
    with a bias factor.
    """
    if paper_stage_one and estimator == "marginal":
        raise click.BadParameter("--paper-stage-one is a two-stage option; it cannot go with "
                                 "--estimator marginal", param_hint="--paper-stage-one")
    from fairjudge.data import load_items, load_verdicts, write_table
    from fairjudge.winrate import load_alpacaeval, preferences_from_verdicts, win_rates

    check_outputs({"--out": out}, {"SOURCE": source, "--items": items, "--gold": gold})
    check_outputs({"--html": html_path}, {"SOURCE": source, "--items": items, "--gold": gold},
                  tables=False)
    item_table = load_items(items) if items else None
    if _is_alpacaeval(source):
        if control != "length":
            raise click.BadParameter("AlpacaEval files carry one control: length",
                                     param_hint="--control")
        preferences = load_alpacaeval(source)
        baselines = sorted(preferences["baseline"].unique())
        if baseline is None and len(baselines) > 1:
            raise click.BadParameter(f"the file has several baselines ({', '.join(baselines)});"
                                     " name one", param_hint="--baseline")
        baseline = baseline or baselines[0]
        if baseline not in baselines:
            raise click.BadParameter(f"{baseline!r} is not a baseline (generator_1) of "
                                     f"{source}; it has {', '.join(baselines)}",
                                     param_hint="--baseline")
        preferences = preferences[preferences["baseline"] == baseline]
    else:
        if baseline is None:
            raise click.UsageError("a verdict table needs --baseline (the reference model)")
        preferences = preferences_from_verdicts(load_verdicts(source), baseline=baseline,
                                                items=item_table, control=control)
    human = None
    if gold:
        if _is_alpacaeval(source) != _is_alpacaeval(gold):
            raise click.BadParameter("the human labels must be in SOURCE's format (both "
                                     "AlpacaEval files or both verdict tables)",
                                     param_hint="--gold")
        if _is_alpacaeval(gold):
            human = load_alpacaeval(gold)
            human = human[human["baseline"] == baseline]
        else:
            human = preferences_from_verdicts(load_verdicts(gold), baseline=baseline,
                                              items=item_table, control=control)
    result = win_rates(preferences, level=level, standardize=not no_standardize,
                       cross_fit=not paper_stage_one,
                       estimator="two-stage" if paper_stage_one else estimator, gold=human)
    if out:
        write_table(result.table.reset_index(), out)
    if html_path:
        from fairjudge._util._files import atomic_write
        from fairjudge.report import winrate_html

        with atomic_write(html_path) as handle:
            handle.write(winrate_html(result, baseline=baseline, provenance=report_provenance(
                source, items, seed=None)))
    if as_json:
        echo_json(result.to_dict())
        return
    pct = int(round(level * 100))
    fit = {"marginal": "one joint fit, query effects integrated out",
           "two-stage": "two stages, plug-in query effects",
           "no query effects": "no query effects"}[result.estimator]
    click.echo(f"win rates against {baseline}, controlled for {control} "
               f"(percent, {pct}% intervals; {fit})")
    header = (f"{'model':<28}{'n':>6}  {'win rate':<22}{'controlled':<22}"
              f"{control + ' adds (pp)':<22}share of win rate")
    click.echo(header)
    for model, figures in result.estimates.items():
        cells = [_cell(figures[k]) for k in ("win_rate", "controlled_win_rate", "bias",
                                              "bias_share")]
        click.echo(f"{str(model)[:27]:<28}{result.table.loc[model, 'n']:>6}  "
                   f"{cells[0]:<22}{cells[1]:<22}{cells[2]:<22}{cells[3]}")
    for model, note in result.table["note"].items():
        if note:
            click.echo(f"{model}: {note}")
    if result.ppi is not None:
        click.echo(f"the humans' win rate (percent, {pct}% intervals): prediction-powered "
                   "(judge + human labels), the labels alone, the judge alone (valid for "
                   "the judge's own rate only)")
        click.echo(f"{'model':<28}{'labels':>7}  {'PPI':<22}{'humans alone':<22}"
                   f"{'judge alone':<22}lambda")
        for model, row in result.ppi.iterrows():
            cells = ["n/a" if row[c] != row[c] else
                     f"{row[c]:.1f} [{row[c + '_low']:.1f}, {row[c + '_high']:.1f}]"
                     for c in ("ppi", "human", "judge")]
            power = "" if row["lambda"] != row["lambda"] else f"{row['lambda']:.2f}"
            click.echo(f"{str(model)[:27]:<28}{int(row['n_labelled']):>7}  {cells[0]:<22}"
                       f"{cells[1]:<22}{cells[2]:<22}{power}")
            if row["note"]:
                click.echo(f"{model}: {row['note']}")
    for note in result.notes:
        click.echo(f"note: {note}")
    if not result.query_effects and len(result.estimates) == 1:
        click.echo("one model only: the query effect (instruction difficulty) is dropped, "
                   "since one model cannot tell it from noise")
    for path in (out, html_path):
        if path:
            click.echo(f"wrote {path}")


def _cell(estimate) -> str:
    if estimate.estimate != estimate.estimate:  # NaN
        return "n/a"
    return f"{estimate.estimate:.1f} [{estimate.ci_low:.1f}, {estimate.ci_high:.1f}]"
