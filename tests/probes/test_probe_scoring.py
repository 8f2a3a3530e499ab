"""Scoring probe verdicts: the definition, the per-call table, errors, and end to end."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

import fairjudge.judges
import fairjudge.strategies
from fairjudge.data import load_pairs, read_table, write_table
from fairjudge.probes import (SCORE_COLUMNS, ProbeScores, ProbeWarning, score_probes,
                              to_probe_frame)
from fairjudge.stats import Estimate


def _verdicts(probes, choose):
    """One aggregated verdict per probe, in the probe's own frame."""
    return pd.DataFrame({"id": probes["id"], "winner": [choose(r) for r in
                                                        probes.itertuples()]})


def _as_calls(verdicts, orders):
    """The same verdicts as calls shown in ``orders``: winners in the shown frame."""
    swap = {"a": "b", "b": "a"}
    shown = [swap.get(w, w) if o == "ba" else w for w, o in zip(verdicts["winner"], orders)]
    return pd.DataFrame({"pair_id": verdicts["id"].to_numpy(), "order": list(orders),
                         "winner": shown})


def _choose_target_or_llama(row):
    # Always the target where there is one; MODEL_ORIGIN: the llama answer, else tie.
    if row.bias_type == "MODEL_ORIGIN":
        return {row.source_a: "a", row.source_b: "b"}.get("llama", "tie")
    return row.target


# ------------------------------------------------------------------ scoring

def test_scores_follow_the_definition(probes):
    verdicts = _verdicts(probes, _choose_target_or_llama)
    verdicts.loc[verdicts["id"] == "LENGTH-0", "winner"] = None  # an invalid output
    verdicts.loc[verdicts["id"] == "LENGTH-1", "winner"] = "tie"
    verdicts = verdicts[verdicts["id"] != "POSITION-0"]  # a missing verdict
    result = score_probes(probes, verdicts, n_boot=300)
    assert isinstance(result, ProbeScores) and not result.per_call
    scores = result.to_frame().set_index("bias_type")
    assert list(scores.reset_index().columns) == list(SCORE_COLUMNS)
    assert list(scores.index) == ["POSITION", "STYLE", "STYLE_BA", "STYLE (position-averaged)",
                                  "LENGTH", "TRUNCATION", "MODEL_ORIGIN claude vs gpt4",
                                  "MODEL_ORIGIN claude vs llama", "MODEL_ORIGIN gpt4 vs llama"]
    assert scores.loc["POSITION", ["n", "n_missing", "bias"]].tolist() == [11, 1, 1.0]
    assert scores.loc["STYLE (position-averaged)", "n"] == 24
    length = scores.loc["LENGTH"]
    assert (length["n"], length["n_invalid"]) == (11, 1)
    assert length["bias"] == pytest.approx(10 / 11) and length["p_tie"] == pytest.approx(1 / 11)
    assert length["ci_low"] <= length["bias"] <= length["ci_high"] <= 1
    assert length["wilson_low"] < 10 / 11 < length["wilson_high"]
    assert scores.loc["TRUNCATION", "accuracy"] == 1.0
    assert pd.isna(scores.loc["POSITION", "accuracy"])
    assert scores.loc["MODEL_ORIGIN claude vs gpt4", ["bias", "p_tie"]].tolist() == [0, 1]
    assert scores.loc["MODEL_ORIGIN claude vs llama", "bias"] == -1.0  # llama, not claude
    assert scores.loc["MODEL_ORIGIN gpt4 vs llama", "bias"] == -1.0

    self_pref = score_probes(probes, verdicts, judge_family="Llama", n_boot=300).to_frame()
    row = self_pref[self_pref["bias_type"].str.startswith("MODEL_ORIGIN")]
    assert row["bias_type"].tolist() == ["MODEL_ORIGIN self-preference (Llama)"]
    assert row[["n", "bias"]].values.tolist() == [[8, 1.0]]
    with pytest.warns(ProbeWarning, match="reporting model preference per source pair"):
        fallback = score_probes(probes, verdicts, judge_family="mistral", n_boot=300)
    assert fallback.to_frame()["bias_type"].str.contains(" vs ").sum() == 3


def test_intervals_are_estimates_with_a_method(probes):
    result = score_probes(probes, _verdicts(probes, _choose_target_or_llama), n_boot=200,
                          level=0.9)
    length = result["LENGTH"]
    assert isinstance(length.bias, Estimate) and isinstance(length.p_target, Estimate)
    assert length.bias.method == "cluster percentile bootstrap"
    assert length.p_target.method == "wilson"
    assert length.bias.level == length.p_target.level == 0.9
    assert (length.bias.n, length.p_target.n) == (12, 12)  # 12 probes, 12 verdicts
    as_dict = result.to_dict()["scores"][0]
    assert set(as_dict["bias"]) == {"estimate", "ci_low", "ci_high", "level", "n", "method"}
    with pytest.raises(KeyError, match="no score for 'SHOUTING'; groups: POSITION, STYLE"):
        result["SHOUTING"]


def test_ties_and_the_non_target_are_scored_symmetrically(probes):
    style = probes[probes["bias_type"].isin(["STYLE", "STYLE_BA"])]
    verdicts = _verdicts(style, lambda r: "a")  # always slot a: markdown half the time
    scores = score_probes(style, verdicts, n_boot=300).to_frame().set_index("bias_type")
    assert scores.loc["STYLE", "bias"] == 1.0 and scores.loc["STYLE_BA", "bias"] == -1.0
    pooled = scores.loc["STYLE (position-averaged)"]
    assert pooled["bias"] == 0.0 and pooled["p_target"] == 0.5
    assert pooled["ci_low"] == pooled["ci_high"] == 0.0  # each record contributes +1 and -1


# ------------------------------------------------------------------ the per-call table

def test_to_probe_frame_flips_winners_shown_swapped():
    calls = pd.DataFrame({"pair_id": ["p", "p", "q", "q", "r"],
                          "order": ["ab", "ba", "ba", "ba", "BA "],
                          "winner": ["a", "a", "tie", None, "b"],
                          "outcome_detail": ["win", "win", "tie", "invalid", "win"],
                          "judge": "j"})
    frame = to_probe_frame(calls)
    assert frame["id"].tolist() == ["p", "p", "q", "q", "r"]
    assert frame["winner"].tolist() == ["a", "b", "tie", None, "a"]
    assert frame["shown_first"].tolist() == ["a", "b", "b", "b", "b"]
    assert frame["outcome_detail"].tolist() == ["win", "win", "tie", "invalid", "win"]
    assert set(frame["judge"]) == {"j"}


@pytest.mark.parametrize("calls, error, message", [
    ("calls.jsonl", TypeError, "`verdicts` must be a DataFrame of per-call verdicts"),
    (pd.DataFrame({"pair_id": ["p"], "winner": ["a"]}), ValueError,
     "`verdicts` needs an `order` column"),
    (pd.DataFrame({"order": ["ab"], "winner": ["a"]}), ValueError,
     "`verdicts` needs a `pair_id` column"),
    (pd.DataFrame({"pair_id": ["p", None], "order": "ab", "winner": "a"}), ValueError,
     "`verdicts` row 1: field `pair_id` is missing"),
    (pd.DataFrame({"pair_id": ["p"], "order": ["ab"]}), ValueError,
     "`verdicts` needs a `winner` column"),
])
def test_to_probe_frame_errors(calls, error, message):
    with pytest.raises(error, match=re.escape(message)):
        to_probe_frame(calls)


def test_a_per_call_table_scores_like_its_aggregate_except_position(probes):
    verdicts = _verdicts(probes, _choose_target_or_llama)
    orders = np.random.default_rng(5).choice(["ab", "ba"], len(verdicts))
    per_call = score_probes(probes, _as_calls(verdicts, orders), n_boot=300).to_frame()
    aggregate = score_probes(probes, verdicts, n_boot=300).to_frame()
    # The bootstrap draws the same numbers for every group, so all but POSITION match.
    pd.testing.assert_frame_equal(per_call.iloc[1:], aggregate.iloc[1:])
    # POSITION: the judge picked slot a, which was shown first only in the ab calls.
    position = per_call.iloc[0]
    assert position["target"] == "the answer shown first"
    n_ab = int((orders[probes["bias_type"] == "POSITION"] == "ab").sum())
    assert position["bias"] == pytest.approx((2 * n_ab - 12) / 12)


def test_both_orders_count_per_call_and_resample_together(probes):
    # A judge that always picks the answer shown first, shown each probe in both orders.
    calls = pd.DataFrame({"pair_id": np.repeat(probes["id"].to_numpy(), 2),
                          "order": ["ab", "ba"] * len(probes), "winner": "a",
                          "judge": "first-picker", "strategy": "S1"})
    result = score_probes(probes, calls, n_boot=300)
    assert result.per_call and result.judge == "first-picker"
    position, style, length = result["POSITION"], result["STYLE"], result["LENGTH"]
    assert (position.n, position.bias.estimate, position.bias.n) == (24, 1.0, 12)
    assert (style.bias.estimate, length.bias.estimate) == (0.0, 0.0)
    assert style.bias.ci_low == style.bias.ci_high == 0.0  # each probe: +1 and -1


def _relabelled(probes, calls, seed):
    """Every probe/pair id and item id replaced by an opaque random string."""
    rng = np.random.default_rng(seed)
    opaque = {old: rng.bytes(6).hex() for old in probes["id"]}
    items = {old: rng.bytes(6).hex() for old in pd.concat([calls["item_a"], calls["item_b"]])}
    return (probes.assign(id=probes["id"].map(opaque)),
            calls.assign(pair_id=calls["pair_id"].map(opaque),
                         item_a=calls["item_a"].map(items), item_b=calls["item_b"].map(items)))


def test_nothing_depends_on_how_ids_are_spelled(probes):
    rng = np.random.default_rng(11)
    ids = np.repeat(probes["id"].to_numpy(), rng.integers(0, 3, len(probes)))  # 0-2 calls
    orders = rng.choice(["ab", "ba"], len(ids))
    winners = rng.choice(["a", "b", "tie", None], len(ids), p=[0.45, 0.35, 0.1, 0.1])
    calls = pd.DataFrame({
        "pair_id": ids, "order": orders, "winner": winners,
        "outcome_detail": ["invalid" if w is None else "tie" if w == "tie" else "win"
                           for w in winners],
        # ids as judge_pairs spells them, and a spelling that once fooled the audit CLI
        "item_a": [f"{i}:b" if o == "ba" else f"{i}:a" for i, o in zip(ids, orders)],
        "item_b": [f"{i}:a" if o == "ba" else f"{i}:b" for i, o in zip(ids, orders)],
        "judge": "j"})
    expected = score_probes(probes, calls, judge_family="gpt4", n_boot=200, rng=3)
    assert sum(s.n_missing for s in expected) > 0 and sum(s.n_invalid for s in expected) > 0
    for seed in range(3):
        new_probes, new_calls = _relabelled(probes, calls, seed)
        shuffled = new_calls.sample(frac=1, random_state=seed)
        for table in (new_calls, shuffled):
            again = score_probes(new_probes, table, judge_family="gpt4", n_boot=200, rng=3)
            assert again.to_dict() == expected.to_dict()
    # Item ids are never read: ones that contradict the order change nothing.
    liar = calls.assign(item_a=calls["item_b"], item_b=calls["item_a"])
    assert score_probes(probes, liar, judge_family="gpt4", n_boot=200,
                        rng=3).to_dict() == expected.to_dict()


def test_tables_must_be_data_frames(probes):
    with pytest.raises(TypeError, match="`probes` must be the DataFrame from build_probes"):
        score_probes(probes.to_dict("records"), pd.DataFrame())
    with pytest.raises(TypeError, match="`verdicts` must be a DataFrame"):
        score_probes(probes, "calls.jsonl")


def test_a_loaded_per_call_file_is_named_in_errors(tmp_path, probes):
    path = tmp_path / "calls.jsonl"
    write_table(pd.DataFrame({"pair_id": probes["id"].head(3), "order": ["ab", "up", "ba"],
                              "winner": "a"}), path)
    with pytest.raises(ValueError, match=re.escape(
            "calls.jsonl line 2: field `order` must be ab (the probe's a shown first) or ba; "
            "got 'up'")):
        score_probes(probes, read_table(path))


def test_score_argument_errors(probes):
    verdicts = pd.DataFrame({"id": probes["id"], "winner": "tie"})
    calls = verdicts.rename(columns={"id": "pair_id"}).assign(order="ab")
    cases = [
        ({"verdicts": verdicts.drop(columns="winner")}, "`verdicts` needs a `winner` column"),
        ({"verdicts": verdicts.drop(columns="id")}, "`verdicts` needs a `pair_id` column"),
        ({"verdicts": verdicts.assign(winner="A>B")},
         "`verdicts` row 0: field `winner` must be a, b, tie or empty"),
        ({"verdicts": pd.concat([verdicts, verdicts])},
         "more than one row for pair 'POSITION-0'; give one aggregated verdict per probe"),
        ({"verdicts": calls.assign(order="up")}, "field `order` must be ab"),
        ({"verdicts": calls.head(1).assign(pair_id="nope")},
         "`verdicts` row 0: field `pair_id` names pair 'nope', which is not a probe id"),
        ({"verdicts": calls.assign(winner="a", outcome_detail="invalid")},
         "field `winner` 'a' does not match `outcome_detail` 'invalid'"),
        ({"verdicts": calls.assign(judge=["j1", "j2"] * (len(calls) // 2))},
         "holds verdicts of 2 judges (j1, j2); score each judge on its own"),
        ({"level": 1.5}, "`level` must be between 0 and 1"),
        ({"n_boot": 0}, "`n_boot` must be a positive integer"),
        ({"judge_family": ""}, "`judge_family` must be a non-empty string"),
        ({"probes": probes.drop(columns="target")}, "`probes` needs a `target` column"),
        ({"probes": probes.assign(target=None)}, "`probes` row 'POSITION-0': `target` must be"),
        ({"probes": pd.concat([probes, probes])}, "`probes` has the id 'POSITION-0' more than"),
    ]
    for override, message in cases:
        kwargs = {"probes": probes, "verdicts": verdicts, **override}
        with pytest.raises(ValueError, match=re.escape(message)):
            score_probes(kwargs.pop("probes"), kwargs.pop("verdicts"), **kwargs)


# ------------------------------------------------------------------ end to end

def _judge(probes, strategy="B0", **knobs):
    backend = fairjudge.judges.get_backend("simulated", **knobs)
    return fairjudge.strategies.judge_pairs(load_pairs(probes[["id", "question", "a", "b"]]),
                                            strategy, [backend])


POSITION_LOGIT = 1.0


def test_end_to_end_with_a_biased_simulated_judge(probes):
    """A judge with length and first-slot biases, run with six seeds (the simulated backend
    hashes its seed with each request, so a seed is an independent draw of every verdict).

    Per run, measured over 40 seeds: LENGTH bias always 1.0; TRUNCATION accuracy mean 0.90,
    minimum 0.75; POSITION bias mean 0.45, sd 0.24 (above 0 in only 90% of runs). Over six
    runs: LENGTH bias > 0.5 in every run, mean TRUNCATION accuracy >= 0.75 (4 sd below its
    mean), and the mean POSITION bias within 4 standard errors of its closed form
    2 sigmoid(1) - 1 = 0.46 (the binomial sd of one run of 12 identical-answer probes is
    2 sqrt(p (1 - p) / 12)).
    """
    seeds = range(6)
    runs, last = [], None
    for seed in seeds:
        last = _judge(probes, bias=3.0, position=POSITION_LOGIT, seed=seed)
        scores = score_probes(probes, last.calls).to_frame().set_index("bias_type")
        assert scores.loc["POSITION", "target"] == "the answer shown first"
        assert (scores["n"] + scores["n_invalid"] + scores["n_missing"] > 0).all()
        runs.append(scores)
    assert min(r.loc["LENGTH", "bias"] for r in runs) > 0.5
    assert np.mean([r.loc["TRUNCATION", "accuracy"] for r in runs]) >= 0.75
    p_first = special.expit(POSITION_LOGIT)
    position = [r.loc["POSITION", "bias"] for r in runs]
    n_probes = int(runs[0].loc["POSITION", "n"])
    se = 2 * np.sqrt(p_first * (1 - p_first) / (n_probes * len(seeds)))
    assert abs(np.mean(position) - (2 * p_first - 1)) < 4 * se, position
    # With the aggregate instead, the first-shown slot is unknown: B0 hashes the order, so
    # POSITION would measure the strategy's residual slot-a preference; that is said out loud.
    with pytest.warns(ProbeWarning, match="pass the per-call table"):
        score_probes(probes, last.aggregate)


def test_end_to_end_in_both_orders(probes):
    # S1 shows every probe in both orders: the per-call table scores each call, so the
    # judge's first-position lean is measured even though S1's aggregate cancels it.
    # P(first) = sigmoid(2) = 0.88: the bias 2p - 1 = 0.76 has sd 2 sqrt(p (1-p) / 24) = 0.13.
    result = _judge(probes, "S1", bias=0.0, position=2.0)
    position = score_probes(probes, result.calls)["POSITION"]
    p_first = special.expit(2.0)
    assert position.n == 24
    assert abs(position.bias.estimate - (2 * p_first - 1)) < 4 * 2 * np.sqrt(
        p_first * (1 - p_first) / 24)


def test_end_to_end_with_an_unbiased_simulated_judge(probes):
    """An unbiased judge raises no warning, and its POSITION interval holds 0 (in 97.5% of
    40 measured seeds, so one run may miss): a one-sided binomial test over eight seeds that
    the coverage is not below 95% (fails below 5 of 8; false-failure rate 3e-5 at 97.5%)."""
    covered = 0
    for seed in range(8):
        result = _judge(probes, bias=0.0, position=0.0, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            scores = score_probes(probes, result.calls)
        position = scores["POSITION"].bias
        covered += position.ci_low <= 0 <= position.ci_high
    assert stats.binomtest(covered, 8, 0.95, alternative="less").pvalue > 1e-3, covered