"""Group commits of the completion cache: what is held back, what commits it, and what a
``kill -9`` can lose.

Completions put inside an event loop are held in memory and committed together; claims,
ledger and batch records commit at once, writing the held completions first. Nothing here
measures time: a test that needs the held rows committed either commits them itself or
waits, with a generous bound, until another connection sees them. The killed processes
announce what they have done on stdout before the parent kills them, so the kill lands at a
known point.
"""

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from fairjudge.judges import Completion, CompletionCache, JudgeRequest, Message, Usage
from fairjudge.judges._cache import CLAIMED, DONE

IDENTITY = {"backend": "openai", "model": "m", "endpoint": "http://127.0.0.1:8000/v1"}
HOUR = 3600.0  # a commit interval no test outlives: only an explicit commit writes rows
WAIT = 120  # seconds; generous for a loaded machine, never reached when things work


def request(text):
    return JudgeRequest(messages=(Message("user", text),), template="baseline",
                        template_version="1")


def completion(text="A"):
    return Completion(text=text, usage=Usage(10, 1), latency=0.1, finish_reason="stop")


def committed(path, table="completions"):
    """What another connection (another process would) sees: the committed rows."""
    with sqlite3.connect(path) as conn:
        if table == "completions":
            return {row[0] for row in conn.execute("SELECT key FROM completions")}
        if table == "leases":
            return {row[0] for row in conn.execute("SELECT key FROM leases")}
        return {row[0]: (row[1], row[2]) for row in
                conn.execute("SELECT key, dollars, open FROM spend")}


def put(cache, key):
    cache.put(key, completion(key), identity=IDENTITY, request=request(key))


def test_a_put_outside_an_event_loop_commits_at_once(tmp_path):
    with CompletionCache(tmp_path / "c.sqlite", commit_interval=HOUR) as cache:
        put(cache, "k0")
        assert committed(tmp_path / "c.sqlite") == {"k0"}


@pytest.mark.parametrize("commit", ["flush", "close", "with"])
def test_held_puts_are_read_here_at_once_and_committed_by_flush_or_close(tmp_path, commit):
    path = tmp_path / "c.sqlite"
    keys = [f"k{i}" for i in range(30)]

    async def main(cache):
        for key in keys:
            put(cache, key)
        # This process reads what it has put; other processes do not see it yet.
        assert cache.get("k3").text == "k3"
        assert set(cache.get_many(keys + ["other"])) == set(keys)
        assert committed(path) == set()
        if commit == "flush":
            cache.flush()
            assert committed(path) == set(keys)

    if commit == "with":
        with CompletionCache(path, commit_interval=HOUR) as cache:
            asyncio.run(main(cache))
    else:
        cache = CompletionCache(path, commit_interval=HOUR)
        asyncio.run(main(cache))
        if commit == "close":
            cache.close()
    assert committed(path) == set(keys)
    cache.close()  # a second close does nothing


def test_the_event_loop_commits_held_puts_within_the_interval(tmp_path):
    """With nothing else happening, the flush the loop schedules commits the rows."""
    path = tmp_path / "c.sqlite"

    keys = {f"k{i}" for i in range(10)}

    async def main(cache):
        for key in keys:
            put(cache, key)
        for _ in range(WAIT * 100):
            if committed(path) == keys:
                return True
            await asyncio.sleep(0.01)
        return False

    cache = CompletionCache(path, commit_interval=0.02)
    assert asyncio.run(main(cache)), committed(path)
    cache.close()


def test_a_zero_interval_commits_every_put_and_a_bad_interval_is_refused(tmp_path):
    path = tmp_path / "c.sqlite"

    async def main(cache):
        put(cache, "k0")
        return committed(path)

    with CompletionCache(path, commit_interval=0) as cache:
        assert asyncio.run(main(cache)) == {"k0"}
    for bad in (-1, float("nan"), float("inf"), "0.05", True):
        with pytest.raises(ValueError, match="`commit_interval` must be a non-negative"):
            CompletionCache(path, commit_interval=bad)


def test_claims_and_ledger_records_commit_at_once_with_the_held_answers(tmp_path):
    """Claims, attempts and settlements are visible to other processes as soon as their
    method returns, even with completions held; each writes the held completions first, so
    a settled attempt always has its answer stored."""
    path = tmp_path / "c.sqlite"

    async def main(cache):
        put(cache, "first")
        assert committed(path) == set()
        assert cache.claim("next", "me", 60.0) == CLAIMED
        assert committed(path, "leases") == {"next"}
        assert committed(path) == {"first"}  # written with the claim, ahead of it

        put(cache, "second")
        assert cache.claim("second", "me", 60.0) == DONE  # answered here, held or not
        put(cache, "third")
        attempt = cache.open_attempt("next", 0.5, owner="me", job="job", cap=10.0)
        assert committed(path, "spend") == {"next": (0.5, 1)}
        assert committed(path) == {"first", "second", "third"}

        put(cache, "next")
        assert "next" not in committed(path) and "next" in committed(path, "leases")
        cache.close_attempt(attempt, 0.125)
        assert committed(path, "spend") == {"next": (0.125, 0)}
        assert "next" in committed(path) and "next" not in committed(path, "leases")

    with CompletionCache(path, commit_interval=HOUR) as cache:
        asyncio.run(main(cache))


CHILD_PUTS = textwrap.dedent("""
    import asyncio, sqlite3, sys, time
    from fairjudge.judges import Completion, CompletionCache, JudgeRequest, Message, Usage

    path, mode = sys.argv[1], sys.argv[2]
    identity = {"backend": "openai", "model": "m", "endpoint": "http://127.0.0.1:8000/v1"}

    def put(cache, key):
        cache.put(key, Completion(text=key, usage=Usage(10, 1), latency=0.1,
                                  finish_reason="stop"), identity=identity,
                  request=JudgeRequest(messages=(Message("user", key),),
                                       template="baseline", template_version="1"))

    def visible():
        with sqlite3.connect(path) as conn:
            return conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    kept = []

    async def main():
        if mode == "exit":  # held at exit, the cache still referenced
            kept.append(CompletionCache(path, commit_interval=3600))
            for i in range(20):
                put(kept[0], f"held{i}")
            print("ready", flush=True)
            return
        if mode == "timer":
            cache = CompletionCache(path, commit_interval=0.02)
            for i in range(50):
                put(cache, f"done{i}")
            while visible() < 50:  # the flush the loop scheduled has not run yet
                await asyncio.sleep(0.01)
        else:
            cache = CompletionCache(path, commit_interval=3600)
            for i in range(50):
                put(cache, f"done{i}")
            cache.flush()
            for i in range(20):
                put(cache, f"held{i}")
        if mode == "unsettled" or mode == "settled":
            attempt = cache.open_attempt("paid", 0.5, owner="child", job="job", cap=10.0)
            put(cache, "paid")
            if mode == "settled":
                cache.close_attempt(attempt, 0.125)
        print("ready", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
""")


def start_child(path, mode):
    child = subprocess.Popen([sys.executable, "-c", CHILD_PUTS, str(path), mode],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = child.stdout.readline()
    if line.strip() != "ready":
        child.kill()
        raise AssertionError(f"the child did not get ready: {line!r} {child.communicate()}")
    return child


def test_interpreter_exit_commits_held_puts(tmp_path):
    path = tmp_path / "c.sqlite"
    CompletionCache(path).close()
    child = start_child(path, "exit")
    assert child.wait(timeout=WAIT) == 0, child.communicate()
    assert committed(path) == {f"held{i}" for i in range(20)}


@pytest.mark.parametrize("mode", ["flush", "timer"])
def test_a_kill_keeps_every_completion_committed_before_it(tmp_path, kill_hard, mode):
    """SIGKILL after the child committed 50 completions (by a flush, or by the flush its
    loop scheduled): all 50 survive; completions still held are lost, never half-written."""
    path = tmp_path / "c.sqlite"
    CompletionCache(path).close()
    kill_hard(start_child(path, mode))
    kept = committed(path)
    assert {f"done{i}" for i in range(50)} <= kept
    if mode == "flush":
        assert kept == {f"done{i}" for i in range(50)}  # the 20 held rows died with it
    with CompletionCache(path) as cache:
        assert len(cache) == len(kept)


@pytest.mark.parametrize("mode", ["unsettled", "settled"])
def test_a_kill_never_leaves_a_settled_attempt_without_its_answer(tmp_path, kill_hard, mode):
    """An answer put but not committed when the process dies leaves its attempt open at its
    worst case (a rerun counts it against the cap and asks again); settling the attempt
    commits the answer with it."""
    path = tmp_path / "c.sqlite"
    CompletionCache(path).close()
    kill_hard(start_child(path, mode))
    with CompletionCache(path) as cache:
        if mode == "unsettled":
            assert cache.get("paid") is None
            assert cache.job_spent("job") == pytest.approx(0.5)
            assert cache.claim("paid", "rerun", 60.0) == CLAIMED  # the dead owner's lease
        else:
            assert cache.get("paid").text == "paid"
            assert cache.job_spent("job") == pytest.approx(0.125)
            assert cache.claim("paid", "rerun", 60.0) == DONE


N_CALLS, ANSWERED, CONCURRENCY = 120, 40, 8

CHILD_RUN = textwrap.dedent(f"""
    import sys
    from fairjudge.judges import (CompletionCache, GenerationSettings, JudgeRequest, Message,
                                  PriceTable, RunOptions, RunReport, get_backend, run_requests)

    url, path, interval = sys.argv[1], sys.argv[2], float(sys.argv[3])
    cap = float(sys.argv[4]) if sys.argv[4] != "none" else None
    backend = get_backend("openai", model="judge-mini", base_url=url, api_key_env="TEST_KEY")
    requests = [JudgeRequest(messages=(Message("user", f"Say A or B about item {{i}}."),),
                             settings=GenerationSettings(max_tokens=8), template="t",
                             template_version="1") for i in range({N_CALLS})]
    options = RunOptions(concurrency={CONCURRENCY}, max_cost=cap, job="job",
                         prices=PriceTable.from_dict({{"judge-mini": {{"input": 10.0,
                                                                      "output": 30.0}}}}))
    report = RunReport()
    with CompletionCache(path, commit_interval=interval) as cache:
        results = run_requests(backend, requests, cache=cache, options=options, report=report)
    assert all(r is not None for r in results), report.summary()
    print(report.cache_hits, report.fresh)
""")


@pytest.mark.slow
@pytest.mark.parametrize("cap", [None, 1.0])
def test_a_rerun_after_kill_pays_once_for_every_answer_received(tmp_path, kill_hard, cap):
    """A run whose cache holds answers back (an hour's interval: only claims and ledger
    records commit them) is killed while every worker waits on a held request. The rerun
    asks again only the calls in flight at the kill; with a cap, the job's ledger counts at
    least what the provider billed, within the cap."""
    pytest.importorskip("aiohttp", reason="provider backends need the [openai] extra")
    from fairjudge.judges.testing import FakeProviderServer

    path = tmp_path / "c.sqlite"
    env = dict(os.environ, TEST_KEY="sk-test")
    with FakeProviderServer(seed=3, prices=(10.0, 30.0)) as server:
        server.hold(after=ANSWERED)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD_RUN, server.base_url, str(path), str(HOUR),
             str(cap).lower()],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            reached = server.wait_for_requests(ANSWERED + CONCURRENCY, timeout=WAIT)
            assert reached, f"the client sent {server.request_count()} requests in {WAIT} s"
            assert child.poll() is None, child.communicate()
            before = server.counts
        finally:
            kill_hard(child)
        server.release()
        rerun = subprocess.run(
            [sys.executable, "-c", CHILD_RUN, server.base_url, str(path), "0.05",
             str(cap).lower()],
            env=env, capture_output=True, text=True, timeout=WAIT)
        assert rerun.returncode == 0, rerun.stderr
        assert rerun.stdout.split() == [str(ANSWERED), str(N_CALLS - ANSWERED)]
        counts = server.counts
        repeated = {k for k, n in counts.items() if n > 1}
        assert len(counts) == N_CALLS and max(counts.values()) == 2
        assert len(repeated) == CONCURRENCY and repeated <= set(before)
        billed = server.billed
    if cap is not None:
        with CompletionCache(path) as cache:
            spent = cache.job_spent("job")
        assert 0 < billed <= spent * (1 + 1e-9) and spent <= cap


def test_the_runner_commits_what_it_holds_before_returning(tmp_path, fake_server,
                                                           monkeypatch):
    """A run returns (or raises) with every answer committed, the cache still open."""
    from fairjudge.judges import GenerationSettings, RunOptions, get_backend, run_requests

    monkeypatch.setenv("TEST_KEY", "sk-test")
    path = tmp_path / "c.sqlite"
    backend = get_backend("openai", model="judge-mini", base_url=fake_server.base_url,
                          api_key_env="TEST_KEY")
    requests = [JudgeRequest(messages=(Message("user", f"Say A or B about item {i}."),),
                             settings=GenerationSettings(max_tokens=8)) for i in range(30)]
    with CompletionCache(path, commit_interval=HOUR) as cache:
        results = run_requests(backend, requests, cache=cache,
                               options=RunOptions(concurrency=4))
        assert all(r is not None for r in results)
        assert len(committed(path)) == 30 and committed(path, "leases") == set()
