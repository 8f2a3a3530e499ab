"""Start-up time of the command line: `fairjudge --help` and `import fairjudge`.

Prints a table of the median and range over repeated fresh interpreter runs (each run is a
new process, as a user's shell starts one).

    python benchmarks/bench_cli_startup.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass (interpreter alone)": [sys.executable, "-c", "pass"],
    "fairjudge --help": [sys.executable, "-m", "fairjudge", "--help"],
    "fairjudge rank --help": [sys.executable, "-m", "fairjudge", "rank", "--help"],
    "import fairjudge": [sys.executable, "-c", "import fairjudge"],
    "import fairjudge; fairjudge.rank": [sys.executable, "-c",
                                         "import fairjudge; fairjudge.rank"],
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    print(f"{'command':<38} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, command in CASES.items():
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            times.append(time.perf_counter() - start)
        print(f"{name:<38} {statistics.median(times):>9.3f} {min(times):>7.3f} "
              f"{max(times):>7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
