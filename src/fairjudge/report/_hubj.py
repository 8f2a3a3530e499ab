"""HTML reports of HUB-J [hubj-bias-discovery]: discovered factors with their validation
and novelty (Table 2, Fig. 2), the bias profile of one or more judges (Algorithm 2, with
the effective level of each cell), and the win-rate decomposition (§3.4, Table 4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge.report._html import heat_table, html_table, render_html
from fairjudge.report._provenance import Provenance
from fairjudge.report._tables import format_p


@dataclass(frozen=True)
class Section:
    """One part of a HUB-J report: ``kind`` is table, heat, figure or facts."""

    title: str
    kind: str
    content: object
    note: str = ""
    cls: str = ""


def _interval(e, digits: int = 3, signed: bool = True) -> str:
    if e is None or not np.isfinite(e.estimate):
        return "n/a"
    sign = "+" if signed else ""
    return (f"{e.estimate:{sign}.{digits}f} [{e.ci_low:{sign}.{digits}f}, "
            f"{e.ci_high:{sign}.{digits}f}]")


def _factor_rows(factors, *, llm: bool) -> pd.DataFrame:
    rows = []
    for f in factors:
        row = {"mean Δ [95%]": _interval(f.mean_delta), "p": format_p(f.p_value),
               "p (Holm)": format_p(f.p_adjusted), "n held out": str(f.mean_delta.n)}
        if llm:
            if f.iteration:  # a discovered factor (reference factors cover no feature)
                row["features"] = str(f.coverage)
            row["definition"] = f.factor.definition
        else:
            row["sentences"] = str(f.sentences)
            row["example"] = f.examples[0] if f.examples else ""
        rows.append(row)
    return pd.DataFrame(rows, index=pd.Index([f.name for f in factors], name="factor"))


def discovery_html(result, *, title: str = "fairjudge bias discovery",
                   provenance: Provenance | None = None) -> str:
    """The report of :func:`~fairjudge.discovery.identify` or
    :func:`~fairjudge.discovery.discover_offline`: the factor table (definition, mean Δ
    with its interval, p and Holm p), the reference factors and the novelty heatmap (LLM
    pipeline), the pipeline's iterations and factor pool."""
    from fairjudge.discovery import Identification

    llm = isinstance(result, Identification)
    significant = sum(f.p_adjusted < 0.05 for f in result.factors)
    summary = (f"{len(result.factors)} factors found on {result.n_calibration} disagreement "
               f"cases and validated on {result.n_test} held-out cases; {significant} "
               "significant at 0.05 after Holm's adjustment."
               + ("" if significant else " Nothing found here is significant: read the "
                  "factors as hypotheses, not findings."))
    delta_note = ("Δ = G_score(judge-preferred) − G_score(human-preferred), the 1–5 "
                  "intensity the scorer gives each response of a held-out case; p is the "
                  "one-sided paired t-test of mean Δ > 0." if llm else
                  "Δ = score(judge-preferred) − score(human-preferred), the score being the "
                  "mean cosine similarity of a response's sentences to the cluster; p is the "
                  "one-sided paired t-test of mean Δ > 0.")
    sections = [Section("Discovered factors", "table",
                        html_table(_factor_rows(result.factors, llm=llm)), delta_note,
                        "prose")]
    if llm:
        if result.baselines:
            sections.append(Section(
                "Pre-discovered factors on the same cases", "table",
                html_table(_factor_rows(result.baselines, llm=True)),
                "Table 5's factors scored the same way: what the known biases explain of "
                "these disagreements.", "prose"))
        if result.novelty is not None:
            sections.append(Section(
                "Novelty", "heat",
                heat_table(result.novelty.rename_axis("discovered"), center=0.0, low=-1.0,
                           high=1.0),
                "Pearson r between a discovered factor's Δ and a pre-discovered factor's Δ "
                "across held-out cases (Fig. 2): near 0 means a new dimension; blank where "
                "a Δ is constant."))
        history = result.history.set_index("iteration").assign(
            coverage=lambda t: t["coverage"].map(lambda v: f"{v:.0%}")).astype(str)
        sections.append(Section("Identification iterations", "table", html_table(history),
            "Algorithm 1: features clustered, factors proposed and kept after the τ "
            "filter, factors chosen by greedy coverage, and the share of features they "
            "cover."))
        pool = result.candidates.set_index("name")[["iteration", "coverage", "selected",
                                                    "definition"]].astype(str)
        sections.append(Section("Factor pool", "table", html_table(pool.rename_axis(
            "factor")), "Every factor G_construct proposed that passed the τ filter, with "
            "the features G_assign gave it.", "prose"))
        facts = [("features", str(len(result.features))),
                 ("embedder", result.embedder),
                 *[(f"{k} calls without a usable reply", str(v))
                   for k, v in result.failures.items()]]
        sections.append(Section("Run", "facts", facts))
    return render_html("sections.html.j2", title=title, provenance=provenance, summary=summary,
                       sections=sections)


def profile_tables(profiles: dict) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """From judge -> :class:`~fairjudge.discovery.Quantification`: the susceptibility ρ
    (judges × factors), the effective level ℓ* of each cell, and one row per judge and
    factor with every figure."""
    rho, level, rows = {}, {}, []
    for judge, result in profiles.items():
        rho[judge], level[judge] = {}, {}
        for q in result.factors:
            rho[judge][q.factor.name] = q.susceptibility.estimate
            level[judge][q.factor.name] = q.effective_level
            flips = q.calibration.set_index("level")["flip_rate"]
            rows.append({"judge": judge, "factor": q.factor.name,
                         "ρ [95%]": _interval(q.susceptibility, signed=False),
                         "n": str(q.susceptibility.n), "ℓ*": str(q.effective_level),
                         "placebo [95%]": _interval(q.placebo, signed=False),
                         "answer changed": "n/a" if q.answer_changed is None
                         else f"{q.answer_changed:.0%}",
                         "flip rate by level 1-5": " / ".join(
                             "n/a" if not np.isfinite(v) else f"{v:.2f}"
                             for v in flips.to_numpy())})
    return (pd.DataFrame(rho).T, pd.DataFrame(level).T,
            pd.DataFrame(rows).set_index(["judge", "factor"]))


def quantification_html(profiles: dict, *, title: str = "fairjudge bias profile",
                        provenance: Provenance | None = None) -> str:
    """The bias profile of each judge (Algorithm 2): a heatmap of susceptibility ρ with
    ℓ* in each cell, and per judge and factor the interval, the placebo and the
    calibration flip rates by level."""
    rho, level, detail = profile_tables(profiles)
    text = rho.copy().astype(object)
    for judge in rho.index:
        for factor in rho.columns:
            value = rho.loc[judge, factor]
            text.loc[judge, factor] = ("" if not np.isfinite(value)
                                       else f"{value:.2f} (ℓ*={int(level.loc[judge, factor])})")
    detail = detail.copy()
    detail.index = [f"{j} / {f}" for j, f in detail.index]
    sections = [
        Section("Bias profile", "heat",
                heat_table(rho.rename_axis("judge"), center=0.0, low=-1.0, high=1.0,
                           text=text),
                "ρ: the held-out flip rate towards the rejected response rewritten to show "
                "the factor at its effective level ℓ* (the level with the highest "
                "calibration flip rate). Read it beside the placebo below."),
        Section("Per judge and factor", "table", html_table(detail.rename_axis(
            "judge / factor")), "Flip rate by level: on the calibration cases, at intensity "
            "1 to 5. Placebo: flip rate towards a content-preserving paraphrase, the judge's "
            "own noise. Answer changed: rewrites the verifier rejected (left out).")]
    summary = (f"{len(profiles)} judge(s), {rho.shape[1]} factor(s). A flip rate counts 1 "
               "when the judge picks the rewrite in both orders, 0.5 for a tie or an "
               "order-inconsistent pair.")
    return render_html("sections.html.j2", title=title, provenance=provenance, summary=summary,
                       sections=sections)


def winrate_html(result, *, baseline: str, title: str = "fairjudge win rates",
                 provenance: Provenance | None = None) -> str:
    """The win-rate decomposition (Table 4): per model the raw win rate, the controlled
    win rate, the points the factor adds and their share, with intervals, and a bar chart
    of the two rates."""
    from fairjudge.report._html import figure_data_uri
    from fairjudge.report._plots import _pyplot

    rows = {}
    for model, figures in result.estimates.items():
        rows[model] = {
            "n": str(int(result.table.loc[model, "n"])),
            "win rate %": _interval(figures["win_rate"], 1, signed=False),
            "controlled %": _interval(figures["controlled_win_rate"], 1, signed=False),
            f"{result.control} adds (pp)": _interval(figures["bias"], 1),
            "share of win rate %": _interval(figures["bias_share"], 1),
            "note": str(result.table.loc[model, "note"] or "")}
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("model")
    plt = _pyplot()
    order = result.table.sort_values("win_rate").index
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(order) + 1.2))
    y = np.arange(len(order))
    ax.barh(y + 0.2, result.table.loc[order, "win_rate"], height=0.4, label="win rate",
            color="#bbb")
    ax.barh(y - 0.2, result.table.loc[order, "controlled_win_rate"], height=0.4,
            label=f"controlled for {result.control}", color="#2166ac")
    ax.set_yticks(y, [str(m)[:40] for m in order])
    ax.axvline(50, color="#888", lw=0.8)
    ax.set_xlabel(f"% of comparisons won against {baseline}")
    ax.legend(loc="lower right", fontsize=8)
    sections = [Section("Decomposition", "table", html_table(table),
                        f"The controlled win rate is the GLM's prediction at no difference in "
                        f"{result.control}; what the factor adds is the raw rate minus it. "
                        + {"marginal": "One joint fit of every model, with the query "
                                       "effects integrated out.",
                           "two-stage": "Two stages: query effects estimated first, then "
                                        "plugged into each model's fit.",
                           "no query effects": ""}.get(result.estimator, ""),
                        "prose"),
                Section("Raw and controlled", "figure", figure_data_uri(fig))]
    if result.ppi is not None:
        ppi = result.ppi

        def cell(row, column):
            return "n/a" if row[column] != row[column] else (
                f"{row[column]:.1f} [{row[column + '_low']:.1f}, {row[column + '_high']:.1f}]")

        table = pd.DataFrame({
            "human labels": ppi["n_labelled"].astype(int),
            "prediction-powered [95%]": [cell(r, "ppi") for _, r in ppi.iterrows()],
            "labels alone": [cell(r, "human") for _, r in ppi.iterrows()],
            "judge alone": [cell(r, "judge") for _, r in ppi.iterrows()],
            "lambda": [("" if v != v else f"{v:.2f}") for v in ppi["lambda"]]},
            index=ppi.index)
        sections.append(Section(
            "The humans' win rate", "table", html_table(table),
            "Percent. Prediction-powered inference (PPI++): the judge's preferences on every "
            "record, corrected by the human labels on a random subset; valid whatever the "
            "judge's bias. The judge alone estimates the judge's own rate, not the humans'."))
    notes = list(result.notes)
    if not result.query_effects:
        notes.append("no query effects: fewer than two models share queries")
    summary = (f"Win rates against {baseline}, controlled for {result.control}. "
               + " ".join(notes))
    return render_html("sections.html.j2", title=title, provenance=provenance, summary=summary,
                       sections=sections)


def _uda_sections(fit, order: list) -> list:
    """Baseline Elo next to UDA: its heatmap (Fig. 5, left), the dispersion before and
    after, and the rating trajectories of both (Fig. 3)."""
    from fairjudge.consensus import uda_metrics
    from fairjudge.report._html import figure_data_uri
    from fairjudge.report._plots import _pyplot

    before = uda_metrics(fit.baseline, fit.baseline)
    after = uda_metrics(fit.ratings, fit.baseline)
    sections = [Section("Baseline Elo, each judge", "heat", heat_table(
        fit.baseline.T.rename_axis("judge")[order], center=1000.0, digits=0),
        f"Fixed K = {fit.settings.k:g}, the same comparisons in the same order; the "
        "consensus UDA was trained toward is their mean over judges.")]
    sections.append(Section("Dispersion across judges", "facts", [
        ("baseline Elo, mean s.d.", f"{before['mean_inter_judge_sd']:.1f} Elo points"),
        ("UDA, mean s.d.", f"{after['mean_inter_judge_sd']:.1f} Elo points "
         f"({100 * (1 - after['mean_inter_judge_sd'] / before['mean_inter_judge_sd']):.0f}% "
         "lower, in sample: the adapter learned from these comparisons)"),
        ("adapter", f"epoch {fit.best_epoch + 1} of {len(fit.history)} (lowest validation "
                    f"loss), {fit.n_features} features"
                    + ("" if fit.settings.self_features else ", no self features"))]))
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    colours = plt.get_cmap("tab10")
    contestants = list(fit.ratings.index)
    for ax, (name, title) in zip(axes, (("baseline", "baseline Elo"), ("uda", "UDA"))):
        path = fit.trajectories[name]
        for c, contestant in enumerate(contestants):
            for j in range(path.shape[0]):
                ax.plot(path[j, :, c], color=colours(c % 10), lw=0.7, alpha=0.6,
                        label=str(contestant)[:24] if j == 0 else None)
        ax.set_title(title)
        ax.set_xlabel("comparison (each judge's order)")
    axes[0].set_ylabel("rating (Elo)")
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    sections.append(Section("Rating trajectories", "figure", figure_data_uri(fig),
                            "One line per judge and contestant: how far apart the judges' "
                            "ratings of a contestant drift (the paper's Fig. 3)."))
    return sections


def consensus_html(result, *, title: str = "fairjudge consensus",
                   provenance: Provenance | None = None) -> str:
    """The report of :func:`fairjudge.consensus.consensus`: contestant scores with
    intervals, the judge × contestant heatmap (UDA's Fig. 5), the dispersion across
    judges, self-preference per judge and the correlation with human scores."""
    scores = result.scores.copy()
    with_intervals = bool(np.isfinite(scores["ci_low"].to_numpy(float)).any())
    board = pd.DataFrame({"score [95%]" if with_intervals else "score": [
        f"{r.estimate:.0f}" + ("" if not np.isfinite(r.ci_low)
                               else f" [{r.ci_low:.0f}, {r.ci_high:.0f}]")
        for r in scores.itertuples()],
        "s.d. across judges": [f"{result.inter_judge_sd.get(c, np.nan):.1f}"
                               for c in scores.index]},
        index=scores.index.rename("contestant"))
    frozen_caption = ""
    if result.frozen:
        board["on the board"] = ["published" if c in result.frozen else "placed"
                                 for c in scores.index]
        frozen_caption = (" Published scores are held exactly as the leaderboard gave them; "
                          "placed contestants are new, their intervals including the "
                          "published scores' uncertainty.")
    sections = [Section("Scores", "table", html_table(board),
                        "Elo scale: 1000 + 400/ln 10 × (score − reference). s.d. across "
                        "judges: of each judge's own scores, the dispersion a consensus "
                        "should not hide." + frozen_caption)]
    judges = result.per_judge.T.rename_axis("judge")[list(scores.index)]
    caption = {"elo": "Each judge's sequential Elo ratings over its verdicts",
               "uda": "Each judge's UDA ratings: the Elo recursion with the trained "
                      "adapter's K and soft label per comparison"}.get(
        result.method, "A judge's position-aware Bradley–Terry scores on its own verdicts")
    if result.frozen:
        caption = ("Published contestants: each judge's scores as the leaderboard gave them; "
                   "placed ones: each judge's own placement on the published scale")
    sections.append(Section("Each judge's scores", "heat",
                            heat_table(judges, center=1000.0, digits=0),
                            caption + "; hover a cell for its value."))
    if result.uda is not None:
        sections += _uda_sections(result.uda, list(scores.index))
    if len(result.self_preference.columns):
        pref = result.self_preference
        table = pd.DataFrame({
            f"{name} [95%]": [
                "n/a" if not np.isfinite(r[f"{name}_estimate"]) else
                f"{r[f'{name}_estimate']:+.2f} [{r[f'{name}_ci_low']:+.2f}, "
                f"{r[f'{name}_ci_high']:+.2f}]" for _, r in pref.iterrows()]
            for name in ("self", "own") if f"{name}_estimate" in pref.columns},
            index=pref.index)
        sections.append(Section(
            "Self-preference (logits)", "table", html_table(table),
            "self: when one answer is from the judge's model family and the other is not; "
            "own: when one answer is the judge's own. Estimated jointly with quality, so "
            "the scores above are free of it."))
    if result.human_correlation:
        facts = [(f"{method}, consensus",
                  "{estimate:+.2f} [{ci_low:+.2f}, {ci_high:+.2f}] (n {n})".format(
                      **figures["consensus"]) if figures["consensus"]["ci_low"]
                  == figures["consensus"]["ci_low"] else
                  "{estimate:+.2f}, no interval at |r| = 1 (n {n})".format(
                      **figures["consensus"]))
                 for method, figures in result.human_correlation.items()]
        facts += [(f"{method}, mean over judges",
                   f"{figures['mean_over_judges']:+.2f}" if figures["mean_over_judges"]
                   is not None else "n/a")
                  for method, figures in result.human_correlation.items()]
        sections.append(Section("Agreement with the human scores", "facts", facts))
    summary = f"Method: {result.method}. " + " ".join(result.notes)
    return render_html("sections.html.j2", title=title, provenance=provenance,
                       summary=summary, sections=sections)
