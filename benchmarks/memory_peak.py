"""Peak memory of `fairjudge rank` on a large verdict file and `fairjudge judge` on many pairs.

Each command runs in a fresh process; its peak resident set size (``ru_maxrss``) is read
from the kernel when it exits. Inputs are generated in a temporary folder:

* rank -- a verdict file in the layout `fairjudge judge` writes (every column, a judge
  explanation of a few hundred characters in ``raw``), 300 items, grown to ``--rank-mb``
  megabytes;
* judge -- ``--judge-pairs`` pairs with answers of 60 to 200 words, judged by the
  `simulated` backend (no network, so the table measures fairjudge, not a client library).

    python benchmarks/memory_peak.py [--rank-mb 200] [--judge-pairs 60000]

Measured on 2 cores (Python 3.11, pandas 3.1, pyarrow installed), peak RSS in MiB:

    command                          before streaming   after
    rank, 201 MB (228,000 verdicts)              1390     343
    judge, 60,000 pairs (82 MB)                   935     421
    judge again, all from the cache               936     421

Before, a JSONL file was one list of Python dicts (about ten times the bytes of the frame
they become), the judge rendered every prompt of the table before sending the first, and
text features and the output file were built whole. Now JSONL is read and written
:data:`~fairjudge.data._io.JSONL_CHUNK` records at a time, ``rank`` reads only the columns a
fit uses (not the judge's explanations), and pairs are judged
:data:`~fairjudge.strategies._judging.PAIRS_PER_CHUNK` at a time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MEASURE = ("import resource, subprocess, sys; "
           "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
           "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def peak_rss(command: list[str]) -> tuple[int, float, float]:
    """Run ``command`` in a fresh process: (exit code, peak RSS in MiB, seconds)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURE, *command], check=True,
                          capture_output=True, text=True)
    code, kib = done.stdout.split()
    return int(code), int(kib) / 1024, time.perf_counter() - start


def write_verdicts(path: Path, megabytes: float, rng: np.random.Generator) -> int:
    """A judge-output verdict file of about ``megabytes`` MB; returns its line count."""
    n_items = 300
    quality = rng.normal(size=n_items)
    words = "the answer is correct and complete but the second one misses a step".split()
    target = megabytes * 1e6
    written = lines = 0
    with path.open("w") as out:
        while written < target:
            chunk = []
            for _ in range(2000):
                a, b = rng.choice(n_items, size=2, replace=False)
                win = rng.random() < 1 / (1 + np.exp(quality[b] - quality[a]))
                explanation = " ".join(rng.choice(words, size=int(rng.integers(30, 80))))
                chunk.append(json.dumps({
                    "pair_id": f"q{lines}", "question_id": f"q{lines % 5000}",
                    "item_a": f"m{a}", "item_b": f"m{b}", "winner": "a" if win else "b",
                    "outcome_detail": "win", "judge": "gpt-judge", "strategy": "B0",
                    "order": "ab", "temperature": 0.0, "sample": 0, "template": "baseline",
                    "template_version": "1", "cost": 0.0004, "input_tokens": 612,
                    "output_tokens": 90, "latency": 1.2, "cached": False, "p_a": None,
                    "p_b": None, "p_tie": None, "scores": None,
                    "length_a": int(rng.integers(50, 400)),
                    "length_b": int(rng.integers(50, 400)), "markdown_a": 0, "markdown_b": 1,
                    "raw": f"{explanation}. [[{'A' if win else 'B'}]]", "detail": "",
                    "parser": "verdict@2", "answer_has_verdict_tokens": False,
                    "answer_has_delimiters": False}) + "\n")
                lines += 1
            text = "".join(chunk)
            out.write(text)
            written += len(text)
    return lines


def write_pairs(path: Path, n: int, rng: np.random.Generator) -> None:
    words = "paris is the capital of france and its largest city on the seine".split()
    with path.open("w") as out:
        for i in range(n):
            a = " ".join(rng.choice(words, size=int(rng.integers(60, 200))))
            b = " ".join(rng.choice(words, size=int(rng.integers(60, 200))))
            out.write(json.dumps({"id": f"p{i}", "question": f"Question {i}: where?",
                                  "a": a, "b": b}) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rank-mb", type=float, default=200.0)
    parser.add_argument("--judge-pairs", type=int, default=60_000)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    fairjudge = [sys.executable, "-m", "fairjudge"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        verdicts = folder / "verdicts.jsonl"
        lines = write_verdicts(verdicts, args.rank_mb, rng)
        size = verdicts.stat().st_size / 1e6
        code, mib, seconds = peak_rss(fairjudge + ["rank", str(verdicts), "--k", "10"])
        rows.append((f"rank, {size:.0f} MB verdict file ({lines:,} verdicts)", code, mib,
                     seconds))
        pairs = folder / "pairs.jsonl"
        write_pairs(pairs, args.judge_pairs, rng)
        size = pairs.stat().st_size / 1e6
        command = fairjudge + ["judge", str(pairs), "--backend", "simulated", "--out",
                               str(folder / "out.jsonl"), "--cache",
                               str(folder / "cache.sqlite"), "--no-progress"]
        code, mib, seconds = peak_rss(command)
        rows.append((f"judge, {args.judge_pairs:,} pairs ({size:.0f} MB), simulated", code,
                     mib, seconds))
        code, mib, seconds = peak_rss(command)
        rows.append(("judge again, every call from the cache", code, mib, seconds))
    print(f"{'command':<58} {'exit':>4} {'peak RSS MiB':>12} {'seconds':>8}")
    for name, code, mib, seconds in rows:
        print(f"{name:<58} {code:>4} {mib:>12.0f} {seconds:>8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
