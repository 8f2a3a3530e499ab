"""The HTML report of a ranking: leaderboard with intervals, bias estimates, win matrix."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairjudge.report._html import heat_table, html_table, render_html
from fairjudge.report._provenance import Provenance
from fairjudge.report._tables import (
    elo_interval,
    format_count,
    format_share,
    split_reliability,
)
from fairjudge.report._text import solver_description

#: Items shown in the win-probability matrix (the best ones).
MATRIX_ITEMS = 20


#: Most leaderboard rows an HTML page shows.
BOARD_ROWS = 2000


def ranking_parts(ranking) -> dict:
    """The pieces of a ranking's HTML: ``board`` (the leaderboard: rank interval, Elo with
    its interval, score and s.e. from the average item, P(top-k)), ``bias`` (the bias
    terms with intervals, or None), ``facts`` (diagnostics as name-value pairs) and
    ``interval`` (which interval the Elo columns show); ``left_out`` counts the items below
    the first :data:`BOARD_ROWS` that the board leaves out."""
    frame = ranking.to_frame()
    # A page of 100,000 sortable rows would not open; the leaderboard file (`--out`) has all.
    left_out = max(len(frame) - BOARD_ROWS, 0)
    frame = frame.iloc[:BOARD_ROWS]
    pct = int(round(ranking.level * 100))
    low, high, interval = elo_interval(ranking)
    board = pd.DataFrame({
        "rank": frame["rank"].astype(int),
        f"rank {pct}%": [f"[{a}, {b}]" for a, b in zip(frame["rank_low"], frame["rank_high"])],
        f"Elo [{pct}%]": [f"{e:.0f} [{a:.0f}, {b:.0f}]"
                          for e, a, b in zip(frame["elo"], frame[low], frame[high])],
        "score": frame["score"].map(lambda v: f"{v:.3f}"),
        "s.e. from mean": frame["std_error_vs_mean"].map(lambda v: f"{v:.3f}")},
        index=frame.index.rename("item"))
    if ranking.k is not None:
        board["P(top-k)"] = frame["membership"].map(lambda v: f"{v:.3f}")
    bias, reliability = split_reliability(ranking.bias)
    bias_table = reliability_table = None
    if len(reliability):
        reliability_table = pd.DataFrame({
            "tau": [f"{np.exp(v):.3f}" for v in reliability["estimate"]],
            f"{pct}% interval": [f"[{np.exp(a):.3f}, {np.exp(b):.3f}]"
                                 for a, b in zip(reliability["ci_low"], reliability["ci_high"])]},
            index=pd.Index(reliability["judge"].astype(str), name="judge"))
    if len(bias):
        bias_table = pd.DataFrame({
            "estimate": [f"{v:+.4f}" for v in bias["estimate"]],
            f"{pct}% interval": [f"[{a:+.4f}, {b:+.4f}]"
                                 for a, b in zip(bias["ci_low"], bias["ci_high"])],
            "s.e.": [f"{v:.4f}" for v in bias["std_error"]]},
            index=pd.Index([f"{j}/{n}" for j, n in zip(bias["judge"], bias["name"])],
                           name="judge/term"))
    d = ranking.diagnostics
    facts = [("model", ranking.fit.model),
             ("k", "-" if ranking.k is None else format_count(ranking.k)),
             ("items", format_count(ranking.fit.n_items)),
             ("verdicts", format_count(d.get("n_verdicts", ranking.fit.n_comparisons))),
             ("judges", ", ".join(map(str, d.get("judges", [])))),
             ("covariates", ", ".join(d.get("covariates", [])) or "none"),
             ("first-shown win rate (decisive verdicts)",
              f"{d.get('first_shown_win_rate', np.nan):.3f}"),
             ("graph components", format_count(d.get("components", 1))),
             ("score variance inflation", f"{d.get('score_variance_inflation', 1.0):.2f}"),
             ("converged", f"{d.get('converged')} in {d.get('n_iter')} Newton steps"),
             ("solver", solver_description(d))]
    ppi = d.get("ppi")
    if ppi:
        facts.append(("prediction-powered scores (PPI++)",
                      f"{format_count(ppi['n_labelled'])} human-labelled pairs, "
                      f"{format_count(ppi['n_unlabelled'])} more predicted by the judge's "
                      f"{ppi['predictions']} fit (bias terms removed); lambda = "
                      f"{ppi['lambda']:.3f}"))
    check = d.get("assumption")
    if check:
        facts.append(("correction rests on", "quality uncorrelated with "
                      f"{', '.join(check['covariates'])} (no human labels): covariates alone "
                      f"explain {format_share(check['explained_share'])} of what quality "
                      "explains; "
                      f"Kendall's tau with the uncorrected ranking {check['kendall_tau']:.2f}"
                      + (f"; {'; '.join(check['reasons'])}" if check["reasons"] else "")))
    held = d.get("anchored")
    if held and "cross_validation" in held:
        facts.append(("held-out agreement with the human labels",
                      f"not estimated ({held['cross_validation']})"))
    if held and "anchored" in held:
        facts.append(("held-out agreement with the human labels",
                      f"anchored {held['anchored']['estimate']:.3f}, naive "
                      f"{held['naive']['estimate']:.3f}, bias-aware "
                      f"{held['bias_aware']['estimate']:.3f} ({held['folds']}-fold "
                      f"cross-validation, {format_count(held['n_labels'])} labels)"))
    return {"board": html_table(board), "left_out": left_out, "interval": interval,
            "facts": facts,
            "bias": None if bias_table is None else html_table(bias_table),
            "reliability": (None if reliability_table is None
                            else html_table(reliability_table))}


def ranking_html(ranking, *, title: str = "fairjudge ranking",
                 provenance: Provenance | None = None) -> str:
    """Self-contained HTML of a :class:`fairjudge.Ranking`: the leaderboard (rank interval,
    Elo with its interval, score and s.e. from the average item, P(top-k)), the bias
    estimates, the diagnostics and the win-probability matrix of the best items (values
    on hover). Item and judge names are escaped by the template."""
    matrix = ranking.win_probability_matrix(best=MATRIX_ITEMS)
    matrix = matrix.rename_axis("row beats column")
    return render_html(
        "ranking.html.j2", title=title, provenance=provenance, **ranking_parts(ranking),
        matrix=heat_table(matrix, center=0.5, low=0.0, high=1.0) if len(matrix) > 1
        else None, matrix_items=len(matrix))
