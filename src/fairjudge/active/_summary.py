"""The numbers behind the offline top-k experiment's report: means, standard errors, tests.

:func:`summarize_topk_results` turns the tidy run tables of
:func:`~fairjudge.active.run_topk_experiment` into a :class:`TopkSummary` of unrounded
numbers; :mod:`fairjudge.report` only selects, rounds and lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.stats._estimate import Estimate
from fairjudge.stats._tests import mean_and_se, paired_t_test

#: Baselines that the bias-aware model is tested against on full data, in report order.
FULL_DATA_BASELINES = ("naive", "swap-majority", "residualized", "hierarchical")

#: The full-data estimates summarised per judge and pool size: column of the ``full`` table,
#: and the model whose rows hold it.
BIAS_MEASURES = (
    ("c_hat", "bias-aware", "c_hat"),
    ("kappa_hat", "bias-aware", "kappa_hat"),
    ("corr_naive_verbose", "naive", "corr_score_verbose"),
    ("corr_bias_aware_verbose", "bias-aware", "corr_score_verbose"),
)


# The tables are DataFrames: identity equality (the generated __eq__ would compare frames
# elementwise and fail on their truth value).
@dataclass(frozen=True, eq=False)
class TopkSummary:
    """Summary numbers of one run of the offline top-k protocol.

    Means and standard errors are :func:`~fairjudge.stats.mean_and_se` over the runs of a
    cell (s.e. 0 for a single run); rows are in the order the cells first appear in the run
    tables.

    Attributes
    ----------
    config : TopkExperimentConfig
        The settings the results were produced with.
    recall : pandas.DataFrame
        Budgeted runs: ``model``, ``rule``, ``budget``, ``mean``, ``se``, ``n`` (runs, i.e.
        oracles x seeds) of top-k recall.
    rule_tests : pandas.DataFrame
        Paired t-tests of the ``topk`` rule minus each other rule per model and budget, paired
        over (oracle, seed): ``model``, ``comparison``, ``budget``, ``n_pairs``,
        ``mean_difference``, ``t``, ``p_value``.
    full_data : pandas.DataFrame
        Full-data recall: ``judge``, ``n_items``, ``k``, ``model``, ``oracles`` (distinct
        oracles of the judge/pool/k cell), ``mean``, ``se``, ``n``.
    full_data_tests : pandas.DataFrame
        Paired t-tests over oracles of bias-aware minus each of :data:`FULL_DATA_BASELINES`
        on full data: ``judge``, ``n_items``, ``k``, ``comparison``, ``n_oracles``,
        ``mean_difference``, ``ci_low``, ``ci_high`` (95%), ``p_value``.
    bias_estimates : pandas.DataFrame
        Full-data estimates per judge and pool size, one oracle each: ``judge``,
        ``n_items``, ``measure`` (see :data:`BIAS_MEASURES`), ``mean``, ``se``, ``n``.
    spend : pandas.DataFrame
        Mean comparisons per item at the spend budget, bias-aware model, indexed by the
        distance of the item's true rank to the top-k boundary, one column per rule
        (``topk``, ``round-robin`` when run).
    recall_records, full_data_records : pandas.DataFrame
        The same cells as ``recall`` and ``full_data``, sorted, with pandas' ``mean``,
        ``sem`` (NaN for a single run) and ``count``: the machine-readable form written to
        ``summary.json``.
    delta : pandas.DataFrame
        Table 2: bias-aware minus naive recall per judge and budget (``topk`` rule) and on
        full data, with its paired-bootstrap 95% interval and paired t p-value, and the
        pooled Δ across judges (``judge`` ``"pooled"``); see :func:`paired_delta_table`.
    joint_vs_residualized : pandas.DataFrame
        The joint (bias-aware) model minus residualise-then-acquire at each budget and on
        full data, same columns (empty without residualised runs).
    """

    config: object
    recall: pd.DataFrame
    rule_tests: pd.DataFrame
    full_data: pd.DataFrame
    full_data_tests: pd.DataFrame
    bias_estimates: pd.DataFrame
    spend: pd.DataFrame
    recall_records: pd.DataFrame
    full_data_records: pd.DataFrame
    delta: pd.DataFrame = None
    joint_vs_residualized: pd.DataFrame = None


def own_pools(full: pd.DataFrame) -> pd.DataFrame:
    """Full-data rows of each judge's own pools: its smallest pool size, leaving out the
    simulator's scaled-up pool (whose k may coincide with the main one's)."""
    if full.empty:
        return full
    return full[full["n_items"] == full.groupby("judge")["n_items"].transform("min")]


def summarize_topk_results(results: dict, config) -> TopkSummary:
    """Summarise the run tables of :func:`~fairjudge.active.run_topk_experiment`.

    Parameters
    ----------
    results : dict of pandas.DataFrame
        ``budget``, ``full`` and ``spend`` as returned by ``run_topk_experiment``.
    config : TopkExperimentConfig
        The configuration the results were run with (its ``models`` and ``rules``).

    Returns
    -------
    TopkSummary
    """
    budget, full, spend = results["budget"], results["full"], results["spend"]
    if "judge" in budget.columns and budget["judge"].nunique() > 1:
        raise FairjudgeInputError(
            f"the budgeted runs hold {budget['judge'].nunique()} judges "
            f"({', '.join(map(str, dict.fromkeys(budget['judge'])))}); rules are compared on "
            "one judge's oracles at a time: summarise each part of "
            "fairjudge.active.split_results_by_judge(results)")
    # Table 2 pools the judges that were run under a budget (not the simulator's unbiased
    # control), each on its own pools (not the scaled-up pool, whose k may coincide).
    budgeted = own_pools(full[full["judge"].isin(set(budget["judge"]))]
                         if "judge" in budget.columns else full)
    baselines = [r for r in config.rules if r != "topk"]
    return TopkSummary(
        config=config,
        recall=summarize_recall(budget),
        rule_tests=pd.concat([paired_rule_tests(budget, model, "topk", baselines)
                              for model in config.models], ignore_index=True),
        full_data=summarize_full_data(full),
        full_data_tests=pd.concat([paired_full_data_tests(full, reference="bias-aware",
                                                          baseline=b)
                                   for b in FULL_DATA_BASELINES], ignore_index=True),
        bias_estimates=summarize_bias_estimates(full),
        spend=mean_spend_by_distance(spend),
        recall_records=_with_estimates(budget.groupby(["model", "rule", "budget"])["recall"]
                                       .agg(["mean", "sem", "count"]).reset_index()),
        full_data_records=_with_estimates(full.groupby(["judge", "n_items", "k", "model"])
                                          ["recall"].agg(["mean", "sem", "count"])
                                          .reset_index()),
        delta=paired_delta_table(budget, budgeted, k=config.k, baseline="naive",
                                 rng=[config.seed, 2]),
        joint_vs_residualized=paired_delta_table(budget, budgeted, k=config.k,
                                                 baseline="residualized",
                                                 rng=[config.seed, 3]),
    )


def _with_estimates(records: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Each cell's mean recall also as an :class:`~fairjudge.stats.Estimate` (a t interval
    over its runs), the shape every JSON output shares."""
    from scipy import stats as scipy_stats

    estimates = []
    for mean, sem, count in zip(records["mean"], records["sem"], records["count"]):
        half = (float(scipy_stats.t.ppf(0.5 + level / 2, count - 1)) * sem
                if count > 1 else float("nan"))
        estimates.append(Estimate(float(mean), mean - half, mean + half, int(count), level,
                                  "t interval over runs"))
    return records.assign(recall=estimates)


def _cell(keys: dict, values) -> dict:
    mean, se = mean_and_se(values)
    return {**keys, "mean": mean, "se": se, "n": len(values)}


def summarize_recall(budget: pd.DataFrame) -> pd.DataFrame:
    """Mean and s.e. of recall per (model, rule, budget) cell of the budgeted runs."""
    rows = [_cell({"model": model, "rule": rule, "budget": b}, group["recall"])
            for (model, rule, b), group in budget.groupby(["model", "rule", "budget"],
                                                          sort=False)]
    return pd.DataFrame(rows, columns=["model", "rule", "budget", "mean", "se", "n"])


def paired_rule_tests(budget: pd.DataFrame, model: str, reference: str,
                      baselines) -> pd.DataFrame:
    """Paired t-tests of ``reference`` minus each baseline rule, per budget.

    Pairs are (oracle, seed) runs, which replay the same oracle matrix.
    """
    data = budget[budget["model"] == model]
    rows = []
    for baseline in baselines:
        for b in sorted(data["budget"].unique()):
            ref = data[(data["rule"] == reference) & (data["budget"] == b)]
            base = data[(data["rule"] == baseline) & (data["budget"] == b)]
            joined = ref.merge(base, on=["oracle", "seed"], suffixes=("_ref", "_base"))
            if len(joined) < 2:
                continue
            test = paired_t_test(joined["recall_ref"], joined["recall_base"])
            rows.append({"model": model, "comparison": f"{reference} vs {baseline}",
                         "budget": int(b), "n_pairs": test.n,
                         "mean_difference": test.mean_difference, "t": test.statistic,
                         "p_value": test.p_value, "difference": test.as_estimate()})
    return pd.DataFrame(rows)


def summarize_full_data(full: pd.DataFrame) -> pd.DataFrame:
    """Mean and s.e. of full-data recall per (judge, pool size, k) cell and model."""
    rows = []
    for (judge, n_items, k), group in full.groupby(["judge", "n_items", "k"], sort=False):
        cell = {"judge": judge, "n_items": int(n_items), "k": int(k),
                "oracles": group["oracle"].nunique()}
        for model, sub in group.groupby("model", sort=False):
            rows.append(_cell({**cell, "model": model}, sub["recall"]))
    return pd.DataFrame(rows, columns=["judge", "n_items", "k", "oracles", "model", "mean",
                                       "se", "n"])


def paired_full_data_tests(full: pd.DataFrame, reference: str = "bias-aware",
                           baseline: str = "naive") -> pd.DataFrame:
    """Paired t-test of reference minus baseline full-data recall (pairs are oracles)."""
    rows = []
    for (judge, n_items, k), group in full.groupby(["judge", "n_items", "k"], sort=False):
        ref = group[group["model"] == reference].set_index("oracle")["recall"]
        base = group[group["model"] == baseline].set_index("oracle")["recall"]
        common = ref.index.intersection(base.index)
        if len(common) < 2:
            continue
        test = paired_t_test(ref[common], base[common])
        rows.append({"judge": judge, "n_items": int(n_items), "k": int(k),
                     "comparison": f"{reference} - {baseline}", "n_oracles": test.n,
                     "mean_difference": test.mean_difference, "ci_low": test.interval.low,
                     "ci_high": test.interval.high, "p_value": test.p_value})
    return pd.DataFrame(rows)


def summarize_bias_estimates(full: pd.DataFrame) -> pd.DataFrame:
    """Mean and s.e. over oracles of the full-data bias estimates and score–verbosity
    correlations, per judge and pool size (one row per :data:`BIAS_MEASURES` entry)."""
    # Each fit is recorded once per k; keep one row per (judge, pool, oracle).
    fits = {model: full[full["model"] == model].drop_duplicates(["judge", "n_items", "oracle"])
            for model in ("bias-aware", "naive")}
    rows = []
    for (judge, n_items), _ in fits["bias-aware"].groupby(["judge", "n_items"], sort=False):
        for measure, model, column in BIAS_MEASURES:
            data = fits[model]
            values = data[(data["judge"] == judge) & (data["n_items"] == n_items)][column]
            rows.append(_cell({"judge": judge, "n_items": int(n_items), "measure": measure},
                              values))
    return pd.DataFrame(rows, columns=["judge", "n_items", "measure", "mean", "se", "n"])


def mean_spend_by_distance(spend: pd.DataFrame, model: str = "bias-aware",
                           rules=("topk", "round-robin")) -> pd.DataFrame:
    """Mean comparisons per item by distance to the true top-k boundary (Fig. 4)."""
    data = spend[(spend["model"] == model) & spend["rule"].isin(rules)]
    table = data.groupby(["distance", "rule"])["comparisons"].mean().unstack("rule")
    return table[[r for r in rules if r in table.columns]]


#: Columns of :func:`paired_delta_table`.
DELTA_COLUMNS = ["judge", "setting", "budget", "comparison", "n_oracles", "n_pairs",
                 "reference_mean", "baseline_mean", "delta", "ci_low", "ci_high", "p_value",
                 "difference"]


def paired_delta_table(budget: pd.DataFrame, full: pd.DataFrame, *, k: int,
                       reference: str = "bias-aware", baseline: str = "naive",
                       rule: str = "topk", level: float = 0.95, n_boot: int = 2000,
                       rng=0) -> pd.DataFrame:
    """Δ = ``reference`` minus ``baseline`` recall with paired-bootstrap intervals
    [bias-aware-active-topk §6, Table 2].

    Budgeted runs are paired by (oracle, seed) -- both models replay the same oracle under
    the same acquisition seed and ``rule`` -- and full-data fits by oracle. The interval is
    a percentile bootstrap of the mean Δ that resamples whole oracles (the seeds of one
    oracle share its verdicts, so they are not independent); the p-value is a paired t-test
    over oracles of the per-oracle mean recalls, as in the paper. Each judge gets its rows,
    and ``judge == "pooled"`` pools every judge's oracles (the paper's pooled Δ).

    Parameters
    ----------
    budget : pandas.DataFrame
        Budgeted runs: ``oracle``, ``seed``, ``model``, ``rule``, ``budget``, ``recall`` and
        optionally ``judge`` (default one judge).
    full : pandas.DataFrame
        Full-data fits: ``judge``, ``n_items``, ``oracle``, ``model``, ``k``, ``recall``;
        only rows at ``k`` are used.
    k : int
    reference, baseline : str
        Models compared.
    rule : str
        Acquisition rule of the budgeted runs compared.
    level : float
    n_boot : int
    rng : seed or numpy.random.Generator

    Returns
    -------
    pandas.DataFrame
        One row per (judge, setting, budget): :data:`DELTA_COLUMNS`. ``setting`` is
        ``budget`` (``budget`` the comparisons spent) or ``full data`` (``budget`` NA);
        ``delta`` its mean and ``difference`` the same as an
        :class:`~fairjudge.stats.Estimate`. Empty when either model was not run.
    """
    from fairjudge._util._rng import as_generator

    rng = as_generator(rng)
    units = []  # (judge, setting, budget, frame with judge/oracle/seed/ref/base)
    runs = budget[budget["rule"] == rule] if len(budget) else budget
    if "judge" not in runs.columns:
        runs = runs.assign(judge="judge")
    for b in sorted(runs["budget"].dropna().unique()) if len(runs) else []:
        at = runs[runs["budget"] == b]
        ref = at[at["model"] == reference]
        base = at[at["model"] == baseline]
        joined = ref.merge(base, on=["judge", "oracle", "seed"], suffixes=("_ref", "_base"))
        if len(joined):
            units.append(("budget", int(b), joined))
    fits = full[full["k"] == k] if len(full) else full
    if len(fits):
        for n_items, group in fits.groupby("n_items", sort=False):
            ref = group[group["model"] == reference]
            base = group[group["model"] == baseline]
            joined = ref.merge(base, on=["judge", "oracle"], suffixes=("_ref", "_base"))
            if len(joined):
                units.append(("full data", pd.NA, joined.assign(seed=0)))
    rows = []
    for setting, b, joined in units:
        judges = list(dict.fromkeys(joined["judge"]))
        groups = [(j, joined[joined["judge"] == j]) for j in judges]
        if len(judges) > 1:
            groups.append(("pooled", joined))
        for judge, part in groups:
            rows.append(_delta_row(part, judge, setting, b, reference, baseline, level,
                                   n_boot, rng))
    return pd.DataFrame(rows, columns=DELTA_COLUMNS)


def _delta_row(part, judge, setting, budget, reference, baseline, level, n_boot, rng):
    from fairjudge.stats._bootstrap import bootstrap_mean

    delta = (part["recall_ref"] - part["recall_base"]).to_numpy(dtype=float)
    cluster = (part["judge"].astype(str) + "\x1f" + part["oracle"].astype(str)).to_numpy()
    interval = bootstrap_mean(delta, clusters=cluster, level=level, n_boot=n_boot, rng=rng)
    per_oracle = part.groupby(["judge", "oracle"], sort=False)[["recall_ref",
                                                                 "recall_base"]].mean()
    p_value = (paired_t_test(per_oracle["recall_ref"], per_oracle["recall_base"]).p_value
               if len(per_oracle) >= 2 else float("nan"))
    difference = Estimate(float(delta.mean()), interval.ci_low, interval.ci_high,
                          len(per_oracle), level, "paired bootstrap over oracles")
    return {"judge": judge, "setting": setting, "budget": budget,
            "comparison": f"{reference} - {baseline}", "n_oracles": len(per_oracle),
            "n_pairs": len(part), "reference_mean": float(part["recall_ref"].mean()),
            "baseline_mean": float(part["recall_base"].mean()), "delta": float(delta.mean()),
            "ci_low": interval.ci_low, "ci_high": interval.ci_high, "p_value": p_value,
            "difference": difference}
