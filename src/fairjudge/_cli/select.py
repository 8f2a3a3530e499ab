"""``fairjudge select``: the active top-k loop against recorded verdicts or a live judge."""

from __future__ import annotations

import click

from fairjudge._cli._common import echo_json, split_names
from fairjudge._cli._exit import ExitCode
from fairjudge._cli._options import (
    backend_from_environment_only,
    build_backends,
    build_run_options,
    build_settings,
    generation_options,
    json_option,
    judge_options,
    model_choice,
    open_cache,
    parse_judge_costs,
    rule_choice,
    run_options,
    seed_option,
)


@click.command()
@click.argument("items", type=click.Path(dir_okay=False))
@click.option("--oracle", type=click.Path(dir_okay=False), multiple=True,
              help="Recorded verdicts for (ideally) every ordered pair, replayed as the judge "
                   "(instead of a live --backend). Repeat it, or give a file whose `judge` "
                   "column names several judges, for a panel of judges.")
@click.option("--k", "k", type=click.IntRange(min=1), required=True, help="Size of the top set.")
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Number of judge calls to spend (or give --max-cost).")
@click.option("--judge-cost", "judge_costs", multiple=True,
              help="Cost of one call of a judge: COST per --backend/--oracle judge in order, "
                   "or NAME=COST. With several judges the loop picks the judge of each "
                   "comparison by its value per unit cost, and --max-cost is the money to "
                   "spend in these units.")
@click.option("--rule", type=rule_choice(), default="topk", show_default=True,
              help="Acquisition rule.")
@click.option("--model", type=model_choice(), default=None,
              help="Ranking model (the judge's model is --judge-model). Default: bias-aware "
                   "with one judge, reliability (a temperature per judge) with several.")
@click.option("--covariates", default=None,
              help="Comma-separated item covariates; text features (length, markdown, ...) "
                   "are computed from the `text` column when not given as columns.")
@click.option("--question", default=None,
              help="Live judge: the question every item answers (default: the items' "
                   "`question` column).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Live judge: comparisons proposed per round (default: --concurrency).")
@click.option("--refit-every", type=click.IntRange(min=1), default=8, show_default=True,
              help="Refit the ranking model after this many new verdicts (r of Algorithm 1).")
@click.option("--allow-repeats", is_flag=True, help="Allow asking a pair more than once.")
@click.option("--human-labels", type=click.Path(dir_okay=False), default=None,
              help="Annotation sheet (.csv/.jsonl) of a `--backend human` judge: the pairs it "
                   "is asked are written there; fill `winner` (a, b or tie) and rerun.")
@click.option("--posterior-samples", "samples", type=click.IntRange(min=1), default=1500,
              show_default=True, help="Posterior samples for P(top-k).")
@judge_options(model_alias=False)
@run_options()
@generation_options()
@seed_option
@json_option
def select(items, oracle, k, budget, judge_costs, rule, model, covariates, question,
           batch_size, refit_every, allow_repeats, samples, **params):
    """Choose comparisons among ITEMS adaptively and return the top-k.

    Against recorded verdicts (--oracle) the loop replays them; with a live judge
    (--backend openai --judge-model ...) every comparison is a cached, spend-capped call,
    and a killed run started again with the same command replays the cached calls and
    reaches the same result.

    Several judges of different cost (repeat --backend/--judge-model, or --oracle, each with
    a --judge-cost): a cheap judge covers the pairs, a strong one is bought where top-k
    membership is in doubt, each judge with its own bias terms and reliability.
    """
    import fairjudge

    if budget is None and params["max_cost"] is None:
        raise click.UsageError("give --budget (calls) or --max-cost (money)")
    if oracle and backend_from_environment_only():
        params["backend"] = ()  # a recorded oracle given explicitly wins over FAIRJUDGE_BACKEND
    costs = parse_judge_costs(judge_costs)
    backends = []
    common = dict(k=k, budget=budget, rule=rule, model=model,
                  covariates=split_names(covariates), refit_every=refit_every,
                  allow_repeats=allow_repeats, n_samples=samples, rng=params["seed"],
                  judge_costs=costs)
    if params["backend"]:
        if oracle:
            raise click.UsageError("give either --oracle (replay) or --backend (a live judge)")
        if budget is None and not costs:
            raise click.UsageError(
                "a live run needs --budget (calls); --max-cost alone is the cap on billed "
                "cost, and the money to plan with only once each judge has a --judge-cost")
        backends = build_backends(params, items=items, seed=params["seed"])
        cache, cache_path = open_cache(params)
        try:
            # The hard cap on billed cost is --max-cost either way; with --judge-cost it is
            # also the money the loop plans to spend, in those units.
            result = fairjudge.select(items, backend=backends, question=question, cache=cache,
                                      max_cost=params["max_cost"] if costs else None,
                                      options=build_run_options(params),
                                      settings=build_settings(params),
                                      template=params.get("template") or "baseline",
                                      templates=params.get("templates"),
                                      batch_size=batch_size,
                                      progress=not params["no_progress"], **common)
        finally:
            cache.close()
        click.echo(f"{result.report.summary()}; cache: {cache_path}", err=True)
    elif oracle:
        result = fairjudge.select(items, list(oracle) if len(oracle) > 1 else oracle[0],
                                  max_cost=params["max_cost"], **common)
    else:
        raise click.UsageError("give --oracle (recorded verdicts) or --backend (a live judge)")
    if params["as_json"]:
        echo_json(result.to_dict())
    else:
        _print(result, rule, result.fit.model, k)
    if result.stopped == "spend cap":
        click.echo("error: the spend cap stopped the run before the budget was spent; raise "
                   "--max-cost and rerun to continue from the cache", err=True)
        return ExitCode.SPEND_CAP
    if result.stopped == "awaiting labels":
        for backend in backends:
            if getattr(backend, "awaiting", None):
                click.echo(f"{len(backend.awaiting)} comparison(s) await human labels in "
                           f"{backend.path}: write a (first answer better), b or tie in "
                           "`winner`, then rerun the same command to go on", err=True)
        return ExitCode.INCOMPLETE
    if result.stopped == "failures":
        for error in result.report.errors[:5]:
            click.echo(f"error: {error}", err=True)
        click.echo("error: judge calls failed before the budget was spent; rerun to retry "
                   "(completed calls come from the cache)", err=True)
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _print(result, rule, model, k) -> None:
    click.echo(f"rule {rule}, model {model}: {len(result.queried):,} comparisons spent "
               f"(stopped: {result.stopped})")
    if "judge" in result.queried.columns and result.queried["judge"].nunique() > 1 or \
            "cost" in result.queried.columns:
        spend = result.queried.groupby("judge", sort=False)
        click.echo("judges: " + "; ".join(
            f"{name} {len(rows):,} calls" + (f", cost {rows['cost'].sum():.4g}"
                                            if "cost" in rows and rows["cost"].notna().any()
                                            else "")
            for name, rows in spend))

    click.echo(f"top-{k}: {', '.join(result.topk)}")
    click.echo("P(top-k): " + ", ".join(f"{i} {result.membership[i]:.2f}" for i in
                                         result.membership.sort_values(ascending=False)
                                         .index[: k + 3]))
    from fairjudge.report._tables import split_reliability
    from fairjudge.report._text import reliability_lines

    bias, reliability = split_reliability(result.bias)
    for r in bias.itertuples():
        click.echo(f"bias {r.judge}/{r.name}: {r.estimate:+.3f} [{r.ci_low:+.3f}, "
                   f"{r.ci_high:+.3f}]")
    for line in reliability_lines(reliability, result.level):
        click.echo(line)
    if result.recall_at:
        unit = "money" if "cost" in result.queried.columns else "B"
        click.echo("recall vs ground truth: " + ", ".join(
            f"{unit}={b:g}: {v:.2f}" for b, v in sorted(result.recall_at.items())))
    for note in getattr(result.result, "notes", ()):
        click.echo(f"note: {note}")
