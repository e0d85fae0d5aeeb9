"""What the instructor reads, all made from the same per-student records: gradebook, results, feedback.

A student's total is the points of their graded exercises plus those of the hand-graded rubric
items, less the late penalty (`late_per_day` times the days in `[late]`, at most all of it).
"""

import json
import sys
from dataclasses import asdict

from d2lmini.grading.assignment.config import Config
from d2lmini.grading.assignment.manifest import Exercise, kind_label
from d2lmini.grading.base.files import csv_text, student_key, write_atomic
from d2lmini.grading.judging import similarity
from d2lmini.i18n import _


def late_fraction(student: str, config: Config) -> float:
    """The fraction of `student`'s points taken off for lateness (0 to 1)."""
    return min(1.0, config.late.get(student, 0.0) * config.late_per_day)


def final_total(result, config: Config) -> float:
    """The student's points: graded exercises and rubric items, less the late penalty."""
    earned = result.total + sum(result.rubric.values())
    return round(earned * (1 - late_fraction(result.student, config)), 6)


def possible(result, config: Config) -> float:
    """The most the student could have earned (graded exercises and the config's rubric items)."""
    return sum(m.max_points for m in result.marks) + sum(config.rubric.values())


def columns(results, exercises: list[Exercise], config: Config) -> list[str]:
    """The gradebook's exercise columns: every exercise any record has, in the course's order."""
    seen = {m.exercise for r in results for m in r.marks}
    return [e.id for e in exercises if e.id in seen] + list(config.rubric)


def gradebook_text(results, exercises: list[Exercise], config: Config) -> str:
    """The gradebook as CSV: a row per student, a column per exercise and rubric item, late, total, max."""
    names = columns(results, exercises, config)
    rows = [["student", *names, "late_days", "total", "max"]]
    for result in results:
        # a mark the grader failed to give is no 0 (`Mark.graded`)
        points = {m.exercise: m.points if m.graded else "not graded" for m in result.marks} | result.rubric
        rows.append([
            result.student,
            *(points.get(c, "") for c in names),
            config.late.get(result.student, 0),
            final_total(result, config),
            possible(result, config),
        ])
    return csv_text(rows)


def feedback_text(result, exercises: list[Exercise], config: Config) -> str:
    """The student's feedback as Markdown: each exercise's points and the check's message."""
    by_id = {e.id: e for e in exercises}
    lines = [
        # TRANSLATORS: the title of a student's feedback file (Markdown: keep the "# ").
        _("# Feedback for {student}").format(student=result.student),
        "",
        # TRANSLATORS: Markdown, bold: keep the ** marks.
        _("**Total: {total:g} / {possible:g}**").format(
            total=final_total(result, config), possible=possible(result, config)),
        "",
    ]
    if late_fraction(result.student, config):
        lines += [
            "- " + _("{days:g} days late: {fraction:.0%} of your points were taken off.").format(
                days=config.late[result.student], fraction=late_fraction(result.student, config)),
            "",
        ]
    lines += [f"- {note}" for note in result.notes] + ([""] if result.notes else [])
    notebook = None
    for mark in result.marks:
        exercise = by_id.get(mark.exercise)
        if exercise is not None and exercise.notebook != notebook:
            notebook = exercise.notebook
            lines += [f"## {notebook}", ""]
        kind = kind_label(exercise.kind if exercise is not None else "exercise")
        lines += [
            # TRANSLATORS: a Markdown heading (keep "### "): an exercise's id, its kind, the points it earned.
            _("### {exercise} ({kind}): {points:g} / {max_points:g}").format(
                exercise=mark.exercise, kind=kind, points=mark.points, max_points=mark.max_points),
            "",
            _quoted(mark.message),
            "",
        ]
    for item, maximum in config.rubric.items():
        given = result.rubric.get(item)
        if given is not None:
            # TRANSLATORS: a Markdown heading (keep "### "): a rubric item the instructor grades by hand.
            heading = _("### {item} (graded by hand): {given:g} / {maximum:g}").format(
                item=item, given=given, maximum=maximum)
        else:
            # TRANSLATORS: a Markdown heading (keep "### "): a rubric item the instructor has not graded yet.
            heading = _("### {item} (graded by hand): not yet graded / {maximum:g}").format(
                item=item, maximum=maximum)
        lines += [heading, ""]
    return "\n".join(lines)


def _quoted(message: str) -> str:
    return "\n".join("> " + line for line in message.splitlines() or [""])


def results_json(results, config: Config) -> str:
    """The records as JSON for scripts: a list of students with their marks, notes, stats and totals."""
    return json.dumps(
        [
            {
                "student": r.student,
                "total": final_total(r, config),
                "notes": r.notes,
                "stats": r.stats,
                "rubric": r.rubric,
                "marks": [asdict(m) for m in r.marks],
            }
            for r in results
        ],
        indent=1,
    )


def assemble(out, exercises: list[Exercise], config: Config, results, skipped=None) -> list:
    """Write feedback/, gradebook.csv, results.json, similarity.csv and, given `skipped`, not_graded.csv.

    Returns `results` (every record in `out`, so similarity.csv compares the whole class).

    `skipped` lists the roster's refused entries of this grading run; None (merging a rubric,
    applying a changed [late]) keeps the not_graded.csv of the last run.
    """
    unknown = sorted(set(config.late) - {r.student for r in results})
    if unknown:
        print(_("warning: [late] names {names}, who have no graded record: no penalty applied to them (is "
                "the name spelled as their folder?)").format(names=", ".join(unknown)), file=sys.stderr)
    for result in results:
        write_atomic(
            out / "feedback" / f"{student_key(result.student)}.md", feedback_text(result, exercises, config)
        )
    write_atomic(out / "gradebook.csv", gradebook_text(results, exercises, config))
    write_atomic(out / "results.json", results_json(results, config))
    pairs = similarity.alike_pairs({r.student: r.sources for r in results})
    write_atomic(out / "similarity.csv", similarity.csv_text(pairs))
    if skipped is not None:
        write_atomic(out / "not_graded.csv", csv_text([("entry", "reason"), *skipped]))
    return results
