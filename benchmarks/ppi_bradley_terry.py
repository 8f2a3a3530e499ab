"""Human labels make a ranking's intervals valid: prediction-powered Bradley–Terry scores
[the multi-fidelity issue §4; PPI++, Angelopoulos, Duchi and Zrnic 2023].

Simulation: K = 10 items with the humans' scores theta ~ N(0, s^2); 2000 compared pairs
(uniformly random); humans prefer a with probability sigmoid(theta_a - theta_b); the judge
predicts sigmoid(theta'_a - theta'_b) with theta' = theta + 0.8 z (z ~ N(0, 1) per item,
fixed per data set: a bias no model of the judge removes). n of the pairs carry one human
label. For each spread s and n, 1000 data sets: coverage of theta_i - theta_0 (i = 1..9)
by the 95% intervals of PPI++ (power tuned), of the labels alone (lambda = 0) and of the
judge alone (lambda = 1 with predictions for labels: what trusting the judge gives), and
PPI's mean width over the labels-alone width. Coverage is pooled over the 9 contrasts;
the one-sided binomial p-value tests it against 0.95 (it counts 9 correlated contrasts per
data set, so it overstates the evidence; each contrast's own rate is in the range).

Run: ``python benchmarks/ppi_bradley_terry.py [--sets 1000]``
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd
from scipy import special, stats

from fairjudge.ppi import ppi_bradley_terry

K, PAIRS, Z = 10, 2000, stats.norm.ppf(0.975)


def one(rng, spread: float, n: int) -> dict:
    theta = rng.normal(0, spread, K)
    judge = theta + 0.8 * rng.normal(size=K)
    a = rng.integers(0, K, PAIRS)
    pairs = np.c_[a, (a + rng.integers(1, K, PAIRS)) % K]
    labelled, unlabelled = pairs[:n], pairs[n:]
    y = (rng.random(n) < special.expit(theta[labelled[:, 0]] - theta[labelled[:, 1]]))
    f = special.expit(judge[pairs[:, 0]] - judge[pairs[:, 1]])
    contrast = np.c_[-np.ones(K - 1), np.eye(K - 1)]
    truth = contrast @ theta
    out = {}
    for name, kwargs in (("ppi", {}), ("labels alone", {"power": 0.0})):
        fit = ppi_bradley_terry(labelled, y.astype(float), f[:n], unlabelled, f[n:],
                                n_items=K, **kwargs)
        se = np.sqrt(np.diag(contrast @ fit.covariance @ contrast.T))
        out[name] = (np.abs(contrast @ fit.scores - truth) <= Z * se, 2 * Z * se, fit.power)
    judge_fit = ppi_bradley_terry(labelled, f[:n], f[:n], unlabelled, f[n:], n_items=K,
                                  power=1.0)
    se = np.sqrt(np.diag(contrast @ judge_fit.covariance @ contrast.T))
    out["judge alone"] = (np.abs(contrast @ judge_fit.scores - truth) <= Z * se, None, 1.0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=1000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    rows = []
    for spread in (1.0, 2.0):
        for n in (100, 200, 400):
            runs = [one(rng, spread, n) for _ in range(args.sets)]
            row = {"spread": spread, "labels": n}
            for name in ("ppi", "labels alone", "judge alone"):
                hits = np.array([r[name][0] for r in runs])      # (sets, K - 1)
                rate = hits.mean()
                p = stats.binomtest(int(hits.sum()), hits.size, 0.95,
                                    alternative="less").pvalue
                per_contrast = hits.mean(axis=0)
                row[f"{name} coverage"] = (f"{rate:.3f} (p={p:.2g}; "
                                           f"{per_contrast.min():.3f}-{per_contrast.max():.3f})")
            width = np.array([r["ppi"][1] / r["labels alone"][1] for r in runs])
            row["ppi width / labels"] = f"{width.mean():.3f}"
            row["mean lambda"] = f"{np.mean([r['ppi'][2] for r in runs]):.2f}"
            rows.append(row)
    pd.set_option("display.width", 250)
    print(f"PPI++ Bradley–Terry, K = {K} items, {PAIRS} pairs, judge off by 0.8 z per item; "
          f"{args.sets} data sets per row; coverage of the 9 contrasts with item 0\n")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
