"""Reports: text tables, JSON summaries and figures. Rounding happens only here."""

from fairjudge.report._audit import (audit_html, comparison_html, comparison_tables,
                                     render_audits, render_comparison)
from fairjudge.report._experiment import (render_topk_summary, summarize_topk_experiment,
                                          write_topk_report)
from fairjudge.report._plots import (plot_estimates_vs_truth, plot_recall_vs_budget,
                                     plot_spend_by_distance)
from fairjudge.report._tables import (ablation_2x2, full_data_table, full_data_tests,
                                      paired_rule_tests, recall_by_budget, render,
                                      score_ablation, spend_by_distance)
from fairjudge.report._text import format_ranking

__all__ = [
    "audit_html",
    "comparison_html",
    "comparison_tables",
    "render_audits",
    "render_comparison",
    "ablation_2x2",
    "format_ranking",
    "full_data_table",
    "full_data_tests",
    "paired_rule_tests",
    "plot_estimates_vs_truth",
    "plot_recall_vs_budget",
    "plot_spend_by_distance",
    "recall_by_budget",
    "render",
    "render_topk_summary",
    "score_ablation",
    "spend_by_distance",
    "summarize_topk_experiment",
    "write_topk_report",
]
