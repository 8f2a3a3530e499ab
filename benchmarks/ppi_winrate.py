"""Human labels make win-rate intervals valid: PPI++ coverage and width [the
multi-fidelity issue §4; Angelopoulos et al. 2023].

1. Simulation: records with latent quality q ~ N(0, s^2); humans prefer the model with
   probability sigmoid(q), the judge reports sigmoid(q + 0.8) (biased toward the model).
   For each spread s and number of human labels n (of 2000 records), 1000 data sets:
   coverage of the humans' true win rate by the 95% interval of PPI++, of the labels
   alone and of the judge alone, and PPI's mean width over the labels-alone width.
2. PRD Vicuna-80: each contestant against gpt35, each reviewer's verdicts (both orders
   averaged) as predictions, the human labels as truth. Labels for 25 of the 80
   questions are drawn 500 times; coverage of the all-label human rate (a finite-sample
   target, so coverage reads high) and width relative to the labels alone.

Run: ``python benchmarks/ppi_winrate.py`` (part 2 needs ../shared/data).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import special

from fairjudge.data import load_prd, shared_data_dir
from fairjudge.ppi import ppi_mean
from fairjudge.winrate import preferences_from_verdicts


def simulation() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for spread in (1.0, 2.0, 3.0, 4.0):
        truth = special.expit(rng.normal(0, spread, 1_000_000)).mean()
        for n in (100, 200, 400):
            q = rng.normal(0, spread, (1000, 2000))
            y = (rng.random(q.shape) < special.expit(q)).astype(float)
            f = special.expit(q + 0.8)
            hits = {"ppi": 0, "labels alone": 0, "judge alone": 0}
            ratio = []
            for i in range(1000):
                powered = ppi_mean(y[i, :n], f[i, :n], f[i, n:])
                alone = ppi_mean(y[i, :n], f[i, :n], f[i, n:], power=0.0)
                judge = f[i].mean()
                half = 1.96 * f[i].std() / np.sqrt(f[i].size)
                hits["ppi"] += powered.ci_low <= truth <= powered.ci_high
                hits["labels alone"] += alone.ci_low <= truth <= alone.ci_high
                hits["judge alone"] += abs(judge - truth) <= half
                ratio.append((powered.ci_high - powered.ci_low)
                             / (alone.ci_high - alone.ci_low))
            rows.append({"spread": spread, "labels": n,
                         **{f"coverage {k}": v / 1000 for k, v in hits.items()},
                         "width PPI / labels alone": float(np.mean(ratio))})
    return pd.DataFrame(rows)


def prd(draws: int = 500, n_labels: int = 25) -> pd.DataFrame:
    bench = load_prd()
    human = preferences_from_verdicts(bench.gold, baseline="gpt35", items=bench.items)
    human = human.groupby(["model", "query"])["preference"].mean()
    judged = preferences_from_verdicts(bench.verdicts, baseline="gpt35", items=bench.items)
    rng = np.random.default_rng(0)
    rows = []
    for unit, part in judged.groupby("model"):
        model = unit.split(" | ")[0]
        prediction = part.groupby("query")["preference"].mean()
        labels = human.loc[model].reindex(prediction.index)
        keep = labels.notna()
        y, f = labels[keep].to_numpy(float), prediction[keep].to_numpy(float)
        target = y.mean()
        hits = alone_hits = 0
        ratio = []
        for _ in range(draws):
            chosen = rng.permutation(y.size)
            lab, rest = chosen[:n_labels], chosen[n_labels:]
            powered = ppi_mean(y[lab], f[lab], f[rest])
            alone = ppi_mean(y[lab], f[lab], f[rest], power=0.0)
            hits += powered.ci_low <= target <= powered.ci_high
            alone_hits += alone.ci_low <= target <= alone.ci_high
            ratio.append((powered.ci_high - powered.ci_low) / (alone.ci_high - alone.ci_low))
        rows.append({"model | judge": unit, "questions": y.size,
                     "human rate": target, "judge rate": f.mean(),
                     "coverage PPI": hits / draws, "coverage labels alone": alone_hits / draws,
                     "width PPI / labels alone": float(np.mean(ratio))})
    return pd.DataFrame(rows)


def main() -> None:
    warnings.simplefilter("ignore")
    pd.set_option("display.width", 200)
    print("Simulation: 1000 data sets per row, 2000 records, a judge biased by +0.8 logits")
    print(simulation().round(3).to_string(index=False))
    if shared_data_dir() is not None:
        print("\nPRD Vicuna-80 against gpt35, 25 labelled questions of 80, 500 draws")
        print(prd().round(3).to_string(index=False))


if __name__ == "__main__":
    main()
