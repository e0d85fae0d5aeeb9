"""Reading what the student's loop returns: the only capstone code run under the guard.

`run_guarded` applies its `convert` to the student's result inside the guard (so any code
the result carries runs guarded), which refuses calls into the package except the files it
is told to allow; this module is that file, so it holds nothing a student could use to pass
a piece. Its messages are worded in the language d2lmini speaks (`d2lmini.i18n`, which the guard
lets run: `guard.refusals.MACHINERY`).
"""

from pathlib import Path

import torch

from d2lmini.i18n import _

# The file the guard may let a student's call run (this one), for `coding.run_case` and `run_guarded`.
CONVERT = frozenset({str(Path(__file__))})


def as_run(value) -> tuple | str:
    """(params, losses, norms) as lists of tensors and floats, or what is wrong with `value`."""
    if type(value) not in (tuple, list) or len(value) != 3:
        return _("train should return three things: (params, losses, norms).")
    params, losses, norms = value
    try:
        params, losses, norms = list(params), [float(v) for v in losses], [float(v) for v in norms]
    except Exception as error:  # whatever came back, the verdict says what it is
        # TRANSLATORS: {error} is the class name of a Python exception.
        return _("train's losses and norms should be lists of numbers ({error}).").format(
            error=type(error).__name__)
    if any(type(p) not in (torch.Tensor, torch.nn.Parameter) for p in params):
        return _("train's parameters should be a list of five plain tensors.")
    return [p.detach() for p in params], losses, norms
