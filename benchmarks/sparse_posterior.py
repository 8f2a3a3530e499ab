"""Benchmark: the sparse solver's posterior against the exact dense one, where both run.

What is measured
----------------
For each size ``N x M`` (default ``2000x200000, 5000x500000, 10000x1000000``) synthetic
verdicts are drawn as in ``bench_fit.py --scaling``: ``theta ~ N(0, 1)``, an item length
covariate (its effect 0.5 logits per standard deviation), two judges with position biases
-0.3 and +0.3, pairs uniform at random. The bias-aware model is fitted twice,
``solver="dense"`` (Cholesky of the full Hessian: exact Laplace posterior) and
``solver="sparse"`` (matrix-free conjugate gradients), and the table prints per size:

``dense s`` / ``sparse s``
    Wall time of the fit; for the sparse fit, plus its marginal variances.
``max|score dev|``
    Largest difference of the posterior modes.
``var err``
    Largest relative error of the sparse marginal variances (Hutchinson estimate with a
    Neumann control variate), and ``stated``: the largest relative standard error the
    sparse fit reports for them.
``contrast err``
    Largest relative error of ``var(theta_i - theta_j)`` over 50 random pairs (exact solves).
``membership k=...``
    Largest ``|P_sparse(i in top-k) - P_exact(i in top-k)|`` over items, each from
    ``--samples`` draws (sparse: the approximation of ``SparsePosterior.samples``, which keeps
    every marginal variance and the bias and level correlations, draws the items whose
    membership is in doubt from their exact joint posterior, and drops the other residual
    correlations between items). ``MC`` beside it is the same statistic between two
    independent exact runs: the Monte-Carlo noise floor. An approximation error below the
    floor is not distinguishable from noise at that many draws.

How to run
----------
::

    python benchmarks/sparse_posterior.py --quick      # 2000 and 5000 items, ~1 min
    python benchmarks/sparse_posterior.py              # adds 10000 x 1M (dense: ~4 GB, minutes)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fairjudge.data import Comparisons
from fairjudge.models import bias_aware_bt


def simulate(n_items: int, n_verdicts: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_items)
    length = rng.integers(50, 800, n_items).astype(float)
    z = (length - length.mean()) / length.std()
    a = rng.integers(0, n_items, n_verdicts)
    b = (a + rng.integers(1, n_items, n_verdicts)) % n_items
    judge = rng.integers(0, 2, n_verdicts)
    logit = theta[a] - theta[b] + 0.5 * (z[a] - z[b]) + np.array([-0.3, 0.3])[judge]
    outcome = (rng.random(n_verdicts) < 1 / (1 + np.exp(-logit))).astype(float)
    comparisons = Comparisons(a, b, outcome, np.ones(n_verdicts), judge,
                              tuple(f"i{i}" for i in range(n_items)), ("j0", "j1"))
    return comparisons, length


def measure(n_items: int, n_verdicts: int, n_samples: int, ks) -> dict:
    comparisons, length = simulate(n_items, n_verdicts)
    start = time.perf_counter()
    dense = bias_aware_bt(comparisons, length, covariate_names=["length"], solver="dense")
    dense_seconds = time.perf_counter() - start
    start = time.perf_counter()
    sparse = bias_aware_bt(comparisons, length, covariate_names=["length"], solver="sparse")
    variance = sparse.marginal_variances()
    sparse_seconds = time.perf_counter() - start
    exact = dense.marginal_variances()
    rng = np.random.default_rng(1)
    i = rng.integers(0, n_items, 50)
    j = (i + rng.integers(1, n_items, 50)) % n_items
    contrast = np.max(np.abs(sparse.contrast_variance(i, j) / dense.contrast_variance(i, j) - 1))
    row = {"size": f"{n_items}x{n_verdicts}", "dense s": dense_seconds,
           "sparse s": sparse_seconds,
           "max|score dev|": float(np.max(np.abs(sparse.scores - dense.scores))),
           "var err": float(np.max(np.abs(variance / exact - 1))),
           "stated": float(np.max(sparse.posterior.marginal_variance_errors() / variance)),
           "contrast err": float(contrast)}
    for k in ks:
        reference = dense.topk_membership(k, n_samples=n_samples, rng=10)
        again = dense.topk_membership(k, n_samples=n_samples, rng=11)
        approx = sparse.topk_membership(k, n_samples=n_samples, rng=12)
        row[f"membership k={k}"] = (float(np.max(np.abs(approx - reference))),
                                    float(np.max(np.abs(again - reference))))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2000x200000,5000x500000,10000x1000000")
    parser.add_argument("--quick", action="store_true", help="sizes 2000x200000,5000x500000")
    parser.add_argument("--samples", type=int, default=10000)
    parser.add_argument("--k", default="1,10,100")
    args = parser.parse_args()
    sizes = "2000x200000,5000x500000" if args.quick else args.sizes
    ks = [int(k) for k in args.k.split(",")]
    header = (f"{'size':>15} {'dense s':>8} {'sparse s':>8} {'max|score dev|':>14} "
              f"{'var err':>8} {'stated':>8} {'contrast err':>12} "
              + " ".join(f"{'membership k=' + str(k) + ' (MC)':>24}" for k in ks))
    print(header)
    for size in sizes.split(","):
        n, m = (int(v) for v in size.split("x"))
        row = measure(n, m, args.samples, ks)
        cells = " ".join(f"{row[f'membership k={k}'][0]:>14.4f} ({row[f'membership k={k}'][1]:.4f})"
                         for k in ks)
        print(f"{row['size']:>15} {row['dense s']:>8.2f} {row['sparse s']:>8.2f} "
              f"{row['max|score dev|']:>14.2e} {row['var err']:>8.4f} {row['stated']:>8.4f} "
              f"{row['contrast err']:>12.2e} {cells}", flush=True)
    print(f"\nmembership: {args.samples} draws per estimate; the approximation error is "
          "distinguishable from Monte-Carlo noise only where it exceeds the (MC) column.")


if __name__ == "__main__":
    main()
