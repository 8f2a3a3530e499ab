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
              show_default=True)
def probes(records, out, seed, kinds):
    """Build probe pairs from RECORDS (question, answer[, source]) for `fairjudge audit`."""
    from fairjudge.data import read_table, write_table
    from fairjudge.probes import build_probes

    check_outputs({"--out": out}, {"RECORDS": records})
    table = build_probes(read_table(records), seed=seed,
                         kinds=tuple(k.strip().upper() for k in kinds.split(",") if k.strip()))
    write_table(table, out)
    counts = table["bias_type"].value_counts().to_dict()
    click.echo(f"wrote {len(table):,} probe pairs to {out}: "
               + ", ".join(f"{kind} {n:,}" for kind, n in counts.items()))
