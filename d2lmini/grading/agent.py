"""The grader's side inside a student's kernel: record what each check cell passes, call functions.

The grading process (`d2lmini.grading.kernel`) rewrites every check cell of a submitted
notebook, `ex.check_all_states(all_states)`, into `agent.recorder(...)(all_states)`: the real
check never runs in the student's kernel, so no expected value is ever computed there. A
recorded value is sent out at once; a function is kept here, under a handle, and the grading
process calls it later through `call`, under the self-check's guard (time limit, no calls into
the package's code, torch put back, printing capped). Introduced for instructors' grading.
"""

import copy
import itertools
import json
from collections.abc import Callable

import torch
from IPython.display import publish_display_data

from d2lmini.exercises.coding import CallRecorder
from d2lmini.exercises.guard import PACKAGE, CappedText, run_guarded
from d2lmini.grading.remote import CALL_SECONDS, GENERATOR_LIMIT, MIME, decode, encode, local_device
from d2lmini.rnn import RNNScratch

FUNCTIONS: dict[str, Callable] = {}  # handle -> a student's function, kept alive for `call`
MODELS = {"RNNScratch": RNNScratch}  # the models a checker may hand a student's function
MODEL_FILES = frozenset(str(PACKAGE / name) for name in ("rnn.py", "bptt.py"))  # a model's own code


def _send(message: dict) -> None:
    publish_display_data({MIME: message})


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
                handle = f"{exercise}/{slot}"
                FUNCTIONS[handle] = value
                values[slot] = {"t": "function", "handle": handle,
                                "name": str(getattr(value, "__name__", slot))[:80]}
            else:
                values[slot] = encode(value)
        _send({"record": exercise, "values": values})
        print("Recorded for grading.")
    return record


def _rebuild(data, models: list):
    """Decode one argument; a model or optimizer is rebuilt here from its class and settings."""
    if isinstance(data, dict) and data.get("t") == "module" and data.get("class") in MODELS:
        init = data.get("init", {})
        model = MODELS[data["class"]](init["vocab_size"], init["num_hiddens"],
                                      hand_written_bptt=init.get("hand_written_bptt", True))
        state = {k: decode(v, local_device) for k, v in data["state"].items()}
        model.load_state_dict(state)
        models.append(model.to(next(iter(state.values())).device))
        return model
    if isinstance(data, dict) and data.get("t") == "optimizer" and models:
        optimizer = getattr(torch.optim, str(data.get("class")), None)
        if isinstance(optimizer, type) and issubclass(optimizer, torch.optim.Optimizer):
            return optimizer(models[-1].parameters(), **data.get("init", {}))
    return decode(data, local_device)


def call(handle: str, payload: str) -> None:
    """Call the student's function `handle` on the arguments in `payload`; send out the outcome."""
    function = FUNCTIONS.get(handle)
    if function is None:
        _send({"reply": handle, "error": {"type": "NameError", "message": "your function was not found"}})
        return
    models = []
    args = tuple(_rebuild(a, models) for a in json.loads(payload)["args"])
    saved = copy.deepcopy(args)
    output, recorded = CappedText(), CallRecorder()
    allowed = MODEL_FILES if models else frozenset()
    with recorded:
        outcome = run_guarded(function, args, None, output, allowed, seconds=CALL_SECONDS)
        value = outcome.value
        if _is_iterator(value) and outcome.error is None:
            taken = run_guarded(list, (itertools.islice(value, GENERATOR_LIMIT),), None, output,
                                seconds=CALL_SECONDS)
            outcome.value, outcome.error, outcome.timed_out = taken.value, taken.error, taken.timed_out
            outcome.replaced += taken.replaced
            outcome.refused = outcome.refused or taken.refused
    _send(_reply(handle, outcome, output, recorded, args, saved))


def _is_iterator(value) -> bool:
    return hasattr(value, "__next__") and not isinstance(value, torch.Tensor | list | tuple)


def _reply(handle, outcome, output, recorded, args, saved) -> dict:
    error = None
    if outcome.error is not None:
        try:
            message = str(outcome.error)[:300]
        except Exception:  # an exception whose message itself fails
            message = ""
        error = {"type": type(outcome.error).__name__, "message": message}
    return {
        "reply": handle, "value": encode(outcome.value), "error": error,
        "timed_out": outcome.timed_out, "refused": outcome.refused, "replaced": outcome.replaced,
        "printed": output.shown() if output.kept or output.dropped else "",
        "calls": {str(k): int(v) for k, v in recorded.calls.items()},
        "args_after": [None if _unchanged(old, new) else encode(new)
                       for old, new in zip(saved, args, strict=True)],
    }


def _unchanged(old, new) -> bool:
    """True if the argument is as it came (a changed one is sent back, for the check to see)."""
    if isinstance(new, torch.nn.Module | torch.optim.Optimizer):
        return isinstance(new, torch.optim.Optimizer)
    if isinstance(old, torch.Tensor):
        return isinstance(new, torch.Tensor) and old.shape == new.shape and old.dtype == new.dtype and bool(
            torch.equal(old, new))
    if isinstance(old, list | tuple):
        return isinstance(new, list | tuple) and len(old) == len(new) and all(
            _unchanged(a, b) for a, b in zip(old, new, strict=True))
    if isinstance(old, dict):
        return isinstance(new, dict) and old.keys() == new.keys() and all(
            _unchanged(old[k], new[k]) for k in old)
    return True

