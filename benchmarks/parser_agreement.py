"""Agreement of the verdict parser with the winners recorded in LLMBar and JudgeBench.

The recorded datasets carry the winners their authors' own parsers read from each judge
reply; this script parses the same replies (``raw``) with fairjudge's ``parse_verdict``
(giving it the two answers shown) and prints, per dataset, the share of calls where both
agree, the share each side reads as a verdict, and the disagreements by kind. With
``--before REV`` it also runs the parser of that git revision, for a before/after table.

    FAIRJUDGE_SHARED_DATA=../shared/data python benchmarks/parser_agreement.py --before HEAD~1
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from fairjudge.data import llmbar_subsets, load_judgebench, load_llmbar
from fairjudge.judges import parse_verdict


def parser_at(revision: str):
    """``parse_verdict`` of ``src/fairjudge/judges/_parsing.py`` at a git revision."""
    source = subprocess.run(["git", "show", f"{revision}:src/fairjudge/judges/_parsing.py"],
                            check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "parsing_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("parsing_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return lambda text, answers: module.parse_verdict(text)  # it took no answers


def calls() -> pd.DataFrame:
    benches = ([load_llmbar(s) for s in llmbar_subsets()]
               + [load_judgebench(p) for p in ("claude", "gpt-4o")])
    rows = []
    for bench in benches:
        texts = bench.items["text"]
        table = bench.verdicts[bench.verdicts["raw"].notna()]
        for call in table.itertuples():
            rows.append({"dataset": bench.name.split("/")[0], "judge": call.judge,
                         "recorded": call.winner if isinstance(call.winner, str) else "invalid",
                         "raw": call.raw, "answers": (texts.get(call.item_a, ""),
                                                      texts.get(call.item_b, ""))})
    return pd.DataFrame(rows)


def summarise(table: pd.DataFrame, column: str) -> pd.DataFrame:
    agree = table["recorded"] == table[column]
    decisive = table[column] != "invalid"
    recorded = table["recorded"] != "invalid"
    return pd.DataFrame({
        "calls": table.groupby("dataset").size(),
        "agree": agree.groupby(table["dataset"]).mean(),
        "recorded valid": recorded.groupby(table["dataset"]).mean(),
        "parsed valid": decisive.groupby(table["dataset"]).mean(),
        "lost": (recorded & ~decisive).groupby(table["dataset"]).sum(),
        "gained": (~recorded & decisive).groupby(table["dataset"]).sum(),
        "flipped": (recorded & decisive & ~agree).groupby(table["dataset"]).sum(),
    })


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV",
                        help="also run the parser of this git revision")
    args = parser.parse_args(argv)
    table = calls()
    parsers = {"now": lambda text, answers: parse_verdict(text, answers=answers)}
    if args.before:
        parsers = {f"at {args.before}": parser_at(args.before), **parsers}
    for name, parse in parsers.items():
        table[name] = [parse(raw, answers)[0].value
                       for raw, answers in zip(table["raw"], table["answers"])]
        print(f"\nparser {name}")
        print(summarise(table, name).round(4).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
