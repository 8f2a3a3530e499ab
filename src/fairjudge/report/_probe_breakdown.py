"""Plain text of a :class:`fairjudge.probes.ProbeBreakdown`: Table 7, Figs. 2-3 as tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairjudge.report._tables import format_count, format_p


def _signed(value: float) -> str:
    return f"{value + 0.0:+.3f}"  # + 0.0 turns -0.0 into 0.0, so no "-0.000"


def _cell(bias, low, high) -> str:
    """``+0.850 [+0.600, +1.000]`` (signed, as the study prints bias); n/a when missing."""
    if not np.isfinite(bias):
        return "n/a"
    interval = (f"[{_signed(low)}, {_signed(high)}]" if np.isfinite(low) and np.isfinite(high)
                else "[n/a]")
    return f"{_signed(bias)} {interval}"


def _by_strategy(frame: pd.DataFrame, rows, cell) -> list:
    """One block per strategy: ``rows`` down, judges across, ``cell(row)`` in each cell."""
    lines = []
    for strategy, part in frame.groupby("strategy", sort=False):
        shown = part.assign(judge=part["judge"].replace("", "-"),
                            value=[cell(r) for r in part.itertuples(index=False)])
        wide = shown.pivot(index=rows, columns="judge", values="value").fillna("")
        wide = wide.reindex(pd.MultiIndex.from_frame(shown[rows].drop_duplicates())
                            if isinstance(rows, list) else shown[rows].drop_duplicates())
        wide.columns.name = None
        lines += [f"  strategy {strategy or '-'}:", wide.to_string()]
    return lines


def _who(frame: pd.DataFrame) -> pd.Series:
    """``judge / strategy`` for a row (either may be empty in the verdicts)."""
    return (frame["judge"].replace("", "-").astype(str) + " / "
            + frame["strategy"].replace("", "-").astype(str))


def render_probe_breakdown(breakdown) -> str:
    """The breakdown as text: per-topic style bias, per-category results, the change of
    every bias under each strategy, the cross-bias correlations, then the notes on what
    could not be computed.

    Parameters
    ----------
    breakdown : fairjudge.probes.ProbeBreakdown

    Returns
    -------
    str
    """
    level = int(round(100 * float(breakdown.scores["level"].iloc[0]))) \
        if len(breakdown.scores) else 95
    lines = []
    scores = breakdown.scores
    if len(scores):
        table = pd.DataFrame({
            "judge / strategy": _who(scores), "bias_type": scores["bias_type"],
            "n": scores["n"].map(format_count),
            f"bias [{level}% CI]": [_cell(*v) for v in
                                    zip(scores["bias"], scores["ci_low"], scores["ci_high"])],
            "accuracy": scores["accuracy"].map(lambda v: "" if not np.isfinite(v)
                                               else f"{v:.3f}")})
        lines += ["bias per judge and strategy (b = P(target) - P(non-target)):",
                  table.to_string(index=False), ""]
    topic = breakdown.style_by_topic
    if topic is not None and len(topic):
        lines += [f"style bias per topic (Table 7): P(markdown) - P(prose) over STYLE and "
                  f"its mirror STYLE_BA (position-averaged), {level}% CI, n verdicts:"]
        lines += _by_strategy(topic, "topic", lambda r: (
            _cell(r.bias, r.ci_low, r.ci_high) + f" n={r.n}"
            + ("" if r.position_averaged else " (one slot)")))
        lines.append("")
    category = breakdown.by_category
    if category is not None and len(category):
        lines += ["results per category (Fig. 3): bias b, or acc (share correct) where the "
                  "probe has a correct side; n verdicts (intervals in --json):"]
        rank = {b: i for i, b in enumerate(dict.fromkeys(category["bias_type"]))}
        category = category.iloc[np.lexsort((category["category"].astype(str).to_numpy(),
                                             category["bias_type"].map(rank).to_numpy()))]
        lines += _by_strategy(category, ["bias_type", "category"], lambda r: (
            (f"acc {r.accuracy:.3f}" if np.isfinite(r.accuracy)
             else ("n/a" if not np.isfinite(r.bias) else _signed(r.bias))) + f" n={r.n}"))
        lines.append("")
    interactions = breakdown.interactions
    if interactions is not None and len(interactions):
        wide = interactions.assign(value=[
            f"{_signed(d)} (n={n})" for d, n in zip(interactions["delta_magnitude"],
                                               interactions["n_judges"])]).pivot(
            index="strategy", columns="bias_type", values="value").fillna("")
        wide = wide[list(dict.fromkeys(interactions["bias_type"]))]
        lines += [f"cross-bias interactions (Fig. 2): mean over judges of |b(strategy)| - "
                  f"|b({breakdown.baseline})|, negative = less bias:",
                  wide.rename_axis(index=None, columns=None).to_string(), ""]
    correlation = breakdown.correlation
    if len(correlation.table) and correlation.table["r"].notna().any():
        table = correlation.table
        shown = pd.DataFrame({
            "bias_x": table["bias_x"], "bias_y": table["bias_y"],
            "r": table["r"].map(lambda v: "n/a" if not np.isfinite(v) else _signed(v)),
            "p": table["p_value"].map(format_p), "n": table["n"], "note": table["note"]})
        lines += [f"cross-bias correlation ({correlation.method}, across "
                  f"{correlation.n_units} judge x strategy units; units share judges, so "
                  "p-values are optimistic):", shown.to_string(index=False), ""]
    for note in breakdown.notes:
        lines.append(f"not computed: {note}")
    return "\n".join(lines).rstrip("\n")
