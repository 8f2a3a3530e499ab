"""Text and HTML renderings of a strategy comparison across judges (one Holm family)."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from fairjudge.report._audit import algorithm_1_lines, comparison_tables, render_comparison
from fairjudge.report._html import html_table, render_html
from fairjudge.report._provenance import Provenance
from fairjudge.report._tables import format_p


def family_table(family) -> pd.DataFrame:
    """One row per judge x configuration test: discordant counts, McNemar p, Holm within
    the judge and over the whole family [debiasing-strategies-study Table 4]."""
    t = family.tests
    table = pd.DataFrame({
        "judge": t["judge"], "comparison": t["baseline"] + " vs " + t["name"],
        "b": t["b"], "c": t["c"], "vs baseline (pp)": (100 * t["difference"]).map(
            lambda v: f"{v:+.1f}"),
        "p": t["p"].map(format_p),
        "Holm p (judge)": [f"{format_p(p)} (m={m})" for p, m in zip(t["p_holm_judge"],
                                                                   t["m_judge"])],
        f"Holm p (family, m={family.m})": t["p_holm_family"].map(format_p),
    })
    if np.isfinite(t["mixed_p_holm_family"]).any():
        # The study's Table 1 marks use the mixed-effects p-values over the same family.
        table["mixed-effects p"] = t["mixed_p"].map(format_p)
        table["its Holm p (family)"] = t["mixed_p_holm_family"].map(format_p)
    return table.set_index(["judge", "comparison"])


def _heading(family) -> str:
    return (f"Holm family: {family.m} McNemar tests across {len(family.judges)} judges, each "
            "configuration against its judge's baseline (b: baseline right, other wrong; c: "
            "the reverse). 'Holm p (judge)' adjusts over one judge's tests; 'Holm p (family)' "
            "over all of them, as the study does over its 20 judge x strategy tests; the "
            "recommendations use the family-wide values")


def render_family_comparison(family) -> str:
    """The family table, then each judge's comparison (tables, recommendation, Algorithm 1)."""
    if family.m == 0:
        parts = ["Holm family: no tests (every judge has only its baseline configuration; "
                 "give each judge a second configuration to compare)"]
    else:
        parts = [textwrap.fill(_heading(family), width=100) + "\n"
                 + family_table(family).to_string()]
    for judge, comparison in family.comparisons.items():
        rule = "=" * 8
        parts.append(f"{rule} judge {judge} (baseline {comparison.names[0]}) {rule}\n\n"
                     + render_comparison(comparison))
    return "\n\n".join(parts)


def family_comparison_html(family, title: str = "fairjudge strategy comparison across judges",
                           *, provenance: Provenance | None = None) -> str:
    """Self-contained HTML: the family table, then every judge's tables; the
    recommendations (with Algorithm 1 beside each) in the closing section."""
    heading = (f"Holm family: {family.m} McNemar tests across {len(family.judges)} judges "
               "(b: baseline right, other wrong; c: the reverse; Holm within each judge and "
               "over the whole family)")
    # One column per index level: a MultiIndex would print as tuples.
    tables = [(heading, html_table(family_table(family).reset_index(level="comparison")))]
    for judge, comparison in family.comparisons.items():
        tables += [(f"{judge}: {heading}", html_table(table))
                   for heading, table in comparison_tables(comparison).items()]
    recommendation = " ".join(
        f"{judge}: {' '.join([c.recommendation, *algorithm_1_lines(c)])}"
        for judge, c in family.comparisons.items())
    return render_html("comparison.html.j2", title=title, provenance=provenance,
                       tables=tables, pareto=None, mixed_error="",
                       recommendation=recommendation)
