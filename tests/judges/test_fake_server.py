"""The fake OpenAI/Anthropic judge server: protocol shapes, the scripted judge, faults."""

import asyncio
import hashlib
import http.client
import json
import math
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from scipy import stats

aiohttp = pytest.importorskip("aiohttp", reason="the fake provider server needs aiohttp")

from fairjudge.judges.testing import (  # noqa: E402
    FakeProviderServer, FaultPlan, call_key, judge_prompt)

OPENAI_HEADERS = {"Authorization": "Bearer test-key", "Content-Type": "application/json"}
ANTHROPIC_HEADERS = {"x-api-key": "test-key", "anthropic-version": "2023-06-01",
                     "Content-Type": "application/json"}
LONG = "Paris is the capital of France and its largest city."
SHORT = "Paris."


@pytest.fixture
def server(fake_server):
    return fake_server


def post(url, body, headers, timeout=10):
    """POST JSON with urllib; return (status, headers, raw body) even for HTTP errors."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def openai_body(prompt, **extra):
    return {"model": "gpt-test", "messages": [{"role": "user", "content": prompt}], **extra}


def anthropic_body(prompt, **extra):
    return {"model": "claude-test", "max_tokens": 256,
            "messages": [{"role": "user", "content": prompt}], **extra}


def ask_openai(server, prompt, **extra):
    status, _, raw = post(server.base_url + "/chat/completions", openai_body(prompt, **extra),
                          OPENAI_HEADERS)
    assert status == 200, raw
    return json.loads(raw)


def ask_anthropic(server, prompt, **extra):
    status, _, raw = post(server.base_url + "/messages", anthropic_body(prompt, **extra),
                          ANTHROPIC_HEADERS)
    assert status == 200, raw
    return json.loads(raw)


def openai_text(server, prompt, **extra):
    return ask_openai(server, prompt, **extra)["choices"][0]["message"]["content"]


# --------------------------------------------------------------------- OpenAI happy path
def test_openai_response_has_the_real_shape(server):
    prompt = judge_prompt("Capital of France?", LONG, SHORT)
    reply = ask_openai(server, prompt, temperature=0)
    assert reply["id"].startswith("chatcmpl-")
    assert reply["object"] == "chat.completion"
    assert isinstance(reply["created"], int)
    assert reply["model"] == "gpt-test"
    (choice,) = reply["choices"]
    assert choice["index"] == 0
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] == "A"
    assert choice["finish_reason"] == "stop"
    assert choice["logprobs"] is None
    usage = reply["usage"]
    assert usage["prompt_tokens"] == math.ceil(len(prompt) / 4)
    assert usage["completion_tokens"] == 1
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 0}


def test_openai_accepts_text_blocks_and_system_messages(server):
    prompt = judge_prompt("Capital of France?", SHORT, LONG)
    body = {"model": "gpt-test", "temperature": 0, "messages": [
        {"role": "system", "content": "You are a careful judge."},
        {"role": "user", "content": [{"type": "text", "text": prompt}]}]}
    status, _, raw = post(server.base_url + "/chat/completions", body, OPENAI_HEADERS)
    assert status == 200
    assert json.loads(raw)["choices"][0]["message"]["content"] == "B"


def test_the_longer_answer_wins_at_temperature_zero(server):
    assert openai_text(server, judge_prompt("q", LONG, SHORT), temperature=0) == "A"
    assert openai_text(server, judge_prompt("q", SHORT, LONG), temperature=0) == "B"


def test_first_slot_lean_breaks_exact_ties():
    same = judge_prompt("q", "one two three", "four five six")
    with FakeProviderServer(first_slot_lean=0.1) as srv:
        assert openai_text(srv, same, temperature=0) == "A"
    with FakeProviderServer(first_slot_lean=-0.1) as srv:
        assert openai_text(srv, same, temperature=0) == "B"
    with FakeProviderServer(first_slot_lean=0.0) as srv:
        assert openai_text(srv, same, temperature=0) == "tie"


def test_reply_formats_follow_the_instruction(server):
    letter = openai_text(server, judge_prompt("q", LONG, SHORT), temperature=0)
    assert letter == "A"

    bracket = openai_text(server, judge_prompt(
        "q", SHORT, LONG, instruction='Output "[[A]]", "[[B]]" or "[[C]]" for a tie.'),
        temperature=0)
    assert bracket.endswith("Final verdict: [[B]]")

    with FakeProviderServer(first_slot_lean=0.0) as srv:
        tie = openai_text(srv, judge_prompt("q", "x y", "z w", instruction="Say [[A]]."),
                          temperature=0)
    assert tie.endswith("Final verdict: [[C]]")

    plain = json.loads(openai_text(server, judge_prompt(
        "q", LONG, SHORT, instruction="Answer in JSON."), temperature=0))
    assert plain["verdict"] == "A"
    assert isinstance(plain["reasoning"], str) and "scores" not in plain


def test_rubric_prompts_get_scores(server):
    reply = json.loads(openai_text(server, judge_prompt(
        "q", SHORT, LONG, instruction="Score each answer on the RUBRIC, then answer in JSON."),
        temperature=0))
    assert reply["verdict"] == "B"
    criteria = {"accuracy", "relevance", "completeness", "clarity", "reasoning_depth"}
    for side in ("A", "B"):
        assert set(reply["scores"][side]) == criteria
        assert all(isinstance(v, int) and 1 <= v <= 5 for v in reply["scores"][side].values())
    assert sum(reply["scores"]["B"].values()) > sum(reply["scores"]["A"].values())


def test_generation_requests_get_a_deterministic_text(server):
    prompt = "Write a reference answer to: what is the capital of France?"
    first = openai_text(server, prompt)
    digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
    assert first.startswith(f"Reference answer {digest}: ")
    assert openai_text(server, prompt, temperature=0.3) == first
    assert server.successes == {}  # no verdict, no success
    anthropic = ask_anthropic(server, prompt)["content"][0]["text"]
    assert anthropic == first


def test_reference_answer_is_just_context(server):
    prompt = judge_prompt("q", LONG, SHORT).replace(
        "[The Start of Assistant A", "[The Start of Reference Answer]\nParis.\n"
        "[The End of Reference Answer]\n[The Start of Assistant A")
    assert openai_text(server, prompt, temperature=0) == "A"


# --------------------------------------------------------------------- logprobs, budget
def test_logprobs_have_the_openai_shape_and_sum_to_one(server):
    reply = ask_openai(server, judge_prompt("q", LONG, SHORT), temperature=0, logprobs=True,
                       top_logprobs=5)
    (entry,) = reply["choices"][0]["logprobs"]["content"]
    assert entry["token"] == "A" and entry["bytes"] == [65]
    top = entry["top_logprobs"]
    assert [t["token"] for t in top] == ["A", "B", "tie"]
    assert entry["logprob"] == top[0]["logprob"]
    assert sum(math.exp(t["logprob"]) for t in top) == pytest.approx(1.0)
    # log(p_A / p_B) is the judge's logit: 3 * (10 - 1) / 10 + 0.1.
    assert top[0]["logprob"] - top[1]["logprob"] == pytest.approx(2.8)

    truncated = ask_openai(server, judge_prompt("q", LONG, SHORT), temperature=0,
                           logprobs=True, top_logprobs=2)
    assert len(truncated["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) == 2


def test_a_tiny_completion_budget_gives_empty_content(server):
    reply = ask_openai(server, judge_prompt("q", LONG, SHORT), max_completion_tokens=3)
    choice = reply["choices"][0]
    assert choice["message"]["content"] == ""
    assert choice["finish_reason"] == "length"
    assert reply["usage"]["completion_tokens_details"]["reasoning_tokens"] == 3
    assert server.successes == {}
    enough = ask_openai(server, judge_prompt("q", LONG, SHORT), max_completion_tokens=4)
    assert enough["choices"][0]["message"]["content"] in {"A", "B"}


def test_openai_requires_a_bearer_token(server):
    status, _, raw = post(server.base_url + "/chat/completions",
                          openai_body(judge_prompt("q", "a", "b")),
                          {"Content-Type": "application/json"})
    assert status == 401
    error = json.loads(raw)["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_api_key"


# --------------------------------------------------------------------- Anthropic
def test_anthropic_response_has_the_real_shape(server):
    prompt = judge_prompt("Capital of France?", SHORT, LONG)
    reply = ask_anthropic(server, prompt)
    assert reply["id"].startswith("msg_")
    assert reply["type"] == "message" and reply["role"] == "assistant"
    assert reply["model"] == "claude-test"
    assert reply["content"] == [{"type": "text", "text": "B"}]
    assert reply["stop_reason"] == "end_turn" and reply["stop_sequence"] is None
    assert reply["usage"] == {"input_tokens": math.ceil(len(prompt) / 4), "output_tokens": 1}


def test_anthropic_reads_the_system_field_and_text_blocks(server):
    body = {"model": "claude-test", "max_tokens": 64,
            "system": [{"type": "text", "text": "Use the rubric; answer in JSON."}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": judge_prompt("q", LONG, SHORT, instruction="")}]}]}
    status, _, raw = post(server.base_url + "/messages", body, ANTHROPIC_HEADERS)
    assert status == 200
    verdict = json.loads(json.loads(raw)["content"][0]["text"])
    assert verdict["verdict"] == "A" and "scores" in verdict


@pytest.mark.parametrize("headers, status, kind, message", [
    ({"anthropic-version": "2023-06-01"}, 401, "authentication_error", "x-api-key"),
    ({"x-api-key": "k"}, 400, "invalid_request_error", "anthropic-version"),
])
def test_anthropic_header_errors(server, headers, status, kind, message):
    got, _, raw = post(server.base_url + "/messages", anthropic_body("hi"), headers)
    assert got == status
    payload = json.loads(raw)
    assert payload["type"] == "error"
    assert payload["error"]["type"] == kind and message in payload["error"]["message"]


def test_anthropic_rejects_temperature(server):
    status, _, raw = post(server.base_url + "/messages",
                          anthropic_body(judge_prompt("q", "a", "b"), temperature=0.0),
                          ANTHROPIC_HEADERS)
    assert status == 400
    assert json.loads(raw) == {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "temperature is not supported for this model"}}


# --------------------------------------------------------------------- determinism
def test_answers_are_reproducible_and_repeats_are_fresh_samples_at_temperature_07():
    """The n-th answer to a request is a function of (seed, request, n): a new server with
    the same seed gives the same sequence; a repeat of an answered request is a new draw
    (as from a sampling provider), so repeated samples measure repetition stability."""
    prompts = [judge_prompt(f"question {i}", "a b c d", "a b c") for i in range(40)]
    with FakeProviderServer(seed=3) as srv:
        first = [openai_text(srv, p, temperature=0.7) for p in prompts]
        again = [openai_text(srv, p, temperature=0.7) for p in prompts]
    with FakeProviderServer(seed=3) as srv:
        fresh = [openai_text(srv, p, temperature=0.7) for p in prompts]
        fresh_again = [openai_text(srv, p, temperature=0.7) for p in prompts]
    with FakeProviderServer(seed=4) as srv:
        other_seed = [openai_text(srv, p, temperature=0.7) for p in prompts]
    assert first == fresh and again == fresh_again
    assert again != first  # P(A) = 0.77 per draw: 40 identical repeats would be ~1e-9
    assert set(first) == {"A", "B"}
    assert other_seed != first


def test_sampled_verdicts_follow_the_logistic_model():
    # logit = 3 * (4 - 3) / 4 + 0.1 = 0.85; at T = 0.7, P(A) = sigmoid(0.85 / 0.7).
    p_a = 1 / (1 + math.exp(-0.85 / 0.7))
    prompts = [judge_prompt(f"question {i}", "a b c d", "a b c") for i in range(400)]
    with FakeProviderServer(seed=0) as srv:
        verdicts = [openai_text(srv, p, temperature=0.7) for p in prompts]
    n_a = verdicts.count("A")
    assert stats.binomtest(n_a, len(verdicts), p_a).pvalue > 0.001


def test_counts_are_per_call_key(server):
    body = openai_body(judge_prompt("q", LONG, SHORT), temperature=0)
    reordered = dict(reversed(list(body.items())))  # same call: keys are sorted for the key
    for payload in (body, body, reordered):
        post(server.base_url + "/chat/completions", payload, OPENAI_HEADERS)
    other = openai_body(judge_prompt("q2", LONG, SHORT), temperature=0)
    post(server.base_url + "/chat/completions", other, OPENAI_HEADERS)
    key = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"))
                         .encode()).hexdigest()
    assert key == call_key(body)
    assert server.counts == {key: 3, call_key(other): 1}
    assert server.successes == {key: 3, call_key(other): 1}
    assert server.request_count() == 4


# --------------------------------------------------------------------- faults
async def _classify_all(url, bodies, headers, concurrency=32):
    """Send each body once; return one outcome label per body."""
    semaphore = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)

    async with aiohttp.ClientSession(connector=connector) as session:
        async def one(body):
            async with semaphore:
                try:
                    async with session.post(url, json=body, headers=headers) as response:
                        raw = await response.read()
                        fault = response.headers.get("x-fake-fault")
                        if response.status == 429:
                            assert response.headers["Retry-After"] == "0.01"
                            return "429"
                        if response.status in (500, 503, 529):
                            return "529" if response.status != 500 else "500"
                        assert response.status == 200
                        try:
                            json.loads(raw)
                        except ValueError:
                            return "malformed"
                        return "slow" if fault == "slow" else "ok"
                except aiohttp.ClientConnectionError:
                    return "drop"

        return await asyncio.gather(*(one(b) for b in bodies))


@pytest.mark.parametrize("route", ["openai", "anthropic"])
def test_each_fault_is_seen_at_its_rate(route):
    """Faults are drawn from sha256 hashes, so each count is fixed for these bodies; a change
    of bodies or hashing redraws them. Six binomial tests per route at a Bonferroni level of
    1e-3 / 6 (measured p-values 0.13 to 0.93)."""
    plan = FaultPlan(drop_rate=0.1, rate_429=0.1, rate_500=0.1, rate_529=0.05,
                     malformed_rate=0.1, slow_rate=0.1, slow_seconds=0.05, retry_after=0.01)
    n = 400
    with FakeProviderServer(seed=0, faults=plan) as srv:
        if route == "openai":
            url, headers = srv.base_url + "/chat/completions", OPENAI_HEADERS
            bodies = [openai_body(judge_prompt(f"q{i}", LONG, SHORT)) for i in range(n)]
        else:
            url, headers = srv.base_url + "/messages", ANTHROPIC_HEADERS
            bodies = [anthropic_body(judge_prompt(f"q{i}", LONG, SHORT)) for i in range(n)]
        outcomes = asyncio.run(_classify_all(url, bodies, headers))
        served = srv.fault_counts
        assert srv.request_count() == n
        assert sum(srv.successes.values()) == outcomes.count("ok") + outcomes.count("slow")
    expected = {"drop": 0.1, "429": 0.1, "500": 0.1, "529": 0.05, "malformed": 0.1,
                "slow": 0.1}
    for kind, rate in expected.items():
        seen = outcomes.count(kind)
        assert served.get(kind, 0) == seen, kind
        assert stats.binomtest(seen, n, rate).pvalue > 1e-3 / len(expected), (kind, seen)


def test_slow_answers_are_really_slow():
    plan = FaultPlan(slow_rate=1.0, slow_seconds=0.2)
    with FakeProviderServer(faults=plan) as srv:
        start = time.perf_counter()
        assert openai_text(srv, judge_prompt("q", LONG, SHORT), temperature=0) == "A"
        assert time.perf_counter() - start >= 0.2


def test_an_answer_the_client_hung_up_on_is_billed_but_not_delivered():
    plan = FaultPlan(slow_rate=1.0, slow_seconds=0.5)
    body = openai_body(judge_prompt("q", LONG, SHORT), temperature=0)
    with FakeProviderServer(faults=plan, prices=(1.0, 1.0)) as srv:
        with pytest.raises(OSError):  # socket.timeout / TimeoutError
            post(srv.base_url + "/chat/completions", body, OPENAI_HEADERS, timeout=0.1)
        deadline = time.monotonic() + 10
        while not srv.abandoned and time.monotonic() < deadline:
            time.sleep(0.05)
        key = call_key(body)
        assert srv.abandoned == {key: 1} and srv.successes == {}
        assert srv.billed_counts == {key: 1} and srv.billed > 0
        # Asked again and waited for, the answer is delivered once.
        assert post(srv.base_url + "/chat/completions", body, OPENAI_HEADERS)[0] == 200
        assert srv.successes == {key: 1}


def test_rate_limit_carries_retry_after_and_a_provider_body(server):
    server.faults = FaultPlan(rate_429=1.0, retry_after=0.25)
    status, headers, raw = post(server.base_url + "/chat/completions",
                                openai_body(judge_prompt("q", "a", "b")), OPENAI_HEADERS)
    assert status == 429 and headers["Retry-After"] == "0.25"
    assert json.loads(raw)["error"]["code"] == "rate_limit_exceeded"
    status, headers, raw = post(server.base_url + "/messages",
                                anthropic_body(judge_prompt("q", "a", "b")), ANTHROPIC_HEADERS)
    assert status == 429 and headers["Retry-After"] == "0.25"
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"


def test_overload_is_529_on_anthropic(server):
    server.faults = FaultPlan(rate_529=1.0)
    status, _, raw = post(server.base_url + "/messages",
                          anthropic_body(judge_prompt("q", "a", "b")), ANTHROPIC_HEADERS)
    assert status == 529 and json.loads(raw)["error"]["type"] == "overloaded_error"


def test_drop_is_a_client_side_connection_error(server):
    server.faults = FaultPlan(drop_rate=1.0)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        post(server.base_url + "/chat/completions", openai_body(judge_prompt("q", "a", "b")),
             OPENAI_HEADERS)

    async def with_aiohttp():
        async with aiohttp.ClientSession() as session:
            async with session.post(server.base_url + "/messages",
                                    json=anthropic_body(judge_prompt("q", "a", "b")),
                                    headers=ANTHROPIC_HEADERS) as response:
                return response.status

    with pytest.raises(aiohttp.ServerDisconnectedError):
        asyncio.run(with_aiohttp())
    assert server.fault_counts == {"drop": 2}


def test_retries_see_fresh_faults_and_the_same_verdict(server):
    """A retry after a failed attempt gets the verdict the failed attempt would have had:
    every first 200 after a run of 500s answers with draw 0 of the request (checked against
    a fault-free server); later 200s are repeats of an answered request, fresh samples."""
    server.faults = FaultPlan(rate_500=0.5)
    body = openai_body(judge_prompt("q", "a b c d", "a b c"), temperature=0.7)
    statuses, texts = [], []
    for _ in range(30):
        status, _, raw = post(server.base_url + "/chat/completions", body, OPENAI_HEADERS)
        statuses.append(status)
        if status == 200:
            texts.append(json.loads(raw)["choices"][0]["message"]["content"])
    assert set(statuses) == {200, 500}
    with FakeProviderServer(seed=0) as clean:
        expected = [json.loads(post(clean.base_url + "/chat/completions", body,
                                    OPENAI_HEADERS)[2])["choices"][0]["message"]["content"]
                    for _ in range(len(texts))]
    assert texts == expected  # the n-th answer is the n-th draw, whatever failed in between
    key = call_key(body)
    assert server.counts[key] == 30 and server.successes[key] == statuses.count(200)

    with FakeProviderServer(seed=0, faults=FaultPlan(rate_500=0.5)) as replay:
        again = [post(replay.base_url + "/chat/completions", body, OPENAI_HEADERS)[0]
                 for _ in range(30)]
    assert again == statuses


def test_max_faults_per_call_guarantees_success(server):
    server.faults = FaultPlan(rate_500=1.0, max_faults_per_call=2)
    body = openai_body(judge_prompt("q", LONG, SHORT), temperature=0)
    statuses = [post(server.base_url + "/chat/completions", body, OPENAI_HEADERS)[0]
                for _ in range(4)]
    assert statuses == [500, 500, 200, 200]
    assert server.counts[call_key(body)] == 4 and server.successes[call_key(body)] == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"rate_429": 1.5}, "`rate_429` must be a number between 0 and 1"),
    ({"rate_429": 0.6, "rate_500": 0.6}, "must sum to at most 1"),
    ({"slow_seconds": -1.0}, "`slow_seconds` must be a finite number >= 0"),
    ({"max_faults_per_call": -1}, "`max_faults_per_call` must be None or an integer >= 0"),
])
def test_fault_plan_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FaultPlan(**kwargs)


def test_server_argument_errors():
    with pytest.raises(ValueError, match="`seed` must be an integer"):
        FakeProviderServer(seed=1.5)
    with pytest.raises(ValueError, match="`port` must be an integer between 0 and 65535"):
        FakeProviderServer(port=70000)
    with pytest.raises(TypeError, match="`faults` must be a FaultPlan"):
        FakeProviderServer().faults = {"rate_429": 0.1}
    with pytest.raises(RuntimeError, match="not running"):
        FakeProviderServer().base_url


def test_hold_answers_the_first_requests_and_holds_the_rest_until_released(server):
    body = openai_body(judge_prompt("q", LONG, SHORT), temperature=0)
    url = server.base_url + "/chat/completions"
    server.hold(after=2)

    async def send(n):
        async with aiohttp.ClientSession() as session:
            async def one():
                async with session.post(url, json=body, headers=OPENAI_HEADERS) as response:
                    return response.status
            first = [await one() for _ in range(2)]  # answered at once
            held = [asyncio.ensure_future(one()) for _ in range(n)]
            arrived = await asyncio.get_running_loop().run_in_executor(
                None, server.wait_for_requests, 2 + n, 30)
            await asyncio.sleep(0.2)
            pending = sum(not task.done() for task in held)
            server.release()
            return first, arrived, pending, await asyncio.gather(*held)

    first, arrived, pending, later = asyncio.run(send(3))
    assert first == [200, 200] and arrived and pending == 3 and later == [200] * 3
    assert server.request_count() == 5 and server.counts == {call_key(body): 5}
    assert not server.wait_for_requests(6, timeout=0.01)
    with pytest.raises(ValueError, match="`after` must be an integer >= 0"):
        server.hold(after=-1)


# --------------------------------------------------------------------- concurrency, CLI
def test_hundreds_of_simultaneous_connections(server):
    n = 300
    bodies = [openai_body(judge_prompt(f"q{i}", LONG, SHORT), temperature=0) for i in range(n)]
    outcomes = asyncio.run(_classify_all(server.base_url + "/chat/completions", bodies,
                                         OPENAI_HEADERS, concurrency=n))
    assert outcomes == ["ok"] * n
    assert server.request_count() == n


@pytest.mark.slow
def test_module_cli_serves_until_killed():
    process = subprocess.Popen(
        [sys.executable, "-m", "fairjudge.judges.testing", "--port", "0", "--seed", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1"), (
            base_url, process.stderr.read() if process.poll() is not None else "")
        status, _, raw = post(base_url + "/chat/completions",
                              openai_body(judge_prompt("q", LONG, SHORT), temperature=0),
                              OPENAI_HEADERS)
        assert status == 200
        assert json.loads(raw)["choices"][0]["message"]["content"] == "A"
    finally:
        process.kill()
        process.wait(timeout=10)
        process.stdout.close()
        process.stderr.close()
