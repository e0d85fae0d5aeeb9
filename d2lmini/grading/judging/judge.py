"""Judge one recorded exercise with its own check, in this process, on the instructor's seed.

The values come out of the student's finished run (`d2lmini.grading.run.notebook`), whose kernel and
every process of its sandbox are gone before anything is judged. Each answer is judged by the
notebook's own check with the released notebook's arguments and the instructor's seed: the check's
cases and expected values are never in the kernel. A function is called for its check in a fresh
sandboxed process (`d2lmini.grading.run.calling`) that has none of the package's reference code,
with the check's own bans; what it says back is judged as data. The evidence about the graded
functions (`evidence.gather`) is gathered on the way out.
"""

import contextlib
import importlib
import io
from pathlib import Path

from d2lmini.exercises import Verdict
from d2lmini.exercises.coding import shifted_seeds
from d2lmini.grading.assignment.manifest import Exercise
from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.base.files import NotPlainFile
from d2lmini.grading.base.remote import CALL_SECONDS, RemoteFunction, decode, local_device
from d2lmini.grading.judging import evidence
from d2lmini.grading.run.calling import CALL_MARGIN, start_caller
from d2lmini.grading.run.saved import saved_function
from d2lmini.i18n import _


def judge(exercise: Exercise, values: dict, scratch: Path, limits: Limits, seed: int,
          cells: list[str] | None = None, found: list | None = None, stats: dict | None = None) -> Verdict:
    """Judge one recorded exercise with its check, in this process, on the instructor's seed.

    The exercise's functions are called in one fresh sandboxed process; `found` gets the evidence
    about them (`d2lmini.grading.judging.evidence`), `stats` the peak memory of that process and, under
    "sources", the source of each function the student attempted (`evidence.graded_sources`).
    """
    arguments = exercise.instructor_arguments()
    saved, names, functions, caller = {}, {}, [], None
    for slot in exercise.slots:
        data = values.get(slot)
        if not (isinstance(data, dict) and data.get("t") == "function"):
            arguments[slot] = decode(data, local_device)
            continue
        names[slot] = name = str(data.get("name", slot))[:80]
        if data.get("error"):
            # TRANSLATORS: {error} is Python's error ("TypeError: cannot pickle ...").
            return Verdict(False, _("Not graded: your function {name} could not be saved for grading "
                                    "({error}).").format(name=name, error=str(data["error"])[:200]))
        try:
            saved[slot] = saved_function(data, scratch)
        except NotPlainFile:
            return Verdict(False, _("Not graded: the file your function {name} was saved to is a link, or "
                                    "not a plain file, and the grader reads nothing through a link. Leave "
                                    "the files grading saves (in functions/) as they are.").format(name=name))
        if saved[slot] is None:
            return Verdict(False, _("Not graded: your function {name} was not found after your notebook "
                                    "ran.").format(name=name))
    try:
        if saved:  # one process for all the exercise's functions (the capstone passes eight)
            with_models = hasattr(importlib.import_module(exercise.module), "RNNScratch")
            caller, problem = start_caller(saved, scratch.parent / f".{scratch.name}-call", limits,
                                           with_models)
            if problem is not None:
                return Verdict(False, _("Your function was refused: it could not be loaded in the grader's "
                                        "clean process ({problem}). The exercise asks you to write it "
                                        "yourself: the package's own implementation (d2lmini's modules) and "
                                        "the solutions are not there, and a copy of them is refused.").format(
                                            problem=problem))
            state = {"broken": False}
            for slot in saved:
                arguments[slot] = RemoteFunction(caller.process, CALL_SECONDS + CALL_MARGIN, names[slot],
                                                 slot, state)
                functions.append(arguments[slot])
        with shifted_seeds(seed), contextlib.redirect_stdout(io.StringIO()):  # the verdict goes to feedback
            return exercise.checker()(**arguments)
    finally:
        if caller is not None:
            caller.close()
            if stats is not None:
                stats["caller_mb"] = max(stats.get("caller_mb", 0.0), caller.peak)
        evidence.gather(exercise, cells, functions, names, found, stats)
