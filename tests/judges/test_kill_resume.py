"""Acceptance: a run killed (SIGKILL) or interrupted (Ctrl-C) resumes from the cache without
paying twice.

The interruption lands at a known point, whatever the machine's load: the fake server answers
the first ``ANSWERED`` requests, then holds every later one (`FakeProviderServer.hold`). Once
it has received ``ANSWERED + concurrency`` requests, every worker of the client waits on a
held request, so the client has cached exactly ``ANSWERED`` verdicts and cannot finish
before the signal. Requests are counted on the server side only: the tests never read the
cache's tables.
"""

import json
import os
import signal
import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("aiohttp", reason="provider backends need the [openai] extra (aiohttp)")

ANSWERED = 60
WAIT = 120  # seconds; generous for a loaded machine, never reached when things work


def write_pairs(path, n):
    with open(path, "w") as handle:
        for i in range(n):
            handle.write(json.dumps({"id": f"p{i}", "question": f"Question {i}?",
                                     "a": "word " * (i % 17 + 1), "b": "text " * (i % 11 + 2)})
                         + "\n")


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def judge_command(tmp_path, server, n_pairs, concurrency):
    pairs = tmp_path / "pairs.jsonl"
    write_pairs(pairs, n_pairs)
    # -X faulthandler: a client that does not stop is made to dump every thread's stack
    # (SIGABRT), so a failure shows where it waits.
    return [sys.executable, "-X", "faulthandler", "-m", "fairjudge", "judge", str(pairs),
            "--backend", "openai",
            "--model", "judge-mini", "--base-url", server.base_url, "--api-key-env",
            "TEST_KEY", "--out", str(tmp_path / "verdicts.jsonl"), "--cache",
            str(tmp_path / "cache.sqlite"), "--concurrency", str(concurrency), "--no-progress"]


def interrupt_then_resume(tmp_path, server, *, n_pairs, concurrency, stop):
    """Run the command until every worker waits on a held request, ``stop`` it, release the
    server and rerun; return (first process, its stderr, keys requested before the stop,
    the completed rerun)."""
    cmd = judge_command(tmp_path, server, n_pairs, concurrency)
    env = dict(os.environ, TEST_KEY="sk-test")
    server.hold(after=ANSWERED)
    # Ctrl-C as a terminal delivers it: a test run started in the background (`cmd &` in a
    # script, as CI may do) ignores SIGINT, and an ignored signal is inherited.
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, preexec_fn=_default_sigint)
    try:
        reached = server.wait_for_requests(ANSWERED + concurrency, timeout=WAIT)
        assert reached, f"the client sent {server.request_count()} requests in {WAIT} s"
        assert first.poll() is None, first.communicate()[1]
        before = server.counts
        # Every worker is blocked: nothing more can arrive until the hold is released.
        assert len(before) == server.request_count() == ANSWERED + concurrency
        stop(first)
        try:
            _, err = first.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            first.send_signal(signal.SIGABRT)
            _, err = first.communicate(timeout=30)
            raise AssertionError(f"the client did not stop within 60 s; its stacks:\n{err}")

    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    server.release()
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=WAIT)
    assert second.returncode == 0, second.stderr
    return first, err, before, second


def assert_paid_once(server, before, second, *, n_pairs, concurrency, out):
    counts = server.counts
    verdicts = pd.read_json(out, lines=True)
    assert len(verdicts) == n_pairs and verdicts["pair_id"].nunique() == n_pairs
    assert verdicts["winner"].notna().all()
    assert len(counts) == n_pairs  # every distinct call reached the server ...
    # ... once, except the calls held (in flight) at the interruption, which were asked again.
    repeated = {k for k, n in counts.items() if n > 1}
    assert len(repeated) == concurrency and repeated <= set(before)
    assert max(counts.values()) == 2
    assert sum(counts.values()) == n_pairs + concurrency
    assert f"{n_pairs} calls ({n_pairs} distinct): {ANSWERED} from cache" in second.stderr


@pytest.mark.slow
def test_sigkill_midway_then_resume(tmp_path, fake_server):
    first, _, before, second = interrupt_then_resume(
        tmp_path, fake_server, n_pairs=200, concurrency=8,
        stop=lambda process: process.send_signal(signal.SIGKILL))
    assert first.returncode == -signal.SIGKILL
    assert_paid_once(fake_server, before, second, n_pairs=200, concurrency=8,
                     out=tmp_path / "verdicts.jsonl")


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_the_rerun_resumes(tmp_path, fake_server):
    first, err, before, second = interrupt_then_resume(
        tmp_path, fake_server, n_pairs=150, concurrency=4,
        stop=lambda process: process.send_signal(signal.SIGINT))
    assert first.returncode == 130, err
    assert "interrupted" in err and "rerun the same command to resume" in err
    assert "Traceback" not in err
    assert_paid_once(fake_server, before, second, n_pairs=150, concurrency=4,
                     out=tmp_path / "verdicts.jsonl")
