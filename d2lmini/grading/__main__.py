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

from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import PUBLIC_SEED, config_text, load_config
from d2lmini.grading.assignment.settings import JOBS, help_text
from d2lmini.grading.base.files import write_atomic
from d2lmini.grading.gradebook import outfolder
from d2lmini.grading.gradebook.export import canvas_text, moodle_text, read_rubric, rubric_template
from d2lmini.grading.gradebook.gradebook import (
    GradingError,
    check_writable,
    grade_class,
    records,
    write_record,
)
from d2lmini.grading.gradebook.report import assemble
from d2lmini.grading.judging import similarity
from d2lmini.grading.run import sandbox
from d2lmini.grading.run.preflight import GraderUnavailable
from d2lmini.i18n import _

UNSANDBOXED = "--no-sandbox-i-accept-student-code-runs-as-me"  # names the risk it takes


class CommandError(Exception):
    """A mistake in the command line or its files, told to the instructor in one line."""


def parse(argv: list[str]) -> argparse.Namespace:
    # The texts a person reads are in the language d2lmini speaks (argparse's own words, "usage:" and
    # "error:", are argparse's). No help text holds a "%": argparse would read it as a format.
    parser = argparse.ArgumentParser(
        prog="python -m d2lmini.grading",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_("Grade a folder of submitted d2lmini notebooks: a gradebook (CSV) and a feedback file "
                      "per student."),
        # TRANSLATORS: the title of the list of the config's settings in --help; keep [grading].
        epilog=_("[grading] settings of the config (TOML):") + "\n" + help_text(),
    )
    parser.add_argument(
        "submissions", nargs="?", type=Path, help=_("a folder with one folder (or one notebook) per student")
    )
    parser.add_argument("--out", type=Path,
                        help=_("the output folder (gradebook.csv, feedback/, results.json)"))
    parser.add_argument("--config", type=Path, help=_("points and limits (TOML); default: every exercise"))
    parser.add_argument(
        "--manifest",
        type=Path,
        help=_("the exercises (JSON from --discover); default: the course's released notebooks"),
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=JOBS.default,
        # TRANSLATORS: {help} says what --jobs does; then its range and default.
        help=_("{help} ({low} to {high}, default {default})").format(
            help=_(JOBS.help), low=JOBS.low, high=JOBS.high, default=JOBS.default),
    )
    parser.add_argument(
        "--only",
        metavar="IDS",
        help=_("regrade only these exercises (comma-separated ids), keeping every other mark in OUT"),
    )
    parser.add_argument(
        "--rubric",
        type=Path,
        metavar="CSV",
        help=_("points given by hand: a `student` column and one per [rubric] item"),
    )
    parser.add_argument("--rubric-template", type=Path, metavar="CSV", help=_("write a rubric CSV to fill"))
    parser.add_argument("--moodle", metavar="ITEM",
                        help=_("write OUT/moodle.csv with this grade item's column"))
    parser.add_argument(
        "--canvas",
        type=Path,
        metavar="EXPORT",
        help=_("write OUT/canvas.csv from this gradebook export of Canvas (with --assignment)"),
    )
    parser.add_argument("--assignment",
                        help=_("the Canvas assignment column, as Canvas names it: 'HW1 (1234)'"))
    parser.add_argument("--write-config", type=Path, metavar="FILE", help=_("write a config with a new seed"))
    parser.add_argument(
        "--discover",
        type=Path,
        metavar="NOTEBOOKS",
        help=_("read the exercises from the released notebooks in this folder (with --manifest-out)"),
    )
    parser.add_argument(
        "--manifest-out", type=Path, metavar="FILE", help=_("where --discover writes the exercises")
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help=_("let --write-config, --discover, --rubric-template replace an existing file"),
    )
    parser.add_argument("--gradescope", type=Path, metavar="ZIP", help=_("build a Gradescope autograder zip"))
    parser.add_argument(
        UNSANDBOXED,
        action="store_true",
        help=_("grade even where no sandbox can be made: every student's code then runs as you, and can "
               "read, change or delete what you can (the gradebook, the other submissions, your files)"),
    )
    args = parser.parse_args(argv)
    try:
        JOBS.check(args.jobs, "--jobs")
    except ValueError as error:
        parser.error(str(error))
    if args.discover and not args.manifest_out:
        parser.error(_("--discover needs --manifest-out FILE: where to write the exercises it finds"))
    if args.canvas and not args.assignment:
        parser.error(_("--canvas needs --assignment 'NAME (ID)', the column Canvas gives the assignment"))
    other = args.write_config or args.discover or args.gradescope
    after = args.rubric or args.rubric_template or args.moodle or args.canvas
    if not other and (args.out is None or (args.submissions is None and not after)):
        parser.error(_("give SUBMISSIONS and --out OUT (or --write-config, --discover, --gradescope)"))
    return args


def _new_file(path: Path, force: bool) -> Path:
    if path.exists() and not force:
        raise CommandError(
            _("{path} exists: it was not replaced (give --force to replace it)").format(path=path))
    if path.exists() and path.is_dir():
        raise CommandError(_("{path} is a folder, not a file").format(path=path))
    return path


def discover(args) -> int:
    exercises = manifest.discover(args.discover)
    if not exercises:
        raise CommandError(
            _("{folder} has no released notebook with check cells: nothing was written").format(
                folder=args.discover))
    manifest.save(exercises, _new_file(args.manifest_out, args.force))
    print(_("{count} exercises written to {path}; grade with --manifest {path}").format(
        count=len(exercises), path=args.manifest_out))
    return 0


def after_grading(args, exercises, config) -> None:
    """Merge the rubric, write the exports: all from the records in OUT."""
    class_records = records(args.out)
    if not class_records and (args.rubric or args.moodle or args.canvas or args.rubric_template):
        raise CommandError(
            _("{out} holds no graded student: grade the class into it first").format(out=args.out))
    if args.rubric or args.submissions is None:
        check_writable(args.out)
    if args.rubric:
        given = read_rubric(args.rubric, config, {r.student for r in class_records})
        for record in class_records:
            if record.student in given:
                record.rubric = given[record.student]
                write_record(args.out, record)
        print(_("rubric points of {count} students merged into {path}").format(
            count=len(given), path=args.out / "gradebook.csv"))
    if args.rubric or args.submissions is None:  # the outputs again, with this config's rubric and [late]
        assemble(args.out, exercises, config, class_records)
    if args.rubric_template:
        write_atomic(_new_file(args.rubric_template, args.force), rubric_template(class_records, config))
        print(_("wrote {path}: fill it, then pass it with --rubric").format(path=args.rubric_template))
    if args.moodle:
        write_atomic(args.out / "moodle.csv", moodle_text(class_records, config, args.moodle))
        # TRANSLATORS: "Grades → Import → CSV file" is Moodle's menu: name it as Moodle shows it in Chinese.
        print(_("wrote {path}: in Moodle, Grades → Import → CSV file, map `username`").format(
            path=args.out / "moodle.csv"))
    if args.canvas:
        text, missing = canvas_text(class_records, config, args.canvas, args.assignment)
        write_atomic(args.out / "canvas.csv", text)
        path = args.out / "canvas.csv"
        if missing:
            # TRANSLATORS: "Grades → Import" is Canvas's menu; {students} were graded but are not in
            # Canvas's file.
            print(_("wrote {path}: in Canvas, Grades → Import; not in the Canvas export: {students}").format(
                path=path, students=", ".join(missing)))
        else:
            # TRANSLATORS: "Grades → Import" is Canvas's menu: name it as Canvas shows it in Chinese.
            print(_("wrote {path}: in Canvas, Grades → Import").format(path=path))


def refuse_unsandboxed(args) -> None:
    """Raise CommandError where no sandbox can be made, unless the instructor took the risk by name."""
    isolation = sandbox.probe()
    if isolation.isolated or args.no_sandbox_i_accept_student_code_runs_as_me:
        return
    raise CommandError(
        # TRANSLATORS: {how} says why submissions cannot be isolated; {flag} is the option (keep it).
        _("nobody was graded: submissions would run {how}. To grade all the same, knowing that every "
          "student's code then runs as you, give {flag}").format(
              how=isolation.describe(), flag=UNSANDBOXED))


WRITTEN = ("out", "write_config", "manifest_out", "gradescope", "rubric_template")  # what the command writes


def run(args) -> int:
    for name in WRITTEN:
        if getattr(args, name) is not None:
            outfolder.check_outside_package(getattr(args, name), "--" + name.replace("_", "-"))
    if args.discover:
        return discover(args)
    exercises = manifest.load(args.manifest) if args.manifest else manifest.load()
    if args.write_config:
        write_atomic(
            _new_file(args.write_config, args.force), config_text(exercises, secrets.randbelow(2**31))
        )
        print(_("wrote {path}: edit the points, then pass it with --config").format(path=args.write_config))
        return 0
    config = load_config(args.config, exercises)
    if config.seed == PUBLIC_SEED:
        print(
            _("note: seed {seed} is the shipped config's, which students can read too; write your own config "
              "(--write-config) for graded inputs nobody has seen").format(seed=PUBLIC_SEED),
            file=sys.stderr,
        )
    if args.gradescope:
        from d2lmini.grading.gradescope import build_zip

        build_zip(args.gradescope, args.config, args.manifest)
        print(_("wrote {path}: upload it as the assignment's autograder (Gradescope, Ubuntu image)").format(
            path=args.gradescope))
        return 0
    if args.submissions is not None:
        only = [i.strip() for i in args.only.split(",")] if args.only else None
        unknown = sorted(set(only or ()) - set(config.points))
        if unknown:
            raise CommandError(
                _("--only {ids}: not an exercise the config grades").format(ids=", ".join(unknown)))
        refuse_unsandboxed(args)
        started = time.monotonic()
        results = grade_class(args.submissions, args.out, exercises, config, args.jobs, only=only)
        print(
            _("{count} students in {gradebook} ({seconds:.0f} s); feedback in {feedback}; refused entries in "
              "{refused}").format(count=len(results), gradebook=args.out / "gradebook.csv",
                                  seconds=time.monotonic() - started, feedback=args.out / "feedback",
                                  refused=args.out / "not_graded.csv")
        )
        print(similarity.summary(args.out / "similarity.csv"))
    after_grading(args, exercises, config)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command; return its exit status (2, with one line on stderr, for a mistake of the caller)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["release"]:
        from d2lmini.grading.assignment.release import main as release_main

        return release_main(argv[1:])
    args = parse(argv)
    try:
        return run(args)
    except (CommandError, GradingError, GraderUnavailable, ValueError) as error:
        print(_("error: {error}").format(error=error), file=sys.stderr)
        return 2
    except OSError as error:  # a file the grader could not write: say which, never a traceback
        # TRANSLATORS: {problem} is the system's error text ("Permission denied").
        print(_("error: {file}: {problem}").format(file=error.filename or "",
                                                   problem=error.strerror or error), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
