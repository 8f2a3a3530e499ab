"""Text and HTML renderings of judge audits and strategy comparisons."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from fairjudge.audit._compare import pareto_front
from fairjudge.report._html import figure_data_uri, heat_table, html_table, render_html
from fairjudge.report._plots import consistency_gap_plot, pareto_plot
from fairjudge.report._provenance import Provenance
from fairjudge.report._tables import format_count, format_estimate, format_p


def _ci(est, digits=3) -> str:
    return format_estimate(est, digits)


def comparison_tables(comparison) -> dict[str, pd.DataFrame]:
    t = comparison.table.set_index("name")
    table1 = pd.DataFrame({
        "agreement [95% CI]": [f"{r.agreement:.3f} [{r.agreement_ci_low:.3f}, "
                               f"{r.agreement_ci_high:.3f}]" for r in t.itertuples()],
        "vs baseline (pp)": [f"{100 * r.difference:+.1f}" if np.isfinite(r.difference) else ""
                             for r in t.itertuples()],
        "kappa [95% CI]": [f"{r.kappa:.3f} [{r.kappa_ci_low:.3f}, {r.kappa_ci_high:.3f}]"
                           for r in t.itertuples()],
        "n": t["n"], "$ / eval": t["cost_per_eval"].map(
            lambda c: f"{c:.5f}" if np.isfinite(c) else "")}, index=t.index)
    if not np.isfinite(t["cost_per_eval"]).any():
        table1 = table1.drop(columns="$ / eval")  # no cost known: no empty column
    table3 = t[["n_a", "n_b", "n_tie", "n_abstain", "n_invalid"]].rename(
        columns={"n_a": "A", "n_b": "B", "n_tie": "tie", "n_abstain": "abstain",
                 "n_invalid": "invalid"})
    table3["tie %"] = (100 * t["tie_rate"]).map(lambda v: f"{v:.1f}")
    tested = t[t["mcnemar_b"].notna()]
    table4 = pd.DataFrame({
        "b": tested["mcnemar_b"].astype(int), "c": tested["mcnemar_c"].astype(int),
        "chi2 (cc)": tested["mcnemar_statistic"].round(2),
        "p": tested["mcnemar_p"].map(format_p), "exact p": tested["mcnemar_exact_p"].map(format_p),
        "Holm p": tested["p_holm"].map(format_p),
        "MDE (pp)": (100 * tested["mde"]).round(1)}, index=tested.index)
    if "p_holm_family" in tested.columns:
        # A family across judges: the within-judge and the family-wide adjustment side by side.
        table4 = table4.rename(columns={"Holm p": "Holm p (judge)"})
        table4.insert(table4.columns.get_loc("Holm p (judge)") + 1, "Holm p (family)",
                      tested["p_holm_family"].map(format_p))
    table4.index = [f"{comparison.names[0]} vs {n}" for n in table4.index]
    # Numbered in order here; the study's own table numbers are given in brackets.
    out = {"Table 1: agreement with gold and Cohen's kappa [study Table 1]": table1,
           "Table 2: verdict distribution [study Table 3]": table3,
           f"Table 3: McNemar vs {comparison.names[0]} (b: baseline right, other wrong; "
           "c: the reverse) [study Table 4]": table4}
    if comparison.mixed is not None:
        mixed = comparison.mixed.copy()
        out["Table 4: mixed-effects logistic regression, correct ~ configuration + "
            "(1 | instance) [study Table 5]"] = mixed.set_index(mixed.columns[0])
    return out


def render_comparison(comparison) -> str:
    parts = []
    for title, table in comparison_tables(comparison).items():
        parts.append(f"{title}\n{table.to_string()}")
    if comparison.mixed is None and comparison.mixed_error:
        parts.append(f"Table 4: mixed-effects model not reported: {comparison.mixed_error}")
    if comparison.pareto:
        parts.append("cost-agreement Pareto front: " + ", ".join(comparison.pareto))
    parts.append("recommendation: " + comparison.recommendation)
    parts.extend(algorithm_1_lines(comparison))
    return "\n\n".join(parts)


def algorithm_1_lines(comparison) -> list[str]:
    """The study's Algorithm 1 for this comparison and where it and the data disagree
    [debiasing-strategies-study §5.4]; empty when the comparison carries no check."""
    check = getattr(comparison, "algorithm_1", None)
    if check is None:
        return []
    choice = check.choice
    inputs = (f"task {choice.task}, model {choice.model or 'unspecified'}"
              + (f" (as \"{choice.model_class}\")" if choice.model_class else "")
              + f", budget k = {choice.budget_multiplier or 'not limited'}")
    lines = [f"Algorithm 1 of the study ({inputs}): {choice.describe()}"]
    lines += [f"  note: {note}" for note in choice.notes]
    lines.append(f"Algorithm 1 vs the data: {check.summary}")
    return ["\n".join(lines)]


#: How each preference row reads in the text report.
_PREFERENCE_LABELS = {"prefer longer": "the longer answer",
                      "prefer more list items": "more list items",
                      "prefer more markdown": "more markdown",
                      "prefer first": "the first-shown answer"}


def _covariate_lines(covariates, length_bias, markdown_bias) -> list[str]:
    """Length and markdown bias, the preference table and the length coefficient (their
    definitions are printed once, in :data:`AUDIT_NOTES`)."""
    gold = covariates.reference == "gold"
    reference = "gold" if gold else "0.5"
    lines = [f"  length bias            {_ci(length_bias)}  (P(judge picks longer) - "
             f"{'P(gold does)' if gold else '0.5'})",
             f"  markdown bias          {_ci(markdown_bias)}  (the same for more markdown)",
             f"  preferences (decisive verdicts, ties left out; excess over {reference}):"]
    for row in covariates.preferences.itertuples():
        text = f"    {_PREFERENCE_LABELS.get(row.preference, row.preference):<24}" \
               f"judge {row.judge:.3f}"
        if np.isfinite(getattr(row, "gold", np.nan)):
            text += f", gold {row.gold:.3f}"
        text += (f", excess {row.excess:+.3f} [{row.excess_ci_low:+.3f}, "
                 f"{row.excess_ci_high:+.3f}]")
        lines.append(text)
    lines.append(f"  length coefficient     {_ci(covariates.length_coefficient)}  (logits per "
                 f"doubling{', at a fixed gold label' if gold else ''})")
    return lines


#: How to read the audit's figures, printed once after the judges.
AUDIT_NOTES = (
    "how to read: the first-slot rate is among decisive verdicts (ties, shown beside it, "
    "favour neither slot), as is the first-shown preference. The "
    "length bias compares how often the judge and gold pick the longer answer on the same "
    "verdicts; the length coefficient is the effect of length on the judge's choice at a "
    "fixed gold label (logistic regression on log2 of the word-count ratio, +1 smoothed). "
    "They can differ in sign: a judge that follows gold loosely picks the longer answer "
    "less often than gold does, yet may still lean to length where gold is held fixed.")


def render_swap_plans(plans: dict) -> str:
    """The swap-test decisions (:func:`fairjudge.audit.swap_test_plan`) as text: per judge
    the decision, its numbers and the calls (and money) saved against swapping every pair."""
    lines = []
    for judge, p in plans.items():
        lines.append(f"judge {judge}: {p.decision.upper()} for the full run of "
                     f"{format_count(p.n_pairs)} pairs")
        lines.append(f"  consistency (sample)   {_ci(p.consistency)}  "
                     f"({p.sample_size} pairs swap-tested)")
        if p.full_consistency is not None:
            lines.append(f"  consistency (all)      {_ci(p.full_consistency)}  (every recorded "
                         "pair, for comparison)")
        lines.append(f"  threshold              {p.threshold:.2f} on the interval's lower bound")
        money = ("" if p.money_saved is None else
                 f"; ${p.money_saved:,.4f} at ${p.cost_per_call:.6f}/call")
        lines.append(f"  calls                  {format_count(p.calls_plan)} planned vs "
                     f"{format_count(p.calls_swap_all)} swapping every pair: "
                     f"{format_count(p.calls_saved)} saved{money}")
        if p.calls_saved == 0 and p.n_pairs > p.sample_size:
            lines.append(f"                         (a single-order run would save "
                         f"{format_count(p.n_pairs - p.sample_size)} calls, not warranted "
                         "here)")
        lines.extend(textwrap.wrap(p.reason, width=96, initial_indent="  why: ",
                                   subsequent_indent="       "))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render_audits(audits: dict, probe_scores: pd.DataFrame | None = None) -> str:
    lines = []
    for judge, a in audits.items():
        lines.append(f"judge {judge}: {format_count(a.n_verdicts)} verdicts")
        lines.append(f"  position consistency   {_ci(a.position_consistency)}")
        ties = "" if a.tie_rate is None else f"; ties {a.tie_rate.estimate:.3f} of verdicts"
        lines.append(f"  first-slot rate        {_ci(a.first_position_rate)}  (decisive "
                     f"verdicts; 0.5 = no slot preference{ties})")
        if a.preference_fairness is not None:
            lines.append(f"  preference fairness    {_ci(a.preference_fairness)}  (Shi et al. "
                         "PF over pairs; -1 first slot, +1 last, 0 fair)")
        if a.position_prior is not None and a.position_prior.n:
            lines.append(f"  position prior (logit) {_ci(a.position_prior)}  (from p_a/p_b in "
                         f"both orders; P(first) for equal answers "
                         f"{1 / (1 + np.exp(-a.position_prior.estimate)):.3f})")
        lines.append(f"  repetition stability   {_ci(a.repetition_stability)}")
        lines.append(f"  invalid outputs        {_ci(a.invalid_rate)}")
        if a.accuracy is not None:
            lines.append(f"  accuracy vs gold       {_ci(a.accuracy)}")
        if a.length_bias is not None:
            lines.extend(_covariate_lines(a.covariates, a.length_bias, a.markdown_bias))
        if a.self_preference is not None:
            lines.append(_self_preference_line(a.self_preference))
        if a.external_validity is not None:
            lines.extend(_external_validity_lines(a.external_validity))
        elif a.external_validity_note:
            lines.append(f"  external validity      n/a ({a.external_validity_note})")
        if a.consistency_by_gap is not None and len(a.consistency_by_gap):
            lines.append("  consistency by quality gap: " + ", ".join(
                f"[{r.gap_low:.2g}, {r.gap_high:.2g}] {r.estimate:.2f}"
                for r in a.consistency_by_gap.itertuples()))
        lines.append("")
    if any(a.length_bias is not None for a in audits.values()):
        lines.append(textwrap.fill(AUDIT_NOTES, width=100))
        lines.append("")
    if probe_scores is not None and len(probe_scores):
        lines.append("controlled probes (b = P(target) - P(non-target)):")
        lines.append(probe_scores.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return "\n".join(lines).rstrip()


def _external_validity_lines(ev) -> list[str]:
    """Does correcting for length and markdown bring the judge closer to gold, against the
    recalibration-only and covariates-only controls (cross-validated)?"""
    return [f"  external validity ({format_count(ev.n)} gold pairs, agreement with gold):",
            f"    judge alone            {_ci(ev.raw)}",
            f"    corrected (length, md) {_ci(ev.corrected)}",
            f"    control: recalibrated  {_ci(ev.recalibrated)}  (the judge's score alone)",
            f"    control: covariates    {_ci(ev.covariates_only)}  (length and markdown, "
            "no judge)",
            f"    conclusion: {ev.conclusion}"]


def _self_preference_line(sp) -> str:
    if sp.family is None:
        return ("  self-preference        n/a (the judge's model family is unknown: name it "
                "with --family FAMILY=JUDGE)")
    if not sp.judge_rate.n:
        return (f"  self-preference        n/a (no pair sets an answer of the {sp.family} "
                "family against another family's; items need a `source` column)")
    text = f"  self-preference ({sp.family}): picks own family {_ci(sp.judge_rate)}"
    if sp.excess is not None:
        text += f"; gold says own better {_ci(sp.gold_rate)}; excess {_ci(sp.excess)}"
    return text


def audit_bias_matrix(audits: dict, probe_scores: dict | None = None) -> pd.DataFrame:
    """Judges x signed bias measures for the heatmap."""
    rows = {}
    for judge, a in audits.items():
        row = {"position (first-slot rate - 0.5)": a.first_position_rate.estimate - 0.5}
        if a.length_bias is not None:
            row["length (excess P)"] = a.length_bias.estimate
            row["markdown (excess P)"] = a.markdown_bias.estimate
        if a.self_preference is not None and a.self_preference.excess is not None:
            row["self-preference (excess)"] = a.self_preference.excess.estimate
        for bias_type, value in (probe_scores or {}).get(judge, {}).items():
            row[f"probe {bias_type}"] = value
        rows[judge] = row
    return pd.DataFrame(rows).T


def audit_html(audits: dict, *, probe_scores: pd.DataFrame | None = None,
               probe_by_judge: dict | None = None, costs: dict | None = None,
               title: str = "fairjudge judge audit",
               provenance: Provenance | None = None) -> str:
    """Self-contained HTML: summary, bias heatmap (Fig. 1, as a table of coloured cells with
    the values on hover), consistency vs quality gap, and
    accuracy vs cost per judge (Pareto front) when gold labels and costs are known.

    Every string from the data (judge names, probe groups, the title, the provenance
    header) is escaped by the template.

    Parameters
    ----------
    audits : dict of str -> JudgeAudit
    probe_scores : pandas.DataFrame, optional
        :meth:`fairjudge.audit.AuditRun.probe_table`.
    probe_by_judge : dict, optional
        Per judge, ``{bias_type: bias}`` for the heatmap.
    costs : dict of str -> float, optional
        Dollars per evaluation by judge.
    title : str
    provenance : Provenance, optional
        Command, inputs with hashes and seed for the header (version and date are always
        recorded).
    """
    matrix = audit_bias_matrix(audits, probe_by_judge)
    if matrix.empty and probe_by_judge:
        matrix = pd.DataFrame({judge: {f"probe {k}": v for k, v in scores.items()}
                               for judge, scores in probe_by_judge.items()}).T
    curves = {j: a.consistency_by_gap for j, a in audits.items()
              if a.consistency_by_gap is not None and len(a.consistency_by_gap)}
    accuracy = pd.DataFrame([{"name": j, "agreement": a.accuracy.estimate,
                              "agreement_ci_low": a.accuracy.ci_low,
                              "agreement_ci_high": a.accuracy.ci_high,
                              "cost_per_eval": (costs or {}).get(j, np.nan)}
                             for j, a in audits.items() if a.accuracy is not None])
    has_probes = probe_scores is not None and len(probe_scores)
    return render_html(
        "audit.html.j2", title=title, provenance=provenance,
        overview=html_table(audit_overview(audits)),
        summary=render_audits(audits, probe_scores),
        heatmap=heat_table(matrix, center=0.0, digits=3) if matrix.size else None,
        gap_plot=figure_data_uri(consistency_gap_plot(curves)) if curves else None,
        # Accuracy is in the summary; its own table only adds what it cost.
        accuracy=html_table(accuracy.set_index("name"))
        if len(accuracy) and np.isfinite(accuracy["cost_per_eval"]).any() else None,
        pareto=figure_data_uri(pareto_plot(accuracy, pareto_front(accuracy)))
        if len(accuracy) and np.isfinite(accuracy["cost_per_eval"]).all() else None,
        probes=html_table(probe_scores) if has_probes else None)


def estimate_cell(e) -> str:
    """An :class:`~fairjudge.stats.Estimate` as ``estimate [low, high]``; empty when there
    is none or it rests on no data."""
    if e is None or e.n == 0:
        return ""
    return f"{e.estimate:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"


def audit_overview(audits: dict) -> pd.DataFrame:
    """One row per judge: the audit's headline figures as ``estimate [low, high]`` text
    (columns without any value are left out)."""
    cell = estimate_cell
    rows = {}
    for judge, a in audits.items():
        ev, sp = a.external_validity, a.self_preference
        rows[judge] = {
            "verdicts": format_count(a.n_verdicts),
            "position consistency": cell(a.position_consistency),
            "first-slot rate, decisive (0.5 fair)": cell(a.first_position_rate),
            "tie rate": cell(a.tie_rate),
            "preference fairness (0 fair)": cell(a.preference_fairness),
            "accuracy vs gold": cell(a.accuracy),
            "length bias": cell(a.length_bias),
            "markdown bias": cell(a.markdown_bias),
            "self-preference (excess)": cell(None if sp is None else sp.excess),
            "gain from correction": cell(None if ev is None else ev.gain)}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "judge"
    return frame.loc[:, (frame != "").any(axis=0)]


def comparison_html(comparison, title: str = "fairjudge strategy comparison", *,
                    provenance: Provenance | None = None) -> str:
    """Self-contained HTML: the comparison's tables, the cost-agreement Pareto figure and
    the recommendation; configuration names are escaped by the template.

    Parameters
    ----------
    comparison : fairjudge.audit.Comparison
    title : str
    provenance : Provenance, optional
        Command, inputs with hashes and seed for the header.
    """
    tables = [(heading, html_table(table))
              for heading, table in comparison_tables(comparison).items()]
    pareto = (figure_data_uri(pareto_plot(comparison.table, comparison.pareto))
              if comparison.pareto else None)
    return render_html("comparison.html.j2", title=title, provenance=provenance,
                       tables=tables, pareto=pareto,
                       mixed_error=comparison.mixed_error if comparison.mixed is None else "",
                       recommendation=" ".join([comparison.recommendation,
                                                *algorithm_1_lines(comparison)]))
