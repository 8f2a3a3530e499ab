"""``fairjudge probes``: build controlled bias probes from a user's answers."""

from __future__ import annotations

import click

from fairjudge._cli._common import check_outputs
from fairjudge._cli._options import seed_option


@click.command()
@click.argument("records", type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Probe pairs (.jsonl/.csv): id, bias_type, question, a, b, expected_verdict.")
@seed_option
@click.option("--kinds", default="POSITION,STYLE,LENGTH,TRUNCATION,MODEL_ORIGIN",
              show_default=True,
              help="Comma-separated probe kinds to build (each tests one bias).")
def probes(records, out, seed, kinds):
    """Build probe pairs from RECORDS (question, answer[, source]) for `fairjudge audit`."""
    import warnings

    from fairjudge.data import read_table, write_table
    from fairjudge.probes import ProbeWarning, build_probes

    check_outputs({"--out": out}, {"RECORDS": records})
    frame = read_table(records)
    with warnings.catch_warnings():
        # The library's warning points at `attrs`; a command-line user gets the list below.
        warnings.simplefilter("ignore", ProbeWarning)
        table = build_probes(frame, seed=seed,
                             kinds=tuple(k.strip().upper() for k in kinds.split(",")
                                         if k.strip()))
    write_table(table, out)
    counts = table["bias_type"].value_counts().to_dict()
    click.echo(f"wrote {len(table):,} probe pairs to {out}: "
               + ", ".join(f"{kind} {n:,}" for kind, n in counts.items()))
    _echo_skipped(table.attrs.get("skipped", []), frame)


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
