"""Multi-fidelity top-k: a cheap judge everywhere, a strong one where membership is in doubt
[the multi-fidelity issue §3; bias-aware-active-topk §7, Fig. 7].

Simulated pools (the paper's simulator: N = 30 items, theta ~ N(0, 1.25^2), a binary
verbosity, k = 5) and two judges fixed before any run was made:

``cheap``   cost 0.1 per call; the paper's biased judge (c* = 2 logits per unit of
            verbosity, kappa* = 0.5) at reliability tau = 0.5 (it decides on half the
            quality difference: noisier);
``strong``  cost 1 per call; unbiased (c* = 0, kappa* = 0), tau = 1.

Each judge's verdicts are pre-drawn for every ordered pair (an oracle matrix per judge, as
in the paper's protocol), so a judge asked the same pair again has nothing new to say and
each judge asks each pair at most once. Policies, all with the ``topk`` rule (Eq. 3):

``cheap-only``     the cheap judge alone (bias-aware model);
``strong-only``    the strong judge alone (bias-aware model);
``split``          half the money on the cheap judge, then the rest on the strong one
                   (reliability model: per-judge bias terms and temperatures);
``split-pooled``   the same verdicts fitted as if one judge gave them (one set of bias
                   terms: the naive mixing the paper warns about);
``multi-fidelity`` the ranker chooses (pair, judge) by Eq. 3 per unit cost under the
                   reliability model (:class:`fairjudge.active.ActiveTopK`).

Printed: mean top-k recall at each amount of money, each policy's paired difference from
multi-fidelity with a paired t-test p-value over the pools, and the money each policy needs
to reach strong-only's recall at each budget (Fig. 7's cost frontier read across).

``--data prd``: recorded verdicts instead (PRD Vicuna-80, needs ../shared/data). The items
are the 5 contestant models, the cheap judge is the gpt35 reviewer and the strong one the
gpt4 reviewer, priced 1 : 20 (gpt-3.5-turbo against gpt-4-turbo list prices, input and
output alike; the original gpt-4 cost more). A call of a judge on an ordered pair of
contestants returns that reviewer's recorded verdict on a random question (with
replacement), so pairs may be asked again (``allow_repeats``). The truth is the human
ranking (Bradley–Terry on the 800 human pair labels), and the metric top-k recall
(``--k``, default 3). Each run draws its own question stream; ``--pools`` runs.

Run: ``python benchmarks/multifidelity.py [--pools 40] [--jobs 2] [--data prd]``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from fairjudge._util._threads import single_threaded_blas
from fairjudge.active import ActiveTopK, JudgeSpec, MatrixOracle, run_active_topk, topk_recall
from fairjudge.data import Comparisons, SimulatedJudge, shared_data_dir, simulate_items
from fairjudge.data._schema import Outcome
from fairjudge.models import fit_model

N_ITEMS, K = 30, 5
COST = {"cheap": 0.1, "strong": 1.0}
MONEY = (6.0, 12.0, 24.0, 36.0, 48.0, 72.0, 96.0)
POLICIES = ("cheap-only", "strong-only", "split", "split-pooled", "multi-fidelity")
PRD_CONTESTANTS = ("bard", "claude", "gpt35", "gpt4", "vicuna-13b")
PRD_COST = {"gpt35": 1.0, "gpt4": 20.0}
PRD_MONEY = (20.0, 40.0, 80.0, 160.0, 320.0)


@dataclass
class Setting:
    """One top-k problem with a panel of two judges: the cheap one first in ``cost``."""

    quality: np.ndarray
    k: int
    cost: dict
    money: tuple
    oracles: dict
    covariates: np.ndarray | None = None
    allow_repeats: bool = False

    def common(self, seed) -> dict:
        """Settings every policy shares; recorded streams start again from their seeds."""
        for oracle in self.oracles.values():
            getattr(oracle, "restart", lambda: None)()
        x = self.covariates
        return dict(k=self.k, covariates=None if x is None else x[:, None],
                    covariate_names=None if x is None else ["verbose"],
                    allow_repeats=self.allow_repeats, n_samples=800, rng=seed)


def simulated(index: int) -> Setting:
    rng = np.random.default_rng([29, index])
    items = simulate_items(N_ITEMS, rng=rng)
    quality, verbose = items["quality"].to_numpy(), items["verbose"].to_numpy()
    cheap = SimulatedJudge(quality, verbose, bias=2.0, position=0.5, reliability=0.5, rng=rng)
    strong = SimulatedJudge(quality, verbose, bias=0.0, position=0.0, rng=rng)
    return Setting(quality, K, COST, MONEY, {"cheap": MatrixOracle(cheap.verdict_matrix()),
                                             "strong": MatrixOracle(strong.verdict_matrix())},
                   covariates=verbose)


class RecordedStream:
    """A reviewer's recorded verdicts per ordered pair of contestants; each call returns
    the verdict on a random question (with replacement). ``restart()`` replays the same
    stream, so every policy of a run sees the same questions in the same order."""

    def __init__(self, credit: dict, seed):
        self.credit, self.seed = credit, seed
        self.restart()

    def restart(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def recorded(self, first: int, second: int) -> bool:
        return (first, second) in self.credit

    def __call__(self, first: int, second: int) -> Outcome:
        value = self.rng.choice(self.credit[(first, second)])
        return Outcome.A if value == 1 else Outcome.B if value == 0 else Outcome.TIE


def prd(index: int, k: int) -> Setting:
    from fairjudge.data import load_prd

    bench = load_prd()
    code = {name: i for i, name in enumerate(PRD_CONTESTANTS)}

    def contestant(column):
        return column.str.split("/").str[1].map(code).to_numpy()

    gold = bench.gold[bench.gold["winner"].isin(["a", "b", "tie"])]
    humans = Comparisons.from_outcomes(contestant(gold["item_a"]), contestant(gold["item_b"]),
                                       gold["winner"].tolist(), n_items=len(code),
                                       weight=gold["n_annotators"].to_numpy(float))
    quality = fit_model("naive", humans).scores
    oracles = {}
    verdicts = bench.verdicts[bench.verdicts["winner"].isin(["a", "b", "tie"])]
    for number, judge in enumerate(PRD_COST):
        rows = verdicts[verdicts["judge"] == judge]
        credit = rows["winner"].map({"a": 1.0, "b": 0.0, "tie": 0.5}).to_numpy(float)
        keys = zip(contestant(rows["item_a"]), contestant(rows["item_b"]))
        table: dict = {}
        for key, value in zip(keys, credit):
            table.setdefault(key, []).append(value)
        oracles[judge] = RecordedStream({key: np.array(v) for key, v in table.items()},
                                        [31, index, number])
    return Setting(quality, k, PRD_COST, PRD_MONEY, oracles, allow_repeats=True)


def single(setting: Setting, name: str, seed) -> dict:
    result = run_active_topk(
        {name: setting.oracles[name]}, len(setting.quality),
        judges=[JudgeSpec(name, setting.cost[name])], max_cost=max(setting.money),
        true_quality=setting.quality, checkpoints=setting.money, **setting.common(seed))
    return {m: result.recall_at[m] for m in setting.money}


def multi(setting: Setting, seed) -> dict:
    result = run_active_topk(
        setting.oracles, len(setting.quality),
        judges=[JudgeSpec(n, c) for n, c in setting.cost.items()], max_cost=max(setting.money),
        model="reliability", true_quality=setting.quality, checkpoints=setting.money,
        **setting.common(seed))
    return {m: result.recall_at[m] for m in setting.money}


def split(setting: Setting, money: float, seed, pooled: bool) -> float:
    """Half of ``money`` on the cheap judge, then the strong one, one comparison at a time."""
    cheap, strong = setting.cost
    ranker = ActiveTopK(len(setting.quality),
                        judges=[JudgeSpec(n, c) for n, c in setting.cost.items()],
                        model="bias-aware" if pooled else "reliability",
                        **setting.common(seed))
    for name in (cheap, strong):
        share = money / 2 if name == cheap else money - ranker.spent
        while True:
            (p, *_) = ranker.propose(1, judge=name, money=max(share, 0.0)) or (None,)
            if p is None:
                break
            share -= p.cost
            outcome = Outcome(setting.oracles[name](p.first, p.second))
            # Pooled: both judges' verdicts under one name, so they share one bias term; the
            # pair still counts as asked by the judge that answered.
            ranker.update([(p, outcome)] if not pooled else
                          [(p.first, p.second, outcome, cheap)])
            if pooled:
                ranker.release([p])
                ranker._unqueried[list(setting.cost).index(name)][p.pair] = False
    return topk_recall(ranker.posterior().topk, setting.quality, setting.k)


def runs(task) -> list[dict]:
    index, data, k = task
    warnings.simplefilter("ignore")
    setting = simulated(index) if data == "simulated" else prd(index, k)
    cheap, strong = setting.cost
    seed = 1000 + index
    with single_threaded_blas():
        recall = {"cheap-only": single(setting, cheap, seed),
                  "strong-only": single(setting, strong, seed),
                  "multi-fidelity": multi(setting, seed)}
        for pooled, name in ((False, "split"), (True, "split-pooled")):
            recall[name] = {m: split(setting, m, seed, pooled) for m in setting.money}
    return [{"pool": index, "policy": policy, "money": m, "recall": r}
            for policy, by_money in recall.items() for m, r in by_money.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pools", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--data", choices=("simulated", "prd"), default="simulated")
    parser.add_argument("--k", type=int, default=3, help="top-k size on PRD")
    args = parser.parse_args()
    if args.data == "prd" and shared_data_dir() is None:
        sys.exit("--data prd needs the recorded datasets in ../shared/data")
    tasks = [(i, args.data, args.k) for i in range(args.pools)]
    with ProcessPoolExecutor(args.jobs) as pool_:
        table = pd.DataFrame([r for rows in pool_.map(runs, tasks) for r in rows])
    money = MONEY if args.data == "simulated" else PRD_MONEY
    cost = COST if args.data == "simulated" else PRD_COST
    wide = table.pivot_table(index=["pool", "money"], columns="policy", values="recall")
    mean = wide.groupby(level="money").mean()[list(POLICIES)]
    (cheap, c_cost), (strong, s_cost) = cost.items()
    k = K if args.data == "simulated" else args.k
    print(f"{args.data}: top-{k} recall by money spent ({args.pools} runs; cheap judge "
          f"{cheap} {c_cost:g}/call, strong {strong} {s_cost:g}/call)\n")
    print(mean.to_string(float_format=lambda v: f"{v:.3f}"))
    print("\nmulti-fidelity minus each policy (paired over pools; t-test p-value)\n")
    lines = []
    for m in money:
        at = wide.xs(m, level="money")
        row = {"money": m}
        for policy in POLICIES[:-1]:
            diff = at["multi-fidelity"] - at[policy]
            p = stats.ttest_rel(at["multi-fidelity"], at[policy]).pvalue if diff.any() else 1.0
            row[policy] = f"{diff.mean():+.3f} (p={p:.3f})"
        lines.append(row)
    print(pd.DataFrame(lines).to_string(index=False))
    print("\nmoney each policy needs to reach strong-only's recall at each budget, as a share of "
          "that budget (linear interpolation between the budgets above; '-' not reached)\n")
    lines = []
    for m in money:
        target = mean.loc[m, "strong-only"]
        row = {"strong-only money": m, "its recall": f"{target:.3f}"}
        for policy in POLICIES:
            need = money_to_reach(mean[policy], target)
            row[policy] = "-" if need is None else f"{need:.3g} ({need / m:.0%})"
        lines.append(row)
    print(pd.DataFrame(lines).to_string(index=False))


def money_to_reach(curve: pd.Series, target: float) -> float | None:
    """The least money at which a mean recall curve (index: money) reaches ``target``,
    interpolating linearly between budgets (from recall 0 at money 0)."""
    money = np.concatenate([[0.0], curve.index.to_numpy(float)])
    recall = np.concatenate([[0.0], curve.to_numpy(float)])
    above = np.flatnonzero(recall >= target - 1e-12)
    if not above.size:
        return None
    i = above[0]
    if i == 0:
        return 0.0
    share = (target - recall[i - 1]) / (recall[i] - recall[i - 1])
    return float(money[i - 1] + share * (money[i] - money[i - 1]))

if __name__ == "__main__":
    main()
