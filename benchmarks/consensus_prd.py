"""One ranking from five judges on PRD Vicuna-80 [uda-consensus-elo, "Validated on PRD"].

The five reviewers (bard, claude, gpt35, gpt4, vicuna-13b) are also the five contestants.
For each consensus method of ``fairjudge consensus`` (joint Bradley–Terry with
self-preference terms, pooled, majority, UDA's baseline Elo; UDA itself is
``benchmarks/uda_prd.py``) this prints the Pearson and
Spearman correlation of the consensus scores with the human scores (a Bradley–Terry fit to
PRD's human pairwise labels), the mean over judges of each judge's own correlation, and
the mean inter-judge standard deviation of a contestant's score (Elo points), each with a
percentile interval over questions resampled with replacement. The human labels are used
only to evaluate, never to fit. With five contestants a correlation has little resolution:
read the intervals.

Run: ``python benchmarks/consensus_prd.py [--resamples 50]`` (needs ../shared/data).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from fairjudge import rank
from fairjudge.consensus import METHODS, consensus
from fairjudge.data import load_prd, shared_data_dir


def human_scores(bench, questions) -> pd.Series:
    gold = bench.gold[bench.gold["question_id"].astype(str).isin(questions)]
    source = bench.items["source"]
    table = pd.DataFrame({"item_a": source.reindex(gold["item_a"]).to_numpy(),
                          "item_b": source.reindex(gold["item_b"]).to_numpy(),
                          "winner": gold["winner"].to_numpy(), "judge": "human"})
    return rank(table, model="naive").scores


def figures(bench, questions, method) -> dict:
    """The metrics on the verdicts of ``questions`` (a resample may repeat a question:
    its verdicts then enter once per draw, under a fresh question id)."""
    parts = []
    for draw, question in enumerate(questions):
        rows = bench.verdicts[bench.verdicts["question_id"].astype(str) == question]
        parts.append(rows.assign(question_id=f"{question}#{draw}"))
    verdicts = pd.concat(parts, ignore_index=True)
    result = consensus(verdicts, bench.items, method=method,
                       human_scores=human_scores(bench, set(questions)))
    out = {"inter-judge s.d.": float(result.inter_judge_sd.mean())}
    for name, values in result.human_correlation.items():
        out[f"{name} consensus"] = values["consensus"]["estimate"]
        out[f"{name} mean judge"] = values["mean_over_judges"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=50)
    args = parser.parse_args()
    if shared_data_dir() is None:
        sys.exit("needs the recorded datasets in ../shared/data (or FAIRJUDGE_SHARED_DATA)")
    bench = load_prd()
    questions = np.array(sorted(bench.verdicts["question_id"].astype(str).unique()))
    rng = np.random.default_rng(0)
    draws = [rng.choice(questions, len(questions)) for _ in range(args.resamples)]
    rows = []
    for method in [m for m in METHODS if m != "uda"]:  # UDA: benchmarks/uda_prd.py
        point = figures(bench, list(questions), method)
        resampled = pd.DataFrame([figures(bench, list(d), method) for d in draws])
        row = {"method": method}
        for name, value in point.items():
            low, high = np.nanpercentile(resampled[name].astype(float), [2.5, 97.5])
            row[name] = f"{value:.3f} [{low:.3f}, {high:.3f}]"
        rows.append(row)
        print(f"{method} done", file=sys.stderr)
    pd.set_option("display.width", 250)
    print(f"PRD Vicuna-80, 5 judges = 5 contestants; 95% percentile intervals over "
          f"{args.resamples} resamples of the {len(questions)} questions")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
