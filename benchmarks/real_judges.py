"""Audit every recorded judge in ../shared/data, compare strategies, test correction.

Prints, with 95% intervals:

1. the audit of every recorded judge on every dataset (LLMBar subsets x judges x prompt
   strategies, JudgeBench, PRD Vicuna-80): position consistency, first-slot rate, accuracy
   against gold, and length / markdown bias beyond gold (logits per doubling);
2. strategy comparisons wherever two strategies exist on the same pairs (LLMBar
   Vanilla_NoRules vs Metrics_Reference; raw first-order verdicts vs consistent-wins-only),
   with McNemar's test and Holm–Bonferroni over each family of tests;
3. the external-validity analysis of covariate correction on LLMBar (raw vs corrected
   agreement with the recalibration and covariates-only controls);
4. AlpacaEval's model-level evidence: rank correlation with Chatbot Arena Elo of the raw
   and the length-controlled win rate.

Run: ``python benchmarks/real_judges.py [--out DIR] [--n-boot 2000]`` (needs
../shared/data or FAIRJUDGE_SHARED_DATA). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from fairjudge.audit import (audit_verdicts, external_validity, gold_choice,
                             position_consistency)
from fairjudge.data import (llmbar_subsets, load_alpacaeval, load_judgebench, load_llmbar,
                            load_prd, shared_data_dir)
from fairjudge.stats import bootstrap_mean
from fairjudge.stats._correlation import correlation
from fairjudge.stats._mcnemar import holm_bonferroni, mcnemar


def fmt(est) -> str:
    if est is None or not np.isfinite(est.estimate):
        return ""
    return f"{est.estimate:.2f} [{est.ci_low:.2f},{est.ci_high:.2f}]"


def audit_rows(dataset: str, verdicts: pd.DataFrame, items, gold, n_boot: int) -> list[dict]:
    rows = []
    for strategy, part in verdicts.groupby("strategy", sort=True):
        audits = audit_verdicts(part, items=items[["text"]], gold=gold, n_boot=n_boot)
        for judge, a in audits.items():
            rows.append({"dataset": dataset, "judge": judge, "strategy": strategy,
                         "pairs": a.position_consistency.n, "consistency":
                         fmt(a.position_consistency), "first-slot": fmt(a.first_position_rate),
                         "accuracy": fmt(a.accuracy), "length bias": fmt(a.length_bias),
                         "markdown bias": fmt(a.markdown_bias),
                         "invalid": f"{a.invalid_rate.estimate:.2f}"})
    return rows


def correct_vector(verdicts: pd.DataFrame, gold: pd.DataFrame) -> pd.Series:
    truth = gold_choice(verdicts, gold)
    winner = verdicts["winner"].astype("string").fillna("").to_numpy(dtype=object)
    key = verdicts["pair_id"].astype(str) + "/" + verdicts["order"].astype(str)
    return pd.Series((winner == truth.to_numpy(dtype=object)).astype(float), index=key.to_numpy())


def consistent_wins_only(verdicts: pd.DataFrame, gold: pd.DataFrame) -> pd.Series:
    """Per pair: correct if both orders name the gold winner (an inconsistent pair
    abstains and counts as wrong, as an unusable verdict)."""
    c = correct_vector(verdicts, gold)
    pair = c.index.str.rsplit("/", n=1).str[0]
    both = c.groupby(pair).agg(["sum", "count"])
    return (both["sum"] == 2).astype(float).where(both["count"] == 2).dropna()


def _decided(verdicts: pd.DataFrame) -> pd.Series:
    """Per pair: 1 if both orders name the same item (the pair is not an abstention)."""
    winner = verdicts["winner"].astype("string").fillna("").to_numpy(dtype=object)
    item = np.where(winner == "a", verdicts["item_a"],
                    np.where(winner == "b", verdicts["item_b"], "="))
    table = pd.DataFrame({"pair": verdicts["pair_id"].to_numpy(), "item": item})
    grouped = table.groupby("pair")["item"]
    return ((grouped.nunique() == 1) & (grouped.size() == 2)
            & (grouped.first() != "=")).astype(float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--n-boot", type=int, default=2000)
    args = parser.parse_args()
    if shared_data_dir() is None:
        sys.exit("needs the recorded datasets in ../shared/data (or FAIRJUDGE_SHARED_DATA)")
    pd.set_option("display.width", 220)
    pd.set_option("display.max_columns", 20)
    pd.set_option("display.max_rows", 500)

    audits, strategy_tests, cwo_tests, external = [], [], [], []
    for subset in llmbar_subsets():
        bench = load_llmbar(subset)
        audits += audit_rows(f"llmbar/{subset}", bench.verdicts, bench.items, bench.gold,
                             args.n_boot)
        for judge, jv in bench.verdicts.groupby("judge"):
            by_strategy = {s: correct_vector(v, bench.gold) for s, v in jv.groupby("strategy")}
            if {"Vanilla_NoRules", "Metrics_Reference"} <= set(by_strategy):
                a, b = by_strategy["Vanilla_NoRules"], by_strategy["Metrics_Reference"]
                common = a.index.intersection(b.index)
                t = mcnemar(a[common].to_numpy(), b[common].to_numpy())
                strategy_tests.append({"subset": subset, "judge": judge, "n": len(common),
                                       "Vanilla acc": a[common].mean(),
                                       "Metrics+Ref acc": b[common].mean(), "b": t.b, "c": t.c,
                                       "chi2": t.statistic, "p": t.p_value})
            vanilla = jv[jv["strategy"] == "Vanilla_NoRules"]
            if len(vanilla):
                c = correct_vector(vanilla, bench.gold)
                raw = c[c.index.str.endswith("/ab")]
                raw.index = raw.index.str.rsplit("/", n=1).str[0]
                cwo = consistent_wins_only(vanilla, bench.gold)
                common = raw.index.intersection(cwo.index)
                t = mcnemar(raw[common].to_numpy(), cwo[common].to_numpy())
                decided = _decided(vanilla)
                cwo_tests.append({"subset": subset, "judge": judge, "n": len(common),
                                  "raw (first order) acc": raw[common].mean(),
                                  "consistent-wins acc": cwo[common].mean(),
                                  "decided share": decided.reindex(common).mean(),
                                  "acc when decided": cwo[common][decided.reindex(common)
                                                                 .astype(bool)].mean(),
                                  "b": t.b,
                                  "c": t.c, "chi2": t.statistic, "p": t.p_value})
                ev = external_validity(vanilla, bench.items[["text"]], bench.gold,
                                       n_boot=args.n_boot)
                external.append({"subset": subset, "judge": judge, "n": ev.n,
                                 "raw": fmt(ev.raw), "corrected": fmt(ev.corrected),
                                 "recalibrated": fmt(ev.recalibrated),
                                 "covariates only": fmt(ev.covariates_only),
                                 "judge prefers longer": fmt(ev.judge_prefers_longer),
                                 "gold prefers longer": fmt(ev.gold_prefers_longer),
                                 "conclusion": ev.conclusion})
    for pairs in ("claude", "gpt-4o"):
        bench = load_judgebench(pairs)
        audits += audit_rows(f"judgebench/{pairs}", bench.verdicts, bench.items, bench.gold,
                             args.n_boot)
    prd = load_prd()
    with_gold = prd.verdicts[prd.verdicts["pair_id"].isin(prd.gold["pair_id"])
                             & prd.verdicts.set_index(["pair_id", "question_id"]).index.isin(
                                 prd.gold.set_index(["pair_id", "question_id"]).index)]
    audits += audit_rows("prd-vicuna80 (pairs with human labels)", with_gold, prd.items,
                         prd.gold, args.n_boot)
    prd_all = []
    for judge, jv in prd.verdicts.groupby("judge"):
        prd_all.append({"reviewer": judge, "consistency (all pairs)": fmt(
            position_consistency(jv, n_boot=args.n_boot)),
            "first-slot (all verdicts)": fmt(bootstrap_mean(
                (jv["winner"] == "a").to_numpy(float)[jv["winner"].notna().to_numpy()],
                n_boot=args.n_boot))})

    audit_table = pd.DataFrame(audits)
    print("1. Audit of every recorded judge (95% bootstrap intervals; length / markdown bias = "
          "P(judge picks the longer / more formatted answer) - P(gold does), same pairs)")
    print(audit_table.to_string(index=False))
    print("\nPRD reviewers on all 8,000 verdicts")
    print(pd.DataFrame(prd_all).to_string(index=False))
    for title, rows in (("2a. LLMBar Vanilla_NoRules vs Metrics_Reference (McNemar, Holm over "
                         "all subsets and judges)", strategy_tests),
                        ("2b. Raw first-order verdict vs consistent-wins-only (both orders must "
                         "agree; McNemar, Holm)", cwo_tests)):
        table = pd.DataFrame(rows)
        table["p_holm"] = holm_bonferroni(table["p"].to_numpy())
        print(f"\n{title}")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print("\n3. External validity on LLMBar (Vanilla_NoRules): 5-fold CV l2 logistic on the "
          "order-averaged judge preference + length/markdown differences")
    print(pd.DataFrame(external).to_string(index=False))
    alpaca = load_alpacaeval()["benchmarks"]
    print("\n4. AlpacaEval model-level: Spearman correlation with Chatbot Arena Elo")
    elo = [c for c in alpaca.columns if "arena" in c.lower() and "elo" in c.lower()]
    for target in [c for c in alpaca.columns if "alpacaeval" in c.lower()]:
        both = alpaca[[elo[0], target]].apply(pd.to_numeric, errors="coerce").dropna()
        if len(both) > 5:
            r = correlation(both[elo[0]], both[target], method="spearman")
            print(f"  {target:<28} rho = {r.statistic:+.3f}  p = {r.p_value:.2g}  n = {r.n}  "
                  f"95% CI [{r.interval.low:+.2f}, {r.interval.high:+.2f}]")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        audit_table.to_csv(args.out / "audit.csv", index=False)
        pd.DataFrame(strategy_tests).to_csv(args.out / "strategies.csv", index=False)
        pd.DataFrame(cwo_tests).to_csv(args.out / "consistent_wins.csv", index=False)
        pd.DataFrame(external).to_csv(args.out / "external_validity.csv", index=False)


if __name__ == "__main__":
    main()
