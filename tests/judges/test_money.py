"""Money under faults: the spend cap holds against a provider that bills like a real one.

The loopback server bills every request that reaches generation -- answers the client timed
out on, truncated or malformed bodies, dropped connections -- and may omit or corrupt the
usage it reports. Whatever it does, what it bills must stay within the client's cap, and two
processes sharing a cache must never pay twice for one call.
"""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("aiohttp", reason="provider backends need the [openai] extra (aiohttp)")

from fairjudge.data import load_pairs  # noqa: E402
from fairjudge.judges import (  # noqa: E402
    CompletionCache,
    GenerationSettings,
    PriceTable,
    RunOptions,
    get_backend,
)
from fairjudge.judges._cache import BUSY, CLAIMED, DONE  # noqa: E402
from fairjudge.judges.testing import FakeProviderServer, FaultPlan  # noqa: E402
from fairjudge.strategies import judge_pairs  # noqa: E402

PRICE = (10.0, 30.0)  # dollars per million input / output tokens, on both sides


def pairs(n, words=60):
    return load_pairs(pd.DataFrame([
        {"id": f"p{i}", "question": f"Question number {i}?",
         "a": " ".join(["alpha"] * (words + i % 13)), "b": " ".join(["beta"] * (words - i % 7))}
        for i in range(n)]))


def options(cap, **kw):
    return RunOptions(concurrency=16, backoff_base=0.001, backoff_max=0.01, max_cost=cap,
                      prices=PriceTable.from_dict({"judge-mini": {"input": PRICE[0],
                                                                  "output": PRICE[1]}}), **kw)


@pytest.fixture
def billing(monkeypatch):
    monkeypatch.setenv("TEST_KEY", "sk-test")
    with FakeProviderServer(seed=5, prices=PRICE) as server:
        yield server


def backend(server, **kw):
    return get_backend("openai", model="judge-mini", base_url=server.base_url,
                       api_key_env="TEST_KEY", **kw)


SETTINGS = GenerationSettings(max_tokens=64)


def test_attempts_billed_but_never_read_count_against_the_cap(billing, tmp_path):
    """Half the answers arrive after the client's timeout (billed, never read). Counting
    only answers read, the run would pay about twice its cap; every attempt is charged at
    its worst case while unknown, so what the server bills stays within the cap."""
    billing.faults = FaultPlan(slow_rate=0.5, slow_seconds=0.6)
    cap = 0.05
    result = judge_pairs(pairs(300), "B0", [backend(billing, timeout=0.2)],
                         cache=CompletionCache(tmp_path / "c.sqlite"), options=options(cap),
                         settings=SETTINGS)
    report = result.report
    assert report.stopped_by_cap and result.incomplete
    assert report.failed_attempts_billed > 0 and report.cost_failed > 0
    assert billing.billed <= cap, (billing.billed, report.summary())
    assert report.cost <= cap + 1e-12
    assert "failed attempts possibly billed" in report.summary()
    assert f"cap ${cap:g} for the whole job" in report.summary()


def test_answers_without_usage_also_get_the_characters_over_four_estimate(billing, tmp_path):
    """Beside the worst case (which the cap counts), the report gives the strategies study's
    typical estimate: ceil(characters / 4) tokens of prompt and of output, priced; recomputed
    here from the stored requests and answers."""
    billing.faults = FaultPlan(missing_usage_rate=1.0)
    result = judge_pairs(pairs(20), "B0", [backend(billing)], settings=SETTINGS,
                         cache=CompletionCache(tmp_path / "c.sqlite"), options=options(10.0))
    report = result.report
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        cache.export(tmp_path / "export.jsonl")
    stored = pd.read_json(tmp_path / "export.jsonl", lines=True)
    prompt = stored["request"].map(lambda r: sum(len(c) for _, c in r["messages"]))
    expected = ((-(-prompt // 4)) * PRICE[0]
                + stored["text"].map(lambda t: -(-len(t) // 4)) * PRICE[1]).sum() / 1e6
    assert report.usage_estimated == 20
    assert report.cost_estimated_typical == pytest.approx(expected, rel=1e-12)
    assert report.cost_estimated_typical < report.cost_estimated  # the worst case is above
    assert report.cost == pytest.approx(report.cost_estimated)  # only the worst case counts
    assert f"about ${report.cost_estimated_typical:.4f} at characters/4" in report.summary()
    # Each verdict carries the same estimate, marked as one (not the worst case the cap
    # counted): compare's cost per evaluation and audit's money saved read this column.
    calls = result.calls
    assert calls["cost_estimated"].all()
    assert calls["cost"].sum() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("usage", ["missing", "bad"])
def test_answers_without_usable_usage_are_charged_their_worst_case(billing, tmp_path, usage):
    """A server that reports no usage (or garbage: a string, 1e30, negative, zero) does not
    disable the cap: each such answer is charged prompt bytes plus the whole budget, marked
    as an estimate, and stored with the estimate."""
    billing.faults = FaultPlan(missing_usage_rate=1.0 if usage == "missing" else 0.0,
                               bad_usage_rate=1.0 if usage == "bad" else 0.0)
    cap = 0.02
    result = judge_pairs(pairs(200), "B0", [backend(billing)], settings=SETTINGS,
                         cache=CompletionCache(tmp_path / "c.sqlite"), options=options(cap))
    report = result.report
    assert report.fresh > 0 and report.usage_estimated == report.fresh
    assert report.cost_reported == 0 and report.cost_estimated > 0
    assert report.stopped_by_cap and billing.billed <= cap
    assert "estimated for" in report.summary()
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        assert cache.export(tmp_path / "export.jsonl") == report.fresh
    stored = pd.read_json(tmp_path / "export.jsonl", lines=True)
    assert not stored["usage_reported"].any() and (stored["output_tokens"] >= 64).all()


def test_malformed_answers_are_retried_with_a_clear_message(billing):
    """Valid JSON that breaks the wire schema (a list, an error object, no choices, content
    as an object) is a retryable failure, counted as possibly billed; nothing crashes."""
    billing.faults = FaultPlan(wire_rate=0.5, max_faults_per_call=3)
    result = judge_pairs(pairs(60), "B0", [backend(billing)],
                         options=options(None, max_retries=6), settings=SETTINGS)
    report = result.report
    assert report.failed == 0 and len(result.aggregate) == 60
    assert report.retries == billing.fault_counts["wire"] > 0
    assert report.failed_attempts_billed == report.retries


def test_a_price_file_with_bad_prices_is_refused(tmp_path):
    for bad in ("NaN", "-1", "Infinity", '"cheap"'):
        path = tmp_path / "prices.json"
        path.write_text('{"judge-mini": {"input": %s, "output": 1}}' % bad)
        with pytest.raises(ValueError, match=r"prices.json: `input` price of `judge-mini` "
                                             r"must be a non-negative finite number"):
            PriceTable.from_file(path)


def test_leases_let_one_owner_pay_for_a_key(tmp_path):
    from fairjudge.judges import Completion, JudgeRequest, Message

    request = JudgeRequest(messages=(Message("user", "q"),))
    with CompletionCache(tmp_path / "c.sqlite") as first, \
            CompletionCache(tmp_path / "c.sqlite") as second:
        assert first.claim("k", "host-a:1:x", ttl=60) == CLAIMED
        assert second.claim("k", "host-b:2:y", ttl=60) == BUSY  # another owner holds it
        assert first.claim("k", "host-a:1:x", ttl=60) == CLAIMED  # renewal
        first.put("k", Completion("A"), identity={"backend": "x", "model": "m"},
                  request=request)
        assert second.claim("k", "host-b:2:y", ttl=60) == DONE  # answered: read it
        assert second.claim("k2", "host-b:2:y", ttl=-1) == CLAIMED
        assert first.claim("k2", "host-a:1:x", ttl=60) == CLAIMED  # an expired lease
        first.release("k2", "host-a:1:x")
        assert second.claim("k2", "host-b:2:y", ttl=60) == CLAIMED


def test_a_dead_processes_lease_is_stale_at_once(tmp_path):
    import socket

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True)
    dead = f"{socket.gethostname()}:{int(done.stdout)}:gone"
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        assert cache.claim("k", dead, ttl=3600) == CLAIMED
        assert cache.claim("k", "someone-else", ttl=60) == CLAIMED


def test_claiming_many_keys_at_once_answers_as_one_claim_per_key(tmp_path):
    """One transaction for a group of keys gives each the outcome its own claim would have,
    and commits the leases it takes before returning."""
    import socket
    import sqlite3

    from fairjudge.judges import Completion, JudgeRequest, Message

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True)
    dead = f"{socket.gethostname()}:{int(done.stdout)}:gone"
    request = JudgeRequest(messages=(Message("user", "q"),))
    me = "host-a:1:x"
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        cache.put("stored", Completion("A"), identity={"backend": "x", "model": "m"},
                  request=request)
        assert cache.claim("busy", "host-b:2:y", ttl=60) == CLAIMED
        assert cache.claim("stale", dead, ttl=3600) == CLAIMED
        assert cache.claim("expired", "host-b:2:y", ttl=-1) == CLAIMED
        assert cache.claim("mine", me, ttl=60) == CLAIMED
        keys = ["stored", "busy", "stale", "expired", "mine", "free", "free"]
        outcomes = cache.claim_many(keys, me, ttl=60)
        assert outcomes == {"stored": DONE, "busy": BUSY, "stale": CLAIMED,
                            "expired": CLAIMED, "mine": CLAIMED, "free": CLAIMED}
        with sqlite3.connect(tmp_path / "c.sqlite") as other:
            owners = dict(other.execute("SELECT key, owner FROM leases"))
        assert owners == {"busy": "host-b:2:y", "stale": me, "expired": me, "mine": me,
                          "free": me}
        cache.release_many(["stale", "expired", "mine", "free", "busy"], me)
        assert cache.claim("free", "host-b:2:y", ttl=60) == CLAIMED  # released
        assert cache.claim("busy", me, ttl=60) == BUSY  # another owner's lease stays


def test_a_run_stopped_by_the_cap_releases_the_keys_it_claimed_ahead(billing, tmp_path):
    """A run claims the next keys of its queue together; the ones it never sent because the
    cap stopped it are released, so another process may pay for them at once."""
    import sqlite3

    from fairjudge.judges import JudgeRequest, Message, RunReport, run_requests

    requests = [JudgeRequest(messages=(Message("user", f"Say A or B about item {i}. "
                                                       + "word " * 40),),
                             settings=SETTINGS) for i in range(200)]
    cache = CompletionCache(tmp_path / "c.sqlite")
    report = RunReport()
    results = run_requests(backend(billing), requests, cache=cache,
                           options=options(0.01), report=report)
    cache.close()
    assert report.stopped_by_cap and report.skipped_by_cap > 0
    assert 0 < sum(r is not None for r in results) < len(requests)
    with sqlite3.connect(tmp_path / "c.sqlite") as other:
        assert other.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0
    assert billing.billed <= 0.01


@pytest.mark.parametrize("lease_age", [0.0, 1e6])
def test_keys_are_claimed_in_groups_and_renewed_before_a_send_once_half_spent(
        billing, tmp_path, monkeypatch, lease_age):
    """With fresh leases a run claims its keys in groups of its concurrency and renews none;
    when every lease has aged past half its life by the time its request leaves, each key's
    lease is renewed (a claim of that key alone) right before it is sent."""
    from fairjudge.judges import JudgeRequest, Message, _runner, run_requests

    ticks = iter(range(10 ** 6))
    monkeypatch.setattr(_runner, "lease_clock", lambda: next(ticks) * lease_age)
    requests = [JudgeRequest(messages=(Message("user", f"Say A or B about item {i}."),),
                             settings=SETTINGS) for i in range(40)]
    claims = []
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        claim_many = cache.claim_many

        def recording(keys, owner, ttl):
            claims.append(list(keys))
            return claim_many(keys, owner, ttl)

        cache.claim_many = recording
        results = run_requests(backend(billing), requests, cache=cache,
                               options=RunOptions(concurrency=8))
    assert all(r is not None for r in results)
    keys = {r.key for r in results}
    renewed = {group[0] for group in claims if len(group) == 1}
    if lease_age == 0.0:
        assert len(claims) == 40 // 8 and not renewed
        assert {key for group in claims for key in group} == keys
    else:
        assert renewed == keys


def test_a_lease_lost_while_waiting_stops_the_send(tmp_path, monkeypatch):
    """A lease half spent is renewed right before the send; one that ran out and was taken
    by another process makes the run give the key up instead of paying for it too."""
    import sqlite3
    import time as clock

    from fairjudge.judges import _runner

    now = [0.0]
    monkeypatch.setattr(_runner, "lease_clock", lambda: now[0])
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        leases = _runner._Leases(cache, "host-a:1:x", ttl=10.0, group=4)
        assert leases.claim("k", ["k3", "k2"]) == CLAIMED
        assert set(leases.taken) == {"k", "k2", "k3"}
        assert leases.before_send("k")  # fresh: nothing to renew
        now[0] = 6.0
        assert leases.before_send("k") and leases.taken["k"] == 6.0  # renewed
        with sqlite3.connect(tmp_path / "c.sqlite") as other:  # k2 expired, then taken
            other.execute("UPDATE leases SET owner = 'host-b:2:y', expires = ? WHERE key = "
                          "'k2'", (clock.time() + 100,))
        assert not leases.before_send("k2") and "k2" not in leases.taken
        leases.release_unused()
        assert cache.claim("k3", "host-b:2:y", ttl=60) == CLAIMED  # released
        assert cache.claim("k2", "host-a:1:x", ttl=60) == BUSY  # still the other's


def test_nothing_is_held_uncommitted_when_a_request_leaves(billing, tmp_path):
    """Answers put while other workers wait on the rate limiter are committed before any of
    those workers' requests leaves."""
    from fairjudge.judges import JudgeRequest, Message, run_requests

    requests = [JudgeRequest(messages=(Message("user", f"Say A or B about item {i}."),),
                             settings=SETTINGS) for i in range(60)]
    held_at_send = []
    judge = backend(billing)
    complete = judge.complete
    with CompletionCache(tmp_path / "c.sqlite", commit_interval=3600) as cache:
        async def checking(request):
            held_at_send.append(len(cache._pending))
            return await complete(request)

        judge.complete = checking
        results = run_requests(judge, requests, cache=cache,
                               options=RunOptions(concurrency=8, requests_per_minute=60000))
    assert all(r is not None for r in results)
    assert len(held_at_send) == 60 and max(held_at_send) == 0


@pytest.mark.slow
@pytest.mark.parametrize("n_processes", [2, 4])
def test_processes_sharing_a_cache_never_pay_twice(billing, tmp_path, n_processes):
    """Several processes judge the same pairs on one cache at once: each call is paid once
    (the others wait for its answer), and every process writes every verdict."""
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "question": f"Q{i}?",
                                        "a": "x " * (i % 9 + 1), "b": "y " * (i % 7 + 1)})
                            + "\n" for i in range(120)))
    billing.faults = FaultPlan(slow_rate=1.0, slow_seconds=0.02)
    env = dict(os.environ, TEST_KEY="sk-test")
    procs = [subprocess.Popen(
        [sys.executable, "-m", "fairjudge", "judge", str(path), "--backend", "openai",
         "--judge-model", "judge-mini", "--base-url", billing.base_url, "--api-key-env",
         "TEST_KEY", "--strategy", "S1", "--concurrency", "8", "--out",
         str(tmp_path / f"out{i}.jsonl"), "--cache", str(tmp_path / "c.sqlite"),
         "--no-progress"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(n_processes)]
    errors = []
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        errors.append(err)
        assert proc.returncode == 0, err
    billed = billing.billed_counts
    twice = {k: n for k, n in billed.items() if n > 1}
    # 120 pairs x 2 orders, each billed once (a request that a dropped keep-alive connection
    # never delivered is retried, but it never reached the model)
    assert len(billed) == 240 and not twice, (twice, billing.counts, errors)
    outputs = [pd.read_json(tmp_path / f"out{i}.jsonl", lines=True) for i in range(n_processes)]
    for out in outputs:
        assert len(out) == 240
        pd.testing.assert_series_equal(out.sort_values(["pair_id", "order"])["winner"]
                                       .reset_index(drop=True),
                                       outputs[0].sort_values(["pair_id", "order"])["winner"]
                                       .reset_index(drop=True))


def test_the_cap_bounds_the_whole_job_across_reruns(billing, tmp_path):
    """A run stopped by the cap and started again with the same cap spends nothing more:
    the cache's spend ledger counts what the first run spent on the same calls; a raised
    cap lets it continue, and the total stays within the raised cap."""
    cache = tmp_path / "c.sqlite"
    billing.faults = FaultPlan(slow_rate=0.3, slow_seconds=0.5)
    run = dict(settings=SETTINGS)
    first = judge_pairs(pairs(200), "B0", [backend(billing, timeout=0.2)],
                        cache=CompletionCache(cache), options=options(0.03), **run)
    assert first.report.stopped_by_cap and billing.billed <= 0.03
    billed = billing.billed
    again = judge_pairs(pairs(200), "B0", [backend(billing, timeout=0.2)],
                        cache=CompletionCache(cache), options=options(0.03), **run)
    assert again.report.cost_earlier == pytest.approx(first.report.cost)
    assert again.report.cost + again.report.cost_earlier <= 0.03 + 1e-12
    assert billing.billed <= 0.03
    assert "earlier runs spent" in again.report.summary()
    raised = judge_pairs(pairs(200), "B0", [backend(billing, timeout=0.2)],
                         cache=CompletionCache(cache), options=options(0.06), **run)
    assert raised.report.fresh > 0 and billing.billed > billed
    assert billing.billed <= 0.06


@pytest.mark.slow
def test_one_command_started_twice_and_rerun_shares_one_cap(billing, tmp_path):
    """The command line names its job: two processes running the same command on one
    cache, and a rerun of it, share one spend cap (checked in the cache's ledger before
    every attempt), so what the provider bills stays within it."""
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "question": f"Question {i}?",
                                        "a": "alpha " * (20 + i % 9), "b": "beta " * (25 - i % 7)})
                            + "\n" for i in range(300)))
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-mini": {"input": PRICE[0], "output": PRICE[1]}}))
    billing.faults = FaultPlan(slow_rate=0.2, slow_seconds=0.4)
    env = dict(os.environ, TEST_KEY="sk-test")
    cap = 0.04
    command = [sys.executable, "-m", "fairjudge", "judge", str(path), "--backend", "openai",
               "--judge-model", "judge-mini", "--base-url", billing.base_url, "--api-key-env",
               "TEST_KEY", "--concurrency", "6", "--timeout", "0.2", "--max-tokens", "64",
               "--prices", str(prices), "--max-cost", str(cap), "--out",
               str(tmp_path / "out.jsonl"), "--cache", str(tmp_path / "c.sqlite"),
               "--no-progress"]
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    codes = [proc.wait(timeout=180) for proc in procs]
    assert codes == [3, 3], [p.stderr.read() for p in procs]
    assert 0 < billing.billed <= cap
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 3 and "earlier runs spent" in rerun.stderr
    assert billing.billed <= cap
    raised = subprocess.run([str(2 * cap) if arg == str(cap) else arg for arg in command],
                            env=env, capture_output=True, text=True, timeout=180)
    assert raised.returncode in (0, 3), raised.stderr
    assert cap < billing.billed <= 2 * cap


def test_builtin_prices_are_dated_and_a_price_file_overrides_them(tmp_path):
    """Formerly cost was silently $0 (or unknown) for every model without a price file."""
    builtin = PriceTable.builtin()
    assert builtin.date and len(builtin) >= 10
    assert builtin.get("gpt-4o-mini") == builtin.get("gpt-4o-mini-2024-07-18")
    assert builtin.get("claude-3-5-haiku-20241022") == builtin.get("claude-3-5-haiku")
    assert builtin.get("unknown-model") is None and builtin.is_builtin("gpt-4o-mini")
    for model, price in builtin.items():  # list prices: output never cheaper than input
        assert 0 < price.input_per_mtok <= price.output_per_mtok, model
    own = tmp_path / "prices.json"
    own.write_text(json.dumps({"gpt-4o-mini": {"input": 1.0, "output": 2.0},
                               "judge-mini": {"input": PRICE[0], "output": PRICE[1]}}))
    merged = builtin.updated(PriceTable.from_file(own))
    assert merged.get("gpt-4o-mini-2024-07-18").input_per_mtok == 1.0
    assert not merged.is_builtin("gpt-4o-mini") and merged.is_builtin("gpt-4o")
    assert merged.get("gpt-4o") == builtin.get("gpt-4o")


def test_a_run_says_when_it_priced_a_model_from_the_builtin_table(billing, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setenv("TEST_KEY", "sk-test")
    backend = get_backend("openai", model="gpt-4o-mini", base_url=billing.base_url,
                          api_key_env="TEST_KEY")
    result = judge_pairs(pairs(5), "B0", [backend], settings=SETTINGS,
                         options=RunOptions(prices=PriceTable.builtin(), max_cost=1.0))
    report = result.report
    assert report.cost > 0 and "gpt-4o-mini priced at the built-in list price of" in \
        report.summary()
