"""OpenAI and Anthropic backends against a real loopback server, through the runner."""

import asyncio

import pandas as pd
import pytest

pytest.importorskip("aiohttp", reason="provider backends need the [openai] extra (aiohttp)")

from fairjudge.data import Outcome, load_pairs  # noqa: E402
from fairjudge.judges import (GenerationSettings, JudgeBackendError, JudgeRequest, Message,  # noqa: E402
                              PriceTable, Price, RunOptions, RunReport, CompletionCache,
                              execute_requests, get_backend, parse_verdicts,
                              run_requests)
from fairjudge.judges.testing import FaultPlan, call_key, judge_prompt  # noqa: E402
from fairjudge.strategies import judge_pairs  # noqa: E402

FAST = RunOptions(concurrency=16, backoff_base=0.001, backoff_max=0.01)


@pytest.fixture
def server(fake_server, monkeypatch):
    monkeypatch.setenv("TEST_KEY", "sk-test-secret")
    return fake_server


def openai(server, **kw):
    return get_backend("openai", model="judge-mini", base_url=server.base_url,
                       api_key_env="TEST_KEY", **kw)


def anthropic(server, **kw):
    return get_backend("anthropic", model="claude-test", base_url=server.base_url,
                       api_key_env="TEST_KEY", **kw)


def letter_request(a, b, **settings):
    text = judge_prompt("Q?", a, b)
    return JudgeRequest(messages=(Message("user", text),), template="letter",
                        template_version="1", settings=GenerationSettings(**settings))


def make_pairs(n, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    return load_pairs(pd.DataFrame([
        {"id": f"p{i}", "question": f"Question {i}?",
         "a": " ".join(["alpha"] * int(rng.integers(3, 60))),
         "b": " ".join(["beta"] * int(rng.integers(3, 60)))} for i in range(n)]))


def test_openai_verdicts_usage_and_logprobs(server):
    requests = [letter_request("short", "a much longer answer here", logprobs=5),
                letter_request("a much longer answer here", "short", logprobs=5)]
    verdicts = parse_verdicts(run_requests(openai(server), requests, options=FAST))
    assert [v.outcome for v in verdicts] == [Outcome.B, Outcome.A]
    assert verdicts[0].usage.input_tokens > 0 and verdicts[0].usage.output_tokens > 0
    probs = verdicts[0].probabilities
    assert set(probs) == {"A", "B", "tie"} and probs["B"] > probs["A"]
    assert sum(probs.values()) == pytest.approx(1.0)


def test_anthropic_never_sends_temperature(server):
    # The fake server rejects any request carrying `temperature` with HTTP 400.
    verdicts = parse_verdicts(run_requests(anthropic(server), [letter_request("x", "y y y", temperature=0.7)],
                            options=FAST))
    assert verdicts[0].outcome is Outcome.B
    body = anthropic(server).request_body(letter_request("x", "y", temperature=0.7))
    assert "temperature" not in body and body["max_tokens"] == 1024


def test_reasoning_budget_exhausted_is_invalid_never_a_side(server):
    report = RunReport()
    results = run_requests(openai(server), [letter_request("a", "b b", max_completion_tokens=2)],
                           options=FAST, report=report)
    assert results[0].completion.finish_reason == "length" and report.fresh == 1
    verdicts = parse_verdicts(results)
    assert verdicts[0].outcome is Outcome.INVALID
    assert "completion budget ran out" in verdicts[0].detail


def test_authentication_error_stops_the_run(server, monkeypatch):
    monkeypatch.delenv("TEST_KEY")
    backend = get_backend("openai", model="m", base_url=server.base_url, api_key_env="TEST_KEY")
    backend._headers.pop("Authorization")
    with pytest.raises(JudgeBackendError, match="HTTP 401"):
        run_requests(backend, [letter_request("a", "b")], options=FAST)


def test_missing_key_for_the_real_endpoint_is_an_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(JudgeBackendError, match="set the OPENAI_API_KEY environment variable"):
        get_backend("openai", model="gpt-4o-mini")


def test_faults_are_retried_to_the_same_verdicts(server, tmp_path):
    """Acceptance: with 20% of requests answered 429 or 500, a 500-pair run completes with
    the same verdicts as a fault-free run. At most 4 faults per call, so the 9 attempts
    always suffice (uncapped, one of the 500 calls would fail all 9 with probability 3e-4);
    about 125 retries are expected (sd ~ 11)."""
    pairs = make_pairs(500)
    clean = judge_pairs(pairs, "B0", [openai(server)], options=FAST, seed=3,
                        cache=CompletionCache(tmp_path / "clean.sqlite"))
    server.faults = FaultPlan(rate_429=0.1, rate_500=0.1, retry_after=0.001,
                              max_faults_per_call=4)
    before = server.request_count()
    faulty = judge_pairs(pairs, "B0", [openai(server)], options=FAST, seed=3,
                         cache=CompletionCache(tmp_path / "faulty.sqlite"))
    assert faulty.report.retries > 50 and faulty.report.failed == 0
    assert server.request_count() - before == 500 + faulty.report.retries
    pd.testing.assert_frame_equal(clean.aggregate, faulty.aggregate)


@pytest.mark.parametrize("fault", [FaultPlan(malformed_rate=0.3, max_faults_per_call=4),
                                   FaultPlan(drop_rate=0.3, max_faults_per_call=4),
                                   FaultPlan(rate_529=0.3, max_faults_per_call=4)])
def test_malformed_bodies_drops_and_overload_are_retried(server, fault):
    # Capped at 4 faults per call, 9 attempts always suffice; P(no fault at all among the 39
    # calls) = 0.7^39 ~ 1e-6.
    server.faults = fault
    report = RunReport()
    requests = [letter_request("x " * i, "y " * (40 - i)) for i in range(1, 40)]
    verdicts = parse_verdicts(run_requests(anthropic(server), requests, options=FAST, report=report))
    assert all(v is not None and v.outcome in (Outcome.A, Outcome.B) for v in verdicts)
    assert report.retries > 0 and report.failed == 0


def test_slow_answers_hit_the_timeout_and_are_retried(server):
    # The fault cap does not apply to slow answers: each attempt is slow with probability
    # 1/2, so 21 attempts per call leave a 16-call run unfinished with probability 8e-6, and
    # P(no slow first attempt) = 2^-16.
    server.faults = FaultPlan(slow_rate=0.5, slow_seconds=1.0)
    report = RunReport()
    backend = openai(server, timeout=0.3)
    options = RunOptions(concurrency=16, max_retries=20, backoff_base=0.001, backoff_max=0.01)
    verdicts = parse_verdicts(run_requests(
        backend, [letter_request("a", f"b {i}") for i in range(16)], options=options,
        report=report))
    assert all(v is not None for v in verdicts)
    assert report.retries > 0


def test_retries_give_up_after_max_retries(server):
    server.faults = FaultPlan(rate_500=1.0)
    report = RunReport()
    options = RunOptions(max_retries=2, backoff_base=0.001, backoff_max=0.001)
    verdicts = parse_verdicts(run_requests(openai(server), [letter_request("a", "b")], options=options,
                            report=report))
    assert verdicts == [None] and report.failed == 1 and report.retries == 2
    assert "gave up after 3 attempts" in report.errors[0]


def test_retry_after_is_honoured(server):
    server.faults = FaultPlan(rate_429=1.0, retry_after=0.3, max_faults_per_call=1)
    report = RunReport()
    import time
    start = time.perf_counter()
    options = RunOptions(backoff_base=0.001, backoff_max=5.0)
    run_requests(openai(server), [letter_request("a", "bb")], options=options, report=report)
    assert time.perf_counter() - start >= 0.3 and report.retries == 1
    # ... but never longer than backoff_max.
    server.faults = FaultPlan(rate_429=1.0, retry_after=30.0, max_faults_per_call=1)
    start = time.perf_counter()
    run_requests(openai(server), [letter_request("a", "bbb")],
                 options=RunOptions(backoff_base=0.001, backoff_max=0.2), report=report)
    assert time.perf_counter() - start < 5


def test_spend_cap_stops_before_it_is_exceeded(server, tmp_path):
    pairs = make_pairs(200, seed=1)
    prices = PriceTable({"judge-mini": Price(1000.0, 4000.0)})  # dollars per million tokens
    options = RunOptions(concurrency=8, max_cost=5.0, prices=prices, backoff_base=0.001)
    result = judge_pairs(pairs, "S1", [openai(server)], options=options,
                         settings=GenerationSettings(temperature=0.0, max_tokens=400),
                         cache=CompletionCache(tmp_path / "c.sqlite"))
    report = result.report
    assert report.stopped_by_cap and 0 < report.fresh < 400
    assert report.cost <= 5.0
    assert result.calls["cost"].sum() == pytest.approx(report.cost)
    assert len(result.incomplete) > 0


def test_spend_cap_is_shared_by_the_backends_of_a_cross_family_run(server, tmp_path):
    """S3 runs one batch per backend concurrently; the cap covers them together, and CJK
    text (about one token per character) cannot break the worst-case estimate."""
    pairs = load_pairs(pd.DataFrame([{"id": f"p{i}", "question": "问题" * 20,
                                      "a": "答案" * (i % 30 + 5), "b": "回答" * (i % 17 + 5)}
                                     for i in range(120)]))
    prices = PriceTable({"judge-mini": Price(1000.0, 4000.0), "judge-2": Price(1000.0, 4000.0)})
    options = RunOptions(concurrency=16, max_cost=3.0, prices=prices, backoff_base=0.001)
    second = get_backend("openai", model="judge-2", base_url=server.base_url,
                         api_key_env="TEST_KEY")
    result = judge_pairs(pairs, "S3", [openai(server), second], options=options,
                         settings=GenerationSettings(temperature=0.0, max_tokens=50))
    assert result.report.stopped_by_cap and result.report.cost <= 3.0
    assert result.report.fresh >= 4 and result.report.skipped_by_cap > 0


def test_a_rejected_request_fails_alone(server, monkeypatch):
    """A 400 (e.g. context too long) fails that call; the others go on."""
    from fairjudge.judges import RequestRejected
    backend = openai(server)
    original = backend.complete

    async def complete(request):
        if "poison" in request.messages[-1].content:
            raise RequestRejected("openai:judge-mini: HTTP 400 context_length_exceeded")
        return await original(request)

    monkeypatch.setattr(backend, "complete", complete)
    report = RunReport()
    verdicts = parse_verdicts(run_requests(backend, [letter_request("poison", "b"), letter_request("a", "b b b")],
                            options=FAST, report=report))
    assert verdicts[0] is None and verdicts[1].outcome is Outcome.B
    assert report.failed == 1 and "context_length_exceeded" in report.errors[0]


def test_rubric_scores_are_recorded_with_each_call(server):
    import json
    result = judge_pairs(make_pairs(5), "S4", [openai(server)], options=FAST)
    scores = [json.loads(s) for s in result.calls["scores"]]
    assert all(set(s) == {"A", "B"} and "accuracy" in s["A"] for s in scores)


def test_identical_requests_are_sent_once(server):
    before = server.request_count()
    request = letter_request("same", "pair here")
    verdicts = parse_verdicts(run_requests(openai(server), [request] * 5, options=FAST))
    assert server.request_count() - before == 1 and len({v.key for v in verdicts}) == 1


def test_cached_rerun_sends_nothing(server, tmp_path):
    cache = CompletionCache(tmp_path / "c.sqlite")
    requests = [letter_request("a " * i, "b " * 3) for i in range(1, 30)]
    first = parse_verdicts(run_requests(openai(server), requests, cache=cache, options=FAST))
    before = server.request_count()
    report = RunReport()
    second = parse_verdicts(run_requests(openai(server), requests, cache=cache, options=FAST, report=report))
    assert server.request_count() == before and report.cache_hits == 29
    assert [v.outcome for v in first] == [v.outcome for v in second]


def test_server_sees_the_request_we_meant(server):
    backend = openai(server)
    request = letter_request("a", "b", temperature=0.3, max_tokens=7, json_response=True)
    body = backend.request_body(request)
    assert body["temperature"] == 0.3 and body["max_tokens"] == 7
    assert body["response_format"] == {"type": "json_object"}
    asyncio.run(execute_requests(backend, [request], options=FAST))
    assert server.counts[call_key(body)] >= 1


def test_a_new_parser_version_reparses_cached_completions_without_new_requests(server,
                                                                               tmp_path):
    """Generate, cache, then parse: the cache holds completions, so a parser change applies
    to every cached call and the provider sees zero new requests."""
    from dataclasses import dataclass

    from fairjudge.judges import VERDICT_PARSER, ParsedVerdict, VerdictParser

    @dataclass(frozen=True)
    class TieOnShortReasoning(VerdictParser):
        """A 'fixed' parser: declares a tie when the reasoning mentions a 1-word answer."""

        version: str = "99"

        def parse(self, completion, *, kind="verdict"):
            if " has 1 words" in completion.text:
                return ParsedVerdict(Outcome.TIE, "")
            return super().parse(completion, kind=kind)

    pairs = load_pairs(pd.DataFrame(
        [{"id": f"p{i}", "question": "Q?", "a": "x " * (i % 3 + 1), "b": "y " * (3 - i % 3)}
         for i in range(12)]))
    cache = CompletionCache(tmp_path / "c.sqlite")
    first = judge_pairs(pairs, "S1", [openai(server)], cache=cache, options=FAST)
    requests_before = server.request_count()
    second = judge_pairs(pairs, "S1", [openai(server)], cache=cache, options=FAST,
                         parser=TieOnShortReasoning())
    cache.close()
    assert server.request_count() == requests_before  # nothing was paid again
    assert second.report.cache_hits == second.report.distinct and second.report.fresh == 0
    assert set(first.calls["parser"]) == {VERDICT_PARSER.label}
    assert set(second.calls["parser"]) == {"verdict@99"}
    changed = first.calls["winner"].to_numpy() != second.calls["winner"].to_numpy()
    assert changed.any() and (second.calls.loc[changed, "winner"] == "tie").all()
    assert (first.calls["raw"] == second.calls["raw"]).all()


def test_a_key_given_where_its_variable_name_belongs_is_never_shown(capsys, tmp_path):
    from fairjudge._cli import main

    secret = "sk-proj-Abc123DEF456ghi789JKL"
    with pytest.raises(ValueError) as err:
        get_backend("openai", model="m", api_key_env=secret)
    assert secret not in str(err.value) and "not a valid name" in str(err.value)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"id": "p", "question": "q", "a": "x", "b": "y"}\n')
    code = main(["judge", str(pairs), "--backend", "openai", "--judge-model", "m",
                 "--api-key-env", secret, "--out", str(tmp_path / "v.jsonl")])
    captured = capsys.readouterr()
    assert code == 2 and "not a valid name" in captured.err
    assert secret not in captured.err + captured.out


def test_the_token_rate_limit_learns_tokens_from_reported_usage(server, monkeypatch):
    """Formerly --tpm reserved prompt bytes plus the output budget for every call, about 4x
    the tokens a provider counts for English. The estimate is now scaled by the tokens per
    byte the provider reports, and what a call did not use is refunded."""
    from fairjudge.judges import _runner

    reserved, refunded = [], []
    real_acquire, real_refund = _runner.RateLimiter.acquire, _runner.RateLimiter.refund

    async def acquire(self, amount=1.0):
        reserved.append(amount)
        await real_acquire(self, 0.0)  # counted, not waited for

    def refund(self, amount):
        refunded.append(amount)
        real_refund(self, amount)

    monkeypatch.setattr(_runner.RateLimiter, "acquire", acquire)
    monkeypatch.setattr(_runner.RateLimiter, "refund", refund)
    requests = [letter_request("alpha " * (10 + i), "beta " * (30 - i), max_tokens=32)
                for i in range(12)]
    report = RunReport()
    run_requests(openai(server), requests, report=report,
                 options=RunOptions(concurrency=1, tokens_per_minute=1e9))
    assert len(reserved) == len(refunded) == 12  # every answer settles its reservation
    used = report.input_tokens + report.output_tokens
    prompt_bytes = sum(_runner.estimated_input_tokens(r) for r in requests)
    # The first call is reserved at the byte bound; the later ones near the true count.
    assert reserved[0] == _runner.estimated_input_tokens(requests[0]) + 32
    net = sum(reserved) - sum(refunded)
    assert net == pytest.approx(used, rel=1e-9)  # every reservation settled to what was used
    assert sum(reserved[1:]) < 0.5 * (prompt_bytes + 32 * 12)


def test_without_reported_usage_the_token_reservation_stands():
    from fairjudge.judges._runner import TokenRateLimiter, estimated_input_tokens
    from fairjudge.judges._types import Usage

    limiter = TokenRateLimiter(60_000)
    request = letter_request("alpha " * 50, "beta " * 50)
    before = limiter.estimate(request, 16)
    limiter.settle(request, before, Usage(10, 5, reported=False))
    assert limiter.estimate(request, 16) == before == estimated_input_tokens(request) + 16
    limiter.settle(request, before, Usage(estimated_input_tokens(request) // 4, 5))
    assert limiter.estimate(request, 16) == pytest.approx(
        estimated_input_tokens(request) // 4 + 16)


def test_a_rate_limiter_refund_moves_its_schedule_both_ways():
    from fairjudge.judges._runner import RateLimiter

    limiter = RateLimiter(60.0)  # one unit per second
    asyncio.run(limiter.acquire(10.0))  # the next unit is due ~10 s from now
    due = limiter._next
    limiter.refund(4.0)
    assert limiter._next == pytest.approx(due - 4.0, abs=1.0)
    limiter.refund(-3.0)  # three units more were used than acquired
    assert limiter._next == pytest.approx(due - 1.0, abs=1.0)
    limiter.refund(1e6)  # never scheduled before now
    assert limiter._next >= due - 10.0 - 1.0
