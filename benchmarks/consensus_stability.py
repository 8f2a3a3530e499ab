"""Does a leaderboard move when a model joins? [the multi-judge issue §2, "Stability"]

Simulated panels: five judges who are also five contestants (quality ~ N(0, 1) logits, a
0.2-logit first-slot lean, 0.3 logits of self-preference for two judges), each judge
comparing every ordered pair of answers on every question; then a sixth contestant joins
with its games against all five. For each rule this prints how far the five original
contestants' scores move, in units of their own 95% interval half-width before the
newcomer joined (mean, 90th percentile, max over contestants and panels), the share of
original contestants that move by more than a quarter of it, and where the newcomer lands
relative to a full refit.

Rules: ``joint`` / ``pooled`` refit with the mean contestant at 1000; ``joint, anchor``
refit with gpt-4 held at 1000; per-judge ``elo`` (UDA's baseline) rerun, its moves
measured against the joint model's half-widths (Elo has no interval of its own);
``frozen`` keeps the published scores and places the newcomer
(:func:`fairjudge.consensus.place_contestants`), with the newcomer's interval coverage.

Run: ``python benchmarks/consensus_stability.py [--panels 40] [--questions 10]``
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd
from scipy import special

from fairjudge.consensus import ELO_SCALE, consensus

MODELS = ("gpt-4", "claude-2", "llama-2", "mistral-7b", "gemini-pro")
NEWCOMER = "qwen-7b"


def panel(seed: int, n_questions: int):
    """Verdicts, items and true quality of a six-contestant panel (see the docstring)."""
    rng = np.random.default_rng(seed)
    contestants = MODELS + (NEWCOMER,)
    theta = dict(zip(contestants, rng.normal(0, 1, len(contestants))))
    self_preference = dict(zip(MODELS, (0.3, 0.3, 0.0, 0.0, 0.0)))
    items = pd.DataFrame([{"id": f"q{q}/{m}", "source": m}
                          for q in range(n_questions) for m in contestants]).set_index("id")
    rows = []
    for judge in MODELS:
        s = self_preference[judge]
        for q in range(n_questions):
            for a in contestants:
                for b in contestants:
                    if a != b:
                        eta = theta[a] - theta[b] + 0.2 + s * ((a == judge) - (b == judge))
                        rows.append({"item_a": f"q{q}/{a}", "item_b": f"q{q}/{b}",
                                     "winner": "a" if rng.random() < special.expit(eta)
                                     else "b", "judge": judge, "question_id": f"q{q}"})
    return pd.DataFrame(rows), items, theta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panels", type=int, default=40)
    parser.add_argument("--questions", type=int, default=10)
    args = parser.parse_args()
    rules = (("joint", "joint", None, False), ("joint, anchor gpt-4", "joint", "gpt-4", False),
             ("joint, original five", "joint", None, True), ("pooled", "pooled", None, False),
             ("pooled, original five", "pooled", None, True), ("elo", "elo", None, False),
             ("elo, original five", "elo", None, True))
    moves = {rule[0]: [] for rule in rules} | {"frozen": []}
    newcomer = {"gap to refit": [], "covered": []}
    warnings.simplefilter("ignore")
    for seed in range(args.panels):
        verdicts, items, theta = panel(seed, args.questions)
        joins = (verdicts["item_a"].str.endswith(NEWCOMER)
                 | verdicts["item_b"].str.endswith(NEWCOMER))
        fits = {}
        for method, anchor in dict.fromkeys((m, a) for _, m, a, _ in rules):
            fits[method, anchor] = (
                consensus(verdicts[~joins], items, method=method, anchor=anchor, rng=seed),
                consensus(verdicts, items, method=method, anchor=anchor, rng=seed))
        before_joint = fits["joint", None][0]
        for rule, method, anchor, recentre in rules:
            old, new = (f.scores["estimate"] for f in fits[method, anchor])
            if recentre:  # the scale's origin: the original five's mean, before and after
                new = new - new.loc[list(MODELS)].mean() + 1000.0
            # Elo has no interval of its own: its moves are read against the joint model's.
            reference = before_joint if method == "elo" else fits[method, anchor][0]
            half = (reference.scores["ci_high"] - reference.scores["ci_low"]) / 2
            others = [m for m in MODELS if m != anchor]
            moves[rule] += list((new.loc[others] - old.loc[others]).abs() / half.loc[others])
        full = fits["joint", None][1]
        before = {"joint": before_joint}
        placed = consensus(verdicts[joins], items, frozen=before["joint"])
        moves["frozen"] += list((placed.scores.loc[list(MODELS), "estimate"]
                                 - before["joint"].scores.loc[list(MODELS), "estimate"]).abs()
                                / (before["joint"].scores.loc[list(MODELS), "ci_high"]
                                   - before["joint"].scores.loc[list(MODELS), "ci_low"]) * 2)
        row = placed.scores.loc[NEWCOMER]
        truth = 1000 + ELO_SCALE * (theta[NEWCOMER] - np.mean([theta[m] for m in MODELS]))
        newcomer["covered"].append(row.ci_low <= truth <= row.ci_high)
        # The full refit's newcomer on the original five's mean scale.
        refit = full.scores["estimate"]
        refit = refit - refit.loc[list(MODELS)].mean() + 1000
        newcomer["gap to refit"].append(abs(row.estimate - refit.loc[NEWCOMER])
                                        / ((row.ci_high - row.ci_low) / 2))
    print(f"{args.panels} panels x {args.questions} questions; moves of the 5 original "
          "contestants in units of their 95% half-width before the newcomer joined")
    print(f"{'rule':<24} {'mean':>6} {'p90':>6} {'max':>6} {'share > 1/4':>12}")
    for rule, values in moves.items():
        values = np.asarray(values)
        print(f"{rule:<24} {values.mean():6.2f} {np.quantile(values, 0.9):6.2f} "
              f"{values.max():6.2f} {np.mean(values > 0.25):12.0%}")
    print(f"frozen: newcomer's interval covers its true place in "
          f"{np.mean(newcomer['covered']):.0%} of panels; its distance from the full refit "
          f"(on the original five's mean scale) is {np.mean(newcomer['gap to refit']):.2f} "
          "of its half-width on average")


if __name__ == "__main__":
    main()
