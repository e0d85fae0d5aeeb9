"""The grading command (see docs/instructors.md).

    python -m d2lmini.grading SUBMISSIONS --out OUT [--config points.toml] [--jobs 2]
    python -m d2lmini.grading --write-config points.toml
    python -m d2lmini.grading --discover notebooks   # after adding or renaming an exercise
    python -m d2lmini.grading --gradescope autograder.zip [--config points.toml]
"""

import argparse
import secrets
import sys
import time
from pathlib import Path

from d2lmini.grading import manifest
from d2lmini.grading.config import DEFAULT_CONFIG, PUBLIC_SEED, config_text, load_config
from d2lmini.grading.gradebook import grade_class


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m d2lmini.grading", description=(
        "Grade a folder of submitted d2lmini notebooks: a gradebook (CSV) and a feedback file per student."))
    parser.add_argument("submissions", nargs="?", type=Path,
                        help="a folder with one folder (or one notebook) per student")
    parser.add_argument("--out", type=Path, help="the output folder (gradebook.csv, feedback/, results.json)")
    parser.add_argument("--config", type=Path, help="points and limits (TOML); default: every exercise")
    parser.add_argument("--jobs", type=int, default=1, help="students graded at once (default 1)")
    parser.add_argument("--write-config", type=Path, metavar="FILE", help="write the default config to FILE")
    parser.add_argument("--discover", type=Path, metavar="NOTEBOOKS",
                        help="re-read the exercises from the released notebooks in this folder")
    parser.add_argument("--gradescope", type=Path, metavar="ZIP", help="build a Gradescope autograder zip")
    args = parser.parse_args(argv)
    other = args.write_config or args.discover or args.gradescope
    if not other and (args.submissions is None or args.out is None):
        parser.error("give SUBMISSIONS and --out OUT (or --write-config, --discover, --gradescope)")
    if args.submissions is not None and not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the command; return its exit status."""
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.discover:
        exercises = manifest.discover(args.discover)
        manifest.save(exercises)
        DEFAULT_CONFIG.write_text(config_text(exercises), "utf-8")
        print(f"{len(exercises)} exercises written to {manifest.MANIFEST} and {DEFAULT_CONFIG}")
        return 0
    exercises = manifest.load()
    if args.write_config:
        args.write_config.write_text(config_text(exercises, secrets.randbelow(2**31)), "utf-8")
        print(f"wrote {args.write_config}: edit the points, then pass it with --config")
        return 0
    try:
        config = load_config(args.config, exercises)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if config.seed == PUBLIC_SEED:
        print(f"note: seed {PUBLIC_SEED} is the shipped config's, which students can read too; write "
              "your own config (--write-config) for graded inputs nobody has seen", file=sys.stderr)
    if args.gradescope:
        from d2lmini.grading.gradescope import build_zip
        build_zip(args.gradescope, args.config)
        print(f"wrote {args.gradescope}: upload it as the assignment's autograder (Gradescope, Ubuntu image)")
        return 0
    started = time.monotonic()
    results = grade_class(args.submissions, args.out, exercises, config, args.jobs)
    print(f"graded {len(results)} students in {time.monotonic() - started:.0f} s: "
          f"{args.out / 'gradebook.csv'}, {args.out / 'feedback'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
