"""Money and data under faults, against a loopback provider that bills like a real one.

The provider (`FakeProviderServer` with prices) bills every request that reaches the model:
answers the client timed out on, truncated or malformed bodies, dropped connections, and
answers with missing or corrupt usage. Each scenario judges pairs with `fairjudge judge`
(subprocesses where processes are killed or run side by side) under a spend cap, and
prints one row:

* billed -- dollars the provider billed, against the cap (the cap must hold);
* billed 2x -- calls billed more than once: a billed failure (dropped connection, garbled
  body, an answer the client had timed out on) must be asked again to get an answer, and a
  call in flight at a kill is asked again by the rerun;
* answered 2x -- calls whose answer reached the client more than once: money spent twice
  on the same answer (0 everywhere, at most the calls in flight at a kill);
* faults -- faults the provider injected;
* lost -- answers that reached the client but are not in the cache (must be 0).

Run: ``python benchmarks/judge_resilience.py [--pairs 200]`` (needs
``pip install 'fairjudge[openai]'``). Prices are $10 / $30 per million input / output tokens
on both sides; every run asks for at most 64 output tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from fairjudge.judges import CompletionCache
from fairjudge.judges.testing import FakeProviderServer, FaultPlan

PRICE = (10.0, 30.0)
KINDS = ("drop", "429", "500", "529", "malformed", "wire", "slow")


def write_inputs(folder: Path, n: int) -> tuple[Path, Path]:
    pairs = folder / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({
        "id": f"p{i}", "question": f"Question number {i}?",
        "a": "alpha " * (20 + i % 17), "b": "beta " * (30 - i % 11)}) + "\n"
        for i in range(n)))
    prices = folder / "prices.json"
    prices.write_text(json.dumps({"judge-mini": {"input": PRICE[0], "output": PRICE[1]}}))
    return pairs, prices


def command(folder: Path, server, pairs: Path, prices: Path, *, cap: float, out: str,
            concurrency: int = 16, timeout: float = 1.0) -> list[str]:
    return [sys.executable, "-m", "fairjudge", "judge", str(pairs), "--backend", "openai",
            "--judge-model", "judge-mini", "--base-url", server.base_url, "--api-key-env",
            "BENCH_KEY", "--max-tokens", "64", "--prices", str(prices), "--max-cost", str(cap),
            "--concurrency", str(concurrency), "--timeout", str(timeout), "--max-retries", "8",
            "--out", str(folder / out), "--cache", str(folder / "cache.sqlite"),
            "--no-progress"]


ENV = dict(os.environ, BENCH_KEY="sk-bench")


def cached_texts(folder: Path) -> set:
    path = folder / "export.jsonl"
    with CompletionCache(folder / "cache.sqlite") as cache:
        cache.export(path)
    return {json.loads(line)["text"] for line in path.open()}


def row(name: str, cap: float, server, folder: Path, *, note: str = "") -> dict:
    billed_twice = sum(1 for n in server.billed_counts.values() if n > 1)
    answered_twice = sum(1 for n in server.successes.values() if n > 1)
    # Every answer the provider delivered (a 200 with a verdict) must be in the cache.
    delivered = len(server.successes)
    with CompletionCache(folder / "cache.sqlite") as cache:
        stored = len(cache)
    lost = max(0, delivered - stored)
    injected = sum(server.fault_counts.values())
    return {"scenario": name, "cap": cap, "billed": server.billed,
            "within": server.billed <= cap + 1e-12, "billed_twice": billed_twice,
            "answered_twice": answered_twice, "lost": lost,
            "faults": injected, "note": note}


def kill_at(fraction: float, n: int) -> dict:
    """SIGKILL once `fraction` of the calls were answered, then the same command again."""
    with tempfile.TemporaryDirectory() as tmp, \
            FakeProviderServer(seed=3, prices=PRICE) as server:
        folder = Path(tmp)
        pairs, prices = write_inputs(folder, n)
        cap, concurrency = 1.0, 8
        cmd = command(folder, server, pairs, prices, cap=cap, out="out.jsonl",
                      concurrency=concurrency)
        answered = max(1, int(fraction * n))
        server.hold(after=answered)
        first = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        server.wait_for_requests(answered + concurrency, timeout=120)
        first.send_signal(signal.SIGKILL)
        first.wait()
        server.release()
        done = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
        complete = sum(1 for _ in open(folder / "out.jsonl")) if done.returncode == 0 else 0
        return row(f"kill -9 after {fraction:.0%} answered, rerun", cap, server, folder,
                   note=f"in flight at the kill: {concurrency}; {complete}/{n} verdicts")


def faults(kind: str, rate: float, n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, \
            FakeProviderServer(seed=4, prices=PRICE) as server:
        folder = Path(tmp)
        pairs, prices = write_inputs(folder, n)
        plan = {"drop": {"drop_rate": rate}, "429": {"rate_429": rate},
                "500": {"rate_500": rate}, "529": {"rate_529": rate},
                "malformed": {"malformed_rate": rate}, "wire": {"wire_rate": rate},
                "slow": {"slow_rate": rate, "slow_seconds": 1.5}}[kind]
        server.faults = FaultPlan(retry_after=0.01, **plan)
        # About 0.003 dollars a call: the cap stops the run after roughly 100 calls, so
        # the faults are many and the cap still binds.
        cap = 0.3
        done = subprocess.run(command(folder, server, pairs, prices, cap=cap, out="out.jsonl",
                                      timeout=0.5), env=ENV, capture_output=True, text=True)
        return row(f"{rate:.0%} {kind}", cap, server, folder, note=f"exit {done.returncode}")


def usage(kind: str, n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, \
            FakeProviderServer(seed=5, prices=PRICE) as server:
        folder = Path(tmp)
        pairs, prices = write_inputs(folder, n)
        server.faults = FaultPlan(**{f"{kind}_usage_rate": 1.0})
        cap = 0.1
        done = subprocess.run(command(folder, server, pairs, prices, cap=cap, out="out.jsonl"),
                              env=ENV, capture_output=True, text=True)
        return row(f"{kind} usage on every answer", cap, server, folder,
                   note=f"exit {done.returncode}")


def processes(count: int, n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, \
            FakeProviderServer(seed=6, prices=PRICE) as server:
        folder = Path(tmp)
        pairs, prices = write_inputs(folder, n)
        server.faults = FaultPlan(slow_rate=1.0, slow_seconds=0.02)
        cap = 0.2
        cmd = command(folder, server, pairs, prices, cap=cap, out="out.jsonl", concurrency=8)
        procs = [subprocess.Popen([c if c != "out.jsonl" else f"out{i}.jsonl" for c in cmd],
                                  env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i in range(count)]
        codes = [p.wait() for p in procs]
        return row(f"{count} processes, one cache", cap, server, folder,
                   note=f"exit codes {codes}")


def headline(n: int) -> dict:
    """The fault battery's case: 30% slow or garbled answers, timeout 1 s, concurrency 64."""
    with tempfile.TemporaryDirectory() as tmp, \
            FakeProviderServer(seed=7, prices=PRICE) as server:
        folder = Path(tmp)
        pairs, prices = write_inputs(folder, n)
        server.faults = FaultPlan(slow_rate=0.15, slow_seconds=2.0, malformed_rate=0.15)
        cap = 0.4
        done = subprocess.run(command(folder, server, pairs, prices, cap=cap, out="out.jsonl",
                                      concurrency=64, timeout=1.0),
                              env=ENV, capture_output=True, text=True)
        return row("30% slow or garbled, timeout 1 s, concurrency 64", cap, server, folder,
                   note=f"exit {done.returncode}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    args = parser.parse_args(argv)
    n = args.pairs
    rows = [kill_at(f, n) for f in (0.1, 0.3, 0.5, 0.7, 0.9)]
    rows += [faults(kind, rate, n) for rate in (0.2, 0.5) for kind in KINDS]
    rows += [usage(kind, n) for kind in ("missing", "bad")]
    rows += [processes(c, n) for c in (2, 4)]
    rows.append(headline(n))
    print(f"{'scenario':<50} {'cap $':>6} {'billed $':>8} {'<= cap':>6} {'billed 2x':>9} "
          f"{'answered 2x':>11} {'faults':>6} {'lost':>4}  note")
    for r in rows:
        print(f"{r['scenario']:<50} {r['cap']:>6.2f} {r['billed']:>8.4f} "
              f"{'yes' if r['within'] else 'NO':>6} {r['billed_twice']:>9} "
              f"{r['answered_twice']:>11} {r['faults']:>6} {r['lost']:>4}  {r['note']}")
    ok = all(r["within"] and r["lost"] == 0 for r in rows)
    killed = [r["scenario"].startswith("kill") for r in rows]
    ok &= all(r["answered_twice"] <= (8 if k else 0) for r, k in zip(rows, killed))
    print("\nall targets met" if ok else "\nSOME TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
