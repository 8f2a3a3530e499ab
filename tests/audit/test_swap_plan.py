"""The swap-test plan [position-bias-swap]: sample, measure consistency, decide, count calls."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairjudge._cli import main
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.audit import plan_calls, swap_test_plan
from fairjudge.data import load_verdicts, write_table


def both_orders(n_pairs, n_consistent, *, judge="judge", cost=None):
    """n_pairs pairs in both orders; exactly the first n_consistent name the same winner in
    both orders (x_i twice), the rest pick the first slot twice."""
    rows = []
    for i in range(n_pairs):
        x, y = f"x{i}", f"y{i}"
        rows.append({"item_a": x, "item_b": y, "winner": "a", "order": "ab"})
        rows.append({"item_a": y, "item_b": x, "winner": "b" if i < n_consistent else "a",
                     "order": "ba"})
        rows[-2]["pair_id"] = rows[-1]["pair_id"] = f"p{i:04d}"
    table = pd.DataFrame(rows).assign(judge=judge)
    if cost is not None:
        table["cost"] = cost
    return load_verdicts(table)


def wilson_low(k, n, level=0.95):
    """Wilson lower bound, independently of fairjudge.stats."""
    return stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson").low


def wilson_formula_low(p, n, z=stats.norm.ppf(0.975)):
    """Wilson lower bound at proportion p of n trials (Wilson 1927, eq. written out)."""
    return (p + z * z / (2 * n) - z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (
        1 + z * z / n)


def test_decision_flips_where_the_lower_bound_crosses_the_threshold():
    verdicts = both_orders(200, 188)  # consistency exactly 0.94
    low = wilson_low(188, 200)
    single = swap_test_plan(verdicts, sample_size=500, threshold=low - 1e-6)["judge"]
    both = swap_test_plan(verdicts, sample_size=500, threshold=low + 1e-6,
                          n_pairs=5000)["judge"]
    for plan in (single, both):
        assert plan.sample_size == 200
        assert plan.consistency.estimate == pytest.approx(0.94, abs=1e-12)
        assert plan.consistency.ci_low == pytest.approx(low, abs=1e-9)
    assert single.decision == "single order" and both.decision == "both orders"
    # The estimate (0.94) clears the threshold in both runs: it is the lower bound that
    # decides, and the plan says how many pairs would settle it.
    needed = both.pairs_needed
    assert needed is not None and needed > 200
    assert wilson_formula_low(0.94, needed) >= low + 1e-6 > wilson_formula_low(0.94, needed - 1)
    # Within a run of only the 200 recorded pairs no larger sample exists.
    assert swap_test_plan(verdicts, sample_size=500,
                          threshold=low + 1e-6)["judge"].pairs_needed is None


def test_decision_flips_between_consecutive_consistency_counts():
    """At threshold 0.85 with 200 pairs, the first count whose Wilson lower bound reaches
    0.85 is single order and the count below it is not."""
    k_star = next(k for k in range(201) if wilson_low(k, 200) >= 0.85)
    below = swap_test_plan(both_orders(200, k_star - 1), sample_size=200, threshold=0.85)
    at = swap_test_plan(both_orders(200, k_star), sample_size=200, threshold=0.85)
    assert below["judge"].decision == "both orders"
    assert at["judge"].decision == "single order"


def test_calls_saved_equal_the_closed_form():
    n, m, price = 1000, 40, 0.0025
    verdicts = both_orders(m, m, cost=price)
    plan = swap_test_plan(verdicts, sample_size=m, threshold=0.5, n_pairs=n)["judge"]
    assert plan.decision == "single order"
    assert (plan.calls_swap_all, plan.calls_plan, plan.calls_saved) == (2 * n, 2 * m + n - m,
                                                                        n - m)
    assert plan.cost_per_call == pytest.approx(price)
    assert plan.money_saved == pytest.approx((n - m) * price)
    plan = swap_test_plan(both_orders(m, 0), sample_size=m, n_pairs=n,
                          cost_per_call=0.01)["judge"]
    assert plan.decision == "both orders"
    assert (plan.calls_plan, plan.calls_saved, plan.money_saved) == (2 * n, 0, 0.0)
    assert plan_calls(10, 3, "single order") == (20, 13, 7)
    assert plan_calls(10, 3, "both orders") == (20, 20, 0)


def test_sub_sample_is_seeded_and_measured_on_the_sampled_pairs_only():
    verdicts = both_orders(300, 150)  # pairs p0000..p0149 consistent
    first = swap_test_plan(verdicts, sample_size=60, rng=7)["judge"]
    again = swap_test_plan(verdicts.sample(frac=1, random_state=1), sample_size=60,
                           rng=7)["judge"]
    assert first.sampled_pairs == again.sampled_pairs  # row order does not matter
    assert len(set(first.sampled_pairs)) == 60
    consistent = sum(int(p[1:]) < 150 for p in first.sampled_pairs)
    assert first.consistency.estimate == pytest.approx(consistent / 60)
    assert first.consistency.n == 60 and first.n_pairs == 300
    assert first.full_consistency.estimate == pytest.approx(0.5)
    other = swap_test_plan(verdicts, sample_size=60, rng=8)["judge"]
    assert other.sampled_pairs != first.sampled_pairs


def test_one_plan_per_judge():
    verdicts = load_verdicts(pd.concat([both_orders(20, 20, judge="steady"),
                                        both_orders(20, 5, judge="swayed")]))
    plans = swap_test_plan(verdicts, sample_size=20, threshold=0.8)
    assert plans["steady"].decision == "single order"
    assert plans["swayed"].decision == "both orders"
    assert plans["swayed"].consistency.estimate == pytest.approx(0.25)


@pytest.mark.parametrize("kwargs, message", [
    ({"sample_size": 0}, "`sample_size` must be a positive integer"),
    ({"threshold": 1.5}, r"`threshold` must be a consistency in \(0, 1\]"),
    ({"n_pairs": 5}, r"`n_pairs` \(5\) is smaller than the swap-test sample \(10 pairs\)"),
    ({"cost_per_call": -1.0}, "`cost_per_call` must be a non-negative"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(FairjudgeInputError, match=message):
        swap_test_plan(both_orders(10, 10), **kwargs)


def test_a_judge_without_both_orders_is_refused():
    one_order = load_verdicts(pd.DataFrame({"item_a": ["x", "u"], "item_b": ["y", "w"],
                                            "winner": ["a", "b"]}))
    with pytest.raises(FairjudgeInputError, match="no pair judged in both orders"):
        swap_test_plan(one_order)


def test_cli_plan_prints_the_decision_and_the_calls_saved(tmp_path, capsys):
    path = tmp_path / "verdicts.jsonl"
    write_table(both_orders(100, 100), path)
    code = main(["audit", str(path), "--plan", "--sample-size", "30", "--threshold", "0.8",
                 "--full-pairs", "500", "--cost-per-call", "0.002", "--json"])
    out = capsys.readouterr()
    assert code in (0, None), out.err
    plan = json.loads(out.out)["judge"]
    assert plan["decision"] == "single order"
    assert plan["calls_saved"] == 470 and plan["calls_plan"] == 530
    assert plan["money_saved"] == pytest.approx(0.94)
    assert plan["consistency"]["n"] == 30
    main(["audit", str(path), "--plan", "--sample-size", "30", "--threshold", "0.8"])
    text = capsys.readouterr().out
    assert "SINGLE ORDER for the full run of 100 pairs" in text
    assert "130 planned vs 200 swapping every pair: 70 saved" in text


def test_cli_plan_options_need_plan(tmp_path, capsys):
    path = tmp_path / "verdicts.jsonl"
    write_table(both_orders(5, 5), path)
    assert main(["audit", str(path), "--sample-size", "3"]) == 2
    assert "--sample-size apply only with --plan" in capsys.readouterr().err


@pytest.mark.shared_data
def test_cli_plan_on_recorded_judgebench(capsys):
    from fairjudge.data import load_judgebench

    verdicts = load_judgebench("gpt-4o").verdicts
    plans = swap_test_plan(verdicts, sample_size=100, threshold=0.9, rng=0)
    # Reward models score each answer alone: their consistency is ~1, o1-mini's is ~0.69.
    assert plans["o1-mini-2024-09-12"].decision == "both orders"
    assert np.isfinite(plans["o1-mini-2024-09-12"].full_consistency.estimate)


def test_cli_plan_live_through_the_simulated_backend(tmp_path, capsys):
    """Sample 12 of 50 pairs, judge them in both orders (24 calls), plan for all 50."""
    pairs = tmp_path / "pairs.jsonl"
    with open(pairs, "w") as handle:
        for i in range(50):
            handle.write(json.dumps({"id": f"p{i}", "question": f"Q{i}?", "a": "brief",
                                     "b": "a longer answer " * (i % 3) + "end"}) + "\n")
    code = main(["audit", "--plan", "--backend", "simulated", "--pairs", str(pairs),
                 "--sample-size", "12", "--threshold", "0.01", "--cache",
                 str(tmp_path / "c.sqlite"), "--json"])
    out = capsys.readouterr()
    assert code in (0, None), out.err
    payload = json.loads(out.out)
    assert payload["run"]["requested"] == 24
    (judge,) = [k for k in payload if k != "run"]
    plan = payload[judge]
    assert plan["sample_size"] == 12 and plan["n_pairs"] == 50
    assert len(set(plan["sampled_pairs"])) == 12
    assert plan["decision"] == "single order" and plan["calls_saved"] == 50 - 12
    assert main(["audit", "--plan", "--backend", "simulated", "--full-pairs", "9", "--pairs",
                 str(pairs), "--cache", str(tmp_path / "c.sqlite")]) == 2


def test_judges_sharing_pairs_get_the_same_sample():
    verdicts = load_verdicts(pd.concat([both_orders(80, 40, judge="one"),
                                        both_orders(80, 70, judge="two")]))
    plans = swap_test_plan(verdicts, sample_size=25, rng=3)
    assert plans["one"].sampled_pairs == plans["two"].sampled_pairs
