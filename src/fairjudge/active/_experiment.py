"""The offline top-k protocol of [bias-aware-active-topk §6 and Technical Appendix].

Oracles are full ordered-pair verdict matrices: of a simulated judge on simulated items, or
recorded from a real judge on a controlled pool (:class:`fairjudge.data.RecordedOracle`,
collected by :func:`fairjudge.active.build_pool_oracle`). Every acquisition strategy replays
the same oracle -- each pair it proposes is answered by the recorded verdict of that pair in
the order the strategy shows it -- so strategies are compared on identical judge behaviour
and randomness enters only through each strategy's seed. Results come back as tidy
DataFrames; tables, tests and plots are built from them in :mod:`fairjudge.report`.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from fairjudge._util._threads import single_threaded_blas
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.active._loop import MatrixOracle, run_active_topk, topk_recall
from fairjudge.data._encode import Comparisons
from fairjudge.data._pools import boundary_distance, true_topk
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
    residualized_rules : tuple of str
        Rules also run under residualise-then-acquire (the naive posterior chooses the
        pairs, the covariates are removed from the final scores), for the joint model
        against that baseline at each budget (§6, "Significance and baselines").
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
    residualized_rules: tuple = ("topk",)
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


#: The judge label of the simulator's oracles in the budgeted run tables: the biased judge
#: (``bias``, ``position``), as its full-data rows are labelled.
SIMULATED_JUDGE = "biased"


def _oracle_data(config, oracle, recorded):
    """Items, verdict matrix and judge label of oracle number ``oracle``: the recorded
    oracle when one is given, else the simulator's."""
    if recorded is None:
        items, matrix = make_oracle(config, oracle)
        return items, matrix, SIMULATED_JUDGE
    return recorded.items, recorded.matrix(), recorded.judge


def _budget_runs(args) -> list[dict]:
    with single_threaded_blas():
        return _budget_runs_inner(*args)


def _budget_runs_inner(config, oracle, recorded=None) -> list[dict]:
    items, matrix, judge = _oracle_data(config, oracle, recorded)
    n_items = len(items)
    x = items[["verbose"]].to_numpy()
    quality = items["quality"].to_numpy()
    # The ablation and spend budgets are read off the same runs; they never lengthen them.
    budget = max(config.budgets)
    checkpoints = set(config.budgets) | {b for b in (config.ablation_budget,
                                                      config.spend_budget) if b <= budget}
    plan = [(m, r) for m in config.models for r in config.rules]
    plan += [("bias-aware", r) for r in config.ablation_rules if ("bias-aware", r) not in plan]
    plan += [("residualized", r) for r in config.residualized_rules
             if ("residualized", r) not in plan]
    rows = []
    truth = true_topk(quality, config.k)
    distance = boundary_distance(quality, config.k)
    # In every true top-k: above the k-th quality, or tied at it with exactly as many
    # places left as tied items (always so for distinct qualities).
    surely_in = truth.certain | (truth.tied & (truth.tied.sum() == truth.open_slots))
    ambiguous = truth.tied & ~surely_in
    for seed in range(config.n_seeds):
        for model, rule in plan:
            result = run_active_topk(
                MatrixOracle(matrix), n_items, k=config.k, budget=budget,
                covariates=x, covariate_names=["verbose"], rule=rule, model=model,
                refit_every=config.refit_every, n_samples=config.n_samples,
                prior_precision=config.prior_precision,
                bias_prior_precision=config.bias_prior_precision, true_quality=quality,
                checkpoints=checkpoints, rng=[config.seed, oracle, seed, 7])
            for b, recall in result.recall_at.items():
                rows.append({"kind": "budget", "judge": judge, "oracle": oracle, "seed": seed,
                             "model": model, "rule": rule, "budget": b, "recall": recall})
            spent = result.shown[: config.spend_budget]
            counts = np.bincount(spent.ravel(), minlength=n_items)
            for item in range(n_items):
                # Distance 0: either side of the boundary (ranks k and k + 1, or every item
                # tied at the k-th quality and the next level below).
                rows.append({"kind": "spend", "judge": judge, "oracle": oracle, "seed": seed,
                             "model": model,
                             "rule": rule, "budget": config.spend_budget, "item": item,
                             "distance": int(distance[item]),
                             "in_true_topk": bool(surely_in[item]),
                             "tied_at_boundary": bool(ambiguous[item]),
                             "comparisons": int(counts[item])})
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


def _full_data_runs_inner(config, oracle, recorded=None) -> list[dict]:
    rows = []
    if recorded is not None:
        # A recorded oracle is one judge on one pool: no unbiased twin, no larger pool.
        setups = [(recorded.judge, recorded.n_items, None, None, config.k_values)]
    else:
        setups = [("biased", config.n_items, config.bias, config.position, config.k_values),
                  ("unbiased", config.n_items, 0.0, 0.0, (config.k,))]
        if config.large_n_items:
            setups.append(("biased", config.large_n_items, config.bias, config.position,
                           (config.large_k,)))
    for judge, n_items, bias, position, k_values in setups:
        if recorded is not None:
            items, matrix = recorded.items, recorded.matrix()
        else:
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


def estimates_for_plot(config: TopkExperimentConfig, oracle: int = 0, *,
                       recorded=None) -> pd.DataFrame:
    """Per-item true quality, verbosity, and naive and bias-aware scores on full data (Fig. 2):
    of simulated oracle ``oracle``, or of the ``recorded`` oracle when given."""
    items, matrix, _ = _oracle_data(config, oracle, recorded)
    frame = items[["quality", "verbose"]].copy()
    for model in ("naive", "bias-aware"):
        fit = _full_data_fit(matrix, items, model, config)
        frame[model] = fit.scores
    return frame


def run_topk_experiment(config: TopkExperimentConfig, *, oracles=None, jobs: int = 1,
                        progress=None) -> dict[str, pd.DataFrame]:
    """Run the whole offline protocol.

    Parameters
    ----------
    config : TopkExperimentConfig
    oracles : sequence of RecordedOracle, optional
        Recorded real-judge oracles (any judges, any pools) replayed instead of the
        simulator; oracle ``o`` of the run tables is ``oracles[o]`` and ``judge`` its
        judge. ``n_oracles``, ``n_items``, ``bias``, ``position`` and the scaled-up pool of
        ``config`` are then unused; ``k`` must be below every pool's size and the largest
        budget at most its number of unordered pairs.
    jobs : int
        Worker processes (oracles are independent); results do not depend on ``jobs``.
    progress : callable, optional
        Called with the number of finished oracle tasks after each one.

    Returns
    -------
    dict of pandas.DataFrame
        ``budget`` (judge, oracle, seed, model, rule, budget, recall), ``spend`` (comparisons per
        item by distance to the top-k boundary), ``full`` (full-data recall per judge, model,
        k and pool size, with the bias estimates), ``estimates`` (Fig. 2 data) and
        ``config`` (one row).
    """
    recorded = _check_recorded(config, oracles)
    sources = (list(enumerate(recorded)) if recorded is not None
               else [(o, None) for o in range(config.n_oracles)])
    tasks = [(_budget_runs, (config, o, r)) for o, r in sources]
    tasks += [(_full_data_runs, (config, o, r)) for o, r in sources]
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
    if recorded is None:
        out["estimates"] = estimates_for_plot(config).assign(judge=SIMULATED_JUDGE)
    else:
        # Fig. 2 of each judge: its first oracle.
        first = {}
        for oracle in recorded:
            first.setdefault(oracle.judge, oracle)
        out["estimates"] = pd.concat([estimates_for_plot(config, recorded=o).assign(judge=j)
                                      for j, o in first.items()])
    out["config"] = pd.DataFrame([{k: (list(v) if isinstance(v, tuple) else v)
                                   for k, v in asdict(config).items()}])
    return out


def split_results_by_judge(results: dict) -> dict[str, dict]:
    """The run tables of :func:`run_topk_experiment` per judge of the budgeted runs.

    Budgeted tables (recall, rule tests, spend, the score ablation) compare rules on one
    judge's oracles; averaging them across judges would mix judges of different competence
    and bias, so :func:`fairjudge.active.summarize_topk_results` takes one judge at a time.
    Each judge gets its own ``budget``, ``spend``, ``full`` and ``estimates`` rows and the
    shared ``config``.

    Returns
    -------
    dict of str -> dict of pandas.DataFrame
        In the order the judges first appear in ``budget``.
    """
    def rows_of(name, judge):
        part = results[name][results[name]["judge"] == judge]
        # The estimates are indexed by item id; the run tables by position.
        return part if name == "estimates" else part.reset_index(drop=True)

    judges = list(dict.fromkeys(results["budget"]["judge"]))
    return {judge: {**{name: rows_of(name, judge)
                       for name in ("budget", "spend", "full", "estimates")},
                    "config": results["config"]} for judge in judges}



def _check_recorded(config, oracles):
    """The recorded oracles as a list (None without), after checking they fit ``config``."""
    if oracles is None:
        return None
    from fairjudge.data._oracle import RecordedOracle

    recorded = list(oracles)
    if not recorded:
        raise FairjudgeInputError("`oracles` is empty; give at least one recorded oracle")
    for position, oracle in enumerate(recorded):
        if not isinstance(oracle, RecordedOracle):
            raise FairjudgeInputError(f"`oracles[{position}]` must be a RecordedOracle; got "
                                      f"{type(oracle).__name__}")
        where = oracle.info.get("path") or f"oracles[{position}] ({oracle.judge})"
        n = oracle.n_items
        if not 1 <= config.k < n:
            raise FairjudgeInputError(f"{where}: `k` must be between 1 and n_items-1={n - 1} "
                                      f"for its pool of {n} items; got {config.k}")
        pairs = n * (n - 1) // 2
        if max(config.budgets) > pairs:
            raise FairjudgeInputError(
                f"{where}: budget {max(config.budgets)} exceeds the {pairs} unordered pairs "
                f"of its pool of {n} items; give budgets of at most {pairs}")
        if len(oracle.usable()) == 0:
            raise FairjudgeInputError(f"{where}: no usable verdict (every call is missing "
                                      "or invalid)")
    return recorded
