"""Plain-text rendering of ranking and selection results for the terminal."""

from __future__ import annotations

import numpy as np

from fairjudge.report._tables import (
    elo_interval,
    format_count,
    format_share,
    split_reliability,
)


def solver_description(diagnostics: dict) -> str:
    """``dense (exact posterior)`` or ``sparse (marginal variances estimated, largest
    relative s.e. 0.05%; ...)``: which solver fitted, and what that means for the figures."""
    if diagnostics.get("solver") != "sparse":
        return "dense (exact posterior)"
    error = diagnostics.get("marginal_variance_max_rel_error", float("nan"))
    variances = ("marginal variances exact" if error == 0 else
                 f"marginal variances estimated, largest relative s.e. {error:.2%}")
    joint, doubt = diagnostics.get("joint_draw_items"), diagnostics.get("items_in_doubt")
    if joint:
        among = (f"the {format_count(joint)} items nearest the boundary of the "
                 f"{format_count(doubt)} in doubt" if doubt and doubt > joint else
                 f"the {format_count(joint)} items in doubt")
        draws = (f"P(top-k) from the joint posterior of {among}; rank intervals otherwise "
                 "without residual correlations")
    elif doubt and doubt > 1:
        draws = ("rank intervals and P(top-k) without residual correlations, found weak "
                 f"among the {format_count(doubt)} items in doubt")
    else:
        draws = "rank intervals and P(top-k) without residual correlations"
    return f"sparse ({variances}; {draws})"


def reliability_lines(reliability, level: float) -> list:
    """Each judge's reliability ``tau`` with its interval, from the ``log_reliability`` rows
    of a bias table (none: no lines)."""
    if not len(reliability):
        return []
    pct = int(round(level * 100))
    reference = reliability.loc[reliability["std_error"] == 0, "judge"]
    lines = [f"judge reliability tau (slope on quality; {pct}% intervals"
             + (f"; {reference.iloc[0]} is the reference, tau = 1" if len(reference) else "")
             + "):"]
    width = max(len(str(j)) for j in reliability["judge"])
    for r in reliability.itertuples():
        lines.append(f"  {r.judge:<{width}} {np.exp(r.estimate):9.3f}  "
                     f"[{np.exp(r.ci_low):.3f}, {np.exp(r.ci_high):.3f}]")
    return lines


def format_ranking(ranking, *, show: int | None = None) -> str:
    """Top-k table with membership probabilities, bias estimates and diagnostics."""
    frame = ranking.to_frame()
    show = show or (20 if ranking.k is None else max(ranking.k + 5, 10))
    d = ranking.diagnostics
    verdicts = format_count(d.get("n_verdicts", ranking.fit.n_comparisons))
    if abs(ranking.fit.n_comparisons - d.get("n_verdicts", ranking.fit.n_comparisons)) > 1e-9:
        verdicts += f" (fitted weight {format_count(ranking.fit.n_comparisons)})"
    k_text = "-" if ranking.k is None else format_count(ranking.k)
    lines = [f"model: {ranking.fit.model}    k = {k_text}    "
             f"items = {format_count(ranking.fit.n_items)}    verdicts = {verdicts}"]
    lines.append(_covariates_line(d, ranking.fit.model))
    lines.append("")
    shown = frame.head(show)
    pct = int(round(ranking.level * 100))
    low, high, interval = elo_interval(ranking)
    width = max([20, *(len(str(item)) for item in shown.index)])
    ranks = [f"[{r.rank_low}, {r.rank_high}]" for r in shown.itertuples()]
    rank_width = max([len(f"rank {pct}%"), *map(len, ranks)])
    header = (f"{'rank':>4}  {f'rank {pct}%':<{rank_width}}  {'id':<{width}} "
              f"{f'Elo [{pct}%]':>19} {'score':>8} {'s.e.':>6}")
    if ranking.k is not None:
        header += f" {'P(top-k)':>9}"
    lines.append(header)
    for (item, row), rank_text in zip(shown.iterrows(), ranks):
        mark = "*" if row["in_topk"] else " "
        elo = f"{row['elo']:.0f} [{row[low]:.0f}, {row[high]:.0f}]"
        line = (f"{int(row['rank']):>4}{mark} {rank_text:<{rank_width}}  {str(item):<{width}} "
                f"{elo:>19} {row['score']:>8.3f} {row['std_error_vs_mean']:>6.3f}")
        if ranking.k is not None:
            line += f" {row['membership']:>9.3f}"
        lines.append(line)
    if len(frame) > show:
        lines.append(f"      ... {format_count(len(frame) - show)} more items")
    lines.append(f"Elo = 1000 + 400/ln 10 x (score - mean score), interval {interval}; s.e. is "
                 "the score's from the average item; rank % is over posterior samples")
    if low == "elo_boot_low" and d.get("covariates"):
        lines.append("note: each bootstrap refit keeps the prior that separates bias from "
                     "quality, so these intervals leave that uncertainty out; the Laplace "
                     "intervals (elo_ci_low/high in --json and --out) include it")
    lines.append("")
    bias, reliability = split_reliability(ranking.bias)
    if len(bias):
        pct = int(round(ranking.level * 100))
        lines.append(f"bias estimates (logits per unit; {pct}% intervals):")
        labels = [f"{r.judge}/{r.name}" for r in bias.itertuples()]
        width = max(len(label) for label in labels)
        for label, r in zip(labels, bias.itertuples()):
            lines.append(f"  {label:<{width}} {r.estimate:+9.4f}  "
                         f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]  s.e. {r.std_error:.4f}")
    else:
        lines.append("bias estimates: none (naive model)")
    lines += reliability_lines(reliability, ranking.level)
    lines.append("")
    lines.append(f"diagnostics: {format_count(d.get('n_judges', 1))} judge(s); first-shown win "
                 f"rate {d.get('first_shown_win_rate', float('nan')):.3f} (decisive verdicts); "
                 f"ties "
                 f"{format_count(d.get('ties', 0))}; graph components "
                 f"{format_count(d.get('components', 1))}; converged {d.get('converged')} "
                 f"in {d.get('n_iter')} Newton steps; solver {solver_description(d)}")
    gate = d.get("gate")
    if gate and gate.get("role") == "check":
        lines.append(f"trusted-anchor gate (a check): the unanchored correction would be "
                     f"{'kept' if gate['enabled'] else 'switched off'} (agreement with "
                     f"{format_count(gate['n_anchors'])} labels, fitted on none: bias-aware "
                     f"{gate['bias_aware_agreement']:.3f} vs naive "
                     f"{gate['naive_agreement']:.3f})")
    elif gate:
        lines.append(f"trusted-anchor gate: correction {'ENABLED' if gate['enabled'] else 'OFF'} "
                     f"(agreement with {format_count(gate['n_anchors'])} anchors: bias-aware "
                     f"{gate['bias_aware_agreement']:.3f} vs naive {gate['naive_agreement']:.3f});"
                     f" scores from the {gate['model_used']} fit")
    ppi = d.get("ppi")
    if ppi:
        lines.append(f"prediction-powered scores (PPI++): {format_count(ppi['n_labelled'])} "
                     f"human-labelled pairs, {format_count(ppi['n_unlabelled'])} more pairs "
                     f"predicted by the judge's {ppi['predictions']} fit (bias terms "
                     f"removed); lambda = {ppi['lambda']:.3f} (0: the labels alone)")
    check = d.get("assumption")
    if check:
        lines.append(f"correction: assumes quality is uncorrelated with "
                     f"{', '.join(check['covariates'])} (no human labels); the covariates "
                     f"alone explain {format_share(check['explained_share'])} of what quality "
                     "explains "
                     f"of the verdicts, Kendall's tau with the uncorrected ranking "
                     f"{check['kendall_tau']:.2f}, widest coefficient interval "
                     f"+/- {check['widest_interval']:.2f} logits per s.d."
                     + ("" if not check["reasons"] else
                        " -- the ranking rests on the assumption; --anchors LABELS fits the "
                        "correction against human labels"))
    held = d.get("anchored")
    if held and "anchored" in held:
        parts = [f"{name.replace('_', '-')} {held[name]['estimate']:.3f} "
                 f"[{held[name]['ci_low']:.3f}, {held[name]['ci_high']:.3f}]"
                 for name in ("anchored", "naive", "bias_aware")]
        gain = held["anchored_minus_naive"]
        lines.append(f"held-out agreement with the human labels ({held['folds']}-fold "
                     f"cross-validation over {format_count(held['n_labels'])} labels on "
                     f"{format_count(held['n_pairs'])} pairs; intervals count pairs): "
                     + "; ".join(parts) + f"; anchored - naive {gain['estimate']:+.3f} "
                     f"[{gain['ci_low']:+.3f}, {gain['ci_high']:+.3f}]")
    elif held:
        lines.append(f"held-out agreement: not estimated ({held['cross_validation']})")
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
