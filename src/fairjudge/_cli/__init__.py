"""The ``fairjudge`` command line: one file per subcommand, each a thin wrapper over one
library function. Subcommands are imported only when invoked (or listed by ``--help``),
and their modules import nothing heavy at the top, so ``fairjudge --help`` starts fast."""

from __future__ import annotations

import importlib
import sys

import click

from fairjudge._cli._common import run_guarded

# name -> (module, attribute); the order is the order of `fairjudge --help`.
COMMANDS = {
    "demo": ("fairjudge._cli.demo", "demo"),
    "judge": ("fairjudge._cli.judge", "judge"),
    "audit": ("fairjudge._cli.audit", "audit"),
    "probes": ("fairjudge._cli.probes", "probes"),
    "compare": ("fairjudge._cli.compare", "compare"),
    "discover": ("fairjudge._cli.discover", "discover"),
    "quantify": ("fairjudge._cli.quantify", "quantify"),
    "consensus": ("fairjudge._cli.consensus", "consensus"),
    "rank": ("fairjudge._cli.rank", "rank"),
    "leaderboard": ("fairjudge._cli.leaderboard", "leaderboard"),
    "report": ("fairjudge._cli.report", "report"),
    "winrate": ("fairjudge._cli.winrate", "winrate"),
    "select": ("fairjudge._cli.select", "select"),
    "experiment": ("fairjudge._cli.experiment", "experiment"),
    "cache": ("fairjudge._cli.cache", "cache"),
}


class LazyGroup(click.Group):
    """A group whose subcommands live in modules imported on first use."""

    def __init__(self, *args, lazy: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx):
        return list(self.lazy) + [c for c in super().list_commands(ctx) if c not in self.lazy]

    def get_command(self, ctx, name):
        if name in self.lazy:
            module, attribute = self.lazy[name]
            return getattr(importlib.import_module(module), attribute)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, lazy=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog="Exit codes: 0 done; 1 incomplete (failed calls) or internal error; 2 usage "
                    "or input error; 3 spend cap reached; 130 interrupted. Rerunning the same "
                    "command resumes from the completion cache.")
@click.version_option(package_name="fairjudge")
def cli():
    """fairjudge: measure an LLM judge's biases, remove them, and rank under a budget."""


def main(argv=None) -> int:
    """Console-script entry point."""
    return run_guarded(cli, argv if argv is not None else sys.argv[1:])
