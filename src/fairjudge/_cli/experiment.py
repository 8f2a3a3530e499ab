"""``fairjudge experiment topk``: the paper's offline protocol on simulated or recorded
oracles; ``fairjudge experiment oracle``: record a real judge's oracle on a controlled pool."""

from __future__ import annotations

import os
from pathlib import Path

import click

from fairjudge._cli._common import echo_json, parse_int_list, task_progress
from fairjudge._cli._exit import ExitCode
from fairjudge._cli._options import (
    build_backends,
    build_run_options,
    build_settings,
    generation_options,
    json_option,
    judge_options,
    open_cache,
    parse_judge_costs,
    run_options,
    seed_option,
)


@click.group()
def experiment():
    """Reproducible experiments."""


@experiment.command("topk")
@click.option("--oracle", "oracle_dirs", type=click.Path(), multiple=True,
              help="A recorded oracle folder (from `fairjudge experiment oracle`), replayed "
                   "instead of the simulator; repeat it, one per judge and pool. --n-items, "
                   "--oracles, --bias, --position and --large-n then do not apply.")
@click.option("--judge-cost", "judge_costs", multiple=True,
              help="NAME=COST: the money of one verdict of a recorded judge (repeatable). "
                   "The report then gives recall against money (Fig. 7) and writes "
                   "fig7_cost_frontier.png.")
@click.option("--n-items", type=int, default=30, show_default=True,
              help="Items per simulated pool (N).")
@click.option("--k", "k", type=int, default=5, show_default=True,
              help="Size of the top set to recover.")
@click.option("--oracles", type=int, default=20, show_default=True,
              help="Oracle matrices (independent item pools and verdicts).")
@click.option("--seeds", type=int, default=6, show_default=True,
              help="Acquisition seeds per oracle.")
@click.option("--bias", type=float, default=2.0, show_default=True,
              help="c*: logits per unit of the binary verbosity covariate.")
@click.option("--position", type=float, default=0.5, show_default=True,
              help="kappa*: the judge's first-slot preference in logits.")
@click.option("--budgets", default="60,120,200,320", show_default=True,
              help="Comma-separated comparison budgets B at which recall is measured.")
@click.option("--rules", default="topk,global,round-robin,random", show_default=True,
              help="Comma-separated acquisition rules (see `fairjudge select --help`).")
@click.option("--models", default="naive,bias-aware", show_default=True,
              help="Models run under every rule (add residualized for residualize-then-acquire).")
@click.option("--ablation-budget", type=int, default=120, show_default=True,
              help="Budget of the 2x2 (rule x model) and score ablations.")
@click.option("--k-values", default="1,3,5,10", show_default=True,
              help="k sweep on full data.")
@click.option("--large-n", type=int, default=100, show_default=True,
              help="Pool size of the scaled-up full-data check (0 to skip).")
@click.option("--large-k", type=int, default=10, show_default=True,
              help="k of the scaled-up full-data check.")
@click.option("--samples", type=int, default=1500, show_default=True,
              help="Posterior samples for P(top-k).")
@click.option("--bias-prior-precision", "lambda_b", default="0.1", show_default=True,
              help="lambda_b, the prior precision of the bias terms on standardised "
                   "covariates (one unit = one standard deviation of the covariate across "
                   "items); a comma-separated list runs the paper's sweep (0.1,1,2), one "
                   "result folder per value, and prints recall by lambda_b.")
@seed_option
@click.option("--jobs", type=int, default=min(2, os.cpu_count() or 1), show_default=True,
              help="Worker processes (runs are independent; results do not depend on it).")
@click.option("--out", type=click.Path(file_okay=False), default="fairjudge-results/topk",
              show_default=True, help="Folder for tables, summary and figures.")
@json_option
def topk(oracle_dirs, judge_costs, n_items, k, oracles, seeds, bias, position, budgets, rules,
         models, ablation_budget, k_values, large_n, large_k, samples, lambda_b, seed, jobs,
         out, as_json):
    """Offline top-k protocol: oracles x seeds, budgets, rules, naive vs bias-aware.

    Oracles are simulated, or recorded from real judges (--oracle, repeatable): each
    comparison a strategy proposes is answered by the recorded verdict of that pair in the
    order shown.
    """
    from fairjudge._util._files import check_output_folder
    from fairjudge.active import (
        RULES,
        TopkExperimentConfig,
        run_topk_experiment,
        summarize_topk_results,
    )
    from fairjudge.models import model_names
    from fairjudge.report import write_topk_panel_report, write_topk_report

    check_output_folder("--out", out)
    known_models = model_names()

    rule_list = tuple(r.strip() for r in rules.split(",") if r.strip())
    unknown = [r for r in rule_list if r not in RULES]
    if unknown:
        raise click.BadParameter(f"unknown rule {unknown[0]!r}; choose from {', '.join(RULES)}",
                                 param_hint="--rules")
    model_list = tuple(m.strip() for m in models.split(",") if m.strip())
    bad = [m for m in model_list if m not in known_models]
    if bad:
        raise click.BadParameter(f"unknown model {bad[0]!r}; choose from "
                                 f"{', '.join(known_models)}", param_hint="--models")
    extra = tuple(r for r in ("topk-no-variance", "topk-no-informativeness", "entropy")
                  if r not in rule_list)
    lambdas = _positive_floats(lambda_b, "--bias-prior-precision")
    recorded = _load_oracles(oracle_dirs)
    costs = parse_judge_costs(judge_costs)
    if costs is not None:
        judges = sorted({o.judge for o in recorded or ()})
        unknown = [name for name in (costs if isinstance(costs, dict) else [])
                   if name not in judges]
        if not isinstance(costs, dict) or unknown:
            raise click.BadParameter(
                (f"no recorded judge is named {unknown[0]!r}; " if unknown else
                 "give each as NAME=COST; ") + "the recorded judges are "
                + (", ".join(judges) or "none (give --oracle)"), param_hint="--judge-cost")
    if recorded:
        oracles, large_n = len(recorded), 0
        n_items = max(o.n_items for o in recorded)
    summaries, by_lambda = {}, []
    for value in lambdas:
        config = TopkExperimentConfig(
            n_items=n_items, k=k, n_oracles=oracles, n_seeds=seeds, bias=bias,
            position=position, budgets=parse_int_list(budgets, "--budgets"), rules=rule_list,
            models=model_list, ablation_rules=extra,
            ablation_budget=min(ablation_budget, max(parse_int_list(budgets, "--budgets"))),
            spend_budget=max(parse_int_list(budgets, "--budgets")),
            k_values=parse_int_list(k_values, "--k-values"), large_n_items=large_n,
            large_k=large_k, n_samples=samples, bias_prior_precision=value, seed=seed)
        folder = out if len(lambdas) == 1 else os.path.join(out, f"lambda_b={value:g}")
        with task_progress(2 * oracles, "oracles") as progress:
            results = run_topk_experiment(config, oracles=recorded, jobs=jobs,
                                          progress=progress)
        if results["budget"]["judge"].nunique() > 1:
            text, written = write_topk_panel_report(results, config, folder,
                                                    cost_per_call=costs)
        else:
            text, written = write_topk_report(
                results, config, folder, summary=summarize_topk_results(results, config),
                cost_per_call=costs)
        import json

        summaries[f"{value:g}"] = json.loads((Path(folder) / "summary.json").read_text())
        recall = results["budget"].groupby(["judge", "model", "rule", "budget"])[
            "recall"].mean()
        by_lambda.append(recall.rename(f"lambda_b={value:g}"))
        if not as_json:
            if len(lambdas) > 1:
                click.echo(f"\n== lambda_b = {value:g} ==")
            click.echo(text)
            click.echo(f"\nresults written to {os.path.abspath(folder)}/ "
                       f"({', '.join(os.path.relpath(p, folder) for p in written)})")
    if as_json:
        echo_json(next(iter(summaries.values())) if len(lambdas) == 1 else
                  {"lambda_b": summaries})
    elif len(lambdas) > 1:
        import pandas as pd

        table = pd.concat(by_lambda, axis=1).reset_index()
        click.echo("\nmean top-k recall by lambda_b (the prior precision of the bias terms, "
                   "standardised covariates):")
        click.echo(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


def _positive_floats(text: str, option: str) -> list:
    """Comma-separated positive numbers, or a usage error naming the option."""
    values = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        try:
            value = float(part)
        except ValueError:
            raise click.BadParameter(f"{part!r} is not a number", param_hint=option) from None
        if not (value > 0 and value < float("inf")):
            raise click.BadParameter(f"{part!r} must be positive", param_hint=option)
        values.append(value)
    if not values:
        raise click.BadParameter("give at least one value", param_hint=option)
    return values


def _load_oracles(paths) -> list | None:
    """The recorded oracles of ``--oracle``, or None; a bad folder is a usage error naming it."""
    if not paths:
        return None
    from dataclasses import replace

    from fairjudge._util._warnings import FairjudgeInputError
    from fairjudge.data import load_recorded_oracle

    loaded = []
    for path in paths:
        try:
            oracle = load_recorded_oracle(path)
        except FairjudgeInputError as err:
            raise click.BadParameter(str(err), param_hint="--oracle") from None
        loaded.append(replace(oracle, info={**oracle.info, "path": str(path)}))
    return loaded


@experiment.command("oracle")
@click.option("--topic", default="the Moon", show_default=True,
              help="Topic of the controlled pool (its statement bank): the Moon, the human "
                   "heart, the Roman Empire, photosynthesis, the Python programming language.")
@click.option("--n-items", type=click.IntRange(min=2), default=30, show_default=True,
              help="Items in the pool (N); the judge is asked N(N-1) ordered pairs.")
@click.option("--statements", "statements_per_item", type=click.IntRange(min=1), default=6,
              show_default=True, help="Statements per item (C).")
@click.option("--bank", type=click.Choice(["paper", "extended"]), default="paper",
              show_default=True,
              help="paper: 12 true + 12 false statements per topic; extended: every "
                   "statement fairjudge holds for the topic.")
@click.option("--judge", "judge_name", default=None,
              help="Name of the judge in the verdict table (default backend:model).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder for the recorded oracle (items.csv, verdicts.jsonl, oracle.json).")
@judge_options(model_alias=False)
@run_options()
@generation_options()
@seed_option
@json_option
def oracle(topic, n_items, statements_per_item, bank, judge_name, out, **params):
    """Record a real judge's oracle: every ordered pair of a controlled pool, once.

    The pool (seeded by --seed) is drawn as in the paper; each of its N(N-1) ordered pairs
    is sent to the judge (temperature 0 and the paper's single-letter prompt, template
    `letter`, by default) through the cached runner: a killed or spend-capped run started
    again pays only for the calls still missing. Replay the folder with
    `fairjudge experiment topk --oracle FOLDER`. Exits 3 when the spend cap stopped the
    run and 1 when calls failed (a partial oracle is written, its missing pairs counted in
    oracle.json), 130 when interrupted (nothing written); rerun the same command to go on.
    """
    from fairjudge._util._files import check_output_folder
    from fairjudge.active import build_pool_oracle
    from fairjudge.data import pool_topics, write_recorded_oracle
    from fairjudge.judges import RunReport, load_templates

    check_output_folder("--out", out)
    if topic not in pool_topics():
        raise click.BadParameter(f"unknown topic {topic!r}; choose from "
                                 f"{', '.join(pool_topics())}", param_hint="--topic")
    if len(params["backend"] or ()) != 1:
        raise click.UsageError("give exactly one --backend (one judge per oracle)")
    templates = load_templates(params.get("templates"))
    template = params.get("template") or "letter"
    if template not in templates:
        raise click.BadParameter(f"unknown template {template!r}; have "
                                 f"{', '.join(templates)}", param_hint="--template")
    (backend,) = build_backends(params, seed=params["seed"])
    report = RunReport()
    cache, cache_path = open_cache(params)
    try:
        recorded = build_pool_oracle(
            topic, backend, n_items=n_items, statements_per_item=statements_per_item,
            bank=bank, seed=params["seed"], judge=judge_name, cache=cache,
            options=build_run_options(params), settings=build_settings(params),
            template=template, templates=templates, report=report)
    except KeyboardInterrupt:
        report.interrupted = True
        click.echo(f"interrupted: {report.summary()}; cache: {cache_path}", err=True)
        return ExitCode.INTERRUPTED
    finally:
        cache.close()
    written = write_recorded_oracle(recorded, out)
    usable = len(recorded.usable())
    if params["as_json"]:
        echo_json({"judge": recorded.judge, "n_items": recorded.n_items,
                   "ordered_pairs": recorded.ordered_pairs, "usable": usable,
                   "invalid": len(recorded.verdicts) - usable, "missing": recorded.missing,
                   "report": report.as_dict(), "cache": str(cache_path),
                   "written": [os.path.abspath(p) for p in written]})
    else:
        quality = recorded.items["quality"]
        click.echo(f"oracle of {recorded.judge} on a {topic!r} pool (N = {recorded.n_items}, "
                   f"C = {statements_per_item}, bank {bank}, seed {params['seed']}): "
                   f"{usable:,}/{recorded.ordered_pairs:,} ordered pairs with a verdict, "
                   f"{len(recorded.verdicts) - usable} invalid, {recorded.missing} missing")
        click.echo(f"pool: {int((quality == quality.max()).sum())} items at the top quality "
                   f"{quality.max():+.0f}; {int(recorded.items['verbose'].sum())} elaborated")
        click.echo(report.summary(), err=True)
        click.echo(f"cache: {cache_path}", err=True)
        click.echo(f"wrote {', '.join(str(p) for p in written)}")
    if report.stopped_by_cap:
        click.echo("error: the spend cap stopped the run; raise --max-cost and rerun the same "
                   "command to go on from the cache", err=True)
        return ExitCode.SPEND_CAP
    if recorded.missing > len(recorded.verdicts) - usable:
        for error in report.errors[:5]:
            click.echo(f"error: {error}", err=True)
        click.echo(f"error: {recorded.missing - (len(recorded.verdicts) - usable)} calls "
                   "failed; rerun the same command to retry them (answered calls come from "
                   "the cache)", err=True)
        return ExitCode.INCOMPLETE
    return ExitCode.OK
