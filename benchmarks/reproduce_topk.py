"""Reproduce the bias-aware active top-k paper: Tables 1-4 and Figs. 2-5, 7, 8, each beside
the paper's value [bias-aware-active-topk §6 and Technical Appendix].

Two sources of oracles (full ordered-pair verdict matrices on N = 30 controlled-pool items):

- **Recorded** (``--oracle DIR``, repeatable): folders written by ``fairjudge experiment
  oracle`` -- a real judge asked every ordered pair of a controlled pool, at temperature 0,
  cached. Each oracle's judge name groups it. ``--judge-cost NAME=COST`` prices a judge's
  verdicts for Fig. 7.
- **Simulated** (default, no API key): a panel of sixteen simulated judges standing in for
  the paper's, each with the verbosity and position bias the paper *estimated* for it
  (Table 1: ĉ per standard deviation of the verbosity indicator, i.e. c* = 2ĉ per unit of a
  balanced 0/1 covariate, and κ̂) and its number of oracles. Competence (logits per point
  of quality, #correct - #incorrect statements, sd 4 in a pool) follows the paper's three
  groups of Table 1: 0.3125 for the five "biased but competent" judges (the paper's
  simulator scale, quality sd 1.25 logits), 1 for the ten "frontier / near-neutral" ones
  (which the paper found rank almost perfectly) and 0.02 for DeepSeek-Coder-6.7B ("too
  weak"). Chosen after two runs: at 1 for every judge no biased judge's naive recall fell
  below 0.90 (Δ at most 0.08); at 0.3125 for every judge the frontier judges ranked no
  better than the biased ones, unlike the paper's. The simulated tables test whether the
  paper's mechanisms reproduce given its bias estimates and groups, not whether real
  judges behave so.
  Fig. 7 prices the simulated GPT-4o-mini and GPT-5.1 at fairjudge's built-in list prices
  (gpt-4o-mini; gpt-5 for GPT-5.1, which the table lacks) for the prompt's tokens at
  characters / 4, with one output token (``max_tokens=16``, a single letter) for GPT-4o-mini
  and the paper's 64-token completion budget for the reasoning model.

The focus judge (``--focus``; the paper's Llama-3.1-8B) gets the full budgeted protocol:
rules top-k / global / round-robin / random under both models, the score ablation, and
residualise-then-acquire (Tables 2-4, Figs. 2-5, written by ``write_topk_report`` into
``--out``). The two priced judges get budget curves of the top-k rule (Fig. 7); every judge
gets full-data fits (Table 1, Table 2's Δ, Table 4 right, Fig. 8).

Run: ``python benchmarks/reproduce_topk.py [--quick] [--jobs 2] [--out DIR]``
(about 25 minutes on 2 cores; ``--quick``, 2 seeds and 500 membership samples, about 10).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import replace

import numpy as np
import pandas as pd

from fairjudge.active import (
    TopkExperimentConfig,
    competence_gain,
    cost_frontier,
    judge_panel,
    money_to_reach,
    paired_delta_table,
    run_topk_experiment,
    summarize_topk_results,
)
from fairjudge.data import (
    RecordedOracle,
    SimulatedJudge,
    controlled_pool,
    load_recorded_oracle,
    matrix_to_verdicts,
    pool_question,
    pool_topics,
)
from fairjudge.judges import PriceTable, Usage
from fairjudge.report import write_topk_report
from fairjudge.report._plots import plot_competence_gain, plot_cost_frontier

# Table 1 of the paper: judge, oracles, ĉ, κ̂, naive recall, bias-aware recall, Δ.
PAPER_TABLE_1 = [
    ("Llama-3.1-8B", 10, 0.99, 0.35, 0.50, 0.90, 0.40),
    ("Qwen-2.5 (7B)", 10, 0.83, 1.09, 0.66, 0.86, 0.20),
    ("Gemini-2.5-flash-lite", 3, 0.75, -1.30, 0.60, 0.93, 0.33),
    ("GPT-4o-mini", 5, 0.61, -0.85, 0.56, 0.84, 0.28),
    ("DeepSeek-chat", 5, 0.59, -2.41, 0.84, 1.00, 0.16),
    ("DeepSeek-V4-flash", 3, 0.37, -0.08, 1.00, 1.00, 0.00),
    ("DeepSeek-V4-pro", 2, 0.28, 0.01, 1.00, 1.00, 0.00),
    ("Claude-Sonnet-4.6", 3, 0.28, 1.42, 1.00, 1.00, 0.00),
    ("GPT-4.1", 3, 0.24, 1.18, 1.00, 1.00, 0.00),
    ("Phi-4", 10, 0.24, 0.32, 0.88, 0.96, 0.08),
    ("GPT-5.5", 3, 0.16, 0.07, 1.00, 1.00, 0.00),
    ("Claude-Opus-4.8", 2, 0.16, 1.37, 1.00, 1.00, 0.00),
    ("Gemini-2.5-pro", 1, 0.15, -0.31, 1.00, 1.00, 0.00),
    ("GPT-5.1", 3, 0.13, 0.95, 1.00, 1.00, 0.00),
    ("Claude-Haiku-4.5", 3, -0.16, 0.05, 0.93, 0.93, 0.00),
    ("DeepSeek-Coder-6.7B", 5, -0.51, 1.75, 0.08, 0.12, 0.04),
]
BIASED = ("Llama-3.1-8B", "Qwen-2.5 (7B)", "Gemini-2.5-flash-lite", "GPT-4o-mini",
          "DeepSeek-chat")
#: Logits per point of quality of Table 1's "biased but competent" judges: the paper's
#: simulator scale (quality sd 1.25 logits over a pool's sd 4).
COMPETENCE = 1.25 / 4
#: The other two groups of Table 1: frontier / near-neutral judges rank almost perfectly;
#: DeepSeek-Coder-6.7B has almost no quality signal.
FRONTIER_COMPETENCE, WEAK_COMPETENCE = 1.0, 0.02
#: Fig. 7's priced judges: list-price model and output tokens per verdict.
PRICED = {"GPT-4o-mini": ("gpt-4o-mini", 1), "GPT-5.1": ("gpt-5", 64)}
PROMPT = ("Which answer is more accurate and complete? Respond with ONLY the single letter "
          "A or B.")
# Paper values quoted beside ours.
PAPER_TABLE_2 = {"Llama-3.1-8B": (0.40, 0.28, 0.52), "Qwen-2.5 (7B)": (0.20, None, None),
                 "pooled": (0.28, 0.22, 0.33)}
PAPER_TABLE_3 = {"topk": (0.68, 0.80, 0.86, 0.85), "round-robin": (0.53, 0.61, 0.72, 0.76),
                 "global": (0.54, 0.70, 0.76, 0.88)}
PAPER_TABLE_4_LEFT = {("naive", "round-robin"): 0.50, ("naive", "topk"): 0.51,
                      ("bias-aware", "round-robin"): 0.61, ("bias-aware", "topk"): 0.82}
PAPER_TABLE_4_RIGHT = {1: (0.94, 1.00), 3: (0.80, 0.95), 5: (0.62, 0.90), 10: (0.82, 0.88)}
PAPER_FIG_5 = {"topk": 0.76, "topk-no-variance": 0.75, "topk-no-informativeness": 0.73,
               "global": 0.62, "entropy": 0.67, "random": 0.61}


def simulated_oracles(args) -> dict[str, list[RecordedOracle]]:
    """The simulated panel: per judge, its oracles (one controlled pool each)."""
    topics = pool_topics()
    panel = {}
    for index, (judge, n_oracles, c_hat, kappa_hat, *_) in enumerate(PAPER_TABLE_1):
        oracles = []
        for oracle in range(n_oracles):
            rng = np.random.default_rng([args.seed, index, oracle])
            topic = topics[oracle % len(topics)]
            items = controlled_pool(topic, n_items=args.n_items, rng=rng)
            quality = items["quality"].to_numpy(dtype=float)
            competence = (COMPETENCE if judge in BIASED else WEAK_COMPETENCE
                          if judge == "DeepSeek-Coder-6.7B" else FRONTIER_COMPETENCE)
            simulated = SimulatedJudge(competence * quality,
                                       items["verbose"].to_numpy(), bias=2.0 * c_hat,
                                       position=kappa_hat, rng=rng)
            verdicts = matrix_to_verdicts(simulated.verdict_matrix(), items.index, judge=judge)
            oracles.append(RecordedOracle(items, verdicts, judge,
                                          {"simulated": True, "topic": topic}))
        panel[judge] = oracles
    return panel


def recorded_oracles(paths) -> dict[str, list[RecordedOracle]]:
    panel: dict[str, list[RecordedOracle]] = {}
    for path in paths:
        oracle = load_recorded_oracle(path)
        panel.setdefault(oracle.judge, []).append(oracle)
    return panel


def cost_per_call(panel, args) -> dict[str, float]:
    """Money per verdict of each priced judge."""
    if args.judge_cost:
        costs = {}
        for entry in args.judge_cost:
            name, _, value = entry.rpartition("=")
            costs[name] = float(value)
        return costs
    prices = PriceTable.builtin()
    costs = {}
    for judge, (model, output_tokens) in PRICED.items():
        if judge not in panel:
            continue
        texts = panel[judge][0].items["text"].str.len()
        # A prompt holds the question, two answers and the instruction: characters / 4.
        prompt_chars = len(pool_question(panel[judge][0].info.get("topic", "the Moon"))) \
            + 2 * float(texts.mean()) + len(PROMPT)
        costs[judge] = prices.get(model).cost(Usage(math.ceil(prompt_chars / 4),
                                                      output_tokens))
    return costs


def config(args, **changes) -> TopkExperimentConfig:
    base = TopkExperimentConfig(n_items=args.n_items, k=5, n_seeds=args.seeds,
                                budgets=(60, 120, 200, 320), k_values=(1, 3, 5, 10),
                                large_n_items=0, n_samples=args.samples, seed=args.seed)
    return replace(base, **changes)


def run(oracles, cfg, args):
    """The run tables, and their summary when the oracles are one judge's."""
    results = run_topk_experiment(cfg, oracles=oracles, jobs=args.jobs)
    one_judge = results["budget"]["judge"].nunique() == 1
    return results, summarize_topk_results(results, cfg) if one_judge else None


def show(title: str, table: pd.DataFrame) -> None:
    print(f"\n== {title} ==")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", action="append", default=[],
                        help="a recorded oracle folder (repeatable); default: simulated panel")
    parser.add_argument("--judge-cost", action="append", default=[],
                        help="NAME=COST per verdict, for Fig. 7 with recorded oracles")
    parser.add_argument("--focus", default=None,
                        help="judge of the budgeted protocol (default: Llama-3.1-8B, or the "
                             "recorded judge with most oracles)")
    parser.add_argument("--n-items", type=int, default=30)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--samples", type=int, default=1500)
    parser.add_argument("--quick", action="store_true",
                        help="2 seeds and 500 membership samples")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="fairjudge-results/reproduce-topk")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.samples = 2, 500
    started = time.perf_counter()
    panel = recorded_oracles(args.oracle) if args.oracle else simulated_oracles(args)
    source = "recorded" if args.oracle else "simulated"
    focus = args.focus or ("Llama-3.1-8B" if not args.oracle else
                           max(panel, key=lambda j: len(panel[j])))
    print(f"{source} oracles: {sum(map(len, panel.values()))} from {len(panel)} judges, "
          f"N = {args.n_items}, k = 5; focus judge {focus}; {args.seeds} acquisition seeds")

    # Full-data fits of every judge (a cheap budgeted run rides along: random rule, B = 20).
    full_cfg = config(args, budgets=(20,), rules=("random",), ablation_rules=(),
                      residualized_rules=(), n_seeds=1)
    full = run([o for oracles in panel.values() for o in oracles], full_cfg, args)[0]["full"]
    print(f"(full-data fits: {time.perf_counter() - started:.0f} s)")

    # Table 1.
    table_1 = judge_panel(full, k=5)
    # The fits report ĉ per unit of the 0/1 verbosity; the paper's is per standard deviation.
    sd = {judge: float(np.mean([o.items["verbose"].std(ddof=0) for o in oracles]))
          for judge, oracles in panel.items()}
    table_1.insert(3, "c per sd", table_1["c_hat"] * table_1["judge"].map(sd))
    paper = {row[0]: row for row in PAPER_TABLE_1}
    table_1["paper c"] = table_1["judge"].map(lambda j: paper.get(j, (None,) * 7)[2])
    table_1["paper naive"] = table_1["judge"].map(lambda j: paper.get(j, (None,) * 7)[4])
    table_1["paper aware"] = table_1["judge"].map(lambda j: paper.get(j, (None,) * 7)[5])
    table_1["paper Δ"] = table_1["judge"].map(lambda j: paper.get(j, (None,) * 7)[6])
    show("Table 1: full-data fits per judge (c_hat per unit of the 0/1 verbosity, c per sd as "
         "the paper's ĉ; kappa_hat first slot)", table_1)

    # The focus judge's budgeted protocol.
    focus_cfg = config(args, rules=("topk", "global", "round-robin", "random"))
    results, summary = run(panel[focus], focus_cfg, args)
    text, written = write_topk_report(results, focus_cfg, args.out, summary=summary)
    print(f"(focus judge's protocol: {time.perf_counter() - started:.0f} s)")

    # Table 2: Δ with paired-bootstrap intervals, per biased judge and pooled, at full data.
    biased = [j for j in panel if j in BIASED] if not args.oracle else list(panel)
    sub = full[full["judge"].isin(biased)]
    delta = paired_delta_table(pd.DataFrame(columns=["oracle", "seed", "model", "rule",
                                                     "budget", "recall"]),
                               sub, k=5, rng=[args.seed, 2])
    delta = delta[["judge", "n_oracles", "baseline_mean", "reference_mean", "delta", "ci_low",
                   "ci_high", "p_value"]].rename(columns={"baseline_mean": "naive",
                                                          "reference_mean": "bias-aware"})
    delta["paper Δ [CI]"] = delta["judge"].map(
        lambda j: "-" if j not in PAPER_TABLE_2 else
        f"{PAPER_TABLE_2[j][0]:+.2f}" + ("" if PAPER_TABLE_2[j][1] is None else
                                         f" [{PAPER_TABLE_2[j][1]:+.2f}, "
                                         f"{PAPER_TABLE_2[j][2]:+.2f}]"))
    show("Table 2: bias-aware minus naive, full data (paired bootstrap over oracles; "
         "paired t)", delta)
    fits = sub[sub["k"] == 5].groupby("model")["recall"].mean()
    baselines = pd.DataFrame([
        {"model": m, "recall (mean over biased judges)": fits.get(m, np.nan),
         "paper": {"naive": 0.62, "swap-majority": 0.61, "residualized": 0.89,
                   "bias-aware": 0.90}.get(m)}
        for m in ("naive", "swap-majority", "residualized", "bias-aware")])
    show("Table 2: debiasing baselines on full data", baselines)
    joint = summary.joint_vs_residualized
    if joint is not None and len(joint):
        joint = joint[["setting", "budget", "reference_mean", "baseline_mean", "delta",
                       "ci_low", "ci_high", "p_value"]].rename(
            columns={"reference_mean": "joint", "baseline_mean": "residualise-then-acquire"})
        joint["paper"] = joint["budget"].map({120: "0.79 vs 0.69", 200: "0.82 vs 0.70"}) \
            .fillna("-")
        show(f"Table 2: joint model vs residualise-then-acquire ({focus}, top-k rule)", joint)

    # Table 3.
    recall = summary.recall
    rows = []
    for rule in ("topk", "round-robin", "global"):
        cells = recall[(recall["model"] == "bias-aware") & (recall["rule"] == rule)] \
            .set_index("budget")
        row = {"rule": rule}
        for n, b in enumerate((60, 120, 200, 320)):
            mean = cells["mean"].get(b, np.nan)
            paper_value = PAPER_TABLE_3[rule][n]
            row[f"B={b}"] = f"{mean:.2f} ({paper_value:.2f})"
        rows.append(row)
    tests = summary.rule_tests
    tests = tests[tests["model"] == "bias-aware"]
    for baseline in ("global", "round-robin"):
        row = {"rule": f"p vs {baseline}"}
        for b in (60, 120, 200, 320):
            hit = tests[(tests["comparison"].str.endswith(baseline)) & (tests["budget"] == b)]
            row[f"B={b}"] = f"{hit['p_value'].iloc[0]:.1e}" if len(hit) else "-"
        rows.append(row)
    show(f"Table 3: top-k recall vs budget, bias-aware, {focus} (paper in brackets)",
         pd.DataFrame(rows))

    # Table 4.
    at = recall[recall["budget"] == 120].set_index(["model", "rule"])["mean"]
    left = pd.DataFrame([{"model": m, "acquisition": r, "recall": at.get((m, r), np.nan),
                          "paper": PAPER_TABLE_4_LEFT[(m, r)]}
                         for (m, r) in PAPER_TABLE_4_LEFT])
    show(f"Table 4 left: 2x2 ablation at B=120 ({focus})", left)
    by_k = sub.groupby(["k", "model"])["recall"].mean().unstack("model")
    right = pd.DataFrame([{"k": k, "naive": by_k.loc[k, "naive"],
                           "bias-aware": by_k.loc[k, "bias-aware"],
                           "paper naive": PAPER_TABLE_4_RIGHT[k][0],
                           "paper bias-aware": PAPER_TABLE_4_RIGHT[k][1]}
                          for k in PAPER_TABLE_4_RIGHT if k in by_k.index])
    show("Table 4 right: recall@k on full data, mean over the biased judges", right)

    # Figs. 2-5 (written by write_topk_report), key numbers.
    corr = full[(full["judge"].isin(biased)) & (full["model"] == "naive") & (full["k"] == 5)]
    corr = corr.groupby("judge")["corr_score_verbose"].mean()
    print(f"\nFig. 2: corr(naive score, verbosity) per biased judge: "
          f"{corr.min():+.2f} to {corr.max():+.2f} (paper +0.22 to +0.49)")
    spend = summary.spend
    if {"topk", "round-robin"} <= set(spend.columns) and 0 in spend.index:
        ratio = spend.loc[0, "topk"] / spend.loc[0, "round-robin"]
        print(f"Fig. 4: comparisons per item at the boundary, top-k / round-robin at "
              f"B={focus_cfg.spend_budget}: {ratio:.1f}x (paper ~3x)")
    ablation = recall[(recall["model"] == "bias-aware") & (recall["budget"] == 120)] \
        .set_index("rule")["mean"]
    fig5 = pd.DataFrame([{"score": r, "recall": ablation.get(r, np.nan),
                          "paper": PAPER_FIG_5[r]} for r in PAPER_FIG_5])
    show(f"Fig. 5: acquisition-score ablation at B=120 ({focus}, bias-aware)", fig5)

    # Fig. 7: the cost frontier of the priced judges.
    costs = cost_per_call(panel, args)
    if costs:
        frontier_cfg = config(args, rules=("topk",), models=("naive", "bias-aware"),
                              ablation_rules=(), residualized_rules=(),
                              budgets=(30, 60, 120, 200, 320, 435))
        budget_runs = run([o for j in costs for o in panel[j]], frontier_cfg, args)[0]["budget"]
        frontier = cost_frontier(budget_runs, costs)
        written.append(plot_cost_frontier(frontier, os.path.join(args.out,
                                                                 "fig7_cost_frontier.png")))
        show("Fig. 7: recall against money (top-k rule)", frontier[
            ["judge", "model", "budget", "money", "recall", "se"]])
        reach = money_to_reach(frontier, 0.9)
        show("Fig. 7: least money to mean recall 0.90 (measured budgets)", reach)
        cheap = reach.set_index(["judge", "model"])["money"]
        if ("GPT-4o-mini", "bias-aware") in cheap.index and ("GPT-5.1", "naive") in \
                cheap.index:
            strong, corrected = cheap[("GPT-5.1", "naive")], cheap[("GPT-4o-mini",
                                                                    "bias-aware")]
            if np.isnan(strong) or np.isnan(corrected):
                print("GPT-5.1 (naive) or GPT-4o-mini with the correction never reached 0.90 "
                      "within the measured budgets: no cost ratio (paper ~20x)")
            else:
                print(f"GPT-5.1 (naive) needs {strong / corrected:.1f}x the money of "
                      "GPT-4o-mini with the correction to reach 0.90 (paper ~20x)")

    # Fig. 8.
    gain = competence_gain(table_1)
    written.append(plot_competence_gain(table_1, os.path.join(args.out,
                                                              "fig8_competence_gain.png"),
                                        rho=gain.rho_gain, p_value=gain.p_gain))
    if not args.oracle:
        print("\nFig. 8 on the simulated panel is partly by construction: competence follows "
              "the paper's groups, so the competent-but-biased judges are the less competent "
              "ones here too; only the size of the gain comes from the model.")
    print(f"\nFig. 8: Spearman ρ(naive recall, Δ) = {gain.rho_gain:+.2f} (p = "
          f"{gain.p_gain:.1e}, n = {gain.n_judges}; paper -0.88, p < 1e-4, n = 16); "
          f"ρ(naive recall, ĉ) = {gain.rho_bias:+.2f} (p = {gain.p_bias:.2f}; paper -0.38, "
          f"p = 0.17)")
    print(f"\nfigures and tables in {os.path.abspath(args.out)}/: "
          f"{', '.join(os.path.basename(str(p)) for p in written)}")
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
