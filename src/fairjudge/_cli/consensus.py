"""``fairjudge consensus``: one ranking of contestants from a panel of judges."""

from __future__ import annotations

import click

from fairjudge._cli._common import check_outputs, echo_json, report_provenance
from fairjudge._cli._options import json_option, seed_option


@click.command()
@click.argument("verdicts", type=click.Path(dir_okay=False))
@click.option("--items", required=True, type=click.Path(dir_okay=False),
              help="Answers with `source`: the contestant (model) that wrote each.")
@click.option("--method", type=click.Choice(["joint", "pooled", "majority", "elo", "uda"]),
              default="joint", show_default=True,
              help="joint: one Bradley-Terry model with per-judge position and "
                   "self-preference terms; pooled: every verdict as one judge's; majority: "
                   "the judges' majority per pair; elo: UDA's baseline, per-judge Elo "
                   "averaged; uda: Elo with a learned per-comparison K and soft label "
                   "(needs torch and the answers' `text`).")
@click.option("--human-scores", type=click.Path(dir_okay=False), default=None,
              help="Table with columns contestant, score (human ratings, any scale): adds "
                   "the correlation.")
@click.option("--anchor", default=None,
              help="Hold this contestant at 1000 (default: the mean contestant).")
@click.option("--frozen", type=click.Path(dir_okay=False), default=None,
              help="A published leaderboard (`consensus --json` output): its contestants "
                   "keep their scores and the verdicts' new contestants are placed on its "
                   "scale (joint model; intervals include the published uncertainty).")
@click.option("--reliability", is_flag=True,
              help="With --method joint: a reliability (temperature) per judge, so a noisy "
                   "judge counts less.")
@click.option("--shrinkage", is_flag=True,
              help="With --method joint: learn each judge's prior on its position and "
                   "self-preference terms (empirical Bayes) instead of a fixed one.")
@click.option("--elo-k", type=click.FloatRange(min=0, min_open=True), default=16.0,
              show_default=True, help="K of the sequential Elo baseline.")
@click.option("--embedder", default="minilm", show_default=True,
              help="With --method uda: the answers' sentence embedder (minilm, hashing, or a "
                   "local sentence-transformers model; nothing is downloaded).")
@click.option("--no-self-features", is_flag=True,
              help="With --method uda: leave out the features of the judge's own answer "
                   "(the paper's ablation).")
@click.option("--initial", "initial_rating", type=float, default=None,
              help="With --method uda: the initial Elo rating (default 1000).")
@click.option("--epochs", type=click.IntRange(min=1), default=None,
              help="With --method uda: training epochs (default 40; the adapter with the "
                   "best validation loss is kept).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write an HTML report (scores, judge x contestant heatmap, "
                   "self-preference).")
@seed_option
@json_option
def consensus(verdicts, items, method, human_scores, anchor, frozen, reliability, shrinkage,
              elo_k,
              embedder, no_self_features, initial_rating, epochs, html_path, seed, as_json):
    """Score the contestants that judges compared in VERDICTS (answers mapped to their
    --items `source`), per judge and in consensus [uda-consensus-elo]."""
    from fairjudge._util._files import atomic_write
    from fairjudge.consensus import consensus as run_consensus
    from fairjudge.data import load_items, read_table

    check_outputs({"--html": html_path}, {"VERDICTS": verdicts, "--items": items,
                                         "--human-scores": human_scores, "--frozen": frozen},
                  tables=False)
    human = None
    if human_scores:
        table = read_table(human_scores)
        if not {"contestant", "score"} <= set(table.columns):
            raise click.BadParameter("needs columns contestant, score",
                                     param_hint="--human-scores")
        human = table.set_index(table["contestant"].astype(str))["score"].astype(float)
    uda_options = {"--embedder": embedder != "minilm", "--no-self-features": no_self_features,
                   "--epochs": epochs is not None, "--initial": initial_rating is not None}
    misplaced = [name for name, given in uda_options.items() if given]
    if misplaced and method != "uda":
        raise click.BadParameter(f"{misplaced[0]} is an option of --method uda",
                                 param_hint=misplaced[0])
    settings = None
    if method == "uda":
        from dataclasses import replace

        from fairjudge.consensus import UdaSettings

        settings = replace(UdaSettings(k=elo_k), self_features=not no_self_features,
                           **({"epochs": epochs} if epochs else {}),
                           **({"initial": initial_rating} if initial_rating is not None
                              else {}))
    result = run_consensus(verdicts, load_items(items), method=method, human_scores=human,
                           anchor=anchor, reliability=reliability, shrinkage=shrinkage,
                           elo_k=elo_k, rng=seed, embedder=embedder, uda_settings=settings,
                           frozen=frozen)
    if html_path:
        from fairjudge.report import consensus_html

        with atomic_write(html_path) as handle:
            handle.write(consensus_html(result, provenance=report_provenance(
                verdicts, items, human_scores, frozen, seed=seed)))
    if as_json:
        echo_json(result.to_dict())
        return
    n_judges = result.per_judge.shape[1]
    intervals = result.scores["ci_low"].notna().any()
    click.echo(f"consensus of {n_judges} judge{'s' if n_judges != 1 else ''} ({method}), Elo "
               f"scale{' with 95% intervals' if intervals else ' (no intervals)'}; s.d. = "
               "spread of the judges' own scores")
    for contestant, row in result.scores.iterrows():
        interval = "" if row.isna()["ci_low"] else f" [{row.ci_low:.0f}, {row.ci_high:.0f}]"
        spread = result.inter_judge_sd.get(contestant, float("nan"))
        click.echo(f"  {contestant:<24} {row.estimate:7.0f}{interval:<14} s.d. "
                   + ("    -" if spread != spread else f"{spread:5.1f}")
                   + ("" if not result.frozen else "  (published)"
                      if contestant in result.frozen else "  (placed)"))
    if len(result.self_preference.columns):
        click.echo("self-preference (logits; self = own family, own = own answers):")
        terms = [name for name in ("self", "own")
                 if f"{name}_estimate" in result.self_preference.columns]
        for judge, row in result.self_preference.iterrows():
            click.echo(f"  {judge:<24} " + "  ".join(
                f"{name} {row[f'{name}_estimate']:+.2f} [{row[f'{name}_ci_low']:+.2f}, "
                f"{row[f'{name}_ci_high']:+.2f}]" for name in terms))
    if result.reliability is not None:
        click.echo("reliability (temperature on quality; geometric mean 1):")
        for judge, row in result.reliability.iterrows():
            click.echo(f"  {judge:<24} {row.estimate:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}]")
    if result.human_correlation:
        for name, figures in result.human_correlation.items():
            c = figures["consensus"]
            interval = ("(no interval: a perfect correlation of few contestants)"
                        if c["ci_low"] != c["ci_low"] else
                        f"[{c['ci_low']:+.2f}, {c['ci_high']:+.2f}]")
            mean = figures["mean_over_judges"]
            click.echo(f"{name} with the human scores: {c['estimate']:+.2f} {interval}; mean "
                       "over judges " + ("n/a" if mean is None else f"{mean:+.2f}"))
    if result.uda is not None:
        from fairjudge.consensus import uda_metrics

        before = uda_metrics(result.uda.baseline, result.uda.baseline)
        after = uda_metrics(result.uda.ratings, result.uda.baseline)
        low, high = (m["mean_inter_judge_sd"] for m in (before, after))
        click.echo(f"inter-judge s.d., mean over contestants: baseline Elo {low:.1f}, UDA "
                   f"{high:.1f} ({100 * (1 - high / low):.0f}% lower, in sample: the "
                   "adapter learned from these comparisons; over the consensus spread "
                   f"{before['relative_inter_judge_sd']:.2f} -> "
                   f"{after['relative_inter_judge_sd']:.2f}; adapter of epoch "
                   f"{result.uda.best_epoch + 1}, {result.uda.n_features} features)")
    for note in result.notes:
        click.echo(f"note: {note}")
    if html_path:
        click.echo(f"wrote {html_path}")
