"""Strategy plans, aggregation rules, and judging pairs end to end (simulated, replay)."""

import pandas as pd
import pytest

from fairjudge.data import Outcome, load_pairs, load_verdicts
from fairjudge.judges import CompletionCache, get_backend
from fairjudge.strategies import STRATEGIES, get_strategy, judge_pairs, to_pair_frame

A, B, T, X = Outcome.A, Outcome.B, Outcome.TIE, Outcome.INVALID


@pytest.mark.parametrize("name, n_calls", [("B0", 1), ("S1", 2), ("S2", 3), ("S4", 1),
                                           ("S5", 1), ("S6", 1), ("S7", 6), ("S8", 2),
                                           ("CWO", 2)])
def test_cost_multipliers(name, n_calls):
    strategy = get_strategy(name)
    assert strategy.cost_multiplier() == n_calls
    assert len(strategy.calls("p1", seed=0)) == n_calls


def test_cross_family_needs_two_backends():
    assert get_strategy("S3").cost_multiplier(3) == 3
    with pytest.raises(ValueError, match="at least two backends"):
        get_strategy("S3").calls("p", seed=0, n_backends=1)


def test_single_order_is_a_function_of_pair_strategy_and_seed():
    b0 = get_strategy("B0")
    orders = [b0.calls(f"p{i}", seed=3)[0].order for i in range(400)]
    assert orders == [b0.calls(f"p{i}", seed=3)[0].order for i in range(400)]
    assert 150 < orders.count("ab") < 250
    assert orders != [b0.calls(f"p{i}", seed=4)[0].order for i in range(400)]


@pytest.mark.parametrize("name, outcomes, expected", [
    ("S1", [A, A], A), ("S1", [A, B], T), ("S1", [A, X], X), ("S1", [T, T], T),
    ("CWO", [A, B], Outcome.ABSTAIN), ("CWO", [B, B], B), ("CWO", [A, T], Outcome.ABSTAIN),
    ("S2", [A, A, B], A), ("S2", [A, B, T], T), ("S2", [A, X, X], X), ("S2", [A, A, X], A),
    ("S7", [A, A, A, B, B, B], T), ("S7", [A, A, A, A, B, X], A),
    ("B0", [X], X), ("B0", [B], B),
])
def test_aggregation_rules(name, outcomes, expected):
    assert get_strategy(name).aggregate(outcomes) is expected


def test_verdicts_map_back_to_the_pair_frame():
    assert to_pair_frame(A, "ab") is A and to_pair_frame(A, "ba") is B
    assert to_pair_frame(T, "ba") is T and to_pair_frame(X, "ba") is X


@pytest.fixture
def pairs():
    records = [{"id": f"p{i}", "question": f"Question {i}?",
                "a": "short answer", "b": " ".join(["much longer answer"] * (i % 5 + 1))}
               for i in range(40)]
    return load_pairs(pd.DataFrame(records))


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - {"S3"}))
def test_every_strategy_runs_and_records_calls(pairs, name):
    result = judge_pairs(pairs, name, [get_backend("simulated", bias=2.0, position=0.5)],
                         seed=1)
    strategy = get_strategy(name)
    assert len(result.calls) == 40 * strategy.cost_multiplier()
    assert len(result.aggregate) == 40 and not result.incomplete
    assert set(result.calls["strategy"]) == {name}
    # The calls form a valid verdict table, item_a being the answer shown first.
    calls = load_verdicts(result.calls)
    for row in calls.itertuples():
        first_text = pairs.set_index("id").loc[row.pair_id, "text_a" if row.order == "ab" else "text_b"]
        assert row.item_a.endswith(":a" if row.order == "ab" else ":b")
        assert first_text
    load_verdicts(result.aggregate)


def test_cross_family_majority(pairs):
    judges = [get_backend("simulated", bias=b, seed=s, model=f"judge{s}")
              for s, b in enumerate([2.0, 2.0, -2.0])]
    result = judge_pairs(pairs, "S3", judges, seed=0)
    assert len(result.calls) == 120
    assert set(result.calls["judge"]) == {f"simulated:judge{s}" for s in range(3)}
    assert result.aggregate["judge"].iloc[0].count("+") == 2


def test_consistent_wins_only_abstains_where_swap_disagrees(pairs):
    backend = [get_backend("simulated", bias=0.0, position=3.0)]  # mostly "first wins"
    s1 = judge_pairs(pairs, "S1", backend, seed=0).aggregate.set_index("pair_id")
    cwo = judge_pairs(pairs, "CWO", backend, seed=0).aggregate.set_index("pair_id")
    assert (s1["outcome_detail"] == "tie").sum() > 20
    assert ((s1["outcome_detail"] == "tie") == (cwo["outcome_detail"] == "abstain")).all()
    assert cwo["winner"][cwo["outcome_detail"] == "abstain"].isna().all()


def test_replay_reproduces_recorded_verdicts(pairs, tmp_path):
    sim = judge_pairs(pairs, "S1", [get_backend("simulated", bias=1.0, position=0.7)], seed=2)
    path = tmp_path / "recorded.jsonl"
    sim.calls[["item_a", "item_b", "winner", "judge"]].to_json(path, orient="records",
                                                                lines=True)
    replay = judge_pairs(pairs, "S1", [get_backend("replay", verdicts=path)], seed=5)
    pd.testing.assert_series_equal(replay.aggregate.set_index("pair_id")["winner"],
                                   sim.aggregate.set_index("pair_id")["winner"])


def test_replay_refuses_an_unrecorded_order(pairs, tmp_path):
    path = tmp_path / "one-order.jsonl"
    pd.DataFrame({"item_a": ["p0:a"], "item_b": ["p0:b"], "winner": ["a"]}).to_json(
        path, orient="records", lines=True)
    from fairjudge.judges import JudgeBackendError
    with pytest.raises(JudgeBackendError, match="no verdict recorded for 'p0:b' shown before"):
        judge_pairs(pairs.iloc[:1], "S1", [get_backend("replay", verdicts=path)])


def test_reference_is_generated_once_per_question_and_cached(pairs, tmp_path):
    cache = CompletionCache(tmp_path / "c.sqlite")
    backend = get_backend("simulated", bias=1.0)
    backend.cacheable = True  # exercise the cache path with a free backend
    first = judge_pairs(pairs, "S6", [backend], cache=cache)
    assert first.report.fresh == 40 + 40  # 40 references + 40 verdicts
    second = judge_pairs(pairs, "S6", [backend], cache=cache)
    assert second.report.fresh == 0 and second.report.cache_hits == 80
    pd.testing.assert_frame_equal(first.aggregate, second.aggregate)
    # Every reference-generation call is recorded, once per question.
    assert len(first.references) == 40 and first.references["ok"].all()
    assert first.references["question"].is_unique
    assert second.references["cached"].all()


def test_judging_in_chunks_gives_the_tables_of_one_chunk(pairs, tmp_path, monkeypatch):
    """Pairs are planned, judged and parsed a chunk at a time (so prompts of a large table
    are never all held); the call and aggregate tables must not depend on the chunking."""
    import fairjudge.strategies._judging as judging

    def run(chunk, name):
        monkeypatch.setattr(judging, "PAIRS_PER_CHUNK", chunk)
        backend = get_backend("simulated", bias=1.0, position=0.8)
        return judge_pairs(pairs, "S1", [backend], samples=2, seed=3,
                           cache=CompletionCache(tmp_path / f"{name}.sqlite"))

    whole, chunked = run(1000, "whole"), run(7, "chunked")
    assert len(chunked.calls) == 40 * 2 * 2
    pd.testing.assert_frame_equal(chunked.calls.drop(columns="latency"),
                                  whole.calls.drop(columns="latency"))
    pd.testing.assert_frame_equal(chunked.aggregate, whole.aggregate)
    assert chunked.report.requested == whole.report.requested == 160


def test_one_progress_bar_per_backend_counts_every_planned_call(pairs, tmp_path, monkeypatch,
                                                                 capsys):
    import fairjudge.strategies._judging as judging
    from fairjudge.judges import RunOptions

    monkeypatch.setattr(judging, "PAIRS_PER_CHUNK", 6)
    cache = CompletionCache(tmp_path / "c.sqlite")
    backend = get_backend("simulated", bias=1.0)
    backend.cacheable = True
    judge_pairs(pairs.iloc[:20], "S1", [backend], cache=cache)  # half the calls cached
    capsys.readouterr()
    judge_pairs(pairs, "S1", [backend], cache=cache, options=RunOptions(progress=True))
    err = capsys.readouterr().err
    assert err.count("80/80") == 1, err  # one bar, complete: cached calls count as done
    assert "/14" not in err and "/12" not in err  # no bar per chunk


def test_rate_limits_span_the_chunks_of_a_run(pairs, tmp_path, monkeypatch):
    """Each chunk used to start fresh limiters: the backlog of the last chunk was forgotten
    and the token limiter relearned its tokens per byte."""
    import fairjudge.strategies._judging as judging
    from fairjudge.judges import RunOptions, _runner

    made = []
    real = _runner.TokenRateLimiter.__init__

    def counting(self, per_minute):
        made.append(per_minute)
        real(self, per_minute)

    monkeypatch.setattr(_runner.TokenRateLimiter, "__init__", counting)
    monkeypatch.setattr(judging, "PAIRS_PER_CHUNK", 7)
    judge_pairs(pairs, "S1", [get_backend("simulated")], seed=0,
                cache=CompletionCache(tmp_path / "c.sqlite"),
                options=RunOptions(tokens_per_minute=1e9, requests_per_minute=1e9))
    assert made == [1e9]  # one limiter for the whole run (40 pairs in 6 chunks)
