"""Reading a capstone piece's result for the comparison: the only capstone code run under the guard.

`coding.run_case` applies a case's `convert` to the student's result inside the guard, which
refuses calls into the package except the files it is told to allow; this module is that
file, so it holds nothing a student could use to pass a piece.
"""

from pathlib import Path

import torch

# The file the guard may let a student's call run (this one), for `coding.run_case` and `run_guarded`.
CONVERT = frozenset({str(Path(__file__))})


def flatten_pair(result):
    """(list of tensors, extra) -> [*tensors, extra]; anything else unchanged (for the comparison to name)."""
    if type(result) in (tuple, list) and len(result) == 2 and type(result[0]) in (tuple, list):
        return [*result[0], result[1]]
    return result


def as_run(value) -> tuple | str:
    """(params, losses, norms) as lists of tensors and floats, or what is wrong with `value`."""
    if type(value) not in (tuple, list) or len(value) != 3:
        return "train should return three things: (params, losses, norms)."
    params, losses, norms = value
    try:
        params, losses, norms = list(params), [float(v) for v in losses], [float(v) for v in norms]
    except Exception as error:  # whatever came back, the verdict says what it is
        return f"train's losses and norms should be lists of numbers ({type(error).__name__})."
    if any(type(p) not in (torch.Tensor, torch.nn.Parameter) for p in params):
        return "train's parameters should be a list of five plain tensors."
    return [p.detach() for p in params], losses, norms
