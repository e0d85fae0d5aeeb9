"""The recall source: a task whose only memory is one key held for `lag` steps (notebook 09).

Each episode of `lag + 1` characters is a key (one of `keys`, uniform), `lag - 2` noise characters
(uniform from `noise`), a cue and the key again:

    k n n n ... n ? k

so the character after the cue repeats the one exactly `lag` places back. Everything except the
echo is either unpredictable (key, noise) or fixed by position (the cue), so the echo's loss
measures memory alone: a model that holds the key predicts it with 0 bits, one that has forgotten
it pays log2 |keys| bits (a guess among the keys). Unlike the echo source of notebook 07, which
asks for a queue of `lag` characters, one key per episode is all there is to hold: what is hard is
only the distance.
"""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from d2lmini.corpus import corpus_from_text
from d2lmini.i18n import _
from d2lmini.train import TrainConfig, make_model, train


@dataclass(frozen=True)
class RecallSource:
    """Episodes `key, noise..., cue, key` of `lag + 1` characters (see the module's docstring)."""

    keys: str = "abcd"
    noise: str = "wxyz"
    cue: str = "?"
    lag: int = 30

    def __post_init__(self):
        symbols = self.keys + self.noise + self.cue
        if len(self.cue) != 1 or len(set(symbols)) != len(symbols) or len(self.keys) < 2 or not self.noise:
            raise ValueError(_("keys, noise and cue must be distinct characters (at least 2 keys, "
                               "1 noise character and 1 cue), got {keys}, {noise}, {cue}").format(
                keys=repr(self.keys), noise=repr(self.noise), cue=repr(self.cue)))
        if not (isinstance(self.lag, int) and self.lag >= 3):
            raise ValueError(_("lag must be an integer >= 3, got {lag}").format(lag=repr(self.lag)))

    def sample(self, episodes: int, seed: int = 0) -> str:
        """Return `episodes` episodes, `episodes * (lag + 1)` characters, drawn with `seed`."""
        rng = np.random.default_rng(seed)
        keys = np.array(list(self.keys))[rng.integers(0, len(self.keys), episodes)]
        noise = np.array(list(self.noise))[rng.integers(0, len(self.noise), (episodes, self.lag - 2))]
        return "".join(k + "".join(n) + self.cue + k for k, n in zip(keys, noise, strict=True))

    def floor_bits(self) -> float:
        """Return the entropy rate in bits per character: a perfect model's loss on the whole text."""
        per_episode = np.log2(len(self.keys)) + (self.lag - 2) * np.log2(len(self.noise))
        return float(per_episode / (self.lag + 1))

    def forgetful_bits(self) -> float:
        """Return a model's loss on the echo when it knows the episode's form but not its key."""
        return float(np.log2(len(self.keys)))


@torch.no_grad()
def echo_bits(model, indices: torch.Tensor, cue_index: int, num_steps: int = 2048) -> float:
    """Return `model`'s mean loss in bits on the echoes of `indices` (a whole number of episodes).

    The text is read as one stream, the state carried throughout; only the predictions of the
    characters that follow a cue count: 0 bits is a perfect memory, log2 |keys| a forgotten key.
    """
    stream = indices.to(next(model.parameters()).device)
    state = model.begin_state(1)
    losses = []
    for start in range(0, len(stream) - 1, num_steps):
        X = stream[None, start: min(start + num_steps, len(stream) - 1)]
        Y = stream[start + 1: start + 1 + X.shape[1]]
        outputs, state = model(X, state)
        losses.append(F.cross_entropy(outputs.float(), Y, reduction="none"))
    losses = torch.cat(losses)
    after_cue = stream[:-1] == cue_index
    return float(losses[after_cue].mean()) / float(np.log(2))


# The long-lag experiment of notebook 09 and `benchmarks/gates_win.py`: one definition for both,
# so the notebook's short run is the first stretch of the shipped long one.
RECALL_EPISODES = {"train": 2000, "valid": 200, "test": 200}  # each part drawn with its own seed
RECALL_SEEDS = {"train": 0, "valid": 1, "test": 2}
RECALL_CELLS = {"RNN": ("rnn", 64), "GRU": ("gru", 36), "LSTM": ("lstm", 31)}  # about 5,300 parameters each
RECALL_SETTINGS = {"lr": 0.01, "batch_size": 32, "num_steps": 64, "lr_schedule": "constant", "theta": 1.0}
RECALL_EVERY = 100  # minibatches between two points of the curve


def recall_data(source: RecallSource) -> dict:
    """Return the vocabulary and the train, valid and test indices of the recall experiment.

    The parts are drawn with different seeds; all share one vocabulary built from their union.
    """
    texts = {part: source.sample(RECALL_EPISODES[part], RECALL_SEEDS[part]) for part in RECALL_EPISODES}
    corpus = corpus_from_text("recall", "".join(texts.values()))
    data, start = {"vocab": corpus.vocab}, 0
    for part, text in texts.items():
        data[part] = corpus.indices[start:start + len(text)]
        start += len(text)
    return data


def train_recall(cell: str, source: RecallSource, data: dict, minibatches: int, seed: int = 0,
                 device="cpu") -> tuple:
    """Train the scratch `cell` ("RNN", "GRU" or "LSTM") on the recall text; return (model, curve).

    The curve is the echo loss in bits on the validation part every `RECALL_EVERY` minibatches.
    The learning rate is constant, so a shorter run is exactly the first part of a longer one.
    """
    kind, hiddens = RECALL_CELLS[cell]
    config = TrainConfig(num_hiddens=hiddens, cell=kind, seed=seed, num_epochs=None,
                         max_minibatches=minibatches, checkpoints=minibatches // RECALL_EVERY,
                         **RECALL_SETTINGS)
    model = make_model("scratch", len(data["vocab"]), config, device)
    cue = data["vocab"].indices(source.cue)[0]
    curve = []
    train(model, data["train"], data["valid"], config,
          on_checkpoint=lambda history: curve.append(echo_bits(model, data["valid"], cue)))
    return model, curve


SHIPPED_RESULT = Path(__file__).with_name("data") / "gates_win.json"
SHIPPED_MODELS = Path(__file__).with_name("data") / "gates_win_models.pt"
SHIPPED_TIMEMACHINE = Path(__file__).with_name("data") / "gates_timemachine.json"


def shipped_result(path: Path = SHIPPED_RESULT) -> dict:
    """Return the long run's result that `benchmarks/gates_win.py` wrote (its command is inside)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def shipped_models(vocab_size: int, device="cpu", path: Path = SHIPPED_MODELS) -> dict:
    """Return the long run's trained scratch models (first seed), by cell name, on `device`."""
    states = torch.load(path, map_location="cpu", weights_only=True)
    models = {}
    for cell, state in states.items():
        kind, hiddens = RECALL_CELLS[cell]
        model = make_model("scratch", vocab_size, TrainConfig(num_hiddens=hiddens, cell=kind))
        model.load_state_dict(state)
        models[cell] = model.to(device)
    return models
