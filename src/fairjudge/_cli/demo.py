"""``fairjudge demo``: the whole pipeline on built-in simulated judges, no API key needed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from fairjudge._cli._common import task_progress
from fairjudge._cli._options import seed_option

BIASED = {"bias": 2.0, "position": 0.5}
UNBIASED = {"bias": 0.0, "position": 0.0}


@click.command()
@click.option("--out", type=click.Path(file_okay=False), default="fairjudge-results/demo",
              show_default=True, help="Folder for tables, verdicts and figures.")
@seed_option
@click.option("--oracles", type=int, default=8, show_default=True,
              help="Simulated oracle matrices behind the averaged figures.")
def demo(out, seed, oracles):
    """Biased vs unbiased simulated judges: bias estimates, naive vs bias-aware recall, and
    top-k recall vs budget for the acquisition rules."""
    import pandas as pd

    from fairjudge._util._files import check_output_folder
    from fairjudge.active import (
        TopkExperimentConfig,
        make_oracle,
        run_topk_experiment,
        summarize_topk_results,
    )
    from fairjudge.active._experiment import _full_data_fit
    from fairjudge.active._loop import topk_recall
    from fairjudge.data import controlled_pool, matrix_to_verdicts, write_table
    from fairjudge.report import format_recall_table, render, write_topk_report
    from fairjudge.stats import mean_and_se

    check_output_folder("--out", out)
    start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    k = 5
    click.echo("fairjudge demo: N = 30 items, theta ~ N(0, 1.25^2), binary verbosity "
               "(balanced, |corr(theta, x)| < 0.12), k = 5")
    click.echo(f"  cheap biased judge: c* = {BIASED['bias']} per unit of verbosity, "
               f"kappa* = {BIASED['position']};  unbiased judge: c* = kappa* = 0")
    click.echo("  each judge gives one verdict on every ordered pair (870 verdicts)\n")

    # 1. One pool, both judges, full data: bias estimates with intervals.
    base = TopkExperimentConfig(n_oracles=oracles, seed=seed)
    items, biased_matrix = make_oracle(base, 0, **BIASED)
    _, unbiased_matrix = make_oracle(base, 0, **UNBIASED)
    verdicts = pd.concat([matrix_to_verdicts(biased_matrix, items.index, judge="cheap-biased"),
                          matrix_to_verdicts(unbiased_matrix, items.index, judge="unbiased")],
                         ignore_index=True)
    write_table(items.reset_index(), out / "items.csv")
    write_table(verdicts, out / "verdicts.jsonl")
    click.echo("Bias estimates, bias-aware model on oracle 0 (95% Laplace intervals):")
    for judge, matrix, truth in (("cheap-biased", biased_matrix, BIASED),
                                 ("unbiased", unbiased_matrix, UNBIASED)):
        fit = _full_data_fit(matrix, items, "bias-aware", base)
        for b, true_value in zip(fit.bias, (truth["bias"], truth["position"])):
            ci = b.interval(0.95)
            click.echo(f"  {judge:<13} {b.name:<9} {b.estimate:+.2f}  [{ci.low:+.2f}, "
                       f"{ci.high:+.2f}]   truth {true_value:+.2f}")

    # 2. Naive vs bias-aware recall on full data, over several oracles.
    click.echo(f"\nTop-{k} recall on full data, mean ± s.e. over {oracles} oracles:")
    rows = []
    for judge, truth in (("cheap-biased", BIASED), ("unbiased", UNBIASED)):
        for o in range(oracles):
            pool, matrix = make_oracle(base, o, **truth)
            quality = pool["quality"].to_numpy()
            for model in ("naive", "bias-aware"):
                fit = _full_data_fit(matrix, pool, model, base)
                rows.append({"judge": judge, "model": model, "oracle": o,
                             "recall": topk_recall(fit.topk(k), quality, k)})
    full = pd.DataFrame(rows)
    write_table(full, out / "full_data_recall.csv")
    for judge in ("cheap-biased", "unbiased"):
        parts = []
        for model in ("naive", "bias-aware"):
            mean, se = mean_and_se(full[(full.judge == judge) & (full.model == model)]["recall"])
            parts.append(f"{model} {mean:.2f} ± {se:.2f}")
        click.echo(f"  {judge:<13} " + "   ".join(parts))

    # 3. Recall vs budget for the acquisition rules (biased judge).
    config = TopkExperimentConfig(
        n_oracles=oracles, n_seeds=2, budgets=(40, 80, 120, 200),
        rules=("topk", "global", "round-robin", "random"), models=("bias-aware", "naive"),
        ablation_rules=(), ablation_budget=120, spend_budget=200, k_values=(k,),
        large_n_items=0, seed=seed, **BIASED)
    with task_progress(2 * oracles, "recall vs budget") as progress:
        results = run_topk_experiment(config, jobs=min(2, os.cpu_count() or 1),
                                      progress=progress)
    summary = summarize_topk_results(results, config)
    _, written = write_topk_report(results, config, out, summary=summary)
    click.echo(f"\nRecall vs budget, cheap biased judge ({oracles} oracles x 2 seeds, "
               "mean ± s.e.):")
    click.echo(render(format_recall_table(summary.recall, "bias-aware"),
                      "bias-aware model"))
    click.echo(render(format_recall_table(summary.recall, "naive", ["topk"]),
                      "naive model (plateaus: it ranks presentation, not quality)"))

    # 4. A controlled pool: real answer texts with known quality, ready for a real judge.
    pool = controlled_pool("the Moon", rng=seed)
    write_table(pool.reset_index(), out / "controlled_pool_moon.csv")
    terse = pool[pool["verbose"] == 0].iloc[0]
    verbose = pool[pool["verbose"] == 1].iloc[0]
    click.echo(f"\nControlled pool ({pool.attrs['question']!r}), two of its 30 answers:")
    click.echo(f"  terse, quality {terse['quality']:+.0f}: {terse['text'][:150]}...")
    click.echo(f"  elaborated, quality {verbose['quality']:+.0f}: {verbose['text'][:150]}...")

    click.echo(f"\nresults written to {os.path.abspath(out)}/")
    click.echo("  " + ", ".join(sorted({p.name for p in written} | {
        "items.csv", "verdicts.jsonl", "full_data_recall.csv", "controlled_pool_moon.csv"})))
    click.echo(f"try: fairjudge rank {out / 'verdicts.jsonl'} --items {out / 'items.csv'} "
               f"--covariates verbose --k 5")
    click.echo(f"done in {time.perf_counter() - start:.1f} s")
