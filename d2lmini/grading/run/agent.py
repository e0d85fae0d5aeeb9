"""The grader's side inside a student's kernel: record what each check cell passes.

The grading process (`d2lmini.grading.run.notebook`) rewrites every check cell of a submitted
notebook, `ex.check_all_states(all_states)`, into `agent.recorder(...)(all_states)`: the real
check never runs in the student's kernel, so no expected value is ever computed there. A
recorded value is sent out at once as plain data (`d2lmini.grading.base.remote.encode`); a function
is saved by value (cloudpickle) into the kernel's scratch folder, to be loaded later in a fresh
sandboxed process the grader starts for the check (`d2lmini.grading.run.caller`). Nothing here is
trusted: whatever this module sends or saves is judged as data, and a saved function runs only
in a process where the package's reference code and the solutions are absent. Introduced for
instructors' grading.
"""

import re
from collections.abc import Callable
from pathlib import Path

import cloudpickle
import torch
from IPython.display import publish_display_data

from d2lmini.grading.base.remote import MIME, encode

FUNCTIONS = Path("functions")  # in the kernel's working folder, its scratch folder


def _send(message: dict) -> None:
    publish_display_data({MIME: message})


def save_function(handle: str, function: Callable) -> dict:
    """Save `function` by value under `handle`; return the record that names the file (or why not)."""
    name = str(getattr(function, "__name__", handle))[:80]
    FUNCTIONS.mkdir(exist_ok=True)
    path = FUNCTIONS / (re.sub(r"[^A-Za-z0-9_-]", "_", handle) + ".pkl")
    try:
        path.write_bytes(cloudpickle.dumps(function))
    except Exception as error:  # a function holding an open file, a generator, a lock...
        return {"t": "function", "handle": handle, "name": name,
                "error": f"{type(error).__name__}: {str(error)[:200]}"}
    return {"t": "function", "handle": handle, "name": name, "file": str(path)}


def recorder(exercise: str, parameters: tuple[str, ...], slots: tuple[str, ...]) -> Callable:
    """Return a stand-in for the check of `exercise` that sends out the arguments in `slots`.

    `parameters` are the check's parameter names, to bind positional arguments; the instructor's
    own parameters (the other names) are not sent: the grader uses the released notebook's.
    """
    def record(*args, **kwargs):
        bound = dict(zip(parameters, args, strict=False)) | kwargs
        values = {}
        for slot in slots:
            value = bound.get(slot)
            if callable(value) and not isinstance(value, torch.Tensor | type):
                values[slot] = save_function(f"{exercise}/{slot}", value)
            else:
                values[slot] = encode(value)
        _send({"record": exercise, "values": values})
        print("Recorded for grading.")
    return record
