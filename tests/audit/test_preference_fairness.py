"""Preference fairness (Shi et al., arXiv 2406.07791) beside the decisive first-slot rate."""

from __future__ import annotations

import pandas as pd
import pytest

from fairjudge.audit import audit_verdicts, first_position_rate, preference_fairness
from fairjudge.data import load_verdicts
from fairjudge.report import render_audits


def choice_pairs(slots):
    """One pair per (slot in order ab, slot in order ba); None is an invalid output."""
    rows = []
    for i, (own, swapped) in enumerate(slots):
        for (first, second), order, slot in (((f"x{i}", f"y{i}"), "ab", own),
                                            ((f"y{i}", f"x{i}"), "ba", swapped)):
            rows.append({"item_a": first, "item_b": second, "winner": slot, "order": order,
                         "pair_id": f"p{i}",
                         "outcome_detail": "invalid" if slot is None else
                         ("tie" if slot == "tie" else "win")})
    return load_verdicts(pd.DataFrame(rows))


#: 3 (a, a) + 1 (a, tie) primacy; 2 (b, b) + 1 (tie, b) recency; 2 consistent (a, b), (b, a);
#: 1 with an invalid output. n = 10, pc = 4, rc = 3.
HAND = [("a", "a")] * 3 + [("a", "tie"), ("b", "b"), ("b", "b"), ("tie", "b"), ("a", "b"),
                           ("b", "a"), ("a", None)]


def test_preference_fairness_matches_the_papers_formula_by_hand():
    # PF_raw = rc * rc/(rc+pc) - pc * pc/(rc+pc) = 9/7 - 16/7 = -1; with S_min = -10,
    # S_max = 10: PF = (-1 + 10) / 20 * 2 - 1 = -0.1.
    pf = preference_fairness(choice_pairs(HAND), n_boot=200)
    assert pf.estimate == pytest.approx(-0.1, abs=1e-12)
    assert pf.n == 10
    assert pf.ci_low < -0.1 < pf.ci_high


def test_preference_fairness_extremes_and_its_difference_from_the_first_slot_rate():
    always_first = choice_pairs([("a", "a")] * 6)
    assert preference_fairness(always_first, n_boot=50).estimate == -1.0
    always_last = choice_pairs([("b", "b")] * 6)
    assert preference_fairness(always_last, n_boot=50).estimate == 1.0
    # A judge that is right in both orders reads 0 whatever the slots it picked, while the
    # first-slot rate (over verdicts) reads the share of wins that happened to be first.
    right = choice_pairs([("a", "b")] * 4 + [("b", "a")] * 2)
    assert preference_fairness(right, n_boot=50).estimate == 0.0
    assert first_position_rate(right, n_boot=50).estimate == pytest.approx(0.5)
    # Ties against a first-slot pick: PF counts the pair as primacy-preferred.
    leaning = choice_pairs([("a", "tie"), ("tie", "a"), ("tie", "tie")])
    assert preference_fairness(leaning, n_boot=50).estimate == pytest.approx(-2 / 3)


def test_pairs_judged_in_one_order_are_left_out():
    verdicts = pd.concat([choice_pairs([("b", "b")]),
                          load_verdicts(pd.DataFrame({"item_a": ["u"], "item_b": ["w"],
                                                      "winner": ["a"], "pair_id": ["q"],
                                                      "order": ["ab"]}))])
    pf = preference_fairness(load_verdicts(verdicts), n_boot=50)
    assert (pf.estimate, pf.n) == (1.0, 1)
    none = preference_fairness(load_verdicts(pd.DataFrame(
        {"item_a": ["u"], "item_b": ["w"], "winner": ["a"]})), n_boot=50)
    assert none.n == 0


def test_audit_reports_it_beside_the_decisive_first_slot_rate():
    audit = audit_verdicts(choice_pairs(HAND), n_boot=100)["judge"]
    assert audit.preference_fairness.estimate == pytest.approx(-0.1)
    assert audit.to_dict()["preference_fairness"]["estimate"] == pytest.approx(-0.1)
    text = render_audits({"judge": audit})
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if "first-slot rate" in line)
    assert lines[first + 1].lstrip().startswith("preference fairness    -0.100")
