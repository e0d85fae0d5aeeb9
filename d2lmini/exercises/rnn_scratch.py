"""Self-checks for the exercises of notebook 04 (an RNN from scratch)."""

import functools
import math

import torch

from d2lmini.batching import sequential_batches
from d2lmini.exercises import Verdict, count_verdict, number_verdict, self_check
from d2lmini.exercises.coding import (
    NOT_ATTEMPTED,
    Case,
    Mistake,
    check_function,
    check_on_devices,
    digest,
    first_difference,
    incident_of,
    outcome_problem,
    sampler,
    with_incident_cause,
)
from d2lmini.exercises.guard import PACKAGE, CappedText, run_guarded
from d2lmini.exercises.guard.refusals import RNN
from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.exercises.mistakes.training import NOT_DETACHED
from d2lmini.i18n import N_, _
from d2lmini.rnn import RNNScratch, rnn_forward
from d2lmini.train import History, train_epoch


def output_row(step: int, example: int, batch_size: int) -> int:
    """Return the row of the step-major output (steps * batch, vocab) that holds `step` of `example`."""
    return step * batch_size + example


def temperature_probability(logits, temperature: float, index: int = 0) -> float:
    """Return softmax(logits / temperature)[index], computed stably in plain Python."""
    scaled = [z / temperature for z in logits]
    top = max(scaled)
    weights = [math.exp(z - top) for z in scaled]
    return weights[index] / sum(weights)


@self_check
def check_output_row(answer, step: int = 3, example: int = 2, batch_size: int = 4) -> Verdict:
    """Exercise 1: which output row holds time step `step` of sequence `example`?"""
    expected = output_row(step, example, batch_size)
    return count_verdict(
        answer, expected,
        _("Rows are step-major: all {batch_size} sequences of step 0 come first, then step 1, ... so step "
          "{step} of sequence {example} is row {step} x {batch_size} + {example} = {expected}.").format(
              batch_size=batch_size, step=step, example=example, expected=expected),
        _("The outputs of all sequences for one time step are stacked together, one step after another. "
          "How many rows come before step {step}? Then count to sequence {example} (rows and sequences are "
          "numbered from 0).").format(step=step, example=example),
    )


MEASURED = 0.02  # a standard deviation measured on ~10,000 samples is within 2 % of the exact one


@self_check
def check_hidden_term_std(answer, num_hiddens: int = 64, state_std: float = 0.5) -> Verdict:
    """Exercise 2: the std of an entry of H W_hh when H has independent entries of std `state_std`."""
    expected = state_std  # sqrt(h) terms, each of std state_std / sqrt(h)
    return number_verdict(  # a measured value (as the question invites) counts within 2 %
        answer, expected,
        _("Each entry is a sum of {num_hiddens} independent products, each with standard deviation {std:g} "
          "x 1/sqrt({num_hiddens}); the variances add up to {std:g}², so the standard deviation is "
          "{expected:g}: the 1/fan_in rule keeps the scale of the state.").format(
              num_hiddens=num_hiddens, std=state_std, expected=expected),
        _("An entry of H W_hh is a sum over k of H[k] W_hh[k, j]. Variances of independent terms add; the "
          "variance of a product of independent zero-mean factors is the product of their variances."),
        about=MEASURED,
    )


@self_check
def check_temperature_probability(answer, logits=(2.0, 1.0, 0.0), temperature: float = 0.5) -> Verdict:
    """Exercise 3: the probability of the first character after dividing the logits by the temperature."""
    expected = temperature_probability(logits, temperature)
    return number_verdict(
        answer, expected,
        _("softmax({logits} / {temperature:g})[0] = {expected:.4f}: a "
          "temperature below 1 makes the most likely character even more "
          "likely.").format(logits=list(logits), temperature=temperature, expected=expected),
        _("Divide every logit by {temperature:g}, exponentiate, and divide the first by the sum. Give a "
          "probability between 0 and 1.").format(temperature=temperature),
    )


@self_check
def check_initial_loss(answer, vocab_size: int = 60) -> Verdict:
    """Exercise 4: the loss (nats) of an untrained model with tiny weights on `vocab_size` characters."""
    expected = math.log(vocab_size)
    return number_verdict(
        answer, expected,
        _("Every character gets probability about 1/{vocab}, so the loss is -ln(1/{vocab}) = ln {vocab} = "
          "{expected:.4f} nats, a perplexity of {vocab}: the model is guessing uniformly, whatever the "
          "vocabulary.").format(vocab=vocab_size, expected=expected),
        _("Tiny logits give every one of the {vocab} characters the same probability. What is -ln of that "
          "probability?").format(vocab=vocab_size),
    )


OUTPUTS = N_("the outputs")  # the forward loop's first result, as a verdict names it


def _forward_cases(device: torch.device):
    rand = sampler(4, device)
    generator = torch.Generator().manual_seed(40)
    for batch, steps, vocab, hiddens in ((2, 3, 6, 4), (4, 10, 28, 16), (1, 1, 5, 3)):
        X = torch.randint(vocab, (batch, steps), generator=generator).to(device)
        params = (rand(vocab, hiddens) * 0.5, rand(hiddens, hiddens) * 0.5, rand(hiddens),
                  rand(hiddens, vocab), rand(vocab))
        state = rand(batch, hiddens)
        yield Case(f"batch={batch}, steps={steps}, vocab={vocab}, hiddens={hiddens}", (X, state, *params),
                   reference=rnn_forward, names=(_(OUTPUTS), _("the final state")),
                   locate=functools.partial(_locate_output, batch))


def _locate_output(batch: int, what: str, index: tuple) -> str:
    """Word a wrong entry of the forward loop's results by time step and sequence."""
    if _(OUTPUTS) in what and len(index) == 2:
        step, sequence = divmod(index[0], batch)
        # TRANSLATORS: {where} of "the result is wrong{where}", with its leading space in English.
        return _(" at row {row} (time step {step}, sequence {sequence}), column {column}").format(
            row=index[0], step=step, sequence=sequence, column=index[1])
    if len(index) != 2:
        return ""
    # TRANSLATORS: {where} of "the result is wrong{where}", with its leading space in English.
    return _(" at sequence {sequence}, hidden unit {unit}").format(sequence=index[0], unit=index[1])


def check_forward(forward) -> Verdict:
    """The capstone's `forward(X, state, W_xh, W_hh, b_h, W_hq, b_q)`: (outputs, final state).

    Notebook 04 writes the forward pass out on its page; the capstone asks for it.
    """
    return check_function(
        forward, _forward_cases,
        _("Your loop runs the same step at every time step, keeps the outputs in step-major order and "
          "hands back the last state."),
        signature="forward(X, state, W_xh, W_hh, b_h, W_hq, b_q)", rtol=1e-4, atol=1e-5,
        bans=(RNN,))


LOOP_LR, LOOP_SEED = 0.5, 5


def _loop_setup(device: torch.device):
    """A small model, an optimizer and minibatches that continue each other, for the training-loop check."""
    generator = torch.Generator().manual_seed(LOOP_SEED)
    model = RNNScratch(6, 8, generator=generator, hand_written_bptt=False).to(device)
    text = torch.randint(6, (200,), generator=generator)
    batches = list(sequential_batches(text, 3, 5, device=device, offset=0))
    return model, torch.optim.SGD(model.parameters(), lr=LOOP_LR), batches


def _reference_loop(device: torch.device, carry_state: bool):
    """The package's epoch on the check's model: (parameters, mean loss). Computed afresh at each
    call (no cache a student's code could read): once before it runs, kept as a digest, once after."""
    model, optimizer, batches = _loop_setup(device)
    loss, _batches, _seconds = train_epoch(model, batches, optimizer, None, carry_state, History(), 0)
    return [p.detach() for p in model.parameters()], loss


# The model's own code (its forward pass) is the package's: the student's loop may call it.
MODEL_FILES = frozenset(str(PACKAGE / name) for name in ("rnn.py", "bptt.py"))


def _loop_problem(train_loop, device: torch.device, output: CappedText) -> str | None:
    sealed = digest(_reference_loop(device, carry_state=True)) if device.type == "cpu" else None
    model, optimizer, batches = _loop_setup(device)
    outcome = run_guarded(train_loop, (model, batches, optimizer), output=output, allowed=MODEL_FILES)
    problem = outcome_problem(outcome, _("the small model"))
    if problem:
        # Without a detach the second backward meets the freed graph ("a second time") or, with
        # retain_graph=True, parameters the optimizer has since changed in place.
        graph_reused = "second time" in problem or "modified by an inplace operation" in problem
        if not graph_reused:
            return with_incident_cause(problem, incident_of(outcome), mistakes_of("04:train_loop"))
        return f"{problem} {NOT_DETACHED.said()}"
    if outcome.value is None:
        return NOT_ATTEMPTED
    reference, loss = _reference_loop(device, carry_state=True)
    if sealed is not None and digest((reference, loss)) != sealed:
        return _("Your loop changed something the check itself relies on (a setting or a function outside "
                 "torch's namespaces), so it cannot be judged: restart the kernel and run your cell again "
                 "without that change.")
    names = [name for name, _parameter in model.named_parameters()]
    got_params = [p.detach() for p in model.parameters()]
    # TRANSLATORS: the subject of a sentence, followed by a parameter's name ("..., W_xh, is wrong").
    problem = (first_difference(got_params, reference, _("After one epoch the parameters"), names, 1e-4, 1e-6)
               # TRANSLATORS: a sentence's subject ("The mean loss you returned is 2.3, which is not right").
               or first_difference(outcome.value, loss, _("The mean loss you returned"), rtol=1e-4))
    mistake = _loop_mistake(device, got_params, outcome.value, names) if problem else None
    return problem if mistake is None else f"{problem} {mistake.said()}"


def _loop_mistake(device: torch.device, got_params: list, got_loss, names: list[str]) -> Mistake | None:
    """The catalogued mistake of the training loop whose epoch leaves `got_params` and reports
    `got_loss`, or None: each is run on a fresh copy of the check's model."""
    for mistake in (m for m in mistakes_of("04:train_loop") if m.gives is not None):
        model, optimizer, batches = _loop_setup(device)
        reported = mistake.gives(model, batches, optimizer)
        params = [p.detach() for p in model.parameters()]
        if (first_difference(got_params, params, "", names, 1e-4, 1e-6) is None
                and first_difference(got_loss, reported, "", rtol=1e-4) is None):
            return mistake
    return None


def check_train_loop(train_loop) -> Verdict:
    """Exercise 5: `train_loop(model, batches, optimizer)` trains one epoch, state carried and detached.

    It must return the mean minibatch loss and leave the parameters where the package's
    `train_epoch` (no clipping, state carried) leaves them.
    """
    output = CappedText()
    return check_on_devices(
        train_loop, functools.partial(_loop_problem, train_loop, output=output),
        _("Your loop carries the state from minibatch to minibatch, cuts the gradient at each boundary, "
          "and updates like the package's."),
        "train_loop(model, batches, optimizer)", output)
