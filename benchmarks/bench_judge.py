"""Judge-call throughput against the loopback fake provider.

Measures fresh verdicts per second through fairjudge's full path (prompt rendering, cache
lookup, the aiohttp OpenAI-compatible backend, parsing, one durable SQLite commit per
verdict) at several concurrency limits, and the rate of a fully cached re-run. The server
runs in a separate process (``python -m fairjudge.judges.testing``) so that client and
server do not share an event loop; on a 2-core machine they still share the CPU, so these
are lower bounds for a remote provider.

Run: ``python benchmarks/bench_judge.py [--requests 3000] [--concurrency 1,16,64,256]``
(needs ``pip install 'fairjudge[openai]'``). Prints a table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fairjudge.judges import (GenerationSettings, JudgeRequest, RunOptions, RunReport,
                              CompletionCache, get_backend, run_requests)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", default="1,16,64,256")
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


if __name__ == "__main__":
    main()
