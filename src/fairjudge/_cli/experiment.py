"""``fairjudge experiment topk``: the paper's offline protocol on simulated oracles."""

from __future__ import annotations

import os

import click

from fairjudge._cli._common import echo_json, parse_int_list, task_progress
from fairjudge._cli._options import json_option, seed_option


@click.group()
def experiment():
    """Reproducible experiments."""


@experiment.command("topk")
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
def topk(n_items, k, oracles, seeds, bias, position, budgets, rules, models, ablation_budget,
         k_values, large_n, large_k, samples, lambda_b, seed, jobs, out, as_json):
    """Offline top-k protocol: oracles x seeds, budgets, rules, naive vs bias-aware."""
    from fairjudge._util._files import check_output_folder
    from fairjudge.active import (
        RULES,
        TopkExperimentConfig,
        run_topk_experiment,
        summarize_topk_results,
    )
    from fairjudge.models import model_names
    from fairjudge.report import write_topk_report

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
            results = run_topk_experiment(config, jobs=jobs, progress=progress)
        text, written = write_topk_report(results, config, folder,
                                          summary=summarize_topk_results(results, config))
        import json

        summaries[f"{value:g}"] = json.loads((written[0].parent / "summary.json").read_text())
        recall = results["budget"].groupby(["model", "rule", "budget"])["recall"].mean()
        by_lambda.append(recall.rename(f"lambda_b={value:g}"))
        if not as_json:
            if len(lambdas) > 1:
                click.echo(f"\n== lambda_b = {value:g} ==")
            click.echo(text)
            click.echo(f"\nresults written to {os.path.abspath(folder)}/ "
                       f"({', '.join(p.name for p in written)})")
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
