"""The catalogue of the mistakes students make in every coding exercise, one place for all feedback.

`CATALOGUE` maps an exercise's id (as in `d2lmini/grading/exercises.json`: "09:gru_cell") to its
typical mistakes (`coding.Mistake`), in the order they are tried. Each mistake is recognised by its
numbers: after a student's function returned a wrong result, what the mistake gives on the same
inputs is computed and compared with it (`coding.recognised_mistake`). The verdict then names the
mistake and the notebook's section to re-read (`Mistake.said`), never the expected value or the
code of the answer. The self-check, the grader's per-student feedback and Gradescope's output all
come from the same check, so they all give these words. Where a mistake is a convention that is
correct in another book (Chung's update gate, d2l's reset gate), its words say so and say which
convention the course checks.
"""

from d2lmini.exercises.coding import Mistake
from d2lmini.exercises.mistakes import backprop, gated, inputs, measures, recurrence, training
from d2lmini.exercises.mistakes.capstone import MISTAKES as CAPSTONE

CATALOGUE: dict[str, tuple[Mistake, ...]] = {
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


def mistakes_of(exercise: str) -> tuple[Mistake, ...]:
    """The catalogued mistakes of the exercise with this id ("09:gru_cell"); () for one without any."""
    return CATALOGUE.get(exercise, ())
