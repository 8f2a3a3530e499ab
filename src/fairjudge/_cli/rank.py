"""``fairjudge rank``: fit a model to recorded verdicts and print the top-k."""

from __future__ import annotations

import click

from fairjudge._cli._common import echo_json, split_names
from fairjudge._cli._options import json_option, model_choice, seed_option


@click.command()
@click.argument("verdicts", type=click.Path(dir_okay=False))
@click.option("--items", type=click.Path(dir_okay=False), default=None,
              help="Item table (id, covariates, optional quality).")
@click.option("--k", "k", type=click.IntRange(min=1), default=None,
              help="Size of the top set: adds P(top-k) per item (a leaderboard needs none).")
@click.option("--model", type=model_choice(), default="bias-aware", show_default=True,
              help="Ranking model.")
@click.option("--covariates", default=None, envvar="FAIRJUDGE_COVARIATES",
              help="Comma-separated covariate columns (default: length, markdown and verbose, "
                   "those the item table has; other numeric columns only when named).")
@click.option("--factors", type=click.Path(dir_okay=False), default=None,
              help="Bias factors found by `fairjudge discover --out`: each answer's factor "
                   "score becomes a per-verdict covariate the bias-aware model corrects "
                   "for (needs --items with text).")
@click.option("--factor-p", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="With --factors: use the factors whose held-out p-value is at most this.")
@click.option("--anchors", type=click.Path(dir_okay=False), default=None,
              help="Human pairwise labels (verdict table) on some of the same items, fitted "
                   "with the verdicts: each judge's bias is its excess over the humans'.")
@click.option("--ppi", is_flag=True,
              help="With --anchors: the humans' scores by prediction-powered inference "
                   "(PPI++) instead, the judge's corrected preferences predicting the labels; "
                   "valid intervals if the labelled pairs are a random subset.")
@click.option("--prior-precision", type=float, default=1.0, show_default=True,
              help="lambda of the prior theta ~ N(0, 1/lambda).")
@click.option("--bias-prior-precision", type=float, default=0.1, show_default=True,
              help="lambda_b = 1/tau^2 of the shrinkage prior on bias terms.")
@click.option("--no-position", is_flag=True, help="Do not model a position term.")
@click.option("--pool-judges", is_flag=True,
              help="One set of position and bias terms for every verdict (for a `judge` "
                   "column of annotators or users, such as Arena's).")
@click.option("--posterior-samples", "samples", type=click.IntRange(min=1), default=1500,
              show_default=True, help="Posterior samples for P(top-k).")
@click.option("--level", type=float, default=0.95, show_default=True,
              help="Level of every interval.")
@click.option("--bootstrap", type=click.IntRange(min=0), default=0, show_default=True,
              help="Refits on verdicts resampled with replacement, for Arena-style "
                   "percentile intervals of the Elo ratings (Arena uses 100 to 1000).")
@click.option("--solver", type=click.Choice(["auto", "dense", "sparse"]), default="auto",
              show_default=True,
              help="Linear algebra of the fit: dense (exact posterior) or matrix-free "
                   "sparse; auto is dense up to 2000 items.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write the leaderboard (one row per item: rank and its interval, score, "
                   "Elo with intervals, P(top-k)) as .jsonl, .csv or .parquet.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write a self-contained HTML report: leaderboard, bias estimates, "
                   "diagnostics and the win-probability matrix.")
@seed_option
@json_option
def rank(verdicts, items, k, model, covariates, factors, factor_p, anchors, ppi,
         prior_precision, bias_prior_precision,
         no_position, pool_judges, samples, level, bootstrap, solver, out, html_path, seed,
         as_json):
    """Rank items from a VERDICTS table (JSONL, CSV or Parquet; item_a is shown first)."""
    import fairjudge
    from fairjudge._cli._common import check_outputs
    from fairjudge.data import write_table
    from fairjudge.report import format_ranking

    inputs = {"VERDICTS": verdicts, "--items": items, "--anchors": anchors,
              "--factors": factors}
    check_outputs({"--out": out}, inputs)
    check_outputs({"--html": html_path}, {**inputs, "--out": out}, tables=False)

    names = split_names(covariates)
    table, item_table = verdicts, items
    if factors:
        table, item_table, names = _with_factors(verdicts, items, factors, factor_p, names)
    result = fairjudge.rank(table, item_table, k=k, model=model,
                            covariates=names, anchors=anchors, ppi=ppi,
                            prior_precision=prior_precision,
                            bias_prior_precision=bias_prior_precision, position=not no_position,
                            n_samples=samples, level=level, pool_judges=pool_judges,
                            bootstrap=bootstrap, solver=solver, rng=seed)
    if out:
        write_table(result.to_frame().reset_index(), out)
    if html_path:
        from fairjudge._cli._common import report_provenance
        from fairjudge._util._files import atomic_write
        from fairjudge.report import ranking_html

        provenance = report_provenance(verdicts, items, anchors, factors, seed=seed)
        with atomic_write(html_path) as handle:
            handle.write(ranking_html(result, provenance=provenance))
    if as_json:
        echo_json(result.to_dict())
    else:
        click.echo(format_ranking(result))
        for what, path in (("leaderboard", out), ("HTML report", html_path)):
            if path:
                click.echo(f"\n{what} written to {path}")


def _with_factors(verdicts, items, factors, p_max, names):
    """The verdicts with each answer's factor scores as per-verdict covariates, the loaded
    items, and the covariates to model: those named (or the item table's defaults) plus
    the factors."""
    from fairjudge.data import load_items, load_verdicts
    from fairjudge.discovery import load_factors, with_factor_covariates

    if not items:
        raise click.BadParameter("scoring factors needs --items with the answers' text",
                                 param_hint="--factors")
    item_table = load_items(items)
    table, factor_names = with_factor_covariates(load_verdicts(verdicts), item_table,
                                                 load_factors(factors, p_max=p_max))
    base = names if names is not None else list(item_table.attrs.get("covariates", []))
    click.echo(f"factors as covariates: {', '.join(factor_names)}", err=True)
    return table, item_table, [*base, *factor_names]
