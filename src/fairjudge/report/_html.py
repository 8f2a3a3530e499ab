"""Self-contained HTML reports (tables inline, figures as embedded PNG)."""

from __future__ import annotations

import base64
import html
import io

import numpy as np
import pandas as pd

from fairjudge.report._plots import _pyplot

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0 1.4em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
p.note { color: #555; font-size: 0.9em; }
"""


def figure_to_img(fig) -> str:
    """An <img> tag holding the figure as base64 PNG (the figure is closed)."""
    plt = _pyplot()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="figure" src="data:image/png;base64,{data}"/>'


def html_document(title: str, sections: list) -> str:
    """Render ``(heading, content)`` sections; content is HTML text, a DataFrame, or a
    matplotlib figure."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"]
    for heading, content in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        if isinstance(content, pd.DataFrame):
            parts.append(content.to_html(float_format=lambda v: f"{v:.3f}", na_rep="",
                                         border=0))
        elif hasattr(content, "savefig"):
            parts.append(figure_to_img(content))
        else:
            parts.append(str(content))
    parts.append("</body></html>")
    return "\n".join(parts)


def bias_heatmap(matrix: pd.DataFrame, title: str = "Bias by judge (signed)"):
    """Judges x bias types, signed values on a diverging colour map centred at 0 (Fig. 1)."""
    plt = _pyplot()
    values = matrix.to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(1.4 + 1.3 * matrix.shape[1], 0.8 + 0.45 * matrix.shape[0]))
    limit = np.nanmax(np.abs(values)) if np.isfinite(values).any() else 1.0
    image = ax.imshow(values, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    ax.set_xticks(range(matrix.shape[1]), matrix.columns, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(matrix.shape[0]), matrix.index, fontsize=8)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if np.isfinite(values[i, j]):
                ax.text(j, i, f"{values[i, j]:+.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(title, fontsize=10)
    return fig  # saved with bbox_inches="tight", which fits the rotated labels


def consistency_gap_plot(curves: dict):
    """Position consistency vs quality gap, one line per judge with interval bars."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for judge, table in curves.items():
        mid = (table["gap_low"] + table["gap_high"]) / 2
        ax.errorbar(mid, table["estimate"], yerr=[table["estimate"] - table["ci_low"],
                                                  table["ci_high"] - table["estimate"]],
                    marker="o", capsize=3, label=judge)
    ax.set_xlabel("quality gap between the two answers")
    ax.set_ylabel("position consistency")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def pareto_plot(table: pd.DataFrame, front: list):
    """Agreement vs cost per evaluation, the Pareto front highlighted (Appendix H, Fig. 4)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    costs = table["cost_per_eval"].to_numpy(dtype=float)
    ax.errorbar(costs, table["agreement"],
                yerr=[table["agreement"] - table["agreement_ci_low"],
                      table["agreement_ci_high"] - table["agreement"]], fmt="o", capsize=3)
    for row in table.itertuples():
        ax.annotate(row.name, (row.cost_per_eval, row.agreement), fontsize=7,
                    xytext=(4, 4), textcoords="offset points",
                    weight="bold" if row.name in front else "normal")
    on = table[table["name"].isin(front)].sort_values("cost_per_eval")
    ax.plot(on["cost_per_eval"], on["agreement"], "--", lw=1)
    ax.set_xlabel("cost per evaluation ($)")
    ax.set_ylabel("agreement with gold")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
