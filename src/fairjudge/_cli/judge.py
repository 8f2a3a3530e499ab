"""``fairjudge judge``: run a judge with a debiasing strategy over a table of pairs."""

from __future__ import annotations

import os
from pathlib import Path

import click

from fairjudge._cli._common import check_outputs, echo_json, incomplete_exit, input_options
from fairjudge._cli._exit import ExitCode
from fairjudge._cli._options import (
    STUDY_TEMPERATURE,
    batch_options,
    build_backends,
    build_run_options,
    build_settings,
    generation_options,
    json_option,
    judge_options,
    open_cache,
    run_options,
    seed_option,
)

REFERENCES = "the reference answers table"


def judge_outputs(out: str, aggregate_path: str | None, strategy, n_backends: int) -> dict:
    """The files a run writes: ``out`` (every call), the per-pair aggregate (``--aggregate``,
    or ``<out>.aggregate<suffix>`` for multi-call strategies) and, for strategies that
    generate reference answers, ``<out>.references<suffix>``; None where not written."""
    path = Path(out)
    if aggregate_path is None and (strategy.cost_multiplier(n_backends) > 1
                                   or strategy.needs_reference):
        aggregate_path = str(path.with_name(f"{path.stem}.aggregate{path.suffix}"))
    references = (str(path.with_name(f"{path.stem}.references{path.suffix}"))
                  if strategy.needs_reference else None)
    return {"--out": out, "--aggregate": aggregate_path, REFERENCES: references}


@click.command()
@click.argument("pairs", type=click.Path(dir_okay=False))
@judge_options()
@click.option("--strategy", default="B0", show_default=True,
              help="B0, S1 ... S8, CWO (consistent wins only) or SW (B0 with a bias warning).")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Per-call verdict table (.jsonl, .csv or .parquet).")
@click.option("--aggregate", "aggregate_path", type=click.Path(dir_okay=False), default=None,
              help="Per-pair table in the input's a/b frame (default for multi-call "
                   "strategies: <out>.aggregate<suffix>).")
@click.option("--questions", type=click.Path(dir_okay=False), default=None,
              help="Table of question_id, question (when PAIRS give question_id).")
@click.option("--items", type=click.Path(dir_okay=False), default=None,
              help="Item table with text (when PAIRS give item ids as a and b).")
@click.option("--samples", type=click.IntRange(min=1), default=1, show_default=True,
              help="Repeats of every call (sample 0, 1, ...; cached separately), to measure "
                   "repetition stability at temperature > 0. Only sample 0 is aggregated.")
@run_options()
@batch_options()
@generation_options(STUDY_TEMPERATURE)
@seed_option
@json_option
def judge(pairs, strategy, out, aggregate_path, questions, items, samples, **params):
    """Judge every pair in PAIRS (JSONL: id, question, a, b[, reference]) with a strategy.

    Writes one row per call as shown (pair_id, item_a shown first, item_b, winner, order,
    sample, strategy, cost, raw, ...). Exits 1 when some pair is incomplete (the missing
    pair ids are listed), 3 when the spend cap stopped the run; rerun to resume.
    """
    from fairjudge.data import load_pairs, write_table
    from fairjudge.judges import RunReport, load_templates
    from fairjudge.strategies import get_strategy, judge_pairs

    chosen = get_strategy(strategy)
    outputs = judge_outputs(out, aggregate_path, chosen, len(params["backend"] or ()))
    check_outputs(outputs, {"PAIRS": pairs, "--questions": questions, "--items": items,
                            **input_options(params)})
    table = load_pairs(pairs, questions=questions, items=items)
    template = params.get("template")
    if "hf" in params["backend"] and template is None:
        # Next-token logits judge a bare label; JSON or reasoning prompts would read the
        # logits where the model writes "{" or its first word.
        template = "letter"
        click.echo("note: the hf backend scores the A/B next-token logits; using the "
                   "`letter` template (pass --template to override)", err=True)
    loaded_templates = load_templates(params.get("templates"))
    if template and template not in loaded_templates:
        raise click.BadParameter(f"unknown template {template!r}; have "
                                 f"{', '.join(loaded_templates)}", param_hint="--template")
    options = build_run_options(params)
    backends = build_backends(params, items=items, seed=params["seed"])
    report = RunReport()
    cache, cache_path = open_cache(params)
    try:
        result = judge_pairs(table, chosen, backends, cache=cache, options=options,
                             seed=params["seed"], settings=build_settings(params),
                             templates=loaded_templates, template=template, samples=samples,
                             report=report)
    except KeyboardInterrupt:
        report.interrupted = True
        click.echo(f"interrupted: {report.summary()}", err=True)
        return ExitCode.INTERRUPTED
    finally:
        cache.close()
    references = result.references
    tables = {"--out": result.calls, "--aggregate": result.aggregate,
              REFERENCES: references if references is not None and len(references) else None}
    written = []
    for option, path in outputs.items():
        if path and tables[option] is not None:
            write_table(tables[option], path)
            written.append(path)
    details = result.aggregate["outcome_detail"].value_counts().to_dict()
    flagged = list(result.flagged["pair_id"])
    if params["as_json"]:
        echo_json({"strategy": chosen.name, "pairs": len(table),
                   "completed_pairs": len(result.aggregate),
                   "incomplete_pairs": list(result.incomplete), "outcomes": details,
                   "flagged_pairs": flagged,
                   "report": report.as_dict(), "cache": str(cache_path),
                   "written": [os.path.abspath(p) for p in written]})
    else:
        click.echo(f"{chosen.name} ({chosen.title}): {len(result.aggregate):,}/{len(table):,} "
                   "pairs judged"
                   + ("; outcomes " + ", ".join(f"{kind} {n:,}" for kind, n in details.items())
                      if details else ""), err=True)
        click.echo(report.summary(), err=True)
        click.echo(f"cache: {cache_path}", err=True)
        click.echo(f"wrote {', '.join(written)}", err=True)
        if flagged:
            shown = ", ".join(map(str, flagged[:10])) + (" ..." if len(flagged) > 10 else "")
            click.echo(f"warning: {len(flagged)} of {len(table)} pairs have answers with "
                       f"verdict tokens or prompt delimiters that could steer a judge ({shown}); "
                       "see answer_has_verdict_tokens / answer_has_delimiters", err=True)
    if result.incomplete:
        return incomplete_exit(report, result.incomplete, "pairs", total=len(table))
    for error in report.errors[:5]:
        click.echo(f"error: {error}", err=True)
    if len(result.calls) and (result.calls["outcome_detail"] == "invalid").all():
        click.echo("error: every judge output was unparseable (outcome_detail invalid; the "
                   "`detail` column says why): no usable verdict", err=True)
        return ExitCode.INCOMPLETE
    return ExitCode.OK
