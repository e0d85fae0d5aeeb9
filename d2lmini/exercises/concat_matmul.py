"""Self-checks for the exercises of notebook 02 (one matmul instead of two)."""

import torch

from d2lmini.exercises import Verdict, is_count, verdict


def _as_shape(answer) -> tuple[int, ...] | None:
    try:
        return tuple(int(a) for a in answer)
    except (TypeError, ValueError):
        return None


def check_stacked_weight_shape(answer, num_inputs: int = 28, num_hiddens: int = 64,
                               quiet: bool = False) -> Verdict:
    """Exercise 1: the shape of [W_xh; W_hh] for `num_inputs` inputs and `num_hiddens` hidden units."""
    expected = (num_inputs + num_hiddens, num_hiddens)
    return verdict(
        _as_shape(answer) == expected,
        f"W_xh ({num_inputs} x {num_hiddens}) on top of W_hh ({num_hiddens} x {num_hiddens}) "
        f"gives {expected}.",
        "Stacking puts the rows of W_hh under the rows of W_xh: rows add up, columns stay. "
        "Give a tuple (rows, columns).",
        quiet,
    )


def check_fused_step(step_fn, quiet: bool = False) -> Verdict:
    """Exercise 2: `step_fn(X, H, W_xh, W_hh, b_h)` must return tanh(X W_xh + H W_hh + b_h).

    It is called on random matrices of several shapes and compared with the two-matmul form.
    """
    generator = torch.Generator().manual_seed(2)
    problem = ""
    if not callable(step_fn):
        problem = "Pass a function step_fn(X, H, W_xh, W_hh, b_h)."
    for batch, num_inputs, num_hiddens in ((3, 1, 4), (1, 4, 2), (5, 7, 3)):
        if problem:
            break
        X = torch.randn(batch, num_inputs, generator=generator)
        H = torch.randn(batch, num_hiddens, generator=generator)
        W_xh = torch.randn(num_inputs, num_hiddens, generator=generator)
        W_hh = torch.randn(num_hiddens, num_hiddens, generator=generator)
        b_h = torch.randn(num_hiddens, generator=generator)
        expected = torch.tanh(X @ W_xh + H @ W_hh + b_h)
        try:
            got = step_fn(X, H, W_xh, W_hh, b_h)
        except Exception as error:  # report the student's error as a hint
            problem = f"Your function raised {type(error).__name__}: {error}"
            break
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            problem = f"For batch {batch}, inputs {num_inputs}, hiddens {num_hiddens} the result should " \
                      f"have shape {tuple(expected.shape)}, not {shape}."
        elif not torch.allclose(got, expected, rtol=1e-5, atol=1e-5):
            problem = (f"For batch {batch}, inputs {num_inputs}, hiddens {num_hiddens} the values differ "
                       "from tanh(X W_xh + H W_hh + b_h). Concatenate X and H along dim=1 and the "
                       "weights along dim=0.")
    return verdict(not problem, "One matmul, the same hidden state.", problem, quiet)


def multiply_add_count(batch: int, num_inputs: int, num_hiddens: int) -> int:
    """Return the scalar multiplications of [X, H] [W_xh; W_hh]: batch * (inputs + hiddens) * hiddens."""
    return batch * (num_inputs + num_hiddens) * num_hiddens


def check_multiplication_count(answer, batch: int = 32, num_inputs: int = 28, num_hiddens: int = 64,
                               quiet: bool = False) -> Verdict:
    """Exercise 3: scalar multiplications of the fused product (the same as of the two products)."""
    expected = multiply_add_count(batch, num_inputs, num_hiddens)
    return verdict(
        is_count(answer, expected),
        f"{expected:,} multiplications, exactly as many as X W_xh and H W_hh together: fusing saves "
        "kernel launches and memory traffic, not arithmetic.",
        "Each of the batch x hiddens entries of the result is a dot product of length inputs + hiddens.",
        quiet,
    )


def check_gru_weight_shape(answer, num_inputs: int = 28, num_hiddens: int = 64,
                           quiet: bool = False) -> Verdict:
    """Exercise 4: the shape of `torch.nn.GRU(num_inputs, num_hiddens).weight_ih_l0`."""
    expected = tuple(torch.nn.GRU(num_inputs, num_hiddens).weight_ih_l0.shape)
    return verdict(
        _as_shape(answer) == expected,
        f"{expected}: the input weights of the reset gate, the update gate and the candidate state "
        "are stacked into one matrix, so one matmul serves all three.",
        "A GRU has three input-to-hidden weight matrices (two gates and a candidate); PyTorch stores "
        "them stacked, and transposed like nn.Linear (out_features first).",
        quiet,
    )
