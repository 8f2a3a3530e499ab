"""Judge-call throughput against the loopback fake provider.

Measures fresh verdicts per second through fairjudge's full path (prompt rendering, cache
lookup, leases, the aiohttp OpenAI-compatible backend, parsing, durable SQLite commits of
the answers in groups) at several concurrency limits, and the rate of a fully cached
re-run. The server runs in a separate process (``python -m fairjudge.judges.testing``) so
that client and server do not share an event loop; on a 2-core machine they still share
the CPU, so these are lower bounds for a remote provider.

It then compares the full path with a bare aiohttp client (one session, the same request
bodies built beforehand, nothing stored) against the same server at concurrency 64:
``--pairs`` pairs of runs, in alternating order, every pipeline run on a fresh cache and fresh
requests, reporting the median of the paired ratios of wall-clock rate and of verdicts per
client CPU-second (the client's own cost, less sensitive to the server sharing the cores).
Each pair also runs the same path without a cache (keys, runner, backend and parsing, nothing
stored), which shows how much of the gap the durable cache is. The bare client runs with the
garbage-collector setting fairjudge's runs use (``fairjudge._util._gc``). Where ``/proc``
tells (Linux), the table also gives the share of each run's wall-clock time the server
process spent on the CPU: when the bare client keeps it near 100% on 2 cores, client and
server each hold a core, and nothing the client does can move to a spare one.

Run: ``python benchmarks/bench_judge.py [--requests 3000] [--concurrency 1,16,64,256]
[--pairs 5]`` (needs ``pip install 'fairjudge[openai]'``). Prints tables; nothing is
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fairjudge._util._gc import fewer_young_collections
from fairjudge.judges import (
    CompletionCache,
    GenerationSettings,
    JudgeRequest,
    RunOptions,
    RunReport,
    get_backend,
    run_requests,
)
from fairjudge.judges._prompts import BUILTIN_TEMPLATES


def make_requests(n: int, tag: str) -> list[JudgeRequest]:
    template = BUILTIN_TEMPLATES["letter"]
    return [JudgeRequest(messages=template.render(question=f"Question {tag}-{i}?",
                                                  answer_a="short answer " * (i % 7 + 1),
                                                  answer_b="another answer " * (i % 5 + 1)),
                         settings=GenerationSettings(temperature=0.0, max_tokens=4),
                         template=template.name, template_version=template.version)
            for i in range(n)]


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "fairjudge.judges.testing", "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1"):
        proc.kill()
        raise RuntimeError(f"fake server did not start: {url!r}")
    return proc, url


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU-seconds of a process so far, from ``/proc`` (None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def server_busy(server: subprocess.Popen, run):
    """``run()``'s result and the share of its wall-clock time the server spent on the CPU
    (None where ``/proc`` does not tell)."""
    before, start = cpu_seconds(server.pid), time.perf_counter()
    result = run()
    after, wall = cpu_seconds(server.pid), time.perf_counter() - start
    busy = None if before is None or after is None else (after - before) / wall
    return result, busy


def bare_client(url: str, bodies: list[dict], concurrency: int) -> tuple[float, float]:
    """Seconds and client CPU-seconds for a bare aiohttp client to POST every body."""
    import aiohttp

    async def run():
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:
            queue = list(bodies)

            async def worker():
                while queue:
                    async with session.post(f"{url}/chat/completions", json=queue.pop(),
                                            headers={"Authorization": "Bearer sk-bench"}) as r:
                        if r.status != 200:
                            raise RuntimeError(f"the bare client got HTTP {r.status}")
                        await r.json()

            await asyncio.gather(*(worker() for _ in range(concurrency)))

    start, cpu = time.perf_counter(), time.process_time()
    # The collector setting fairjudge's runs use, so that the comparison is of the rest.
    with fewer_young_collections():
        asyncio.run(run())
    return time.perf_counter() - start, time.process_time() - cpu


def pipeline(url: str, requests: list[JudgeRequest], concurrency: int,
             cache_path: Path | None) -> tuple[float, float]:
    """Seconds and client CPU-seconds for fairjudge's full path on a fresh cache (or with
    no cache when ``cache_path`` is None)."""
    backend = get_backend("openai", model="bench", base_url=url, api_key_env="BENCH_KEY",
                          max_connections=concurrency)
    report = RunReport()
    with (CompletionCache(cache_path) if cache_path else contextlib.nullcontext()) as cache:
        start, cpu = time.perf_counter(), time.process_time()
        run_requests(backend, requests, cache=cache,
                     options=RunOptions(concurrency=concurrency), report=report)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    if report.fresh != len(requests):
        raise RuntimeError(f"the pipeline answered {report.fresh} of {len(requests)}")
    return seconds, cpu


def compare_with_bare(server: subprocess.Popen, url: str, n: int, pairs: int,
                      concurrency: int, tmp: str) -> list:
    """Bare, pipeline and cacheless pipeline runs, each group in the reverse order of the
    last; rows of (bare wall rate, bare CPU rate, pipeline wall rate, pipeline CPU rate,
    cacheless wall rate, cacheless CPU rate, server busy during the bare run, server busy
    during the pipeline run) per group."""
    backend = get_backend("openai", model="bench", base_url=url, api_key_env="BENCH_KEY")
    rows = []
    for pair in range(pairs):
        requests = make_requests(n, f"pair{pair}")
        bodies = [backend.request_body(r) for r in requests]
        runs, busy = {}, {}
        order = ("bare", "pipeline", "no cache")
        for kind in (order if pair % 2 == 0 else order[::-1]):
            if kind == "bare":
                runs[kind], busy[kind] = server_busy(
                    server, lambda: bare_client(url, bodies, concurrency))
            else:
                cache_path = Path(tmp) / f"p{pair}.sqlite" if kind == "pipeline" else None
                runs[kind], busy[kind] = server_busy(
                    server, lambda: pipeline(url, requests, concurrency, cache_path))
        (bare_wall, bare_cpu), (wall, cpu) = runs["bare"], runs["pipeline"]
        rows.append((n / bare_wall, n / bare_cpu, n / wall, n / cpu, n / runs["no cache"][0],
                     n / runs["no cache"][1], busy["bare"], busy["pipeline"]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", default="1,16,64,256")
    parser.add_argument("--pairs", type=int, default=5,
                        help="alternating bare/pipeline runs at concurrency 64 (0: skip)")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    os.environ["BENCH_KEY"] = "sk-bench"
    proc, url = start_server()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for concurrency in levels:
                n = min(args.requests, 300) if concurrency == 1 else args.requests
                cache = CompletionCache(Path(tmp) / f"c{concurrency}.sqlite")
                backend = get_backend("openai", model="bench", base_url=url,
                                      api_key_env="BENCH_KEY", max_connections=concurrency)
                requests = make_requests(n, f"c{concurrency}")
                report = RunReport()
                start = time.perf_counter()
                run_requests(backend, requests, cache=cache,
                             options=RunOptions(concurrency=concurrency), report=report)
                seconds = time.perf_counter() - start
                rows.append(("fresh", concurrency, n, seconds, n / seconds, report.fresh))
                if concurrency == max(levels):
                    backend = get_backend("openai", model="bench", base_url=url,
                                          api_key_env="BENCH_KEY")
                    report = RunReport()
                    start = time.perf_counter()
                    run_requests(backend, requests, cache=cache,
                                 options=RunOptions(concurrency=concurrency), report=report)
                    seconds = time.perf_counter() - start
                    rows.append(("cached re-run", concurrency, n, seconds, n / seconds,
                                 report.cache_hits))
                cache.close()
            paired = compare_with_bare(proc, url, args.requests, args.pairs, 64, tmp)
    finally:
        proc.kill()
    print(f"judge throughput against the loopback fake provider ({os.cpu_count()} cores)")
    print(f"{'run':<15}{'concurrency':>12}{'requests':>10}{'seconds':>10}{'verdicts/s':>12}"
          f"{'served':>8}")
    for kind, c, n, s, rate, served in rows:
        print(f"{kind:<15}{c:>12}{n:>10}{s:>10.2f}{rate:>12.0f}{served:>8}")
    fresh64 = next((r[4] for r in rows if r[0] == "fresh" and r[1] == 64), None)
    cached = next((r[4] for r in rows if r[0] == "cached re-run"), None)
    if fresh64 is not None:
        print(f"target >= 1,000 fresh verdicts/s at concurrency 64: "
              f"{'MET' if fresh64 >= 1000 else 'NOT MET'} ({fresh64:.0f}/s)")
    if cached is not None:
        print(f"target >= 20,000 cached verdicts/s: {'MET' if cached >= 20000 else 'NOT MET'} "
              f"({cached:.0f}/s)")

    if paired:
        print(f"\nfull path against a bare aiohttp client, concurrency 64, {args.requests} "
              "requests, alternating runs")
        print(f"{'pair':<6}{'bare/s':>10}{'bare/CPU-s':>12}{'fairjudge/s':>13}"
              f"{'fairjudge/CPU-s':>17}{'ratio wall':>12}{'ratio CPU':>11}"
              f"{'no cache/s':>12}{'wall':>7}{'server busy: bare':>19}{'fairjudge':>11}")
        for i, (bare_wall, bare_cpu, wall, cpu, cacheless, _, *busy) in enumerate(paired):
            shares = "".join(f"{'n/a' if b is None else f'{b:.0%}':>{w}}"
                             for b, w in zip(busy, (19, 11)))
            print(f"{i:<6}{bare_wall:>10.0f}{bare_cpu:>12.0f}{wall:>13.0f}{cpu:>17.0f}"
                  f"{wall / bare_wall:>12.2f}{cpu / bare_cpu:>11.2f}"
                  f"{cacheless:>12.0f}{cacheless / bare_wall:>7.2f}{shares}")
        wall_ratio = statistics.median(r[2] / r[0] for r in paired)
        cpu_ratio = statistics.median(r[3] / r[1] for r in paired)
        cacheless = statistics.median(r[4] / r[0] for r in paired)
        print(f"without a cache the same path runs at {cacheless:.2f} of the bare client's "
              "wall-clock rate (median)")
        micros = [statistics.median(1e6 / r[i] for r in paired) for i in (1, 5, 3)]
        print("client CPU per verdict (median): bare {:.0f} us, fairjudge without a cache "
              "{:.0f} us, full path {:.0f} us; 0.75 of the bare rate leaves {:.0f} us while "
              "client and server each hold a core".format(*micros, micros[0] / 0.75))
        print(f"target >= 0.75 of a bare aiohttp client at concurrency 64: "
              f"{'MET' if min(wall_ratio, cpu_ratio) >= 0.75 else 'NOT MET'} (median paired "
              f"ratio {wall_ratio:.2f} wall-clock, {cpu_ratio:.2f} per client CPU-second)")


if __name__ == "__main__":
    main()
