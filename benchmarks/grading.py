"""How long grading a class takes, and how much memory: time and peak memory per notebook and per class.

    python benchmarks/grading.py [--students 30] [--notebook 01] [--jobs 1 2]

Builds a class of sample submissions (tools/grading_samples.py: the solution, the untouched
notebook and every bad submission, in turn), grades it with each --jobs, and prints a table:
wall time for the class, seconds per notebook (median, max), the student kernel's peak memory
(max) and the grading process's. Times depend on the machine and its load: compare the rows of
one run, not runs with each other.
"""

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import grading_samples  # noqa: E402

from d2lmini.grading.assignment import manifest  # noqa: E402
from d2lmini.grading.assignment.config import validate_config  # noqa: E402
from d2lmini.grading.gradebook.gradebook import grade_class  # noqa: E402


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--notebook", default="01")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    exercises = manifest.load()
    points = {e.id: 1 for e in exercises if e.notebook.startswith(args.notebook)}
    config = validate_config({"points": points, "grading": {"seed": 99}}, exercises, "benchmark")
    folder = Path(tempfile.mkdtemp(prefix="grading-benchmark-"))
    grading_samples.main([str(folder / "submissions"), "--students", str(args.students),
                          "--notebooks", args.notebook])
    print(f"{args.students} students, notebook {args.notebook}: {', '.join(sorted(points))}")
    print(f"{'jobs':>4} {'class s':>8} {'per notebook s (median, max)':>29} {'kernel MB (max)':>16} "
          f"{'grader MB':>10}")
    for jobs in args.jobs:
        out = folder / f"out-{jobs}"
        started = time.monotonic()
        grade_class(folder / "submissions", out, exercises, config, jobs, progress=lambda _: None)
        wall = time.monotonic() - started
        stats = [r["stats"] for r in json.loads((out / "results.json").read_text("utf-8")) if r["stats"]]
        seconds = [s["seconds"] for s in stats]
        kernel = max(s["kernel_mb"] for s in stats)
        grader = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        grader_text = f"{grader:>10.0f}" if jobs == 1 else f"{'(workers)':>10}"  # jobs > 1: other processes
        print(f"{jobs:>4} {wall:>8.0f} {statistics.median(seconds):>17.1f} {max(seconds):>11.1f} "
              f"{kernel:>16.0f} {grader_text}")


if __name__ == "__main__":
    main(sys.argv[1:])
