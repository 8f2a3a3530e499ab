"""UDA on PRD Vicuna-80: the paper's table for this data [uda-consensus-elo, Table 3].

Five reviewers (bard, claude, gpt35, gpt4, vicuna-13b) are also the five contestants and
their own answers are in the data, so UDA's self features exist. For baseline Elo, UDA,
UDA without self features (the paper's ablation) and fairjudge's joint Bradley–Terry model
with self-preference terms, this prints the mean inter-judge standard deviation of a
contestant's score (Elo points), the mean over judges of each judge's Pearson correlation
with the human scores (a Bradley–Terry fit to PRD's human pairwise labels), the
consensus's correlation, the mean absolute self-score deviation (R_jj - mean of the
other judges' R_j'j) / that mean, and the mean alignment of a judge's scores with the
baseline consensus (Pearson, MSE in Elo points squared). The relative s.d. divides the
inter-judge s.d. by the s.d. of the consensus scores across contestants: free of the
rating scale, it is the one dispersion figure comparable between K = 16 Elo (whose ratings
a few hundred comparisons leave compressed) and the joint model's per-judge
Bradley–Terry fits (on the full logit scale). Intervals are percentiles over
questions resampled with replacement, UDA retrained on each resample. The human labels are
used only to evaluate. These figures are in sample (UDA rates the comparisons it learned
from, as the paper does within a dataset); a second table trains on half the questions and
rates the other half.

Run: ``python benchmarks/uda_prd.py [--resamples 20] [--embedder minilm|hashing]`` (needs
../shared/data and the ``uda`` extra; MiniLM embeds the 400 answers once).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
from consensus_prd import human_scores  # the human Bradley-Terry scores (same folder)

from fairjudge.consensus import UdaSettings, consensus, uda_metrics
from fairjudge.data import load_prd, shared_data_dir
from fairjudge.discovery import resolve_embedder


def resampled(bench, questions):
    """Verdicts and items of ``questions``: a question drawn twice enters twice, its
    answers and verdicts under fresh ids but its question id kept, so UDA's validation
    split holds out every copy of a question together (no copy in training and another in
    validation) and a judge's own answer, the same text in every copy, is found."""
    verdicts, items = [], []
    item_question = bench.items["question_id"].astype(str)
    for draw, question in enumerate(questions):
        tag = f"#{draw}"
        rows = bench.verdicts[bench.verdicts["question_id"].astype(str) == question]
        verdicts.append(rows.assign(item_a=rows["item_a"] + tag,
                                    item_b=rows["item_b"] + tag,
                                    **({"pair_id": rows["pair_id"].astype(str) + tag}
                                       if "pair_id" in rows.columns else {})))
        answers = bench.items[item_question == question]
        items.append(answers.rename(index=lambda i, tag=tag: i + tag))
    return pd.concat(verdicts, ignore_index=True), pd.concat(items)


def figures(bench, questions, embed, epochs) -> dict:
    verdicts, items = resampled(bench, questions)
    human = human_scores(bench, set(questions))
    own = {j: j for j in verdicts["judge"].unique()}
    out = {}
    settings = UdaSettings(epochs=epochs)
    full = consensus(verdicts, items, method="uda", embedder=embed, uda_settings=settings)
    ablated = consensus(verdicts, items, method="uda", embedder=embed,
                        uda_settings=replace(settings, self_features=False))
    joint = consensus(verdicts, items, method="joint")
    baseline = full.uda.baseline
    for name, ratings in (("baseline Elo", baseline), ("UDA", full.uda.ratings),
                          ("UDA ablated", ablated.uda.ratings),
                          ("joint BT", joint.per_judge)):
        metrics = uda_metrics(ratings, baseline, human=human, own=own)
        consensus_scores = (joint.scores["estimate"] if name == "joint BT"
                            else ratings.mean(axis=1))
        out[name] = {"inter-judge s.d.": metrics["mean_inter_judge_sd"],
                     "relative s.d.": metrics["relative_inter_judge_sd"],
                     "mean judge r": metrics["mean_human_pearson"],
                     "consensus r": float(consensus_scores.corr(human.reindex(
                         consensus_scores.index))),
                     "mean |self dev|": float(metrics["self_deviation"].abs().mean()),
                     "alignment r": float(metrics["alignment"]["pearson"].mean()),
                     "alignment MSE": float(metrics["alignment"]["mse"].mean())}
    return out


def held_out(bench, embed, epochs, splits=4) -> pd.DataFrame:
    """Out of sample: UDA trained on half the questions (its own validation split inside
    that half) rates the other half; baseline Elo on the same half. Per split and mean."""
    from fairjudge.consensus import contestant_verdicts, elo_ratings, train_uda, uda_batches

    table = contestant_verdicts(bench.verdicts, bench.items)
    questions = np.array(sorted(table["question_id"].astype(str).unique()))
    human = human_scores(bench, set(questions))
    rows = []
    for self_features in (True, False):
        batches, names = uda_batches(table, bench.items, embed, self_features=self_features)
        for split in range(splits):
            test = np.random.default_rng(split).permutation(questions)[:len(questions) // 2]
            train = [b.subset(~np.isin(b.question, test)) for b in batches]
            rest = [b.subset(np.isin(b.question, test)) for b in batches]
            fit = train_uda(train, names, rng=split,
                            settings=UdaSettings(epochs=epochs, self_features=self_features))
            base = pd.DataFrame({b.judge: elo_ratings(b.first, b.second, b.outcome,
                                                      len(names)) for b in rest}, index=names)
            before = uda_metrics(base, base, human=human)
            after = uda_metrics(fit.rate(rest, names), base, human=human)
            rows.append({"features": "full" if self_features else "ablated", "split": split,
                         "baseline s.d.": before["mean_inter_judge_sd"],
                         "UDA s.d.": after["mean_inter_judge_sd"],
                         "baseline rel. s.d.": before["relative_inter_judge_sd"],
                         "UDA rel. s.d.": after["relative_inter_judge_sd"],
                         "baseline judge r": before["mean_human_pearson"],
                         "UDA judge r": after["mean_human_pearson"]})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=20)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--epochs", type=int, default=UdaSettings().epochs)
    args = parser.parse_args()
    if shared_data_dir() is None:
        sys.exit("needs the recorded datasets in ../shared/data (or FAIRJUDGE_SHARED_DATA)")
    bench = load_prd()
    texts = bench.items["text"].astype(str)
    vectors = resolve_embedder(args.embedder, texts.tolist())(texts.tolist())
    lookup = dict(zip(texts, np.asarray(vectors, float)))

    def embed(batch):
        return np.array([lookup[t] for t in batch])

    out_of_sample = held_out(bench, embed, args.epochs)
    questions = np.array(sorted(bench.verdicts["question_id"].astype(str).unique()))
    point = figures(bench, list(questions), embed, args.epochs)
    rng = np.random.default_rng(0)
    draws = []
    for b in range(args.resamples):
        draws.append(figures(bench, list(rng.choice(questions, len(questions))), embed,
                             args.epochs))
        print(f"resample {b + 1}/{args.resamples}", file=sys.stderr)
    rows = []
    for method, values in point.items():
        row = {"method": method}
        for name, value in values.items():
            samples = np.array([d[method][name] for d in draws], float)
            low, high = np.nanpercentile(samples, [2.5, 97.5]) if len(samples) else (
                np.nan, np.nan)
            row[name] = f"{value:.3f} [{low:.3f}, {high:.3f}]"
        rows.append(row)
    base = np.array([d["baseline Elo"]["inter-judge s.d."] for d in draws])
    uda = np.array([d["UDA"]["inter-judge s.d."] for d in draws])
    pd.set_option("display.width", 250)
    print(f"PRD Vicuna-80, 5 judges = 5 contestants, embedder {args.embedder}; 95% "
          f"percentile intervals over {args.resamples} resamples of the {len(questions)} "
          "questions (UDA retrained on each)")
    print(pd.DataFrame(rows).to_string(index=False))
    print("\nOut of sample (UDA trained on 40 questions rates the other 40; 4 splits):")
    print(out_of_sample.round(3).to_string(index=False))
    means = out_of_sample.groupby("features")[[
        "baseline s.d.", "UDA s.d.", "baseline rel. s.d.", "UDA rel. s.d.", "baseline judge r",
        "UDA judge r"]].mean()
    print(means.round(3).to_string())
    if len(draws):
        reduction = 100 * (1 - uda / base)
        print(f"UDA's inter-judge s.d. reduction: "
              f"{100 * (1 - point['UDA']['inter-judge s.d.'] / point['baseline Elo']['inter-judge s.d.']):.1f}% "  # noqa: E501
              f"[{np.percentile(reduction, 2.5):.1f}, {np.percentile(reduction, 97.5):.1f}]")


if __name__ == "__main__":
    main()
