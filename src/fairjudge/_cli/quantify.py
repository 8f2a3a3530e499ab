"""``fairjudge quantify``: how strongly judges respond to bias factors, by injection."""

from __future__ import annotations

import click

from fairjudge._cli._common import check_outputs, echo_json, input_options, report_provenance
from fairjudge._cli._exit import ExitCode
from fairjudge._cli._options import (
    build_backends,
    generator_options,
    json_option,
    judge_options,
    run_options,
    run_with_generator,
    seed_option,
)


@click.command()
@click.argument("factors", type=click.Path(dir_okay=False))
@click.option("--cases", type=click.Path(dir_okay=False), default=None,
              help="Agreement cases: id, question, chosen (the response judges and humans "
                   "prefer), rejected (.jsonl, .csv or .parquet).")
@click.option("--verdicts", type=click.Path(dir_okay=False), default=None,
              help="Instead of --cases: recorded verdicts whose consensus agreement cases "
                   "(every judge decides as the humans do, both orders) are used; needs "
                   "--gold and --items.")
@click.option("--gold", type=click.Path(dir_okay=False), default=None,
              help="With --verdicts: the human labels.")
@click.option("--items", type=click.Path(dir_okay=False), default=None,
              help="With --verdicts: item table with `text` (and `question`, or give "
                   "--questions).")
@click.option("--questions", type=click.Path(dir_okay=False), default=None,
              help="With --verdicts: question table (question_id, question).")
@judge_options()
@generator_options()
@click.option("--calibration", type=click.IntRange(min=1), default=100, show_default=True,
              help="Cases that choose the effective intensity (the rest measure it).")
@click.option("--no-placebo", is_flag=True, help="Skip the paraphrase control.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write the results (criteria, flip rates per level, profile) as JSON.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Write the bias profile as an HTML report (heatmap with the effective "
                   "level per cell).")
@run_options()
@seed_option
@json_option
def quantify(factors, cases, verdicts, gold, items, questions, calibration, no_placebo, out,
             html_path, **params):
    """Measure how strongly each judge (--backend, repeatable) flips towards responses
    rewritten to show each factor in FACTORS (JSON list of {name, definition}, or a
    `discover --out` file) [hubj-bias-discovery §3.3, Algorithm 2]. Several judges share
    the criteria and rewrites (paid once) and form one bias profile."""
    import asyncio
    import json

    from fairjudge._util._files import atomic_write
    from fairjudge.data import read_table
    from fairjudge.discovery import load_factor_definitions
    from fairjudge.discovery import quantify_async as run_quantify
    from fairjudge.judges import GenerationSettings

    if bool(cases) == bool(verdicts):
        raise click.UsageError("give either --cases or --verdicts (with --gold and --items)")
    if verdicts and not (gold and items):
        raise click.UsageError("--verdicts needs --gold and --items")
    check_outputs({"--out": out, "--html": html_path},
                  {"FACTORS": factors, "--cases": cases, "--verdicts": verdicts,
                   "--gold": gold, "--items": items, "--questions": questions,
                   **input_options(params)}, tables=False)
    definitions = load_factor_definitions(factors)
    table = read_table(cases) if cases else _agreement(verdicts, gold, items, questions)
    judges = build_backends(params, seed=params["seed"])
    names = [j.label for j in judges]
    if len(set(names)) != len(names):
        raise click.BadParameter("two --backend entries name the same judge",
                                 param_hint="--backend")

    async def run_all(writer, modules):
        try:
            return {name: await run_quantify(
                definitions, table, judge, writer, calibration=calibration,
                placebo=not no_placebo, rng=params["seed"],
                judge_settings=GenerationSettings(max_tokens=16), **modules)
                for name, judge in zip(names, judges)}
        finally:
            for backend in {id(b): b for b in [*judges, writer]}.values():
                await backend.aclose()

    results = run_with_generator(params, lambda writer, modules: asyncio.run(
        run_all(writer, modules)))
    if results is None:
        return ExitCode.SPEND_CAP
    payload = {name: result.to_dict() for name, result in results.items()}
    payload = payload[names[0]] if len(names) == 1 else {"judges": payload}
    if out:
        with atomic_write(out) as handle:
            json.dump(payload, handle, indent=1)
    if html_path:
        from fairjudge.report import quantification_html

        with atomic_write(html_path) as handle:
            handle.write(quantification_html(results, provenance=report_provenance(
                factors, cases, verdicts, gold, items, questions, seed=params["seed"])))
    if params["as_json"]:
        echo_json(payload)
        return
    click.echo("susceptibility (held-out flip rate at the effective intensity level) beside "
               "the placebo (flip rate towards a paraphrase: the judge's own noise)")
    for name, result in results.items():
        if len(results) > 1:
            click.echo(f"{name}:")
        for q in result.factors:
            rho, placebo = q.susceptibility, q.placebo
            levels = ", ".join(f"{int(r.level)}: {r.flip_rate:.2f}"
                               for r in q.calibration.itertuples())
            click.echo(f"  {q.factor.name}: rho {rho.estimate:.3f} [{rho.ci_low:.3f}, "
                       f"{rho.ci_high:.3f}] (n {rho.n}, level {q.effective_level})"
                       + (f"; placebo {placebo.estimate:.3f} [{placebo.ci_low:.3f}, "
                          f"{placebo.ci_high:.3f}]" if placebo is not None else "")
                       + f"; calibration flip rates {levels}"
                       + ("" if q.answer_changed is None else
                          f"; answer changed in {q.answer_changed:.0%} of rewrites"))
    for path in (out, html_path):
        if path:
            click.echo(f"wrote {path}")


def _agreement(verdicts, gold, items, questions):
    """The consensus agreement cases of recorded verdicts, as quantify reads them."""
    from fairjudge._cli._common import read_question_table
    from fairjudge.audit import load_gold
    from fairjudge.data import load_items, load_verdicts
    from fairjudge.discovery import agreement_cases, explain_empty, human_agreement

    sets = human_agreement(load_verdicts(verdicts), load_gold(gold))
    chosen = sets.consensus_agreement()
    if not len(chosen):
        raise click.UsageError(explain_empty(sets, None, "agreement"))
    table = agreement_cases(chosen, load_items(items), read_question_table(questions))
    click.echo(f"{len(table)} agreement cases (all {len(sets.judges)} judges alike with the "
               "humans)", err=True)
    return table
