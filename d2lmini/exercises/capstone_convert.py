"""Reading a capstone piece's result for the comparison: the only capstone code run under the guard.

`coding.run_case` applies a case's `convert` to the student's result inside the guard, which
refuses calls into the package except the files it is told to allow; this module is that
file, so it holds nothing a student could use to pass a piece.
"""


def flatten_pair(result):
    """(list of tensors, extra) -> [*tensors, extra]; anything else unchanged (for the comparison to name)."""
    if type(result) in (tuple, list) and len(result) == 2 and type(result[0]) in (tuple, list):
        return [*result[0], result[1]]
    return result
