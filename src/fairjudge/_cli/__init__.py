"""The ``fairjudge`` command line (one file per subcommand, each a thin wrapper)."""

from __future__ import annotations

import sys

import click

from fairjudge._cli._common import run_guarded
from fairjudge._cli.audit import audit
from fairjudge._cli.cache import cache
from fairjudge._cli.compare import compare
from fairjudge._cli.demo import demo
from fairjudge._cli.experiment import experiment
from fairjudge._cli.judge import judge
from fairjudge._cli.probes import probes
from fairjudge._cli.rank import rank
from fairjudge._cli.select import select


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="fairjudge")
def cli():
    """fairjudge: measure an LLM judge's biases, remove them, and rank under a budget."""


cli.add_command(rank)
cli.add_command(select)
cli.add_command(demo)
cli.add_command(experiment)
cli.add_command(judge)
cli.add_command(cache)
cli.add_command(compare)
cli.add_command(audit)
cli.add_command(probes)


def main(argv=None) -> int:
    """Console-script entry point."""
    return run_guarded(cli, argv if argv is not None else sys.argv[1:])
