"""``fairjudge probes``: build controlled bias probes from a user's answers, or (with
``--verdicts``) break the verdicts on them down by topic, category and strategy."""

from __future__ import annotations

import click

from fairjudge._cli._common import check_outputs, echo_json, input_options
from fairjudge._cli._exit import ExitCode
from fairjudge._cli._options import (
    generator_options,
    json_option,
    run_options,
    run_with_generator,
    seed_option,
)


@click.command()
@click.argument("records", type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Probe pairs (.jsonl/.csv): id, bias_type, question, a, b, expected_verdict "
                   "(and category when the records have a category or topic column).")
@click.option("--verdicts", "verdict_files", multiple=True, type=click.Path(dir_okay=False),
              help="Analyse instead of build: RECORDS is then a probe table and these the "
                   "`fairjudge judge` verdicts on it (repeat per file; judge and strategy "
                   "columns split them). Prints style bias per topic (Table 7), results per "
                   "category (Fig. 3) and cross-bias analyses (Fig. 2).")
@click.option("--baseline", default="B0", show_default=True,
              help="With --verdicts: the strategy the others are compared with.")
@click.option("--correlation", "method", type=click.Choice(["spearman", "pearson"]),
              default="spearman", show_default=True,
              help="With --verdicts: correlation between bias measures across judge x "
                   "strategy units.")
@click.option("--judge-family", default=None,
              help="With --verdicts: the judges' own source name, for MODEL_ORIGIN "
                   "self-preference.")
@click.option("--n-boot", type=click.IntRange(min=1), default=2000, show_default=True,
              help="With --verdicts: bootstrap replicates of the intervals.")
@json_option
@seed_option
@click.option("--kinds", default="POSITION,STYLE,LENGTH,TRUNCATION,MODEL_ORIGIN",
              show_default=True,
              help="Comma-separated probe kinds to build (each tests one bias); empty for "
                   "none but the --factors kinds.")
@click.option("--factors", type=click.Path(dir_okay=False), default=None,
              help="Bias factors (a `discover --out` file, or a JSON list of {name, "
                   "definition}): each becomes a probe kind, an answer against its rewrite "
                   "showing the factor (needs --generator).")
@click.option("--factor-level", type=click.IntRange(1, 5), default=5, show_default=True,
              help="Intensity (1-5) of the factor rewrites.")
@generator_options(required=False)
@run_options()
def probes(records, out, verdict_files, baseline, method, judge_family, n_boot, as_json, seed,
           kinds, factors, factor_level, **params):
    """Build probe pairs from RECORDS (question, answer[, source, category]) for `fairjudge
    audit`; with --verdicts, analyse the verdicts on the probe table RECORDS."""
    import warnings

    import pandas as pd

    from fairjudge.data import read_table, write_table
    from fairjudge.probes import ProbeWarning, build_probes

    if verdict_files:
        if out or factors:
            raise click.UsageError("--verdicts analyses an existing probe table; --out and "
                                   "--factors build one (run them separately)")
        return _analyse(records, verdict_files, baseline=baseline, method=method,
                        judge_family=judge_family, n_boot=n_boot, as_json=as_json, seed=seed)
    if out is None:
        raise click.UsageError("give --out to build probes, or --verdicts to analyse verdicts "
                               "on a probe table")
    if as_json:
        raise click.UsageError("--json goes with --verdicts (the analysis)")
    if bool(factors) != bool(params.get("generator")):
        raise click.UsageError("--factors and --generator go together: the generator "
                               "rewrites each answer to show each factor")
    check_outputs({"--out": out}, {"RECORDS": records, "--factors": factors,
                                   **(input_options(params) if factors else {})})
    frame = read_table(records)
    names = tuple(k.strip().upper() for k in kinds.split(",") if k.strip())
    tables = []
    with warnings.catch_warnings():
        # The library's warning points at `attrs`; a command-line user gets the list below.
        warnings.simplefilter("ignore", ProbeWarning)
        if names:
            tables.append(build_probes(frame, seed=seed, kinds=names))
        if factors:
            built = _factor_probes(factors, frame, factor_level, seed, params)
            if built is None:
                return ExitCode.SPEND_CAP
            tables.append(built)
    if not tables:
        raise click.UsageError("no probe kind to build: give --kinds or --factors")
    table = pd.concat(tables, ignore_index=True)
    table.attrs["skipped"] = [s for t in tables for s in t.attrs.get("skipped", [])]
    write_table(table, out)
    counts = table["bias_type"].value_counts().to_dict()
    click.echo(f"wrote {len(table):,} probe pairs to {out}: "
               + ", ".join(f"{kind} {n:,}" for kind, n in counts.items()))
    _echo_skipped(table.attrs.get("skipped", []), frame)


def _analyse(probe_path, verdict_files, *, baseline, method, judge_family, n_boot, as_json,
             seed):
    """Print the per-topic, per-category and cross-bias breakdown of the verdicts."""
    import warnings

    from fairjudge.data import read_table
    from fairjudge.probes import ProbeWarning, probe_breakdown
    from fairjudge.report import render_probe_breakdown

    probe_table = read_table(probe_path)
    tables = [read_table(path) for path in verdict_files]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ProbeWarning)
        result = probe_breakdown(probe_table, tables, judge_family=judge_family,
                                 baseline=baseline, method=method, n_boot=n_boot, rng=seed)
    messages = list(dict.fromkeys(str(w.message) for w in caught
                                  if issubclass(w.category, ProbeWarning)))
    if as_json:
        echo_json({"probes": probe_path, "verdicts": list(verdict_files), "seed": seed,
                   "warnings": messages, **result.to_dict()})
        return None
    for message in messages:
        click.echo(f"warning: {message}", err=True)
    click.echo(render_probe_breakdown(result))
    return None


def _factor_probes(path, frame, level, seed, params):
    """The probe table of the factors in ``path``; None when the spend cap stopped it."""
    from fairjudge.discovery import factor_probes, load_factor_definitions
    from fairjudge.discovery._offline import read_factors_file

    definitions = load_factor_definitions(path)
    data, _ = read_factors_file(path)
    entries = data.get("factors") if isinstance(data, dict) else data
    criteria = [entry.get("criteria") for entry in entries]
    return run_with_generator(params, lambda generator, modules: factor_probes(
        definitions, frame, generator, level=level,
        criteria=criteria if all(criteria) else None, seed=seed, **modules))


#: Skipped records listed one per line before the rest is counted.
SHOWN_SKIPPED = 10


def _echo_skipped(skipped: list, records) -> None:
    """Which records gave no probe of a kind, and why (stderr). ``records`` is the table
    read: without an ``id`` column a record is named by its line in the file."""
    name = records.attrs.get("source", "RECORDS")
    for entry in skipped[:SHOWN_SKIPPED]:
        record = entry["record_id"]
        if record is None:
            where = "no probe of this kind could be built"
        elif "id" in records.columns:
            where = f"{name}: record id {record!r} skipped"
        else:  # the record's position among the rows
            where = f"{name} line {records.index[int(record)]} skipped"
        click.echo(f"warning: {entry['bias_type']}: {where}: {entry['reason']}", err=True)
    if len(skipped) > SHOWN_SKIPPED:
        click.echo(f"warning: ... and {len(skipped) - SHOWN_SKIPPED:,} more skipped records",
                   err=True)
