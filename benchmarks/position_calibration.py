"""Calibrating P(first-shown wins) for the position prior, evaluated where the truth is known
[position-bias-swap, "Beyond the swap: calibration frameworks"].

No recorded dataset in ``../shared/data`` carries a judge's label probabilities (JudgeBench,
LLMBar and PRD store verdict text; JudgeBench's reward models store per-answer scores that
are computed one answer at a time and so have no position prior). The evaluation therefore
runs on two judges whose position prior is known:

- ``simulated``: content logit s ~ N(0, 1.5²) of the pair's first item over its second,
  position prior b (logits toward the first slot), logit noise N(0, 0.5²) per call; the
  judge reports P(first wins) = sigmoid(±s + b + noise). Gold is sign(s).
- ``gap-dependent`` and ``saturated``: judges that break the constant-shift model -- a
  prior of ``2 exp(-|s|)`` (large for close pairs, none for clear ones), and a sharper judge
  (content logit 2.5 s, prior 1) whose probabilities are rounded to 3 decimals, so many are
  exactly 0 or 1 and their pairs are left out of the prior's estimate.
- ``loopback``: the real pipeline (``judge_pairs`` S1, ``letter`` template, log-probabilities
  on) against :class:`fairjudge.judges.testing.FakeProviderServer`, whose scripted judge's
  logit is 3 (len_A - len_B) / max(len) + first_slot_lean; gold is the longer answer.

Protocol (the article's workflow): swap-test a random 10% of the pairs, estimate the prior
from them (:func:`fairjudge.audit.position_prior`), then score the other 90% in ONE random
order, raw and calibrated (:func:`fairjudge.audit.calibrate_position` with the sample's
prior). Reported: the prior recovered, and on the single-order verdicts the accuracy of the
argmax against gold, the first-slot share of decisions, and the mean absolute error of
P(first) against the unbiased sigmoid(s) (simulated only). Intervals are Wilson 95%.

Run: ``python benchmarks/position_calibration.py [--pairs 4000] [--seed 0] [--no-loopback]``
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

from fairjudge.audit import calibrate_position, position_prior
from fairjudge.data import load_verdicts
from fairjudge.stats import proportion_estimate


def simulated_verdicts(n_pairs, bias, rng, *, gap_dependent=False, saturate=False):
    """``gap_dependent``: the prior is ``bias * exp(-|s|)``, large for close pairs and gone
    for clear ones (Shi et al.'s finding), which the constant-shift model does not describe;
    ``saturate``: probabilities are reported to 3 decimals (0.000 and 1.000 occur), as many
    APIs' rounded log-probabilities are."""
    s = rng.normal(0, 1.5, n_pairs)
    prior = bias * np.exp(-np.abs(s)) if gap_dependent else bias
    rows = []
    for order, sign in (("ab", 1.0), ("ba", -1.0)):
        logit = 2.5 * sign * s + prior + rng.normal(0, 0.5, n_pairs) if saturate else \
            sign * s + prior + rng.normal(0, 0.5, n_pairs)
        p = special.expit(logit)
        if saturate:
            p = np.round(p, 3)
        first = [f"x{i}" if sign > 0 else f"y{i}" for i in range(n_pairs)]
        second = [f"y{i}" if sign > 0 else f"x{i}" for i in range(n_pairs)]
        rows.append(pd.DataFrame({"item_a": first, "item_b": second,
                                  "winner": np.where(p >= 0.5, "a", "b"),
                                  "pair_id": [f"p{i}" for i in range(n_pairs)],
                                  "order": order, "p_a": p, "p_b": 1 - p}))
    gold_first_own = pd.Series(s > 0, index=[f"p{i}" for i in range(n_pairs)])
    truth_own = pd.Series(special.expit(s), index=gold_first_own.index)
    return load_verdicts(pd.concat(rows, ignore_index=True)), gold_first_own, truth_own


def loopback_verdicts(n_pairs, lean, rng):
    from fairjudge.data import load_pairs
    from fairjudge.judges import GenerationSettings, RunOptions, backend_from_spec
    from fairjudge.judges.testing import FakeProviderServer
    from fairjudge.strategies import judge_pairs

    words = rng.integers(5, 60, size=(n_pairs, 2))
    pairs = pd.DataFrame({"id": [f"p{i}" for i in range(n_pairs)],
                          "question": [f"Explain topic {i}." for i in range(n_pairs)],
                          "a": [" ".join(["word"] * int(w)) for w in words[:, 0]],
                          "b": [" ".join(["term"] * int(w)) for w in words[:, 1]]})
    keep = words[:, 0] != words[:, 1]  # equal lengths have no gold
    pairs = pairs[keep].reset_index(drop=True)
    words = words[keep]
    os.environ.setdefault("FAIRJUDGE_BENCH_KEY", "sk-test")  # the loopback checks no key
    with FakeProviderServer(seed=0, first_slot_lean=lean) as server:
        backend = backend_from_spec("openai:scripted", base_url=server.base_url,
                                    api_key_env="FAIRJUDGE_BENCH_KEY")
        result = judge_pairs(load_pairs(pairs), "S1", [backend],
                             options=RunOptions(progress=False, seed=0),
                             settings=GenerationSettings(temperature=0.0, logprobs=5),
                             template="letter", seed=0)
    calls = load_verdicts(result.calls)
    gold_first_own = pd.Series(words[:, 0] > words[:, 1], index=pairs["id"].astype(str))
    return calls, gold_first_own, None


def evaluate(verdicts, gold_first_own, truth_own, rng, sample_share=0.1):
    pair_ids = np.array(sorted(verdicts["pair_id"].astype(str).unique()))
    m = max(2, int(round(sample_share * len(pair_ids))))
    sampled = set(rng.choice(pair_ids, size=m, replace=False))
    in_sample = verdicts["pair_id"].astype(str).isin(sampled).to_numpy()
    prior = position_prior(verdicts[in_sample].drop(columns="judge"), n_boot=1000, rng=0)
    rest = verdicts[~in_sample]
    # One random order per remaining pair: the single-order run.
    order_of = {p: o for p, o in zip(sorted(set(rest["pair_id"].astype(str))),
                                     rng.choice(["ab", "ba"], size=len(pair_ids) - m))}
    single = rest[[order_of[p] == o for p, o in zip(rest["pair_id"].astype(str),
                                                     rest["order"])]]
    cal = calibrate_position(single, bias=prior.estimate)[str(single["judge"].iloc[0])]
    table = cal.probabilities.assign(pair=single["pair_id"].astype(str).to_numpy(),
                                     own=(single["order"] == "ab").to_numpy())
    gold_first = np.where(table["own"], gold_first_own.reindex(table["pair"]).to_numpy(),
                          ~gold_first_own.reindex(table["pair"]).to_numpy(dtype=bool))
    out = {"prior": prior.as_dict(), "single_order_pairs": len(table)}
    for name, column in (("raw", "p_first"), ("calibrated", "p_first_calibrated")):
        pick_first = table[column].to_numpy() >= 0.5
        out[name] = {
            "accuracy": proportion_estimate(int((pick_first == gold_first).sum()),
                                            len(table)).as_dict(),
            "first_slot_share": float(pick_first.mean())}
        if truth_own is not None:
            truth = truth_own.reindex(table["pair"]).to_numpy()
            truth = np.where(table["own"], truth, 1 - truth)
            out[name]["mae_vs_unbiased_p"] = float(np.abs(table[column] - truth).mean())
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-loopback", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    results = {}
    for bias in (0.0, 0.5, 1.0, 2.0):
        rng = np.random.default_rng([args.seed, int(bias * 10)])
        verdicts, gold, truth = simulated_verdicts(args.pairs, bias, rng)
        results[f"simulated b={bias}"] = evaluate(verdicts, gold, truth, rng)
    # Judges that break the module's model: its constant prior is then an approximation.
    for name, kwargs in (("gap-dependent b=2", {"gap_dependent": True}),
                         ("saturated b=1", {"saturate": True})):
        rng = np.random.default_rng([args.seed, 77, len(name)])
        verdicts, gold, truth = simulated_verdicts(args.pairs, 2.0 if "gap" in name else 1.0,
                                                   rng, **kwargs)
        results[name] = evaluate(verdicts, gold, truth if "gap" in name else None, rng)
    if not args.no_loopback:
        try:
            import aiohttp  # noqa: F401
        except ImportError:
            print("loopback skipped: the openai backend needs aiohttp")
        else:
            rng = np.random.default_rng([args.seed, 99])
            verdicts, gold, _ = loopback_verdicts(min(args.pairs, 600), 0.8, rng)
            results["loopback lean=0.8"] = evaluate(verdicts, gold, None, rng)
    print(f"{'judge':22} {'prior b_hat [95% CI]':28} {'acc raw':>16} {'acc calibrated':>16} "
          f"{'first raw':>9} {'first cal':>9} {'MAE raw':>8} {'MAE cal':>8}")
    for name, r in results.items():
        p = r["prior"]

        def acc(x):
            a = x["accuracy"]
            return f"{a['estimate']:.3f}±{(a['ci_high'] - a['ci_low']) / 2:.3f}"

        mae = [r[k].get("mae_vs_unbiased_p") for k in ("raw", "calibrated")]
        print(f"{name:22} {p['estimate']:6.3f} [{p['ci_low']:6.3f}, {p['ci_high']:6.3f}]"
              f"{'':7} {acc(r['raw']):>16} {acc(r['calibrated']):>16} "
              f"{r['raw']['first_slot_share']:9.3f} {r['calibrated']['first_slot_share']:9.3f} "
              + " ".join("     n/a" if v is None else f"{v:8.3f}" for v in mae))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
