"""Acceptance: a run killed with SIGKILL resumes from the cache without paying twice."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pandas as pd
import pytest

pytest.importorskip("aiohttp", reason="provider backends need the [openai] extra (aiohttp)")

from fairjudge.judges.testing import FakeProviderServer, FaultPlan  # noqa: E402

CONCURRENCY = 8


def cached_rows(path):
    try:
        with sqlite3.connect(path, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_sigkill_midway_then_resume(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    with open(pairs, "w") as handle:
        for i in range(300):
            handle.write(json.dumps({"id": f"p{i}", "question": f"Question {i}?",
                                     "a": "word " * (i % 17 + 1), "b": "text " * (i % 11 + 2)})
                         + "\n")
    cache, out = tmp_path / "cache.sqlite", tmp_path / "verdicts.jsonl"
    with FakeProviderServer(seed=1) as server:
        server.faults = FaultPlan(slow_rate=1.0, slow_seconds=0.05)
        cmd = [sys.executable, "-m", "fairjudge", "judge", str(pairs), "--backend", "openai",
               "--model", "judge-mini", "--base-url", server.base_url, "--api-key-env",
               "TEST_KEY", "--out", str(out), "--cache", str(cache), "--concurrency",
               str(CONCURRENCY), "--no-progress"]
        env = dict(os.environ, TEST_KEY="sk-test")
        first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while cached_rows(cache) < 100 and time.time() < deadline and first.poll() is None:
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        assert first.returncode == -signal.SIGKILL
        cached_at_kill = cached_rows(cache)
        assert 100 <= cached_at_kill < 300
        requested_before = dict(server.counts)
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 0, second.stderr
        counts = server.counts
    verdicts = pd.read_json(out, lines=True)
    assert len(verdicts) == 300 and verdicts["pair_id"].nunique() == 300
    assert verdicts["winner"].notna().all()
    assert len(counts) == 300  # every distinct call reached the server ...
    repeated = [k for k, n in counts.items() if n > 1]
    # ... once, except the calls in flight at the kill (at most the concurrency limit).
    assert len(repeated) <= CONCURRENCY
    assert all(k in requested_before for k in repeated)
    assert sum(counts.values()) == 300 + sum(n - 1 for n in counts.values())
    assert f"{cached_at_kill} from cache" in second.stderr


def test_ctrl_c_stops_cleanly_and_the_rerun_resumes(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    with open(pairs, "w") as handle:
        for i in range(200):
            handle.write(json.dumps({"id": f"p{i}", "question": f"Q{i}?", "a": "x " * (i % 9 + 1),
                                     "b": "y " * (i % 7 + 1)}) + "\n")
    cache, out = tmp_path / "cache.sqlite", tmp_path / "verdicts.jsonl"
    with FakeProviderServer(seed=2) as server:
        server.faults = FaultPlan(slow_rate=1.0, slow_seconds=0.05)
        cmd = [sys.executable, "-m", "fairjudge", "judge", str(pairs), "--backend", "openai",
               "--model", "judge-mini", "--base-url", server.base_url, "--api-key-env",
               "TEST_KEY", "--out", str(out), "--cache", str(cache), "--concurrency", "4",
               "--no-progress"]
        env = dict(os.environ, TEST_KEY="sk-test")
        first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        deadline = time.time() + 60
        while cached_rows(cache) < 40 and time.time() < deadline and first.poll() is None:
            time.sleep(0.02)
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=30)
        assert first.returncode == 130, err
        assert "interrupted" in err and "rerun the same command to resume" in err
        assert "Traceback" not in err
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 0, second.stderr
        assert max(server.counts.values()) <= 2
    assert len(pd.read_json(out, lines=True)) == 200
