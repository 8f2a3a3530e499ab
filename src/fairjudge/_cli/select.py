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
    rule_choice,
    run_options,
    seed_option,
)


@click.command()
@click.argument("items", type=click.Path(dir_okay=False))
@click.option("--oracle", type=click.Path(dir_okay=False), default=None,
              help="Recorded verdicts for (ideally) every ordered pair, replayed as the judge "
                   "(instead of a live --backend).")
@click.option("--k", "k", type=click.IntRange(min=1), required=True, help="Size of the top set.")
@click.option("--budget", type=click.IntRange(min=1), required=True,
              help="Number of judge calls to spend.")
@click.option("--rule", type=rule_choice(), default="topk", show_default=True,
              help="Acquisition rule.")
@click.option("--model", type=model_choice(), default="bias-aware", show_default=True,
              help="Ranking model (the judge's model is --judge-model).")
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
@click.option("--posterior-samples", "samples", type=click.IntRange(min=1), default=1500,
              show_default=True, help="Posterior samples for P(top-k).")
@judge_options(model_alias=False)
@run_options()
@generation_options()
@seed_option
@json_option
def select(items, oracle, k, budget, rule, model, covariates, question, batch_size,
           refit_every, allow_repeats, samples, **params):
    """Choose comparisons among ITEMS adaptively and return the top-k.

    Against recorded verdicts (--oracle) the loop replays them; with a live judge
    (--backend openai --judge-model ...) every comparison is a cached, spend-capped call,
    and a killed run started again with the same command replays the cached calls and
    reaches the same result.
    """
    import fairjudge

    common = dict(k=k, budget=budget, rule=rule, model=model,
                  covariates=split_names(covariates), refit_every=refit_every,
                  allow_repeats=allow_repeats, n_samples=samples, rng=params["seed"])
    if oracle is not None and backend_from_environment_only():
        params["backend"] = ()  # a recorded oracle given explicitly wins over FAIRJUDGE_BACKEND
    if params["backend"]:
        if oracle is not None:
            raise click.UsageError("give either --oracle (replay) or --backend (a live judge)")
        (backend,) = _one(build_backends(params, items=items, seed=params["seed"]))
        cache, cache_path = open_cache(params)
        try:
            result = fairjudge.select(items, backend=backend, question=question, cache=cache,
                                      options=build_run_options(params),
                                      settings=build_settings(params),
                                      template=params.get("template") or "baseline",
                                      templates=params.get("templates"),
                                      batch_size=batch_size,
                                      progress=not params["no_progress"], **common)
        finally:
            cache.close()
        click.echo(f"{result.report.summary()}; cache: {cache_path}", err=True)
    elif oracle is not None:
        result = fairjudge.select(items, oracle, **common)
    else:
        raise click.UsageError("give --oracle (recorded verdicts) or --backend (a live judge)")
    if params["as_json"]:
        echo_json(result.to_dict())
    else:
        _print(result, rule, model, k)
    if result.stopped == "spend cap":
        click.echo("error: the spend cap stopped the run before the budget was spent; raise "
                   "--max-cost and rerun to continue from the cache", err=True)
        return ExitCode.SPEND_CAP
    if result.stopped == "failures":
        for error in result.report.errors[:5]:
            click.echo(f"error: {error}", err=True)
        click.echo("error: judge calls failed before the budget was spent; rerun to retry "
                   "(completed calls come from the cache)", err=True)
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _one(backends):
    if len(backends) != 1:
        raise click.UsageError("select asks one judge; give one --backend")
    return backends


def _print(result, rule, model, k) -> None:
    click.echo(f"rule {rule}, model {model}: {len(result.queried):,} comparisons spent "
               f"(stopped: {result.stopped})")
    click.echo(f"top-{k}: {', '.join(result.topk)}")
    click.echo("P(top-k): " + ", ".join(f"{i} {result.membership[i]:.2f}" for i in
                                         result.membership.sort_values(ascending=False)
                                         .index[: k + 3]))
    for r in result.bias.itertuples():
        click.echo(f"bias {r.judge}/{r.name}: {r.estimate:+.3f} [{r.ci_low:+.3f}, "
                   f"{r.ci_high:+.3f}]")
    if result.recall_at:
        click.echo("recall vs ground truth: " + ", ".join(
            f"B={b}: {v:.2f}" for b, v in sorted(result.recall_at.items())))
    for note in getattr(result.result, "notes", ()):
        click.echo(f"note: {note}")
