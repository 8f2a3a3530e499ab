"""``fairjudge audit``: measure a judge's position, length, markdown and self biases."""

from __future__ import annotations

from pathlib import Path

import click

from fairjudge._cli._common import echo_json


@click.command()
@click.option("--verdicts", "verdicts_path", type=click.Path(dir_okay=False), default=None,
              help="Verdicts the judge already produced (both orders for position metrics).")
@click.option("--items", type=click.Path(dir_okay=False), default=None,
              help="Item table: text (or length/markdown columns), source, quality.")
@click.option("--backend", multiple=True, help="Audit a live judge instead (see `judge`).")
@click.option("--model", multiple=True)
@click.option("--base-url", multiple=True)
@click.option("--api-key-env", multiple=True)
@click.option("--pairs", type=click.Path(dir_okay=False), default=None,
              help="With --backend: pairs to judge in both orders (S1) for the metrics.")
@click.option("--probes", type=click.Path(dir_okay=False), default=None,
              help="Probe pairs from `fairjudge probes` (scored as controlled bias tests).")
@click.option("--strategy", default="B0", show_default=True,
              help="With --backend: strategy used on the probes.")
@click.option("--gold", type=click.Path(dir_okay=False), default=None)
@click.option("--cache", "cache_path", default=None, envvar="FAIRJUDGE_CACHE")
@click.option("--concurrency", type=int, default=16, show_default=True)
@click.option("--replay", type=click.Path(dir_okay=False), default=None)
@click.option("--replay-judge", default=None)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None)
def audit(verdicts_path, items, backend, model, base_url, api_key_env, pairs, probes, strategy,
          gold, cache_path, concurrency, replay, replay_judge, seed, as_json, html_path):
    """Audit a judge from recorded verdicts or by running it on pairs and probes."""
    import pandas as pd

    from fairjudge._cli.judge import DEFAULT_CACHE, build_backends
    from fairjudge.audit import audit_verdicts, load_gold
    from fairjudge.data import load_items, load_pairs, load_verdicts, read_table
    from fairjudge.judges import CompletionCache, RunOptions
    from fairjudge.probes import score_probes
    from fairjudge.report import audit_html, render_audits
    from fairjudge.strategies import judge_pairs

    if bool(verdicts_path) == bool(backend):
        raise click.UsageError("give either --verdicts FILE or --backend (with --pairs or "
                               "--probes)")
    item_table = load_items(items) if items else None
    gold_table = load_gold(gold) if gold else None
    probe_table = read_table(probes) if probes else None
    probe_runs = []  # (judge, its per-call verdicts on the probes)
    if verdicts_path:
        verdicts = load_verdicts(verdicts_path)
        if probe_table is not None:
            if not {"pair_id", "order"} <= set(verdicts.columns):
                raise click.UsageError(
                    f"{Path(verdicts_path).name} has no `pair_id` and `order` columns, so its "
                    "verdicts cannot be matched to the probes; judge the probes with "
                    "`fairjudge judge` (which writes them) or drop --probes")
            is_probe = verdicts["pair_id"].astype(str).isin(probe_table["id"].astype(str))
            calls = verdicts[is_probe.to_numpy()].copy()
            for judge, part in calls.groupby("judge", sort=True):
                probe_runs.append((str(judge), part))
            verdicts = verdicts[~is_probe.to_numpy()]
    else:
        if not (pairs or probes):
            raise click.UsageError("--backend needs --pairs and/or --probes to judge")
        backends = build_backends(backend, model, base_url, api_key_env, 60.0, concurrency,
                                  replay, replay_judge, items, 2.0, 0.5, seed)
        cache = CompletionCache(cache_path or DEFAULT_CACHE)
        options = RunOptions(concurrency=concurrency, progress=False, seed=seed)
        frames = []
        for judge_backend in backends:  # each judge is audited on its own
            if pairs:
                frames.append(judge_pairs(load_pairs(pairs, items=items if items else None),
                                          "S1", [judge_backend], cache=cache, options=options,
                                          seed=seed).calls)
            if probe_table is not None:
                result = judge_pairs(load_pairs(probe_table[["id", "question", "a", "b"]]),
                                     strategy, [judge_backend], cache=cache, options=options,
                                     seed=seed)
                probe_runs.append((judge_backend.label, result.calls))
                frames.append(result.calls)
        cache.close()
        verdicts = load_verdicts(pd.concat(frames, ignore_index=True))
        if probe_table is not None:
            verdicts = verdicts[~verdicts["pair_id"].astype(str).isin(
                probe_table["id"].astype(str)).to_numpy()]
    audits = audit_verdicts(verdicts, items=item_table, gold=gold_table, rng=seed) \
        if len(verdicts) else {}
    scores, by_judge = None, {}
    for judge, calls in probe_runs:
        table = score_probes(probe_table, calls, rng=seed).to_frame()
        table.insert(0, "judge", judge)
        by_judge[judge] = dict(zip(table["bias_type"], table["bias"]))
        scores = table if scores is None else pd.concat([scores, table], ignore_index=True)
    if html_path:
        costs = None
        if "cost" in verdicts.columns and "judge" in verdicts.columns:
            costs = verdicts.groupby("judge")["cost"].mean().dropna().to_dict()
        Path(html_path).write_text(audit_html(audits, probe_scores=scores,
                                              probe_by_judge=by_judge or None, costs=costs),
                                   encoding="utf-8")
    if as_json:
        payload = {judge: a.to_dict() for judge, a in audits.items()}
        if scores is not None:
            payload["probes"] = scores.to_dict(orient="records")
        echo_json(payload)
    else:
        click.echo(render_audits(audits, scores))
        if html_path:
            click.echo(f"\nHTML report written to {html_path}")
