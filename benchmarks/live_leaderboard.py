"""What it costs to keep a leaderboard current [the multi-fidelity issue §5].

A simulated stream (``--items`` items with a length covariate, two judges, one with a
first-slot lean and a taste for length) arrives in batches of ``--batch`` verdicts. At
checkpoints this prints, for the live leaderboard, the seconds of one ``update`` of a batch
plus the warm ``snapshot`` that follows, the number of distinct (judge, pair, order,
outcome) cells the refit works on, and for comparison a batch ``fairjudge.rank`` of every
verdict so far from scratch, with the largest score difference between the two. Times are
wall-clock on this machine, one run each: read the ratios.

Run: ``python benchmarks/live_leaderboard.py [--items 200] [--batch 10000] [--total 1000000]``
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy import special

from fairjudge import rank
from fairjudge.live import LiveLeaderboard


def batches(n_items: int, size: int, total: int, rng):
    theta = rng.normal(0, 1, n_items)
    length = rng.normal(0, 1, n_items)
    ids = np.array([f"i{i}" for i in range(n_items)])
    items = pd.DataFrame({"id": ids, "len": length})
    yield items
    for _ in range(total // size):
        a = rng.integers(0, n_items, size)
        b = (a + rng.integers(1, n_items, size)) % n_items
        judge = np.where(rng.random(size) < 0.5, "lean", "fair")
        eta = theta[a] - theta[b] + np.where(judge == "lean",
                                             0.5 + 0.4 * (length[a] - length[b]), 0.0)
        winner = np.where(rng.random(size) < special.expit(eta), "a", "b")
        yield pd.DataFrame({"item_a": ids[a], "item_b": ids[b], "winner": winner,
                            "judge": judge})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--total", type=int, default=1_000_000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    stream = batches(args.items, args.batch, args.total, np.random.default_rng(0))
    items = next(stream)
    board = LiveLeaderboard(items, covariates=["len"], n_samples=200)
    seen = []
    checkpoints = {int(args.batch * m) for m in (1, 3, 10, 30, 100)} | {args.total}
    print(f"{args.items} items, batches of {args.batch:,} verdicts")
    print(f"{'verdicts':>10} {'cells':>8} {'update+snapshot s':>18} {'batch rank s':>13} "
          f"{'max |score diff|':>17}")
    for batch in stream:
        seen.append(batch)
        start = time.perf_counter()
        board.update(batch)
        snapshot = board.snapshot()
        live = time.perf_counter() - start
        if board.n_verdicts in checkpoints:
            everything = pd.concat(seen, ignore_index=True)
            start = time.perf_counter()
            batch_fit = rank(everything, items, covariates=["len"], n_samples=200)
            cold = time.perf_counter() - start
            diff = float((snapshot.scores - batch_fit.scores).abs().max())
            print(f"{board.n_verdicts:>10,} {board.n_cells:>8,} {live:>18.3f} {cold:>13.3f} "
                  f"{diff:>17.1e}")


if __name__ == "__main__":
    main()
