"""The grading command (see docs/instructors.md).

python -m d2lmini.grading SUBMISSIONS --out OUT [--config points.toml] [--jobs 2] [--only 03:lookup]
python -m d2lmini.grading --out OUT --config points.toml --rubric rubric.csv   # merge hand-given points
python -m d2lmini.grading --out OUT --moodle "Homework 1" --canvas canvas_export.csv --assignment "HW1 (42)"
python -m d2lmini.grading --write-config points.toml [--force]
python -m d2lmini.grading --discover notebooks --manifest-out exercises.json [--force]
python -m d2lmini.grading --gradescope autograder.zip [--config points.toml] [--manifest exercises.json]
python -m d2lmini.grading release --config points.toml --out released/   # numbers from your seed
"""

import argparse
import secrets
import sys
import time
from pathlib import Path

from d2lmini.grading import manifest, similarity
from d2lmini.grading.config import PUBLIC_SEED, config_text, load_config
from d2lmini.grading.export import canvas_text, moodle_text, read_rubric, rubric_template
from d2lmini.grading.files import write_atomic
from d2lmini.grading.gradebook import GradingError, check_writable, grade_class, records, write_record
from d2lmini.grading.report import assemble
from d2lmini.grading.settings import JOBS, help_text


class CommandError(Exception):
    """A mistake in the command line or its files, told to the instructor in one line."""


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m d2lmini.grading",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Grade a folder of submitted d2lmini notebooks: a gradebook (CSV) and a feedback file "
        "per student.",
        epilog="[grading] settings of the config (TOML):\n" + help_text(),
    )
    parser.add_argument(
        "submissions", nargs="?", type=Path, help="a folder with one folder (or one notebook) per student"
    )
    parser.add_argument("--out", type=Path, help="the output folder (gradebook.csv, feedback/, results.json)")
    parser.add_argument("--config", type=Path, help="points and limits (TOML); default: every exercise")
    parser.add_argument(
        "--manifest",
        type=Path,
        help="the exercises (JSON from --discover); default: the course's released notebooks",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=JOBS.default,
        help=f"{JOBS.help} ({JOBS.low} to {JOBS.high}, default {JOBS.default})",
    )
    parser.add_argument(
        "--only",
        metavar="IDS",
        help="regrade only these exercises (comma-separated ids), keeping every other mark in OUT",
    )
    parser.add_argument(
        "--rubric",
        type=Path,
        metavar="CSV",
        help="points given by hand: a `student` column and one per [rubric] item",
    )
    parser.add_argument("--rubric-template", type=Path, metavar="CSV", help="write a rubric CSV to fill")
    parser.add_argument("--moodle", metavar="ITEM", help="write OUT/moodle.csv with this grade item's column")
    parser.add_argument(
        "--canvas",
        type=Path,
        metavar="EXPORT",
        help="write OUT/canvas.csv from this gradebook export of Canvas (with --assignment)",
    )
    parser.add_argument("--assignment", help="the Canvas assignment column, as Canvas names it: 'HW1 (1234)'")
    parser.add_argument("--write-config", type=Path, metavar="FILE", help="write a config with a new seed")
    parser.add_argument(
        "--discover",
        type=Path,
        metavar="NOTEBOOKS",
        help="read the exercises from the released notebooks in this folder (with --manifest-out)",
    )
    parser.add_argument(
        "--manifest-out", type=Path, metavar="FILE", help="where --discover writes the exercises"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="let --write-config, --discover, --rubric-template replace an existing file",
    )
    parser.add_argument("--gradescope", type=Path, metavar="ZIP", help="build a Gradescope autograder zip")
    args = parser.parse_args(argv)
    try:
        JOBS.check(args.jobs, "--jobs")
    except ValueError as error:
        parser.error(str(error))
    if args.discover and not args.manifest_out:
        parser.error("--discover needs --manifest-out FILE: where to write the exercises it finds")
    if args.canvas and not args.assignment:
        parser.error("--canvas needs --assignment 'NAME (ID)', the column Canvas gives the assignment")
    other = args.write_config or args.discover or args.gradescope
    after = args.rubric or args.rubric_template or args.moodle or args.canvas
    if not other and (args.out is None or (args.submissions is None and not after)):
        parser.error("give SUBMISSIONS and --out OUT (or --write-config, --discover, --gradescope)")
    return args


def _new_file(path: Path, force: bool) -> Path:
    if path.exists() and not force:
        raise CommandError(f"{path} exists: it was not replaced (give --force to replace it)")
    if path.exists() and path.is_dir():
        raise CommandError(f"{path} is a folder, not a file")
    return path


def discover(args) -> int:
    exercises = manifest.discover(args.discover)
    if not exercises:
        raise CommandError(f"{args.discover} has no released notebook with check cells: nothing was written")
    manifest.save(exercises, _new_file(args.manifest_out, args.force))
    print(
        f"{len(exercises)} exercises written to {args.manifest_out}; "
        f"grade with --manifest {args.manifest_out}"
    )
    return 0


def after_grading(args, exercises, config) -> None:
    """Merge the rubric, write the exports: all from the records in OUT."""
    class_records = records(args.out)
    if not class_records and (args.rubric or args.moodle or args.canvas or args.rubric_template):
        raise CommandError(f"{args.out} holds no graded student: grade the class into it first")
    if args.rubric or args.submissions is None:
        check_writable(args.out)
    if args.rubric:
        given = read_rubric(args.rubric, config, {r.student for r in class_records})
        for record in class_records:
            if record.student in given:
                record.rubric = given[record.student]
                write_record(args.out, record)
        print(f"rubric points of {len(given)} students merged into {args.out / 'gradebook.csv'}")
    if args.rubric or args.submissions is None:  # the outputs again, with this config's rubric and [late]
        assemble(args.out, exercises, config, class_records)
    if args.rubric_template:
        write_atomic(_new_file(args.rubric_template, args.force), rubric_template(class_records, config))
        print(f"wrote {args.rubric_template}: fill it, then pass it with --rubric")
    if args.moodle:
        write_atomic(args.out / "moodle.csv", moodle_text(class_records, config, args.moodle))
        print(f"wrote {args.out / 'moodle.csv'}: in Moodle, Grades → Import → CSV file, map `username`")
    if args.canvas:
        text, missing = canvas_text(class_records, config, args.canvas, args.assignment)
        write_atomic(args.out / "canvas.csv", text)
        print(
            f"wrote {args.out / 'canvas.csv'}: in Canvas, Grades → Import"
            + (f"; not in the Canvas export: {', '.join(missing)}" if missing else "")
        )


def run(args) -> int:
    if args.discover:
        return discover(args)
    exercises = manifest.load(args.manifest) if args.manifest else manifest.load()
    if args.write_config:
        write_atomic(
            _new_file(args.write_config, args.force), config_text(exercises, secrets.randbelow(2**31))
        )
        print(f"wrote {args.write_config}: edit the points, then pass it with --config")
        return 0
    config = load_config(args.config, exercises)
    if config.seed == PUBLIC_SEED:
        print(
            f"note: seed {PUBLIC_SEED} is the shipped config's, which students can read too; write "
            "your own config (--write-config) for graded inputs nobody has seen",
            file=sys.stderr,
        )
    if args.gradescope:
        from d2lmini.grading.gradescope import build_zip

        build_zip(args.gradescope, args.config, args.manifest)
        print(f"wrote {args.gradescope}: upload it as the assignment's autograder (Gradescope, Ubuntu image)")
        return 0
    if args.submissions is not None:
        only = [i.strip() for i in args.only.split(",")] if args.only else None
        unknown = sorted(set(only or ()) - set(config.points))
        if unknown:
            raise CommandError(f"--only {', '.join(unknown)}: not an exercise the config grades")
        started = time.monotonic()
        results = grade_class(args.submissions, args.out, exercises, config, args.jobs, only=only)
        print(
            f"{len(results)} students in {args.out / 'gradebook.csv'} ({time.monotonic() - started:.0f} s); "
            f"feedback in {args.out / 'feedback'}; refused entries in {args.out / 'not_graded.csv'}"
        )
        print(similarity.summary(args.out / "similarity.csv"))
    after_grading(args, exercises, config)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command; return its exit status (2, with one line on stderr, for a mistake of the caller)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["release"]:
        from d2lmini.grading.release import main as release_main

        return release_main(argv[1:])
    args = parse(argv)
    try:
        return run(args)
    except (CommandError, GradingError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a file the grader could not write: say which, never a traceback
        print(f"error: {error.filename or ''}: {error.strerror or error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
