"""``fairjudge audit``: measure a judge's position, length, markdown and self biases."""

from __future__ import annotations

import click

from fairjudge._cli._common import (
    check_outputs,
    echo_json,
    incomplete_exit,
    input_options,
    report_provenance,
)
from fairjudge._cli._options import (
    STUDY_TEMPERATURE,
    backend_from_environment_only,
    batch_options,
    build_backends,
    build_run_options,
    build_settings,
    family_option,
    generation_options,
    gold_option,
    items_option,
    json_option,
    judge_options,
    open_cache,
    run_options,
    seed_option,
)


def parse_families(values) -> dict | None:
    """``--family openai=gpt4,gpt35`` options -> the family table (defaults extended)."""
    from fairjudge.audit import DEFAULT_FAMILIES

    if not values:
        return None
    families = {k: tuple(v) for k, v in DEFAULT_FAMILIES.items()}
    for value in values:
        family, sep, fragments = value.partition("=")
        names = tuple(f.strip().lower() for f in fragments.split(",") if f.strip())
        if not sep or not family.strip() or not names:
            raise click.BadParameter(f"expected FAMILY=NAME[,NAME...]; got {value!r}",
                                     param_hint="--family")
        families[family.strip()] = names + families.get(family.strip(), ())
    return families


@click.command()
@click.argument("verdicts", required=False, type=click.Path(dir_okay=False))
@click.option("--verdicts", "verdicts_option", type=click.Path(dir_okay=False), default=None,
              hidden=True)
@items_option
@gold_option
@click.option("--pairs", type=click.Path(dir_okay=False), default=None,
              help="With --backend: pairs to judge in both orders (S1) for the metrics.")
@click.option("--probes", type=click.Path(dir_okay=False), default=None,
              help="Probe pairs from `fairjudge probes` (scored as controlled bias tests).")
@click.option("--strategy", default="B0", show_default=True,
              help="With --backend: strategy used on the probes.")
@family_option
@judge_options()
@run_options()
@batch_options()
@generation_options(STUDY_TEMPERATURE)
@seed_option
@json_option
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write a self-contained HTML report.")
@click.option("--plan", is_flag=True, default=False,
              help="Swap-test a random sample of pairs and decide whether the full run needs "
                   "both orders (recorded VERDICTS holding both orders, or --backend with "
                   "--pairs); prints the decision, its numbers and the calls saved.")
@click.option("--sample-size", type=click.IntRange(min=1), default=None,
              envvar="FAIRJUDGE_SAMPLE_SIZE", show_envvar=True,
              help="With --plan: pairs to swap-test per judge [default: 150].")
@click.option("--threshold", type=click.FloatRange(min=0, max=1, min_open=True), default=None,
              envvar="FAIRJUDGE_THRESHOLD", show_envvar=True,
              help="With --plan: lowest acceptable position consistency (on the interval's "
                   "lower bound) for a single-order run [default: 0.90].")
@click.option("--full-pairs", type=click.IntRange(min=1), default=None,
              help="With --plan on recorded verdicts: pairs of the full run to plan for "
                   "[default: the judge's pairs in VERDICTS].")
@click.option("--cost-per-call", type=click.FloatRange(min=0), default=None,
              help="With --plan: dollars per judge call, for the money saved [default: the "
                   "mean recorded `cost`, when there is one].")
def audit(verdicts, verdicts_option, items, gold, pairs, probes, strategy, family, html_path,
          plan, sample_size, threshold, full_pairs, cost_per_call, **params):
    """Audit a judge from recorded VERDICTS, or run it (--backend) on --pairs and --probes.

    Reports, per judge with intervals: position consistency, first-slot rate, repetition
    stability, invalid outputs, accuracy against --gold, length and markdown bias, and
    self-preference (items with a `source` column); probes are scored as controlled tests.
    With --plan: swap-test a random sample and decide whether the full run needs both orders.
    """
    from fairjudge._util._files import atomic_write
    from fairjudge.audit import audit_judge, load_gold
    from fairjudge.data import load_items, read_table
    from fairjudge.report import audit_html, render_audits

    verdicts = verdicts or verdicts_option
    if verdicts and backend_from_environment_only():
        params["backend"] = ()  # recorded verdicts given explicitly win over FAIRJUDGE_BACKEND
    if bool(verdicts) == bool(params["backend"]):
        raise click.UsageError("give either recorded VERDICTS or --backend (with --pairs "
                               "and/or --probes)")
    check_outputs({"--html": html_path},
                  {"VERDICTS": verdicts, "--items": items, "--gold": gold, "--pairs": pairs,
                   "--probes": probes, **input_options(params)}, tables=False)
    plan_only = {"--sample-size": sample_size, "--threshold": threshold,
                 "--full-pairs": full_pairs, "--cost-per-call": cost_per_call}
    if not plan:
        given = [name for name, value in plan_only.items() if value is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)} apply only with --plan")
    else:
        return _plan(verdicts, pairs, items, params, sample_size=sample_size,
                     threshold=threshold, full_pairs=full_pairs, cost_per_call=cost_per_call,
                     others={"--probes": probes, "--gold": gold, "--html": html_path})
    item_table = load_items(items) if items else None
    gold_table = load_gold(gold) if gold else None
    probe_table = read_table(probes) if probes else None
    families = parse_families(family)
    if verdicts:
        run = audit_judge(verdicts=verdicts, probes=probe_table, items=item_table,
                          gold=gold_table, families=families, seed=params["seed"])
    else:
        backends = build_backends(params, items=items, seed=params["seed"])
        cache, cache_path = open_cache(params)
        try:
            run = audit_judge(backends=backends, pairs=pairs, probes=probe_table,
                              items=item_table, gold=gold_table, strategy=strategy,
                              cache=cache, options=build_run_options(params,
                                                                     progress_default=False),
                              settings=build_settings(params), families=families,
                              seed=params["seed"])
        finally:
            cache.close()
        click.echo(f"{run.report.summary()}; cache: {cache_path}", err=True)
    scores = run.probe_table()
    if html_path:
        calls = run.calls
        costs = None
        if "cost" in calls.columns and "judge" in calls.columns:
            costs = calls.groupby("judge")["cost"].mean().dropna().to_dict()
        by_judge = {judge: dict(zip(s.to_frame()["bias_type"], s.to_frame()["bias"]))
                    for judge, s in run.probe_scores.items()}
        provenance = report_provenance(verdicts, items, gold, pairs, probes, params["replay"],
                                       params["prices"], params["templates"],
                                       seed=params["seed"])
        with atomic_write(html_path) as handle:
            handle.write(audit_html(run.audits, probe_scores=scores,
                                    probe_by_judge=by_judge or None, costs=costs,
                                    provenance=provenance))
    if params["as_json"]:
        echo_json(run.to_dict())
    else:
        click.echo(render_audits(run.audits, scores))
        for judge, result in run.audits.items():
            if result.flagged_pairs is not None:
                click.echo(f"\n{judge}: {result.flagged_pairs} of {result.n_pairs} pairs have "
                           "answers with verdict tokens or prompt delimiters "
                           "(answer_has_verdict_tokens / answer_has_delimiters)")
        if html_path:
            click.echo(f"\nHTML report written to {html_path}")
    return incomplete_exit(run.report, run.incomplete, "pairs or probes")


def _plan(verdicts, pairs, items, params, *, sample_size, threshold, full_pairs, cost_per_call,
          others):
    """``audit --plan``: the swap test on recorded verdicts or through a backend."""
    from fairjudge.audit import (
        DEFAULT_SAMPLE_SIZE,
        DEFAULT_THRESHOLD,
        run_swap_test,
        swap_test_plan,
    )
    from fairjudge.data import load_items, load_verdicts
    from fairjudge.report import render_swap_plans

    extra = [name for name, value in others.items() if value]
    if extra:
        raise click.UsageError(f"--plan does not use {', '.join(extra)}")
    sample_size = DEFAULT_SAMPLE_SIZE if sample_size is None else sample_size
    threshold = DEFAULT_THRESHOLD if threshold is None else threshold
    if verdicts:
        if pairs:
            raise click.UsageError("--plan on recorded VERDICTS samples their pairs; --pairs "
                                   "is for a live swap test with --backend")
        plans = swap_test_plan(load_verdicts(verdicts), sample_size=sample_size,
                               threshold=threshold, n_pairs=full_pairs,
                               cost_per_call=cost_per_call, rng=params["seed"])
        report = None
    else:
        if not pairs:
            raise click.UsageError("a live --plan needs --pairs (the pairs of the full run)")
        if full_pairs is not None:
            raise click.UsageError("--full-pairs is for recorded VERDICTS; a live --plan "
                                   "plans for every row of --pairs")
        backends = build_backends(params, items=items, seed=params["seed"])
        cache, cache_path = open_cache(params)
        try:
            plans, report, _ = run_swap_test(
                backends, pairs, sample_size=sample_size, threshold=threshold,
                items=load_items(items) if items else None, cache=cache,
                options=build_run_options(params, progress_default=False),
                settings=build_settings(params), cost_per_call=cost_per_call,
                seed=params["seed"])
        finally:
            cache.close()
        click.echo(f"{report.summary()}; cache: {cache_path}", err=True)
    if params["as_json"]:
        payload = {judge: p.to_dict() for judge, p in plans.items()}
        if report is not None:
            payload["run"] = report.as_dict()
        echo_json(payload)
    else:
        click.echo(render_swap_plans(plans), nl=False)
