"""Reports: text tables, JSON summaries, figures and HTML. Rounding happens only here.

Report functions receive numbers and result objects (computed by :mod:`fairjudge.stats` and
the workflow packages) and return text, tables or files; they compute no statistics.
HTML reports come from autoescaping jinja2 templates (``templates/``) under one page shell
whose header records the :class:`Provenance` of the report.
"""

from fairjudge.report._audit import (
                                     audit_html,
                                     comparison_html,
                                     comparison_tables,
                                     render_audits,
                                     render_comparison,
                                     render_swap_plans,
)
from fairjudge.report._compare_family import family_comparison_html, render_family_comparison
from fairjudge.report._experiment import (
                                     format_topk_summary,
                                     judge_panel_section,
                                     render_topk_summary,
                                     write_topk_panel_report,
                                     write_topk_report,
)
from fairjudge.report._hubj import (
                                     consensus_html,
                                     discovery_html,
                                     profile_tables,
                                     quantification_html,
                                     winrate_html,
)
from fairjudge.report._judge_report import judge_report_html
from fairjudge.report._plots import (
                                     plot_competence_gain,
                                     plot_cost_frontier,
                                     plot_estimates_vs_truth,
                                     plot_recall_vs_budget,
                                     plot_score_ablation,
                                     plot_spend_by_distance,
)
from fairjudge.report._probe_breakdown import render_probe_breakdown
from fairjudge.report._provenance import InputFile, Provenance
from fairjudge.report._ranking_html import ranking_html
from fairjudge.report._tables import (
                                     format_ablation_2x2,
                                     format_bias_estimates,
                                     format_count,
                                     format_estimate,
                                     format_full_data_table,
                                     format_full_data_tests,
                                     format_mean_se,
                                     format_p,
                                     format_recall_table,
                                     format_score_ablation,
                                     format_spend,
                                     format_tests,
                                     render,
)
from fairjudge.report._text import format_ranking

__all__ = [
    "InputFile",
    "Provenance",
    "audit_html",
    "comparison_html",
    "comparison_tables",
    "consensus_html",
    "discovery_html",
    "family_comparison_html",
    "format_ablation_2x2",
    "format_bias_estimates",
    "format_count",
    "format_estimate",
    "format_full_data_table",
    "format_full_data_tests",
    "format_mean_se",
    "format_p",
    "format_ranking",
    "format_recall_table",
    "format_score_ablation",
    "format_spend",
    "format_tests",
    "format_topk_summary",
    "judge_panel_section",
    "judge_report_html",
    "plot_competence_gain",
    "plot_cost_frontier",
    "plot_estimates_vs_truth",
    "plot_recall_vs_budget",
    "plot_score_ablation",
    "plot_spend_by_distance",
    "profile_tables",
    "quantification_html",
    "ranking_html",
    "render",
    "render_audits",
    "render_comparison",
    "render_family_comparison",
    "render_probe_breakdown",
    "render_swap_plans",
    "render_topk_summary",
    "winrate_html",
    "write_topk_panel_report",
    "write_topk_report",
]
