"""The one-page report on a judge (:class:`fairjudge.JudgeReport`), its sections in the order
a reader asks: is the judge biased, how consistent is it, what does correcting it change,
which strategy to use at what cost, and the leaderboard with intervals."""

from __future__ import annotations

import pandas as pd

from fairjudge.report._audit import (
    AUDIT_NOTES,
    audit_bias_matrix,
    audit_overview,
    comparison_tables,
    estimate_cell,
    render_audits,
)
from fairjudge.report._html import figure_data_uri, heat_table, html_table, render_html
from fairjudge.report._plots import consistency_gap_plot, pareto_plot
from fairjudge.report._provenance import Provenance
from fairjudge.report._ranking_html import BOARD_ROWS, MATRIX_ITEMS, ranking_parts

#: Columns of the audit overview that say how biased a judge is, and how consistent.
_BIAS_COLUMNS = ("first-slot rate, decisive (0.5 fair)", "length bias", "markdown bias",
                 "self-preference (excess)")
_CONSISTENCY_COLUMNS = ("verdicts", "position consistency", "tie rate", "accuracy vs gold")
#: Excess probabilities at which the bias heat table reaches its darkest colour.
BIAS_SCALE = 0.25


def judge_report_html(report, *, title: str = "fairjudge report",
                      provenance: Provenance | None = None) -> str:
    """Self-contained HTML of a :class:`fairjudge.JudgeReport`.

    Sections: (1) bias per judge with intervals, the ranking model's bias terms and a
    heat table of the signed biases (values on hover); (2) position consistency,
    repetition stability and invalid outputs, and consistency against the quality gap;
    (3) the naive and bias-aware rankings side by side, and external validity against gold
    when known; (4) the strategy comparison and its recommendation, when strategies were
    given; (5) the bias-aware leaderboard with Elo and rank intervals, its diagnostics and
    the win-probability matrix (values on hover). Every string from the data is escaped by
    the templates.
    """
    audits = report.audit.audits
    overview = audit_overview(audits)
    consistency = pd.DataFrame({
        judge: {"repetition stability": estimate_cell(a.repetition_stability),
                "invalid outputs": estimate_cell(a.invalid_rate)} for judge, a in audits.items()}).T
    consistency = overview[[c for c in _CONSISTENCY_COLUMNS if c in overview]].join(
        consistency)
    consistency = consistency.loc[:, (consistency != "").any(axis=0)]
    bias = overview[[c for c in _BIAS_COLUMNS if c in overview]]
    matrix = audit_bias_matrix(audits).rename_axis("judge")
    curves = {j: a.consistency_by_gap for j, a in audits.items()
              if a.consistency_by_gap is not None and len(a.consistency_by_gap)}
    parts = ranking_parts(report.ranking)
    win = report.ranking.win_probability_matrix(best=MATRIX_ITEMS)
    win = win.rename_axis("row beats column")
    changes = report.changes()
    moved = changes[changes["rank_change"] != 0]
    separated = changes[~changes["intervals_overlap"]]
    shown = pd.DataFrame({
        "naive rank": changes["rank_naive"], "corrected rank": changes["rank"],
        "change": changes["rank_change"].map(lambda v: f"{v:+d}" if v else "0"),
        "naive Elo": changes["elo_naive"].map(lambda v: f"{v:.0f}"),
        "corrected Elo": changes["elo"].map(lambda v: f"{v:.0f}"),
        "rank intervals overlap": changes["intervals_overlap"].map(
            {True: "yes", False: "no"})}, index=changes.index)
    shown.index.name = "item"
    # Like the leaderboard, the table stops at BOARD_ROWS items: the rest are in no HTML page
    # a browser opens quickly (`report.changes()` has every item).
    changes_left_out = max(len(shown) - BOARD_ROWS, 0)
    shown = shown.iloc[:BOARD_ROWS]
    validity = _external_validity(audits)
    comparison = report.comparison
    strategy = None
    if comparison is not None:
        table1 = next(iter(comparison_tables(comparison).values()))
        strategy = {"table": html_table(table1), "recommendation": comparison.recommendation,
                    "pareto": figure_data_uri(pareto_plot(comparison.table,
                                                          comparison.pareto))
                    if comparison.pareto else None}
    return render_html(
        "report.html.j2", title=title, provenance=provenance,
        bias=html_table(bias) if bias.shape[1] else None,
        bias_terms=parts["bias"],
        # One fixed scale for every report: a 0.25 excess probability is a strong bias.
        bias_heat=heat_table(matrix, center=0.0, low=-BIAS_SCALE, high=BIAS_SCALE, digits=3)
        if matrix.size else None,
        consistency=html_table(consistency),
        gap_plot=figure_data_uri(consistency_gap_plot(curves)) if curves else None,
        moved=len(moved), separated=len(separated), n_items=len(changes),
        level=int(round(report.ranking.level * 100)),
        repeated="repetition stability" in consistency.columns,
        largest=_largest_move(moved),
        changes=html_table(shown), changes_left_out=changes_left_out,
        validity=html_table(validity) if validity is not None else None,
        validity_notes=[f"{judge}: {a.external_validity_note}" for judge, a in audits.items()
                        if a.external_validity is None and a.external_validity_note],
        strategy=strategy, board=parts["board"], left_out=parts["left_out"],
        interval=parts["interval"],
        facts=parts["facts"],
        win=heat_table(win, center=0.5, low=0.0, high=1.0, digits=2) if len(win) > 1
        else None, win_items=len(win),
        components=int(report.ranking.diagnostics.get("components", 1)),
        notes=_sentence(AUDIT_NOTES.removeprefix("how to read: ")),
        summary=render_audits(audits, report.audit.probe_table()))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _largest_move(moved: pd.DataFrame) -> str | None:
    if not len(moved):
        return None
    item = moved["rank_change"].abs().idxmax()
    row = moved.loc[item]
    return f"{item} (#{row['rank_naive']} naive, #{row['rank']} corrected)"


def _external_validity(audits: dict) -> pd.DataFrame | None:
    """Per judge with gold: agreement of the judge alone, corrected, and the two controls."""
    rows = {}
    for judge, a in audits.items():
        ev = a.external_validity
        if ev is None:
            continue
        rows[judge] = {"gold pairs": ev.n, "judge alone": estimate_cell(ev.raw),
                       "corrected": estimate_cell(ev.corrected),
                       "control: recalibrated": estimate_cell(ev.recalibrated),
                       "control: covariates only": estimate_cell(ev.covariates_only),
                       "conclusion": ev.conclusion}
    if not rows:
        return None
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "judge"
    return frame

