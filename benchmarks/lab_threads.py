"""How many torch threads should the perplexity lab use? Times its default run both ways.

    python benchmarks/lab_threads.py [--repeats 3]

Runs the lab's default settings (`d2lmini.lab.LabSettings()`, a fixed number of
minibatches) with 1 and with 2 torch threads, first on an otherwise idle machine, then
while another process keeps one core busy (as a browser or a second notebook does on a
student's laptop). Prints the median training seconds of each and the ratio measured in
the same run; the lab's default (`num_threads`) should be the faster one under load.
"""

import argparse
import statistics
import subprocess
import sys
from dataclasses import replace

from d2lmini.lab import LabSettings, run_lab

SPIN = "import time\nend = time.time() + 600\nwhile time.time() < end: pass"


def median_seconds(threads: int, repeats: int) -> float:
    """Median training seconds (evaluation not counted) of the default lab run on `threads` threads."""
    settings = replace(LabSettings(), num_threads=threads)
    return statistics.median(run_lab(settings).seconds for _ in range(repeats))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    run_lab(LabSettings(max_minibatches=50))  # warm-up: corpus cache, allocator
    rows = []
    for load in ("idle", "one core busy"):
        spinner = subprocess.Popen([sys.executable, "-c", SPIN]) if load != "idle" else None
        try:
            one, two = median_seconds(1, args.repeats), median_seconds(2, args.repeats)
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
        rows.append((load, one, two))
    print(f"lab default run: {LabSettings().max_minibatches} minibatches, median of {args.repeats}")
    print("| machine | 1 thread (s) | 2 threads (s) | 2 threads / 1 thread |")
    print("|---|---|---|---|")
    for load, one, two in rows:
        print(f"| {load} | {one:.2f} | {two:.2f} | {two / one:.2f} |")


if __name__ == "__main__":
    main()
