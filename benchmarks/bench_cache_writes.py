"""What it costs to store a judge's answer durably: the floor under the judge pipeline.

``bench_judge.py`` compares fairjudge's judge path with a bare aiohttp client. Every fresh
answer there is committed to the SQLite cache before the run spends more (see
``CompletionCache``). This script measures that storage on its own, per answer, on the
answers of ``bench_judge.py`` (the ``letter`` template, the same request payloads):

``CompletionCache``
    ``put`` inside an event loop, then ``flush`` every ``group`` answers: the cache's own
    path (one ``BEGIN IMMEDIATE`` ... ``COMMIT`` per group, the answers' leases dropped in
    the same transaction), on a fresh file in WAL mode with ``synchronous=NORMAL``.
``executemany``
    The same rows and lease deletions, written by ``executemany`` on the same schema:
    into a file as the cache opens it, into a file with ``synchronous=OFF`` (not durable,
    for reference), and into an in-memory database (no I/O: SQLite's own work).

At concurrency 64 a run commits about 13 answers per group (the answers that arrive
together); the larger groups show what batching more could save. CPU and wall-clock
microseconds per answer, best of ``--repeats`` runs of ``--answers`` answers, each on a
fresh database.

Run: ``python benchmarks/bench_cache_writes.py [--answers 6000] [--repeats 3]``. Prints a
table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from fairjudge.judges import CompletionCache
from fairjudge.judges._cache import _INSERT, _SCHEMA, _completion_row, keyed_payload
from fairjudge.judges._types import Completion, Usage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_judge import make_requests  # noqa: E402  (the same requests as bench_judge)

IDENTITY = {"backend": "openai", "model": "bench", "extra_body": {},
            "endpoint": "http://127.0.0.1:8000/v1"}
ANSWER = Completion(text="A", usage=Usage(120, 1), latency=0.002, finish_reason="stop")


def answers(n: int, tag: str) -> list:
    """``(key, request, payload JSON)`` of ``n`` fresh requests."""
    requests = make_requests(n, tag)
    return [(*keyed_payload(IDENTITY, r), r) for r in requests]


def through_the_cache(path: Path, items: list, group: int) -> tuple[float, float]:
    """Seconds and CPU-seconds to put and flush every answer, ``group`` at a time."""
    cache = CompletionCache(path)

    async def run():
        for start in range(0, len(items), group):
            for key, payload, request in items[start:start + group]:
                cache.put(key, ANSWER, identity=IDENTITY, request=request,
                          payload_text=payload)
            cache.flush()

    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(run())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    cache.close()
    return wall, cpu


def by_executemany(target: str, items: list, group: int, synchronous: str
                   ) -> tuple[float, float]:
    """Seconds and CPU-seconds to write the rows with ``executemany``, ``group`` per
    transaction, into ``target`` (a file or ``:memory:``)."""
    conn = sqlite3.connect(target, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.executescript(_SCHEMA)
    rows = [_completion_row(key, ANSWER, IDENTITY, template=r.template,
                            template_version=r.template_version, kind=r.kind,
                            sample=r.sample, origin="fresh", payload_text=payload)
            for key, payload, r in items]
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(rows), group):
        part = rows[start:start + group]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(_INSERT, part)
        conn.executemany("DELETE FROM leases WHERE key = ?", [(row[0],) for row in part])
        conn.execute("COMMIT")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    conn.close()
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=6000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--groups", default="13,64,256")
    args = parser.parse_args()
    groups = [int(g) for g in args.groups.split(",")]
    methods = {
        "CompletionCache put + flush": lambda d, items, g: through_the_cache(
            Path(d) / "cache.sqlite", items, g),
        "executemany, file (NORMAL)": lambda d, items, g: by_executemany(
            str(Path(d) / "raw.sqlite"), items, g, "NORMAL"),
        "executemany, file (OFF)": lambda d, items, g: by_executemany(
            str(Path(d) / "raw.sqlite"), items, g, "OFF"),
        "executemany, in memory": lambda d, items, g: by_executemany(
            ":memory:", items, g, "OFF"),
    }
    print(f"durable storage of judge answers: {args.answers} answers, best of "
          f"{args.repeats}, microseconds per answer")
    print(f"{'method':<30}{'group':>7}{'CPU us':>9}{'wall us':>9}")
    for name, method in methods.items():
        for group in groups:
            best = None
            for repeat in range(args.repeats):
                items = answers(args.answers, f"{name}-{group}-{repeat}")
                with tempfile.TemporaryDirectory() as folder:
                    wall, cpu = method(folder, items, group)
                if best is None or cpu < best[1]:
                    best = (wall, cpu)
            wall, cpu = best
            print(f"{name:<30}{group:>7}{1e6 * cpu / args.answers:>9.1f}"
                  f"{1e6 * wall / args.answers:>9.1f}")


if __name__ == "__main__":
    main()
