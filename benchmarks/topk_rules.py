"""Which acquisition rule finds the top-k fastest? [the multi-fidelity issue §1;
bias-aware-active-topk §4, Table 3, Fig. 4]

Three item pools of N = 30, k = 5, judged by a simulated judge with c* = 2 logits per unit
of a binary verbosity and kappa* = 0.5 (every ordered pair pre-drawn: an oracle matrix):

``simulator``  the paper's simulator (theta ~ N(0, 1.25^2), |corr(theta, verbose)| <= 0.12);
``normal``     theta ~ N(0, 1.25^2) with no correlation screen;
``discrete``   theta = 1.25 x (correct statements of 6, standardised): quality in 7 levels,
               many ties, as in the paper's controlled pools of true and false statements.

Every rule runs the bias-aware model with refits every 8 comparisons on ``--oracles``
oracles x ``--seeds`` seeds. Printed: mean top-k recall per rule and budget, each rule's
paired difference from round-robin and from the paper's Eq. 3 (``topk``) with a paired
t-test p-value over the runs, and the ratio of comparisons spent on the items at true
ranks k and k+1 to the average item (Fig. 4's boundary spend) at B = 120.

Run: ``python benchmarks/topk_rules.py [--oracles 20] [--seeds 3] [--jobs 2]
[--refit-every 8] [--rules topk,round-robin] [--pools simulator]``
"""

from __future__ import annotations

import argparse
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
from scipy import stats

from fairjudge._util._threads import single_threaded_blas
from fairjudge.active import run_active_topk
from fairjudge.active._experiment import MatrixOracle
from fairjudge.data import SimulatedJudge, simulate_items

RULES = ("round-robin", "random", "global", "topk", "lucb", "lookahead")
BUDGETS = (60, 120, 200)
N_ITEMS, K = 30, 5


def pool(kind: str, oracle: int):
    rng = np.random.default_rng([17, oracle, ("simulator", "normal", "discrete").index(kind)])
    if kind == "simulator":
        items = simulate_items(N_ITEMS, rng=rng)
        quality, verbose = items["quality"].to_numpy(), items["verbose"].to_numpy()
    else:
        verbose = (rng.random(N_ITEMS) < 0.5).astype(float)
        if kind == "normal":
            quality = rng.normal(0, 1.25, N_ITEMS)
        else:
            correct = rng.binomial(6, 0.5, N_ITEMS).astype(float)
            quality = 1.25 * (correct - 3.0) / np.sqrt(1.5)
    judge = SimulatedJudge(quality, verbose, bias=2.0, position=0.5, rng=rng)
    return quality, verbose, judge.verdict_matrix()


def runs(args) -> list[dict]:
    kind, oracle, n_seeds, refit_every, rules = args
    quality, verbose, matrix = pool(kind, oracle)
    order = np.argsort(-quality, kind="stable")
    boundary = order[[K - 1, K]]
    rows = []
    with single_threaded_blas():
        for seed in range(n_seeds):
            for rule in rules:
                result = run_active_topk(MatrixOracle(matrix), N_ITEMS, k=K,
                                         budget=max(BUDGETS), covariates=verbose[:, None],
                                         covariate_names=["verbose"], rule=rule,
                                         refit_every=refit_every,
                                         true_quality=quality, checkpoints=BUDGETS,
                                         rng=[oracle, seed, 3])
                counts = np.bincount(result.shown[:120].ravel(), minlength=N_ITEMS)
                for budget, recall in result.recall_at.items():
                    rows.append({"pool": kind, "oracle": oracle, "seed": seed, "rule": rule,
                                 "budget": budget, "recall": recall,
                                 "boundary spend": counts[boundary].mean() / counts.mean()})
    return rows


def paired(table: pd.DataFrame, rule: str, reference: str) -> tuple[float, float]:
    wide = table.pivot_table(index=["oracle", "seed"], columns="rule", values="recall")
    diff = wide[rule] - wide[reference]
    if np.allclose(diff, 0):
        return 0.0, 1.0
    return float(diff.mean()), float(stats.ttest_rel(wide[rule], wide[reference]).pvalue)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracles", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--refit-every", type=int, default=8,
                        help="refit cadence r (paper: 8; 1 refits after every comparison)")
    parser.add_argument("--rules", default=",".join(RULES))
    parser.add_argument("--pools", default="simulator,normal,discrete")
    args = parser.parse_args()
    rules = tuple(args.rules.split(","))
    warnings.simplefilter("ignore")  # t-tests of identical recall columns warn, harmlessly
    tasks = [(kind, o, args.seeds, args.refit_every, rules)
             for kind in args.pools.split(",") for o in range(args.oracles)]
    with ProcessPoolExecutor(max_workers=args.jobs) as executor:
        table = pd.DataFrame([row for rows in executor.map(runs, tasks) for row in rows])
    pd.set_option("display.width", 200)
    print(f"N = {N_ITEMS}, k = {K}, c* = 2, kappa* = 0.5; bias-aware model, refit every "
          f"{args.refit_every}; {args.oracles} oracles x {args.seeds} seeds per pool")
    for kind, part in table.groupby("pool", sort=False):
        rows = []
        for rule in rules:
            row = {"rule": rule}
            for budget in BUDGETS:
                at = part[part["budget"] == budget]
                row[f"B={budget}"] = at[at["rule"] == rule]["recall"].mean()
                for reference, label in (("round-robin", "vs RR"), ("topk", "vs Eq.3")):
                    if rule != reference and reference in rules:
                        d, p = paired(at, rule, reference)
                        row[f"{label} B={budget}"] = f"{d:+.3f} (p={p:.3f})"
            at = part[(part["budget"] == 120) & (part["rule"] == rule)]
            row["boundary spend B=120"] = at["boundary spend"].mean()
            rows.append(row)
        print(f"\npool: {kind}")
        print(pd.DataFrame(rows).fillna("").round(3).to_string(index=False))


if __name__ == "__main__":
    main()
