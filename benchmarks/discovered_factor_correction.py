"""Does correcting for a bias fairjudge discovered itself recover the humans' choices
better than correcting for length and markdown alone? [hubj-bias-discovery §3.4, the
"closing the loop" of the HUB-J issue]

On every recorded dataset with gold labels (LLMBar subsets, JudgeBench, PRD), per judge:
the questions are split in two halves (seeded). Offline discovery (no generator LLM) runs
on the judge's disagreement cases of the first half; every answer is then scored by the
found factors (mean cosine similarity to the factor's sentence cluster). On the gold pairs
of the second half only, the external-validity analysis compares three cross-validated
models of the gold label: the judge's preference with length and markdown (the
covariates control of ``fairjudge audit``), the same plus the factor scores, and the
covariates (with and without the factors) without the judge. A factor that captures a
judge's bias, not the dataset, raises "corrected + factors" above "corrected" without
raising "covariates + factors" as much.

Run: ``python benchmarks/discovered_factor_correction.py [--embedder hashing|minilm]
[--n-boot 1000]`` (needs ../shared/data or FAIRJUDGE_SHARED_DATA). Prints a table; nothing
is asserted.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.audit import external_validity
from fairjudge.data import (llmbar_subsets, load_judgebench, load_llmbar, load_prd,
                            shared_data_dir)
from fairjudge.discovery import discover_offline, human_agreement, load_factors
from fairjudge.stats import bootstrap_mean


def fmt(e) -> str:
    return f"{e.estimate:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"


def benchmarks():
    for subset in llmbar_subsets():
        bench = load_llmbar(subset)
        verdicts = bench.verdicts[bench.verdicts["strategy"] == "Vanilla_NoRules"]
        yield f"llmbar/{subset}", verdicts, bench
    for pairs in ("claude", "gpt-4o"):
        bench = load_judgebench(pairs)
        yield f"judgebench/{pairs}", bench.verdicts, bench
    bench = load_prd()
    yield "prd-vicuna80", bench.verdicts, bench


def run_one(name, judge, verdicts, bench, embedder, n_boot, rng):
    """One judge on one dataset; None when there are too few disagreement cases."""
    items = bench.items
    questions = np.array(sorted(bench.gold["question_id"].astype(str).unique()))
    first_half = set(rng.permutation(questions)[:len(questions) // 2])
    mine = verdicts[verdicts["judge"] == judge]
    in_first = mine["question_id"].astype(str).isin(first_half)
    gold_first = bench.gold["question_id"].astype(str).isin(first_half)
    cases = human_agreement(mine[in_first.to_numpy()],
                            bench.gold[gold_first.to_numpy()]).disagreement(judge)
    if len(cases) < 25:
        return None
    text = items["text"].astype(str)
    preferred = [r.item_a if r.judge_pick == "a" else r.item_b for r in cases.itertuples()]
    human = [r.item_a if r.human == "a" else r.item_b for r in cases.itertuples()]
    groups = items["question_id"].reindex(preferred).astype(str).tolist()
    try:
        found = discover_offline(text.loc[preferred].tolist(), text.loc[human].tolist(),
                                 embedder=embedder, groups=groups, rng=0)
    except FairjudgeInputError:
        return None
    factors = load_factors(found.to_dict(), p_max=None)
    scored = items.copy()
    scores = factors.score(text.tolist())
    for column in factors.names:
        scored[column] = scores[column].to_numpy()
    held_gold = bench.gold[~gold_first.to_numpy()]
    held = mine[~in_first.to_numpy()]
    kwargs = {"n_boot": n_boot, "rng": 0}
    base = external_validity(held, scored, held_gold, **kwargs)
    with_factors = external_validity(held, scored, held_gold,
                                     extra_covariates=factors.names, **kwargs)
    significant = sum(f.p_adjusted <= 0.05 for f in found.factors)
    return {"dataset": name, "judge": judge, "disagreement cases": len(cases),
            "significant factors": significant, "held-out pairs": base.n,
            "raw": fmt(base.raw), "corrected": fmt(base.corrected),
            "corrected + factors": fmt(with_factors.corrected),
            "covariates only": fmt(base.covariates_only),
            "covariates + factors": fmt(with_factors.covariates_only),
            "factors add": with_factors.corrected.estimate - base.corrected.estimate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()
    if shared_data_dir() is None:
        sys.exit("needs the recorded datasets in ../shared/data (or FAIRJUDGE_SHARED_DATA)")
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 20)
    rows = []
    for name, verdicts, bench in benchmarks():
        for judge in sorted(verdicts["judge"].unique()):
            row = run_one(name, judge, verdicts, bench, args.embedder, args.n_boot,
                          np.random.default_rng(0))
            if row is not None:
                rows.append(row)
                print(f"{name} {judge}: {row['corrected']} -> {row['corrected + factors']}",
                      file=sys.stderr)
    table = pd.DataFrame(rows)
    print("Agreement with gold on held-out questions (5-fold CV logistic; 95% bootstrap "
          "intervals). Factors: offline discovery on the judge's disagreement cases of the "
          "other half of the questions, every found factor used.")
    print(table.to_string(index=False, float_format=lambda v: f"{v:+.3f}"))
    adds = table["factors add"].to_numpy(float)
    summary = bootstrap_mean(adds, n_boot=args.n_boot, rng=0)
    print(f"\nMean change in corrected agreement from adding the factors, over {len(adds)} "
          f"judge x dataset runs: {fmt(summary)}; better in {int((adds > 0.005).sum())}, "
          f"worse in {int((adds < -0.005).sum())}, within 0.005 in "
          f"{int((np.abs(adds) <= 0.005).sum())}")


if __name__ == "__main__":
    main()
