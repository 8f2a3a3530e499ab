"""Benchmark: the dense Bradley–Terry fit on one BLAS thread against every core, by size.

``fit_penalised_bt`` always runs numpy's BLAS on one thread (its calls are small
matrix-vector products, and two awake OpenBLAS pools fight over the cores) and gives scipy's
BLAS, which factors the Hessian, every core from ``PARALLEL_FACTOR`` parameters on. This
script measures where that pays: for each N it fits the bias-aware model (dense solver, one
item covariate, one judge, ``20 N`` verdicts but at least 100,000) with scipy's pool forced
to one thread and to all threads, best of ``--repeats`` runs, alternating the two settings.

How to run
----------
::

    python benchmarks/bench_blas_threads.py
    python benchmarks/bench_blas_threads.py --sizes 300,700,1500 --repeats 7
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from fairjudge.data import Comparisons
from fairjudge.models import _bt, bias_aware_bt


def data(n_items: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    m = max(20 * n_items, 100_000)
    theta = rng.normal(size=n_items)
    length = rng.integers(50, 800, n_items).astype(float)
    a = rng.integers(0, n_items, m)
    b = (a + rng.integers(1, n_items, m)) % n_items
    won = (rng.random(m) < 1 / (1 + np.exp(-(theta[a] - theta[b] + 0.3)))).astype(float)
    return Comparisons(a, b, won, np.ones(m), np.zeros(m, np.int64),
                       tuple(map(str, range(n_items))), ("judge",)), length


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="200,400,700,1000,1500,2000")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}; PARALLEL_FACTOR = {_bt.PARALLEL_FACTOR} parameters")
    print(f"{'N':>6} {'1 thread s':>11} {'all threads s':>14} {'ratio':>6}")
    default = _bt.PARALLEL_FACTOR
    for n in (int(v) for v in args.sizes.split(",")):
        comparisons, length = data(n)
        best = {1: np.inf, 0: np.inf}
        for _ in range(args.repeats):
            for threads in (1, 0):
                # 0 lowers the threshold below every size (all threads); a huge one, one thread.
                _bt.PARALLEL_FACTOR = 0 if threads == 0 else 10**9
                start = time.perf_counter()
                bias_aware_bt(comparisons, length, covariate_names=["length"], solver="dense")
                best[threads] = min(best[threads], time.perf_counter() - start)
        _bt.PARALLEL_FACTOR = default
        print(f"{n:>6} {best[1]:>11.3f} {best[0]:>14.3f} {best[1] / best[0]:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
