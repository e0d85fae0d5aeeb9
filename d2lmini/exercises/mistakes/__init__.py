"""The catalogue of the mistakes students make in every coding exercise, one place for all feedback.

`CATALOGUE` maps an exercise's id (as in `d2lmini/grading/assignment/exercises.json`: "09:gru_cell") to its
typical mistakes (`coding.Mistake`), in the order they are tried. Each mistake is recognised by its
numbers: after a student's function returned a wrong result, what the mistake gives on the same
inputs is computed and compared with it (`coding.recognised_mistake`). The verdict then names the
mistake and the notebook's section to re-read (`Mistake.said`), never the expected value or the
code of the answer. The self-check, the grader's per-student feedback and Gradescope's output all
come from the same check, so they all give these words. Where a mistake is a convention that is
correct in another book (Chung's update gate, d2l's reset gate), its words say so and say which
convention the course checks.

`OWN` holds each exercise's own mistakes (computed from its inputs); `CATALOGUE` adds, after them,
the mistakes shared by every exercise whose result is a value (`shared.fallbacks`: the right
numbers transposed, in another shape, with the opposite sign, scaled by a constant...), with the
exercise's section to re-read. Notebook 04's loop is judged by what it leaves in the model, so it
has only its own. Every exercise, 04's loop too, then has the mistakes seen in how a function
failed (`shared.incidents`: the kind of exception it raised, an input changed in place, a route
the exercise forbids).
"""

from d2lmini.exercises.coding import Mistake
from d2lmini.exercises.mistakes import backprop, gated, inputs, measures, recurrence, shared, training
from d2lmini.exercises.mistakes.capstone import MISTAKES as CAPSTONE

OWN: dict[str, tuple[Mistake, ...]] = {
    "01:rnn_step": recurrence.RNN_STEP,
    "01:all_states": recurrence.ALL_STATES,
    "02:fused_step": recurrence.FUSED_STEP,
    "03:lookup": inputs.LOOKUP,
    "03:one_hot": inputs.ONE_HOT,
    "03:sequential_batches": inputs.SEQUENTIAL_BATCHES,
    "04:train_loop": training.TRAIN_LOOP,
    "05:masked_loss_and_grad": backprop.MASKED_LOSS,
    "05:leaky_bptt": backprop.LEAKY_BPTT,
    "06:clip_function": measures.CLIP,
    "07:perplexity_function": measures.PERPLEXITY,
    "07:kn_bigram": measures.KN_BIGRAM,
    **{f"08:{piece}": mistakes for piece, mistakes in CAPSTONE.items()},
    "09:gru_cell": gated.GRU_CELL,
    "09:lstm_cell": gated.LSTM_CELL,
    "09:lstm_step_backward": gated.LSTM_STEP_BACKWARD,
}
# The section each exercise's shared mistakes send the student to (its own mistakes' main section).
SECTIONS: dict[str, str] = {
    "01:rnn_step": recurrence.STEP_SECTION,
    "01:all_states": recurrence.UNROLL_SECTION,
    "02:fused_step": recurrence.FUSED_SECTION,
    "03:lookup": inputs.LOOKUP_SECTION,
    "03:one_hot": inputs.ONE_HOT_SECTION,
    "03:sequential_batches": inputs.CUT_SECTION,
    "05:masked_loss_and_grad": backprop.LOSS_SECTION,
    "05:leaky_bptt": backprop.STEP_SECTION,
    "06:clip_function": measures.RULE_SECTION,
    "07:perplexity_function": measures.PERPLEXITY_SECTION,
    "07:kn_bigram": measures.KN_SECTION,
    **{f"08:{piece}": "" for piece in CAPSTONE},
    "09:gru_cell": gated.GRU_SECTION,
    "09:lstm_cell": gated.LSTM_SECTION,
    "09:lstm_step_backward": gated.EQUATIONS_SECTION,
}
CATALOGUE: dict[str, tuple[Mistake, ...]] = {
    exercise: own + (shared.fallbacks(SECTIONS[exercise]) if exercise in SECTIONS else ())
    + shared.incidents(SECTIONS.get(exercise, training.TRAINING_SECTION))
    for exercise, own in OWN.items()
}


def mistakes_of(exercise: str) -> tuple[Mistake, ...]:
    """The catalogued mistakes of the exercise with this id ("09:gru_cell"); () for one without any."""
    return CATALOGUE.get(exercise, ())
