"""Self-checks for the exercises of notebook 04 (an RNN from scratch)."""

import math

from d2lmini.exercises import Verdict, close_enough, is_count, verdict


def output_row(step: int, example: int, batch_size: int) -> int:
    """Return the row of the step-major output (steps * batch, vocab) that holds `step` of `example`."""
    return step * batch_size + example


def temperature_probability(logits, temperature: float, index: int = 0) -> float:
    """Return softmax(logits / temperature)[index], computed stably in plain Python."""
    scaled = [z / temperature for z in logits]
    top = max(scaled)
    weights = [math.exp(z - top) for z in scaled]
    return weights[index] / sum(weights)


def check_output_row(answer, step: int = 3, example: int = 2, batch_size: int = 4,
                     quiet: bool = False) -> Verdict:
    """Exercise 1: which output row holds time step `step` of sequence `example`?"""
    expected = output_row(step, example, batch_size)
    return verdict(
        is_count(answer, expected),
        f"Rows are step-major: all {batch_size} sequences of step 0 come first, then step 1, ... "
        f"so step {step} of sequence {example} is row {step} x {batch_size} + {example} = {expected}.",
        "The outputs of all sequences for one time step are stacked together, one step after "
        "another. How many rows come before step "
        f"{step}? Then count to sequence {example} (rows and sequences are numbered from 0).",
        quiet,
    )


def check_xavier_std(answer, vocab_size: int = 28, quiet: bool = False) -> Verdict:
    """Exercise 2: the standard deviation of an entry of X_t W_xh under Xavier-style initialisation."""
    expected = 1 / math.sqrt(vocab_size)
    return verdict(
        close_enough(answer, expected, rel=1e-3),
        f"A one-hot X_t picks one row of W_xh, so each entry is a single weight with standard "
        f"deviation 1/sqrt({vocab_size}) = {expected:.4f}.",
        f"Multiplying a one-hot row by W_xh selects one row of W_xh. What is the standard deviation "
        f"of one weight when they are drawn from N(0, 1/fan_in) with fan_in = {vocab_size}?",
        quiet,
    )


def check_temperature_probability(answer, logits=(2.0, 1.0, 0.0), temperature: float = 0.5,
                                  quiet: bool = False) -> Verdict:
    """Exercise 3: the probability of the first character after dividing the logits by the temperature."""
    expected = temperature_probability(logits, temperature)
    return verdict(
        close_enough(answer, expected, rel=1e-3),
        f"softmax({list(logits)} / {temperature:g})[0] = {expected:.4f}: a temperature below 1 makes "
        "the most likely character even more likely.",
        f"Divide every logit by {temperature:g}, exponentiate, and divide the first by the sum. "
        "Give a probability between 0 and 1.",
        quiet,
    )


def check_initial_loss(answer, vocab_size: int = 28, quiet: bool = False) -> Verdict:
    """Exercise 4: the loss (nats) of an untrained model whose tiny weights predict almost uniformly."""
    expected = math.log(vocab_size)
    return verdict(
        close_enough(answer, expected, rel=1e-3),
        f"Every character gets probability about 1/{vocab_size}, so the loss is -log(1/{vocab_size}) = "
        f"log {vocab_size} = {expected:.4f} nats, a perplexity of {vocab_size}: the model is guessing "
        "uniformly.",
        f"Tiny logits give every one of the {vocab_size} characters the same probability. What is "
        "-log of that probability (natural logarithm, so the answer is in nats)?",
        quiet,
    )
