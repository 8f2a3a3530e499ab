"""HUB-J's data: agreement and disagreement sets against the human majority, consensus
sets across judges, pairs set aside with their reason, seeded splits."""

import pandas as pd
import pytest

from fairjudge._util._warnings import FairjudgeInputError

from fairjudge.audit import load_gold
from fairjudge.data import load_verdicts
from fairjudge.discovery import AGREE, DISAGREE, human_agreement, split_sets


def both_orders(judge, pair, first, second, ab, ba):
    """Verdicts of ``judge`` on ``pair`` shown (first, second) then (second, first); each
    winner in the shown frame (None: that order was not judged)."""
    rows = [{"judge": judge, "pair_id": pair, "item_a": first, "item_b": second,
             "winner": ab, "order": "ab"}]
    if ba is not None:
        rows.append({"judge": judge, "pair_id": pair, "item_a": second, "item_b": first,
                     "winner": ba, "order": "ba"})
    for row in rows:
        if row["winner"] == "":  # an unparseable output, recorded as such
            row.update(winner=None, outcome_detail="invalid")
    return rows


def one_judge_table():
    # Gold names the better item in its own frame, which need not be the verdicts'.
    gold = pd.DataFrame({"pair_id": [f"p{i}" for i in range(1, 9)],
                         "item_a": ["x1", "y2", "x3", "x4", "x5", "x6", "x7", "x8"],
                         "item_b": ["y1", "x2", "y3", "y4", "y5", "y6", "y7", "y8"],
                         "winner": ["a", "a", "a", "a", "a", "a", "tie", "a"]})
    rows = (both_orders("J", "p1", "x1", "y1", "a", "b")      # picks x1 both times: agree
            + both_orders("J", "p2", "x2", "y2", "a", "b")    # picks x2, human y2: disagree
            + both_orders("J", "p3", "x3", "y3", "a", "a")    # first slot both times
            + both_orders("J", "p4", "x4", "y4", "tie", "tie")
            + both_orders("J", "p5", "x5", "y5", "a", "")     # an invalid output
            + both_orders("J", "p6", "x6", "y6", "a", None)   # one order only
            + both_orders("J", "p7", "x7", "y7", "a", "b")    # humans split
            + both_orders("J", "p9", "x9", "y9", "a", "b"))   # no gold label
    return load_verdicts(pd.DataFrame(rows)), load_gold(gold)


def test_every_pair_gets_its_status():
    verdicts, gold = one_judge_table()
    result = human_agreement(verdicts, gold)
    status = dict(zip(result.pairs["pair_id"], result.pairs["status"]))
    assert status == {"p1": AGREE, "p2": DISAGREE, "p3": "order-inconsistent", "p4": "tie",
                      "p5": "invalid", "p6": "one order only", "p7": "no human majority",
                      "p9": "no gold label"}
    assert list(result.agreement("J")["pair_id"]) == ["p1"]
    disagreement = result.disagreement("J").iloc[0]
    # In the pair's own frame (x2 first), the judge picked a and the humans b.
    assert (disagreement["item_a"], disagreement["judge_pick"], disagreement["human"]) == \
        ("x2", "a", "b")
    assert result.counts().loc["J"].sum() == 8


def test_consensus_needs_every_judge_to_decide_alike():
    verdicts, gold = one_judge_table()
    second = verdicts.assign(judge="K")
    # K decides p1 against the humans and p3 consistently; both judges pick x2 on p2.
    second.loc[(second["pair_id"] == "p1"), "winner"] = ["b", "a"]
    second.loc[(second["pair_id"] == "p3"), "winner"] = ["a", "b"]
    result = human_agreement(load_verdicts(pd.concat([verdicts, second],
                                                     ignore_index=True)), gold)
    table = result.consensus().set_index("pair_id")
    assert table.loc["p2", "unanimous"] and table.loc["p2", "against_human"]
    assert not table.loc["p1", "unanimous"]  # J agrees with the humans, K does not
    assert not table.loc["p3", "unanimous"]  # J was order-inconsistent there
    assert list(result.consensus_disagreement()["pair_id"]) == ["p2"]
    assert result.consensus_agreement().empty


def test_labels_without_a_human_majority_are_set_aside():
    verdicts, gold = one_judge_table()
    shares = gold.assign(annotator_agreement=[0.4, 0.5, 1, 1, 1, 1, 1, 1])
    status = human_agreement(verdicts, shares).pairs.set_index("pair_id")["status"]
    assert status["p1"] == "no human majority" and status["p2"] == DISAGREE
    assert human_agreement(verdicts, shares, min_majority=0.3).pairs.set_index(
        "pair_id")["status"]["p1"] == AGREE


def test_splits_are_seeded_and_disjoint():
    disagreement = pd.DataFrame({"pair_id": [f"d{i}" for i in range(50)]})
    agreement = pd.DataFrame({"pair_id": [f"a{i}" for i in range(300)]})
    splits = split_sets(disagreement, agreement, agreement_calibration=100,
                        agreement_test=150, rng=7)
    again = split_sets(disagreement, agreement, agreement_calibration=100,
                       agreement_test=150, rng=7)
    assert [len(s) for s in (splits.disagreement_calibration, splits.disagreement_test,
                             splits.agreement_calibration, splits.agreement_test)] == \
        [40, 10, 100, 150]
    pd.testing.assert_frame_equal(splits.agreement_test, again.agreement_test)
    assert not set(splits.disagreement_calibration["pair_id"]) & set(
        splits.disagreement_test["pair_id"])
    assert not set(splits.agreement_calibration["pair_id"]) & set(
        splits.agreement_test["pair_id"])


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["llmbar/MT-Bench", "prd-vicuna80", "judgebench/claude"])
def test_recorded_datasets_sort_every_pair(name):
    from fairjudge.data import load_recorded

    bench = load_recorded(name)
    verdicts = bench.verdicts
    if "strategy" in verdicts.columns and verdicts["strategy"].nunique() > 1:
        with pytest.raises(FairjudgeInputError, match="several strategies"):
            human_agreement(verdicts, bench.gold)
        verdicts = verdicts[verdicts["strategy"] == verdicts["strategy"].iloc[0]]
    result = human_agreement(verdicts, bench.gold)
    counts = result.counts()
    judged = verdicts.groupby("judge")["pair_id"].nunique()
    assert (counts.sum(axis=1) == judged.reindex(counts.index)).all()
    assert {AGREE, DISAGREE} <= set(counts.columns)
