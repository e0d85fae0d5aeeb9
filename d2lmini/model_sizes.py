"""What every model's constructor checks before torch sees its arguments (`rnn`, `gates`).

The sizes are whole numbers in their declared ranges (`VOCAB_SIZE`, the hidden size of
`d2lmini.settings.TRAIN_SETTINGS`), the generator a CPU `torch.Generator` or None, a flag True or
False, and the parameters within `MAX_PARAMETER_BYTES`. A wrong argument is a TypeError or
ValueError whose message names it, in the same words for every model.
"""

from collections.abc import Callable

import numpy as np
import torch

from d2lmini.i18n import N_, _
from d2lmini.settings import TRAIN_SETTINGS, Setting, short_repr, validate_value

# A model's vocabulary: the tokens it reads (one-hot) and predicts.
VOCAB_SIZE = Setting("vocab_size", N_("vocabulary size"), N_("tokens the model reads and predicts"), int, 1,
                     10_000_000)
# The most a model's parameters may take, in float32 bytes (a course model takes a few megabytes).
MAX_PARAMETER_BYTES = 4 * 1024**3


def check_sizes(vocab_size, num_hiddens) -> tuple[int, int]:
    """Return (vocab_size, num_hiddens) as plain ints; raise TypeError or ValueError naming the size.

    Each is a whole number (numpy's too; never a bool, a float or NaN) in the declared range of
    `VOCAB_SIZE` or of the hidden size (`d2lmini.settings.TRAIN_SETTINGS`).
    """
    return validate_value(VOCAB_SIZE, vocab_size), validate_value(TRAIN_SETTINGS["num_hiddens"], num_hiddens)


def check_generator(generator) -> None:
    """Raise TypeError or ValueError naming `generator` unless it is None or a CPU `torch.Generator`."""
    if generator is None:
        return
    if not isinstance(generator, torch.Generator):
        raise TypeError(_("generator must be a CPU torch.Generator or None, not {kind}").format(
            kind=type(generator).__name__))
    if generator.device.type != "cpu":  # random numbers are drawn on the CPU, then moved
        raise ValueError(_("generator must be a CPU torch.Generator, not one on {device}").format(
            device=generator.device))


def check_parameter_memory(vocab_size: int, num_hiddens: int, parameter_count: int) -> None:
    """Raise ValueError naming both sizes when `parameter_count` float32 numbers pass MAX_PARAMETER_BYTES."""
    need = 4 * parameter_count
    if need > MAX_PARAMETER_BYTES:
        raise ValueError(_("A model with vocab_size {vocab_size:,} and num_hiddens {num_hiddens:,} holds "
                           "about {gigabytes:.1f} GB of parameters; make the vocabulary or the hidden size "
                           "smaller.").format(vocab_size=vocab_size, num_hiddens=num_hiddens,
                                              gigabytes=need / 1024**3))


def check_model_arguments(vocab_size, num_hiddens, generator,
                          parameter_count: Callable[[int, int], int]) -> tuple[int, int]:
    """Return (vocab_size, num_hiddens) as plain ints after every check, in this order: the sizes, the
    generator, the parameters' memory (`parameter_count(vocab_size, num_hiddens)` numbers)."""
    vocab_size, num_hiddens = check_sizes(vocab_size, num_hiddens)
    check_generator(generator)
    check_parameter_memory(vocab_size, num_hiddens, parameter_count(vocab_size, num_hiddens))
    return vocab_size, num_hiddens


def check_flag(name: str, value) -> bool:
    """Return `value` as a bool; raise TypeError naming the argument `name` unless it is True or False."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(_("{name} must be True or False, not {value}").format(name=name,
                                                                              value=short_repr(value)))
    return bool(value)
