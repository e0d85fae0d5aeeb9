"""What a training run measured: one update (`Step`) and the run's `History` (notebook 04).

Its own module below `train` and `divergence`, which both hand a history on (a run that diverged
keeps what it measured), so that neither imports the other for it.
"""

from dataclasses import dataclass, field

import torch

from d2lmini.clipping import Clipped


@dataclass
class Step:
    """One training update: the state it ends with (graph attached), its loss and what clipping did."""

    state: torch.Tensor
    loss: float
    clipped: Clipped


@dataclass
class History:
    """What `train` measured: one entry per checkpoint, and one per minibatch (`step_*`).

    `epoch` is the position of each checkpoint in passes over the training text (whole
    numbers for end-of-epoch checkpoints), `minibatches` the minibatches trained by then;
    `train_perplexity` is that of the minibatches since the previous checkpoint; `seconds` is the
    budget's clock at the checkpoint.

    `valid_perplexity` is read as one stream after the training text (`evaluate_perplexity`,
    the baselines' protocol) except where `valid_estimated` is True: there it is the cheaper
    estimate of `eval_batch_size` cold-started streams (`estimate_perplexity`), which a config
    may ask for at the checkpoints before the last; the last is always one stream.

    `step_grad_norm` is measured before clipping. `step_clip_cosine` (per-element
    clipping only) is the cosine between the gradient before and after clipping.
    `stopped` is None for a run that used its budget, else why it stopped early (an
    interrupt, a callback or an error that raised), in words; `interrupted` is True when an
    interrupt (KeyboardInterrupt) stopped it.
    """

    epoch: list[float] = field(default_factory=list)
    minibatches: list[int] = field(default_factory=list)
    train_perplexity: list[float] = field(default_factory=list)
    valid_perplexity: list[float] = field(default_factory=list)
    valid_estimated: list[bool] = field(default_factory=list)
    tokens_per_second: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    step_loss: list[float] = field(default_factory=list)
    step_grad_norm: list[float] = field(default_factory=list)
    step_clip_cosine: list[float] = field(default_factory=list)
    step_lr: list[float] = field(default_factory=list)
    clipped_steps: int = 0
    stopped: str | None = None
    interrupted: bool = False

    def record(self, step: Step, lr: float) -> None:
        """Record one training step (`train_step`'s result) taken at learning rate `lr`."""
        self.step_loss.append(step.loss)
        self.step_grad_norm.append(step.clipped.norm)
        self.step_lr.append(lr)
        self.clipped_steps += int(step.clipped.acted)
        if step.clipped.cosine is not None:
            self.step_clip_cosine.append(step.clipped.cosine)
