"""Plain-text rendering of ranking and selection results for the terminal."""

from __future__ import annotations

from fairjudge.report._tables import format_count


def format_ranking(ranking, *, show: int | None = None) -> str:
    """Top-k table with membership probabilities, bias estimates and diagnostics."""
    frame = ranking.to_frame()
    show = show or max(ranking.k + 5, 10)
    d = ranking.diagnostics
    verdicts = format_count(d.get("n_verdicts", ranking.fit.n_comparisons))
    if abs(ranking.fit.n_comparisons - d.get("n_verdicts", ranking.fit.n_comparisons)) > 1e-9:
        verdicts += f" (fitted weight {format_count(ranking.fit.n_comparisons)})"
    lines = [f"model: {ranking.fit.model}    k = {format_count(ranking.k)}    "
             f"items = {format_count(ranking.fit.n_items)}    verdicts = {verdicts}"]
    lines.append(_covariates_line(d, ranking.fit.model))
    lines.append("")
    shown = frame.head(show)
    width = max([20, *(len(str(item)) for item in shown.index)])
    lines.append(f"{'rank':>4}  {'id':<{width}} {'score':>8} {'s.e.':>7} {'P(top-k)':>9}")
    for item, row in shown.iterrows():
        mark = "*" if row["in_topk"] else " "
        lines.append(f"{int(row['rank']):>4}{mark} {str(item):<{width}} {row['score']:>8.3f} "
                     f"{row['std_error']:>7.3f} {row['membership']:>9.3f}")
    if len(frame) > show:
        lines.append(f"      ... {format_count(len(frame) - show)} more items")
    lines.append("")
    if len(ranking.bias):
        pct = int(round(ranking.level * 100))
        lines.append(f"bias estimates (logits per unit; {pct}% intervals):")
        labels = [f"{r.judge}/{r.name}" for r in ranking.bias.itertuples()]
        width = max(len(label) for label in labels)
        for label, r in zip(labels, ranking.bias.itertuples()):
            lines.append(f"  {label:<{width}} {r.estimate:+9.4f}  "
                         f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]  s.e. {r.std_error:.4f}")
    else:
        lines.append("bias estimates: none (naive model)")
    lines.append("")
    lines.append(f"diagnostics: {format_count(d.get('n_judges', 1))} judge(s); first-shown win "
                 f"rate {d.get('first_shown_win_rate', float('nan')):.3f}; ties "
                 f"{format_count(d.get('ties', 0))}; graph components "
                 f"{format_count(d.get('components', 1))}; converged {d.get('converged')} "
                 f"in {d.get('n_iter')} Newton steps")
    gate = d.get("gate")
    if gate:
        lines.append(f"trusted-anchor gate: correction {'ENABLED' if gate['enabled'] else 'OFF'} "
                     f"(agreement with {format_count(gate['n_anchors'])} anchors: bias-aware "
                     f"{gate['bias_aware_agreement']:.3f} vs naive {gate['naive_agreement']:.3f});"
                     f" scores from the {gate['model_used']} fit")
    for note in d.get("notes", []):
        lines.append(f"note: {note}")
    if d.get("components", 1) > 1:
        lines.append(f"warning: disconnected comparison graph: {d['components_detail']}")
    return "\n".join(lines)


def _covariates_line(diagnostics: dict, model: str) -> str:
    """Which covariates the fit used, and why: named, or the default set."""
    used = diagnostics.get("covariates") or []
    if model == "naive":
        text = "covariates: none (the naive model fits none)"
    elif used:
        how = "as named" if diagnostics.get("covariates_named") else "the default set"
        text = f"covariates: {', '.join(used)} ({how})"
    else:
        text = "covariates: none (position only; give an item table or name covariates)"
    unused = diagnostics.get("numeric_columns_not_fitted") or []
    if unused:
        text += (f"; numeric item columns not fitted: {', '.join(unused)} "
                 "(name them with --covariates to fit them)")
    return text
