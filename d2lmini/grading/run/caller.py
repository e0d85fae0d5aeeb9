"""Call a student's saved function for the judge, in a fresh process inside the sandbox.

    python -m d2lmini.grading.run.caller KNOWN.json NAME=FUNCTION.pkl...

The grader starts this for each coding exercise it judges (`d2lmini.grading.run.calling.Caller`),
in a bubblewrap sandbox whose copy of d2lmini holds only the exercise machinery (this module,
the wire format, the guard): the package's own implementations, the checks and `solutions/`
are not there, so a function that calls them fails by their absence. It loads the functions
the student's kernel saved (by value), says "started" before and "ready" after, then for
each request line on stdin (the arguments as wire data, the check's bans by name) calls the
function under the self-check's guard with those bans and writes one reply line: the result, what it printed,
the torch functions it called and the arguments as it left them, all as plain data. Nothing
this process says is trusted beyond being data: the grader judges the values itself.
"""

import copy
import importlib
import importlib.util
import itertools
import json
import os
import pickle
import sys
from pathlib import Path

import torch

from d2lmini.exercises.coding import CallRecorder
from d2lmini.exercises.guard import CappedText, refusals, run_guarded
from d2lmini.grading.base.remote import CALL_SECONDS, GENERATOR_LIMIT, decode, encode, local_device
from d2lmini.grading.run.copies import copied_from
from d2lmini.i18n import _

BANS = {name: value for name, value in vars(refusals).items() if isinstance(value, refusals.Ban)}


def _rebuild(data, models: list):
    """Decode one argument; a model or optimizer is rebuilt here from its class and settings."""
    if isinstance(data, dict) and data.get("t") == "module" and data.get("class") == "RNNScratch":
        from d2lmini.rnn import RNNScratch  # present only for the checks that hand a model

        init = data.get("init", {})
        model = RNNScratch(init["vocab_size"], init["num_hiddens"],
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


def call(function, request: dict) -> dict:
    """Call `function` on the request's arguments under the guard, with its bans; return the reply."""
    models = []
    args = tuple(_rebuild(a, models) for a in request["args"])
    saved = copy.deepcopy(args)
    bans = tuple(BANS[name] for name in request.get("bans", ()) if name in BANS)
    package = str(refusals.PACKAGE) + os.sep
    allowed = frozenset(package + name for name in request.get("allowed", ()))
    output, recorded = CappedText(), CallRecorder()
    seconds = _seconds(request.get("seconds"))
    with recorded:
        outcome = run_guarded(function, args, None, output, allowed, seconds=seconds, bans=bans)
        value = outcome.value
        if _is_iterator(value) and outcome.error is None:
            taken = run_guarded(list, (itertools.islice(value, GENERATOR_LIMIT),), None, output,
                                seconds=seconds, bans=bans)
            outcome.value, outcome.error, outcome.timed_out = taken.value, taken.error, taken.timed_out
            outcome.replaced += taken.replaced
            outcome.refused = outcome.refused or taken.refused
    return _reply(outcome, output, recorded, args, saved)


def _seconds(asked) -> float:
    """The call's time limit: the check's, as the request gives it (at most `CALL_SECONDS`)."""
    if isinstance(asked, int | float) and not isinstance(asked, bool) and 0 < asked <= CALL_SECONDS:
        return float(asked)
    return CALL_SECONDS


def _is_iterator(value) -> bool:
    return hasattr(value, "__next__") and not isinstance(value, torch.Tensor | list | tuple)


def _reply(outcome, output, recorded, args, saved) -> dict:
    error = None
    if outcome.error is not None:
        try:
            message = str(outcome.error)[:300]
        except Exception:  # an exception whose message itself fails
            message = ""
        error = {"type": type(outcome.error).__name__, "message": message}
    return {
        "value": encode(outcome.value), "error": error,
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


def _warm_up() -> None:
    """Start torch's autograd engine and kernels now, so the first call is not slower than in a notebook."""
    weight = torch.ones(4, 4, requires_grad=True)
    (torch.tanh(torch.ones(2, 4) @ weight).sum()).backward()


def _load(path: Path, known: dict[str, str]):
    """The student's function, unpickled here, inside the sandbox (never in the grader's process).

    Refused if it is a copy of one of the package's functions (`known`, their fingerprints).
    """
    try:
        function = pickle.loads(path.read_bytes())
        copy_of = copied_from(function, known)
    except BaseException as error:  # noqa: BLE001  a missing module (the package's code) and worse
        return None, {"type": type(error).__name__, "message": str(error)[:300]}
    if copy_of is not None:  # said in the grader's language (D2LMINI_LANG, passed on by sandbox.clean_env)
        # TRANSLATORS: {function} names one of the package's functions ("d2lmini/rnn.py:rnn_step").
        message = _("it is a copy of the package's {function}, which is refused").format(function=copy_of)
        return None, {"type": "RefusedCall", "message": message}
    return function, None


def main(known: str, saved: list[str]) -> None:
    """Load the functions, then answer one reply line per request line on stdin.

    `known`: a JSON file of the package's function fingerprints (`d2lmini.grading.run.copies`);
    `saved`: "NAME=FILE" for each function, called by NAME in the requests.
    """
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the student's printing never mixes with replies
    # Said before any of the student's code loads: without it, the sandbox or this process failed to
    # start, which is the grader's failure, never the student's (`calling.Caller.ready`).
    replies.write(json.dumps({"started": True}) + "\n")
    replies.flush()
    fingerprints = json.loads(Path(known).read_text("utf-8"))  # read before any of the student's code runs
    if importlib.util.find_spec("d2lmini.rnn") is not None:  # bound for the checks that hand a model:
        importlib.import_module("d2lmini.rnn")  # imported now, not within the check's time limit
    _warm_up()
    functions = {}
    for entry in saved:
        name, path = entry.split("=", 1)
        functions[name], error = _load(Path(path), fingerprints)
        if error is not None:
            replies.write(json.dumps({"ready": False, "function": name, "error": error}) + "\n")
            replies.flush()
            return
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in sys.stdin:
        request = json.loads(line)
        replies.write(json.dumps(call(functions[request["function"]], request)) + "\n")
        replies.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
