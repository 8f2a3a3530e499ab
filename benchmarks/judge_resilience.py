"""Resilience figures of the judging pipeline against the loopback fake provider.

Prints, for the record:

1. a 300-pair run killed with SIGKILL midway, then rerun: verdicts cached at the kill, calls
   repeated by the rerun (only those in flight may be), and completeness;
2. a 500-pair run with 20% of requests answered 429 or 500: retries, failures, and whether
   every verdict equals a fault-free run's;
3. the spend cap: the cap, the money spent, calls made of those planned;
4. invalid outputs (a reasoning model that spends its whole budget thinking) counted and
   never mapped to a side.

Run: ``python benchmarks/judge_resilience.py`` (needs ``pip install 'fairjudge[openai]'``).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fairjudge.data import load_pairs
from fairjudge.judges import (GenerationSettings, Price, PriceTable, RunOptions, CompletionCache,
                              get_backend)
from fairjudge.judges.testing import FakeProviderServer, FaultPlan
from fairjudge.strategies import judge_pairs

CONCURRENCY = 8


def pairs_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"id": f"p{i}", "question": f"Question {i}?",
                          "a": "alpha " * int(rng.integers(3, 60)),
                          "b": "beta " * int(rng.integers(3, 60))} for i in range(n)])


def rows(path: Path) -> int:
    try:
        with sqlite3.connect(path, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def kill_and_resume(tmp: Path) -> None:
    path = tmp / "pairs.jsonl"
    pairs_frame(300, 0).to_json(path, orient="records", lines=True)
    cache, out = tmp / "kill.sqlite", tmp / "kill.jsonl"
    with FakeProviderServer(seed=1) as server:
        server.faults = FaultPlan(slow_rate=1.0, slow_seconds=0.05)
        cmd = [sys.executable, "-m", "fairjudge", "judge", str(path), "--backend", "openai",
               "--model", "judge-mini", "--base-url", server.base_url, "--api-key-env",
               "BENCH_KEY", "--out", str(out), "--cache", str(cache), "--concurrency",
               str(CONCURRENCY), "--no-progress"]
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while rows(cache) < 150 and first.poll() is None:
            time.sleep(0.01)
        first.send_signal(signal.SIGKILL)
        first.wait()
        at_kill = rows(cache)
        before = dict(server.counts)
        subprocess.run(cmd, check=True, capture_output=True)
        counts = server.counts
    repeated = sum(1 for k, n in counts.items() if n > 1)
    complete = len(pd.read_json(out, lines=True))
    print(f"1. SIGKILL after {at_kill}/300 verdicts were cached; the rerun requested "
          f"{sum(counts.values()) - sum(before.values())} calls; {repeated} calls were requested "
          f"twice (limit: concurrency {CONCURRENCY}); {complete}/300 verdicts in the output")


def faults(tmp: Path) -> None:
    pairs = load_pairs(pairs_frame(500, 1))
    fast = RunOptions(concurrency=16, backoff_base=0.001, backoff_max=0.01)
    with FakeProviderServer(seed=0) as server:
        backend = lambda: get_backend("openai", model="judge-mini", base_url=server.base_url,  # noqa: E731
                                      api_key_env="BENCH_KEY")
        clean = judge_pairs(pairs, "B0", [backend()], options=fast, seed=3,
                            cache=CompletionCache(tmp / "clean.sqlite"))
        server.faults = FaultPlan(rate_429=0.1, rate_500=0.1, retry_after=0.001)
        faulty = judge_pairs(pairs, "B0", [backend()], options=fast, seed=3,
                             cache=CompletionCache(tmp / "faulty.sqlite"))
        served = dict(server.fault_counts)
    same = clean.aggregate.equals(faulty.aggregate)
    print(f"2. 20% faults on 500 pairs: faults served {served}; {faulty.report.retries} retries, "
          f"{faulty.report.failed} failures; verdicts identical to the fault-free run: {same}")


def spend_cap(tmp: Path) -> None:
    pairs = load_pairs(pairs_frame(200, 2))
    prices = PriceTable({"judge-mini": Price(1000.0, 4000.0)})
    with FakeProviderServer(seed=0) as server:
        backend = get_backend("openai", model="judge-mini", base_url=server.base_url,
                              api_key_env="BENCH_KEY")
        result = judge_pairs(pairs, "S1", [backend], cache=CompletionCache(tmp / "cap.sqlite"),
                             options=RunOptions(concurrency=8, max_cost=5.0, prices=prices),
                             settings=GenerationSettings(temperature=0.0, max_tokens=400))
    r = result.report
    print(f"3. spend cap $5.00 at $1000/$4000 per Mtok: spent ${r.cost:.4f}; {r.fresh} of 400 "
          f"calls made, {r.skipped_by_cap} not made; stopped by the cap: {r.stopped_by_cap}")


def invalid_outputs(tmp: Path) -> None:
    pairs = load_pairs(pairs_frame(50, 3))
    with FakeProviderServer(seed=0) as server:
        backend = get_backend("openai", model="reasoner", base_url=server.base_url,
                              api_key_env="BENCH_KEY")
        result = judge_pairs(pairs, "B0", [backend], cache=CompletionCache(tmp / "inv.sqlite"),
                             settings=GenerationSettings(temperature=None,
                                                         max_completion_tokens=2))
    detail = result.calls["outcome_detail"].value_counts().to_dict()
    print(f"4. reasoning budget exhausted on 50 pairs: {result.report.invalid} invalid outputs "
          f"reported; outcome_detail {detail}; winners mapped to a side: "
          f"{int(result.calls['winner'].notna().sum())}")


def main() -> None:
    os.environ["BENCH_KEY"] = "sk-bench"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        kill_and_resume(tmp)
        faults(tmp)
        spend_cap(tmp)
        invalid_outputs(tmp)


if __name__ == "__main__":
    main()
