"""The numbers behind the offline top-k experiment's report: means, standard errors, tests.

:func:`summarize_topk_results` turns the tidy run tables of
:func:`~fairjudge.active.run_topk_experiment` into a :class:`TopkSummary` of unrounded
numbers; :mod:`fairjudge.report` only selects, rounds and lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

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
