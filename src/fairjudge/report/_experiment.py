"""Tables, files and figures of the offline top-k experiment."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fairjudge._util._files import atomic_write
from fairjudge._util._json import dumps
from fairjudge.report._plots import (
    plot_competence_gain,
    plot_cost_frontier,
    plot_estimates_vs_truth,
    plot_recall_vs_budget,
    plot_score_ablation,
    plot_spend_by_distance,
)
from fairjudge.report._tables import (
    format_ablation_2x2,
    format_bias_estimates,
    format_full_data_table,
    format_full_data_tests,
    format_recall_table,
    format_score_ablation,
    format_spend,
    format_tests,
    render,
)

#: Acquisition-score variants of the score ablation (Fig. 5), in report order.
SCORE_ABLATION_RULES = ("topk", "global", "topk-no-variance", "topk-no-informativeness",
                        "entropy", "random")


def format_topk_summary(summary) -> dict[str, pd.DataFrame]:
    """All summary tables of the protocol, formatted, keyed by a short name.

    Parameters
    ----------
    summary : fairjudge.active.TopkSummary
        The numbers, from :func:`fairjudge.active.summarize_topk_results`.
    """
    config = summary.config
    tables = {}
    for model in config.models:
        tables[f"recall_{model}"] = format_recall_table(summary.recall, model,
                                                        list(config.rules))
    tests = summary.rule_tests
    for model in config.models:
        sub = tests[tests["model"] == model] if len(tests) else tests
        if len(sub):
            tables[f"tests_{model}"] = format_tests(sub)
    tables["full_data"] = format_full_data_table(summary.full_data)
    tables["full_data_tests"] = format_full_data_tests(summary.full_data_tests)
    tables["bias_estimates"] = format_bias_estimates(summary.bias_estimates)
    if {"naive", "bias-aware"} <= set(config.models) and {"round-robin", "topk"} <= set(
            config.rules):
        tables["ablation_2x2"] = format_ablation_2x2(summary.recall, config.ablation_budget)
    score_rules = [r for r in SCORE_ABLATION_RULES
                   if r in set(config.rules) | set(config.ablation_rules)]
    tables["score_ablation"] = format_score_ablation(summary.recall, config.ablation_budget,
                                                     score_rules)
    tables["spend"] = format_spend(summary.spend)
    for key in ("delta", "joint_vs_residualized"):
        frame = getattr(summary, key, None)
        if frame is not None and len(frame):
            tables[key] = format_delta_table(frame)
    return tables


def format_delta_table(delta: pd.DataFrame) -> pd.DataFrame:
    """Table 2 layout of :func:`fairjudge.active._summary.paired_delta_table`: judge,
    setting, B, oracles, the two mean recalls, Δ with its paired-bootstrap interval, p."""
    def interval(row):
        if pd.isna(row.ci_low):
            return "n/a"
        return f"[{row.ci_low:+.2f}, {row.ci_high:+.2f}]"

    return pd.DataFrame({
        "judge": delta["judge"],
        "setting": delta["setting"],
        "B": [("" if pd.isna(b) else str(int(b))) for b in delta["budget"]],
        "oracles": delta["n_oracles"],
        "comparison": delta["comparison"],
        "reference": delta["reference_mean"].round(2),
        "baseline": delta["baseline_mean"].round(2),
        "delta": [f"{d:+.2f}" for d in delta["delta"]],
        "95% CI (paired bootstrap)": [interval(r) for r in delta.itertuples()],
        "p (paired t)": [("n/a" if pd.isna(p) else f"{p:.2g}") for p in delta["p_value"]],
    })


TITLES = {
    "recall_bias-aware": "Top-k recall vs budget, bias-aware model (mean ± s.e. over oracles x "
                         "seeds)",
    "recall_naive": "Top-k recall vs budget, naive model (mean ± s.e.)",
    "tests_bias-aware": "Paired t-tests, top-k-aware rule vs baselines (bias-aware model)",
    "tests_naive": "Paired t-tests, top-k-aware rule vs baselines (naive model)",
    "full_data": "Full-data recall (every ordered pair once) by model",
    "full_data_tests": "Full data: bias-aware minus naive recall (paired over oracles)",
    "bias_estimates": "Full-data bias estimates (truth: c* per unit, kappa*)",
    "ablation_2x2": "2 x 2 ablation: model x acquisition at the ablation budget (Table 4 left)",
    "score_ablation": "Acquisition-score ablation at the ablation budget (Fig. 5)",
    "spend": "Comparisons per item by distance to the true top-k boundary (Fig. 4)",
    "delta": "Table 2: bias-aware minus naive recall (topk rule; paired by oracle x seed, "
             "bootstrap over oracles; pooled = every judge's oracles)",
    "joint_vs_residualized": "Joint model minus residualise-then-acquire (topk rule)",
}


def render_topk_summary(tables: dict) -> str:
    """The summary tables as one plain-text report."""
    parts = []
    for key, title in TITLES.items():
        if key in tables and len(tables[key]):
            parts.append(render(tables[key], title))
    return "\n\n".join(parts)


def judge_panel_section(results: dict, config, out_dir, *,
                        cost_per_call: dict | None = None) -> tuple[str, list[Path], dict]:
    """Across judges: Table 1's per-judge fits, Fig. 8's competence-gain correlation and
    Fig. 7's cost frontier [bias-aware-active-topk §6], when the run has several judges
    with budgeted runs.

    Parameters
    ----------
    results : dict of pandas.DataFrame
        The run tables of :func:`fairjudge.active.run_topk_experiment`.
    config : TopkExperimentConfig
        Its ``k`` selects the full-data fits.
    out_dir : path
        Where ``fig8_competence_gain.png`` (three judges or more) and
        ``fig7_cost_frontier.png`` (with ``cost_per_call``) are written.
    cost_per_call : dict of str -> float, optional
        Money per verdict of each judge with budgeted runs.

    Returns
    -------
    text : str
        The tables: the panel from two judges with budgeted runs, the correlation from
        three, the cost frontier whenever ``cost_per_call`` is given; "" when none applies.
    written : list of pathlib.Path
    numbers : dict
        JSON-ready: ``judges`` (the panel), ``competence_gain``, ``cost_frontier`` and
        ``money_to_recall_0.9`` (those computed).
    """
    from fairjudge.active import competence_gain, cost_frontier, judge_panel, money_to_reach

    # Judges run under a budget: the simulator's unbiased control is full-data only.
    full = results["full"]
    full = full[full["judge"].isin(set(results["budget"]["judge"]))]
    several = not full.empty and full["judge"].nunique() >= 2
    if not several and not cost_per_call:
        return "", [], {}
    out = Path(out_dir)
    parts, numbers, written = [], {}, []
    panel = judge_panel(full, k=config.k) if several else pd.DataFrame()
    if several:
        parts.append(render(panel.set_index("judge").round(3),
                            f"Judges on full data at k={config.k} (Table 1; c_hat per unit of "
                            "the covariate, delta = bias-aware - naive recall)"))
        numbers["judges"] = panel.to_dict(orient="records")
    if len(panel) >= 3:
        gain = competence_gain(panel)
        numbers["competence_gain"] = vars(gain)
        parts.append(f"Competence vs gain (Fig. 8): Spearman rho(naive recall, delta) = "
                     f"{gain.rho_gain:+.2f} (p = {gain.p_gain:.2g}), rho(naive recall, c_hat) "
                     f"= {gain.rho_bias:+.2f} (p = {gain.p_bias:.2g}), n = {gain.n_judges} "
                     "judges")
        written.append(plot_competence_gain(panel, out / "fig8_competence_gain.png",
                                            rho=gain.rho_gain, p_value=gain.p_gain))
    if cost_per_call:
        runs = results["budget"]
        runs = runs[runs["judge"].isin(list(cost_per_call))]
        frontier = cost_frontier(runs, cost_per_call)
        reach = money_to_reach(frontier, 0.9)
        numbers["cost_frontier"] = frontier.to_dict(orient="records")
        numbers["money_to_recall_0.9"] = reach.to_dict(orient="records")
        parts.append(render(frontier.set_index(["judge", "model", "budget"]).round(4),
                            "Recall against money, topk rule (Fig. 7)"))
        parts.append(render(reach.set_index(["judge", "model"]),
                            "Least money to mean recall 0.90 (measured budgets; NaN: never)"))
        written.append(plot_cost_frontier(frontier, out / "fig7_cost_frontier.png"))
    return "\n\n".join(parts), written, numbers


def write_topk_report(results: dict, config, out_dir, *,
                      summary, cost_per_call: dict | None = None) -> tuple[str, list[Path]]:
    """Write CSV/JSON data, the text report and the PNG figures into ``out_dir``.

    Parameters
    ----------
    results : dict of pandas.DataFrame
        The run tables of :func:`fairjudge.active.run_topk_experiment`, written as CSV.
    config : TopkExperimentConfig
        The settings of the run (the spend budget labels Fig. 4).
    out_dir : path
    summary : fairjudge.active.TopkSummary
        The numbers to report, from :func:`fairjudge.active.summarize_topk_results`.
    cost_per_call : dict of str -> float, optional
        Money per verdict of judges, for the cost frontier (see :func:`judge_panel_section`).

    Returns
    -------
    text : str
        The rendered text report (also written to ``summary.txt``).
    written : list of pathlib.Path
        The files written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    written += _write_run_tables(results, out)
    tables = format_topk_summary(summary)
    text = render_topk_summary(tables)
    panel_text, panel_files, panel_numbers = judge_panel_section(
        results, config, out, cost_per_call=cost_per_call)
    if panel_text:
        text += "\n\n" + panel_text
    with atomic_write(out / "summary.txt") as handle:
        handle.write(text + "\n")
    written.append(out / "summary.txt")
    report = {
        "config": results["config"].iloc[0].to_dict(),
        "tests": summary.rule_tests.to_dict(orient="records"),
        "full_data_tests": tables["full_data_tests"].to_dict(orient="records"),
        "recall": summary.recall_records.to_dict(orient="records"),
        "full_data": summary.full_data_records.to_dict(orient="records"),
        "delta": _records(summary.delta),
        "joint_vs_residualized": _records(summary.joint_vs_residualized),
        **panel_numbers,
    }
    with atomic_write(out / "summary.json") as handle:
        handle.write(dumps(report) + "\n")
    written.append(out / "summary.json")
    written.append(plot_recall_vs_budget(summary.recall, out / "fig3_recall_vs_budget.png"))
    written.append(plot_estimates_vs_truth(results["estimates"], config.k,
                                           out / "fig2_naive_vs_truth.png"))
    written.append(plot_spend_by_distance(tables["spend"], out / "fig4_spend_by_distance.png",
                                          budget=config.spend_budget))
    if len(tables["score_ablation"]):
        written.append(plot_score_ablation(
            summary.recall, out / "fig5_score_ablation.png", budget=config.ablation_budget,
            rules=list(tables["score_ablation"].index)))
    return text, written + panel_files


def write_topk_panel_report(results: dict, config, out_dir, *,
                            cost_per_call: dict | None = None) -> tuple[str, list[Path]]:
    """Report a run over oracles of several judges: one folder per judge and the panel.

    Rules and budgets are compared on one judge's oracles at a time, so each judge gets a
    full :func:`write_topk_report` in ``out_dir/<judge>/``. ``out_dir`` itself holds the
    run tables of every judge, the tables across judges (:func:`judge_panel_section`:
    Table 1, Fig. 8, Fig. 7 with ``cost_per_call``) and Table 2's Δ per judge with the
    pooled Δ across judges, in ``summary.txt`` and ``summary.json``.

    Returns
    -------
    text : str
        The panel report (each judge's own report is in its folder).
    written : list of pathlib.Path
    """
    import re

    from fairjudge.active import (
        paired_delta_table,
        split_results_by_judge,
        summarize_topk_results,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written, folders = [], {}
    for judge, part in split_results_by_judge(results).items():
        folder = out / (re.sub(r"[^A-Za-z0-9._-]+", "_", str(judge)).strip("._") or "judge")
        _, files = write_topk_report(part, config, folder,
                                     summary=summarize_topk_results(part, config))
        folders[judge] = folder
        written += files
    written += _write_run_tables(results, out)
    budgeted = results["full"][results["full"]["judge"].isin(list(folders))]
    delta = paired_delta_table(results["budget"], budgeted, k=config.k, baseline="naive",
                               rng=[config.seed, 2])
    panel_text, panel_files, numbers = judge_panel_section(results, config, out,
                                                           cost_per_call=cost_per_call)
    parts = [f"{len(folders)} judges; each judge's budgeted protocol (recall vs budget, rule "
             "tests, ablations, figures) is in its own folder: "
             + ", ".join(f"{judge} -> {folder.name}/" for judge, folder in folders.items())]
    if len(delta):
        parts.append(render(format_delta_table(delta), TITLES["delta"]))
    if panel_text:
        parts.append(panel_text)
    text = "\n\n".join(parts)
    with atomic_write(out / "summary.txt") as handle:
        handle.write(text + "\n")
    with atomic_write(out / "summary.json") as handle:
        handle.write(dumps({"config": results["config"].iloc[0].to_dict(),
                            "judges_folders": {str(j): f.name for j, f in folders.items()},
                            "delta": _records(delta), **numbers}) + "\n")
    written += [out / "summary.txt", out / "summary.json", *panel_files]
    return text, written


def _write_run_tables(results: dict, out: Path) -> list[Path]:
    """The run tables as CSV files in ``out`` (the estimates keep their item-id index)."""
    paths = []
    for name in ("budget", "full", "spend", "estimates", "config"):
        path = out / f"{name}.csv"
        with atomic_write(path) as handle:
            results[name].to_csv(handle, index=name == "estimates")
        paths.append(path)
    return paths


def _records(frame) -> list:
    """A summary table as JSON records (NA budgets as null), or [] when absent."""
    if frame is None or not len(frame):
        return []
    out = frame.astype(object).where(frame.notna(), None)
    return out.to_dict(orient="records")
