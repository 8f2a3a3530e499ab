"""Judges' reliabilities from few verdicts per item: joint mode against marginal likelihood.

The reliability model (:func:`fairjudge.models.reliability_bt`) gives each judge a
temperature ``tau_j`` on the quality difference. Simulated pools: ``theta ~ N(0, 1.25^2)``
on N items, a cheap judge (``tau = 0.4``) and a strong one (``tau = 1.5``) on random pairs,
no biases; the cheap judge has more verdicts, so it is the reference and the strong
judge's log reliability is ``log(1.5 / 0.4) = 1.32``.

Two estimators on the same verdicts:

``joint``     the posterior mode of qualities and reliabilities together (what the model
              did before; dense Newton, ``fairjudge.models._reliability._newton``);
``marginal``  the reliabilities by the Laplace approximation of the marginal likelihood,
              the qualities integrated out (what ``reliability_bt`` does now).

Printed per pool shape, over ``--seeds`` pools: the mean and spread of the strong judge's
estimated log reliability, its mean standard error, how often the 95% interval covers
1.32, the Pearson correlation of the fitted scores with the true qualities, and the
seconds per fit.

Run: ``python benchmarks/bench_reliability.py [--seeds 5]``. Prints a table; nothing is
asserted.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from fairjudge.data import Comparisons, SimulatedJudge
from fairjudge.models import reliability_bt
from fairjudge.models._reliability import _newton, _Objective

TRUE_LOG_TAU = float(np.log(1.5 / 0.4))
SHAPES = [(30, 30000, 10000), (200, 4000, 1000), (200, 2000, 500), (1000, 5000, 2000),
          (1000, 2500, 1000), (1000, 2500, 500)]


def pool(seed: int, n_items: int, n_cheap: int, n_strong: int):
    """Verdicts of the cheap and the strong judge (:class:`SimulatedJudge`, no biases) on
    random ordered pairs, and the true qualities."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1.25, n_items)
    first, second, outcome, judge = [], [], [], []
    for code, (tau, count) in enumerate(((0.4, n_cheap), (1.5, n_strong))):
        simulated = SimulatedJudge(theta, np.zeros(n_items), reliability=tau, rng=rng)
        a = rng.integers(0, n_items, count)
        b = (a + rng.integers(1, n_items, count)) % n_items
        wins = rng.random(count) < simulated.probability_first(a, b)
        first.append(a)
        second.append(b)
        outcome.append(np.where(wins, "a", "b"))
        judge += [code] * count
    data = Comparisons.from_outcomes(np.concatenate(first), np.concatenate(second),
                                     np.concatenate(outcome), judge=judge,
                                     judges=["cheap", "strong"], n_items=n_items)
    return data, theta


def joint_mode(data):
    """(log tau of the strong judge, its standard error, scores) of the joint mode."""
    objective = _Objective(data, np.zeros((data.n_items, 0)), position=False,
                           prior_precision=1.0, bias_prior_precision=np.zeros(0),
                           reliability_prior_precision=1.0)
    beta, covariance, *_ = _newton(objective, np.zeros(objective.n_params), 1e-8, 200)
    return beta[-1], float(np.sqrt(covariance[-1, -1])), beta[:data.n_items]


def marginal(data):
    fit = reliability_bt(data, position=False)
    strong = fit.reliability[1]
    return strong.estimate, strong.std_error, fit.scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    print(f"strong judge's log reliability (true {TRUE_LOG_TAU:.2f}), {args.seeds} pools each")
    print(f"{'items':>6}{'cheap':>7}{'strong':>7}  {'estimator':<10}{'mean':>7}{'sd':>6}"
          f"{'se':>6}{'cover95':>9}{'corr':>7}{'s/fit':>7}")
    for n_items, n_cheap, n_strong in SHAPES:
        for name, estimate in (("joint", joint_mode), ("marginal", marginal)):
            rows, seconds = [], 0.0
            for seed in range(args.seeds):
                data, theta = pool(seed, n_items, n_cheap, n_strong)
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    u, se, scores = estimate(data)
                seconds += time.perf_counter() - start
                rows.append((u, se, abs(u - TRUE_LOG_TAU) < 1.96 * se,
                             np.corrcoef(theta, scores)[0, 1]))
            u, se, cover, corr = np.array(rows, dtype=float).T
            print(f"{n_items:>6}{n_cheap:>7}{n_strong:>7}  {name:<10}{u.mean():>7.2f}"
                  f"{u.std():>6.2f}{se.mean():>6.2f}{cover.mean():>9.0%}{corr.mean():>7.3f}"
                  f"{seconds / args.seeds:>7.2f}")


if __name__ == "__main__":
    main()
