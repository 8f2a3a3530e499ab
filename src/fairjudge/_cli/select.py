"""``fairjudge select``: run the active top-k loop against a recorded verdict matrix."""

from __future__ import annotations

import click

from fairjudge._cli._common import echo_json, split_names
from fairjudge.active import RULES
from fairjudge.models import MODELS


@click.command()
@click.argument("items", type=click.Path(dir_okay=False))
@click.option("--oracle", required=True, type=click.Path(dir_okay=False),
              help="Recorded verdicts for (ideally) every ordered pair, replayed as the judge.")
@click.option("--k", "k", type=int, required=True)
@click.option("--budget", type=int, required=True, help="Number of judge calls to spend.")
@click.option("--rule", type=click.Choice(RULES), default="topk", show_default=True)
@click.option("--model", type=click.Choice(MODELS), default="bias-aware", show_default=True)
@click.option("--covariates", default=None, help="Comma-separated covariate columns.")
@click.option("--refit-every", type=int, default=8, show_default=True)
@click.option("--allow-repeats", is_flag=True, help="Allow querying a pair more than once.")
@click.option("--samples", type=int, default=1500, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (adds `queried`).")
def select(items, oracle, k, budget, rule, model, covariates, refit_every, allow_repeats,
           samples, seed, as_json):
    """Choose comparisons among ITEMS adaptively and return the top-k."""
    import fairjudge

    result = fairjudge.select(items, oracle, k=k, budget=budget, rule=rule, model=model,
                              covariates=split_names(covariates), refit_every=refit_every,
                              allow_repeats=allow_repeats, n_samples=samples, rng=seed)
    if as_json:
        echo_json(result.to_dict())
        return
    click.echo(f"rule {rule}, model {model}: {len(result.queried)} comparisons spent")
    click.echo(f"top-{k}: {', '.join(result.topk)}")
    click.echo("P(top-k): " + ", ".join(f"{i} {result.membership[i]:.2f}" for i in
                                         result.membership.sort_values(ascending=False)
                                         .index[: k + 3]))
    for r in result.bias.itertuples():
        click.echo(f"bias {r.name}: {r.estimate:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]")
    if result.recall_at:
        click.echo("recall vs ground truth: " + ", ".join(
            f"B={b}: {v:.2f}" for b, v in sorted(result.recall_at.items())))
    for note in result.result.notes:
        click.echo(f"note: {note}")
