"""Does a bias correction help on real judges? Held-out agreement with human labels
[the multi-fidelity issue §2, "Corrections that hold on real data"].

For every recorded judge run in ../shared/data with human or objective labels (LLMBar's
eight subsets x judges x its two prompts, JudgeBench's two pair sets x judges, PRD's five
reviewers), this draws ``--labels`` labelled pairs (at most 60% of the run's labelled
pairs) as human anchors, ranks the run's answers with `fairjudge rank`'s models, and
scores each on the other labelled pairs: the share whose better answer it ranks higher
(a score tie counts half). Models: naive (no correction), bias-aware (length and
markdown, identified by assuming quality uncorrelated with them), residualized (length
regressed out of the naive scores) and anchored (`rank --anchors`: the anchors fitted
with the verdicts, each judge's terms its excess over the humans'). Repeated over
``--draws`` anchor draws; a pair's credit is averaged over the draws that held it out, so
the interval of anchored - naive is over pairs (normal, 95%). No model sees the held-out
labels; nothing is tuned on them.

Run: ``python benchmarks/anchored_correction.py [--labels 100] [--draws 5]`` (needs
../shared/data).
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import pandas as pd

from fairjudge import rank
from fairjudge.data import llmbar_subsets, load_judgebench, load_llmbar, load_prd, shared_data_dir

MODELS = ("naive", "bias-aware", "residualized", "anchored")
COVARIATES = ["length", "markdown"]


def runs():
    """(dataset, judge, verdicts, items, gold) for every recorded judge run with labels."""
    for subset in llmbar_subsets():
        bench = load_llmbar(subset)
        for (judge, strategy), part in bench.verdicts.groupby(["judge", "strategy"]):
            yield f"llmbar/{subset}", f"{judge}/{strategy}", part, bench.items, bench.gold
    for pairs in ("claude", "gpt-4o"):
        bench = load_judgebench(pairs)
        for judge, part in bench.verdicts.groupby("judge"):
            yield f"judgebench/{pairs}", judge, part, bench.items, bench.gold
    bench = load_prd()
    gold = bench.gold[bench.gold["winner"] != "tie"]
    for judge, part in bench.verdicts.groupby("judge"):
        yield "prd", judge, part, bench.items, gold


def credit(scores: pd.Series, gold: pd.DataFrame) -> np.ndarray:
    """Per labelled pair: 1 when the better answer scores higher, 0.5 on a tie."""
    diff = scores.reindex(gold["item_a"]).to_numpy() - scores.reindex(gold["item_b"]).to_numpy()
    first = (gold["winner"] == "a").to_numpy()
    return np.where(diff == 0, 0.5, ((diff > 0) == first).astype(float))


def evaluate(verdicts, items, gold, n_labels, draws) -> dict:
    gold = gold[gold["winner"].isin(["a", "b"])].reset_index(drop=True)
    gold = gold[gold["item_a"].isin(items.index) & gold["item_b"].isin(items.index)]
    verdicts = verdicts[verdicts["winner"].notna()]
    fitted = set(verdicts["item_a"]) | set(verdicts["item_b"])
    gold = gold[gold["item_a"].isin(fitted) & gold["item_b"].isin(fitted)].reset_index(
        drop=True)
    size = min(n_labels, int(0.6 * len(gold)))
    totals = {m: np.zeros(len(gold)) for m in MODELS}
    held = np.zeros(len(gold))
    fixed = {m: credit(rank(verdicts, items, model=m, covariates=COVARIATES,
                            n_samples=10).scores, gold)
             for m in MODELS[:3]}
    for draw in range(draws):
        chosen = np.random.default_rng(draw).permutation(len(gold))[:size]
        out = np.ones(len(gold), bool)
        out[chosen] = False
        anchored = rank(verdicts, items, covariates=COVARIATES, n_samples=10,
                        anchors=gold.iloc[chosen].assign(judge="human"))
        scores = {**fixed, "anchored": credit(anchored.scores, gold)}
        for m in MODELS:
            totals[m][out] += scores[m][out]
        held += out
    keep = held > 0
    per_pair = {m: totals[m][keep] / held[keep] for m in MODELS}
    gain = per_pair["anchored"] - per_pair["naive"]
    se = gain.std(ddof=1) / np.sqrt(gain.size)
    return {"pairs": int(keep.sum()), "labels": size,
            **{m: float(per_pair[m].mean()) for m in MODELS},
            "anchored - naive": float(gain.mean()),
            "ci_low": float(gain.mean() - 1.96 * se), "ci_high": float(gain.mean() + 1.96 * se)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=100)
    parser.add_argument("--draws", type=int, default=5)
    args = parser.parse_args()
    if shared_data_dir() is None:
        sys.exit("needs the recorded datasets in ../shared/data (or FAIRJUDGE_SHARED_DATA)")
    warnings.simplefilter("ignore")
    rows = []
    for dataset, judge, verdicts, items, gold in runs():
        rows.append({"dataset": dataset, "judge": judge,
                     **evaluate(verdicts, items, gold, args.labels, args.draws)})
        print(f"{dataset} {judge}", file=sys.stderr)
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    print(f"held-out agreement with human/objective labels, {args.labels} labels as anchors "
          f"(at most 60% of a run's pairs), {args.draws} draws; anchored - naive with a "
          "95% interval over pairs")
    print(table.round(3).to_string(index=False))
    print(f"\n{len(table)} runs. anchored >= naive in {(table['anchored'] >= table['naive']).sum()}"
          f"; interval of anchored - naive wholly below 0 in {(table['ci_high'] < 0).sum()}, "
          f"wholly above in {(table['ci_low'] > 0).sum()}; bias-aware >= naive in "
          f"{(table['bias-aware'] >= table['naive']).sum()}; anchored >= bias-aware in "
          f"{(table['anchored'] >= table['bias-aware']).sum()}")
    print("mean over runs: " + ", ".join(f"{m} {table[m].mean():.3f}" for m in MODELS))


if __name__ == "__main__":
    main()
