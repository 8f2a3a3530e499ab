"""The offline top-k protocol of [bias-aware-active-topk §6 and Technical Appendix].

Oracles are full ordered-pair verdict matrices of a simulated judge on simulated items; every
acquisition strategy replays the same oracle, so strategies are compared on identical judge
behaviour and randomness enters only through each strategy's seed. Results come back as
tidy DataFrames; tables, tests and plots are built from them in :mod:`fairjudge.report`.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from fairjudge._util._threads import single_threaded_blas
from fairjudge.active._loop import MatrixOracle, run_active_topk, topk_recall
from fairjudge.data._encode import Comparisons
from fairjudge.data._simulator import SimulatedJudge, simulate_items
from fairjudge.models._dispatch import fit_model

FULL_DATA_MODELS = ("naive", "bias-aware", "hierarchical", "swap-majority", "residualized")


@dataclass(frozen=True)
class TopkExperimentConfig:
    """Settings of the offline protocol (defaults: the paper's simulator set-up).

    Attributes
    ----------
    n_items, k : int
        Pool size and target set size (paper: 30, 5).
    n_oracles, n_seeds : int
        Oracle matrices (independent item draws and verdicts) and strategy seeds per oracle.
    bias, position : float
        ``c*`` per unit of the binary verbosity covariate and ``kappa*`` of the biased judge.
    budgets : tuple of int
        Budgets at which recall is recorded.
    rules : tuple of str
        Acquisition rules compared under every model.
    models : tuple of str
        Models compared under every rule (the 2 x 2 ablation uses naive and bias-aware
        with round-robin and topk).
    ablation_rules : tuple of str
        Extra rules run under the bias-aware model only (the score ablation of Fig. 5).
    ablation_budget : int
        Budget of the 2 x 2 and score ablations (paper: 120).
    spend_budget : int
        Budget at which comparisons per item are counted by distance to the boundary (Fig. 4).
    k_values : tuple of int
        ``k`` sweep on full data (Table 4 right).
    large_n_items, large_k : int
        The scaled-up pool (paper: N = 100, k = 10) on full data; 0 disables it.
    n_samples : int
        Membership samples ``S``.
    prior_precision, bias_prior_precision : float
        ``lambda`` and ``lambda_b``; ``lambda_b`` applies to standardised covariates (one
        unit is one standard deviation of the covariate across items), as in the paper's
        sweep over {0.1, 1, 2}.
    refit_every : int
    seed : int
        Master seed: oracle ``o`` uses ``seed`` and ``o``; strategy seeds derive from it.
    """

    n_items: int = 30
    k: int = 5
    n_oracles: int = 20
    n_seeds: int = 6
    bias: float = 2.0
    position: float = 0.5
    budgets: tuple = (60, 120, 200, 320)
    rules: tuple = ("topk", "global", "round-robin", "random")
    models: tuple = ("naive", "bias-aware")
    ablation_rules: tuple = ("topk-no-variance", "topk-no-informativeness", "entropy")
    ablation_budget: int = 120
    spend_budget: int = 200
    k_values: tuple = (1, 3, 5, 10)
    large_n_items: int = 100
    large_k: int = 10
    n_samples: int = 1500
    prior_precision: float = 1.0
    bias_prior_precision: float = 0.1
    refit_every: int = 8
    seed: int = 0


def make_oracle(config: TopkExperimentConfig, oracle: int, *, n_items: int | None = None,
                bias: float | None = None, position: float | None = None):
    """Items and one full verdict matrix for oracle number ``oracle`` (deterministic)."""
    rng = np.random.default_rng([config.seed, oracle, n_items or config.n_items])
    items = simulate_items(n_items or config.n_items, rng=rng)
    judge = SimulatedJudge(items["quality"].to_numpy(), items["verbose"].to_numpy(),
                           bias=config.bias if bias is None else bias,
                           position=config.position if position is None else position, rng=rng)
    return items, judge.verdict_matrix()


def _budget_runs(args) -> list[dict]:
    with single_threaded_blas():
        return _budget_runs_inner(*args)


def _budget_runs_inner(config, oracle) -> list[dict]:
    items, matrix = make_oracle(config, oracle)
    x = items[["verbose"]].to_numpy()
    quality = items["quality"].to_numpy()
    # The ablation and spend budgets are read off the same runs; they never lengthen them.
    budget = max(config.budgets)
    checkpoints = set(config.budgets) | {b for b in (config.ablation_budget,
                                                      config.spend_budget) if b <= budget}
    plan = [(m, r) for m in config.models for r in config.rules]
    plan += [("bias-aware", r) for r in config.ablation_rules if ("bias-aware", r) not in plan]
    rows = []
    threshold = np.sort(quality)[::-1][config.k - 1]
    true_rank = np.empty(len(quality), dtype=int)
    true_rank[np.argsort(-quality, kind="stable")] = np.arange(1, len(quality) + 1)
    for seed in range(config.n_seeds):
        for model, rule in plan:
            result = run_active_topk(
                MatrixOracle(matrix), config.n_items, k=config.k, budget=budget,
                covariates=x, covariate_names=["verbose"], rule=rule, model=model,
                refit_every=config.refit_every, n_samples=config.n_samples,
                prior_precision=config.prior_precision,
                bias_prior_precision=config.bias_prior_precision, true_quality=quality,
                checkpoints=checkpoints, rng=[config.seed, oracle, seed, 7])
            for b, recall in result.recall_at.items():
                rows.append({"kind": "budget", "oracle": oracle, "seed": seed, "model": model,
                             "rule": rule, "budget": b, "recall": recall})
            spent = result.shown[: config.spend_budget]
            counts = np.bincount(spent.ravel(), minlength=config.n_items)
            for item in range(config.n_items):
                # Distance 0: the items at true ranks k and k + 1, either side of the boundary.
                distance = (config.k - true_rank[item] if true_rank[item] <= config.k
                            else true_rank[item] - config.k - 1)
                rows.append({"kind": "spend", "oracle": oracle, "seed": seed, "model": model,
                             "rule": rule, "budget": config.spend_budget, "item": item,
                             "distance": int(distance), "in_true_topk": bool(
                                 quality[item] >= threshold), "comparisons": int(counts[item])})
    return rows


def _full_data_fit(matrix, items, model, config):
    first, second = np.nonzero(np.isfinite(matrix))
    comparisons = Comparisons(first, second, matrix[first, second], np.ones(first.size),
                              np.zeros(first.size, np.int64), tuple(items.index), ("judge",))
    return fit_model(model, comparisons, items[["verbose"]].to_numpy(),
                     covariate_names=["verbose"], prior_precision=config.prior_precision,
                     bias_prior_precision=config.bias_prior_precision, check_graph=False)


def _full_data_runs(args) -> list[dict]:
    with single_threaded_blas():
        return _full_data_runs_inner(*args)


def _full_data_runs_inner(config, oracle) -> list[dict]:
    rows = []
    setups = [("biased", config.n_items, config.bias, config.position, config.k_values),
              ("unbiased", config.n_items, 0.0, 0.0, (config.k,))]
    if config.large_n_items:
        setups.append(("biased", config.large_n_items, config.bias, config.position,
                       (config.large_k,)))
    for judge, n_items, bias, position, k_values in setups:
        items, matrix = make_oracle(config, oracle, n_items=n_items, bias=bias,
                                    position=position)
        quality = items["quality"].to_numpy()
        for model in FULL_DATA_MODELS:
            fit = _full_data_fit(matrix, items, model, config)
            estimate = {}
            if model == "bias-aware":
                estimate = {"c_hat": fit.bias[0].estimate, "kappa_hat": fit.bias[1].estimate,
                            "corr_score_verbose": float(np.corrcoef(
                                fit.scores, items["verbose"])[0, 1])}
            elif model == "naive":
                estimate = {"corr_score_verbose": float(np.corrcoef(
                    fit.scores, items["verbose"])[0, 1])}
            for k in k_values:
                if k >= n_items:
                    continue
                rows.append({"kind": "full", "judge": judge, "n_items": n_items,
                             "oracle": oracle, "model": model, "k": k,
                             "recall": topk_recall(fit.topk(k), quality, k), **estimate})
    return rows


def estimates_for_plot(config: TopkExperimentConfig, oracle: int = 0) -> pd.DataFrame:
    """Per-item true quality, verbosity, and naive and bias-aware scores on full data (Fig. 2)."""
    items, matrix = make_oracle(config, oracle)
    frame = items[["quality", "verbose"]].copy()
    for model in ("naive", "bias-aware"):
        fit = _full_data_fit(matrix, items, model, config)
        frame[model] = fit.scores
    return frame


def run_topk_experiment(config: TopkExperimentConfig, *, jobs: int = 1,
                        progress=None) -> dict[str, pd.DataFrame]:
    """Run the whole offline protocol.

    Parameters
    ----------
    config : TopkExperimentConfig
    jobs : int
        Worker processes (oracles are independent); results do not depend on ``jobs``.
    progress : callable, optional
        Called with the number of finished oracle tasks after each one.

    Returns
    -------
    dict of pandas.DataFrame
        ``budget`` (oracle, seed, model, rule, budget, recall), ``spend`` (comparisons per
        item by distance to the top-k boundary), ``full`` (full-data recall per judge, model,
        k and pool size, with the bias estimates), ``estimates`` (Fig. 2 data) and
        ``config`` (one row).
    """
    tasks = [(_budget_runs, (config, o)) for o in range(config.n_oracles)]
    tasks += [(_full_data_runs, (config, o)) for o in range(config.n_oracles)]
    rows: list[dict] = []
    done = 0
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(fn, args) for fn, args in tasks]
            for future in futures:
                rows.extend(future.result())
                done += 1
                if progress:
                    progress(done)
    else:
        for fn, args in tasks:
            rows.extend(fn(args))
            done += 1
            if progress:
                progress(done)
    table = pd.DataFrame(rows)
    table["budget"] = table["budget"].astype("Int64")
    out = {kind: table[table["kind"] == kind].drop(columns="kind").dropna(axis=1, how="all")
           .reset_index(drop=True) for kind in ("budget", "spend", "full")}
    out["estimates"] = estimates_for_plot(config)
    out["config"] = pd.DataFrame([{k: (list(v) if isinstance(v, tuple) else v)
                                   for k, v in asdict(config).items()}])
    return out

