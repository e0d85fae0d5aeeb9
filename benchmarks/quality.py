"""How good a language model does the course's scratch RNN learn in a fixed time?

    python benchmarks/quality.py                         # The Time Machine, 60 s of training
    python benchmarks/quality.py --corpus bundled --seconds 30
    python benchmarks/quality.py --hiddens 512 --lr 0.005 --plot benchmarks/quality_curve.png
    python benchmarks/quality.py --minibatches 1000 --dynamic   # static, mixture and dynamic rows
    python benchmarks/quality.py --cell lstm --hiddens 256      # a gated cell instead (notebook 09)
    python benchmarks/quality.py --cell lstm --hiddens 192 --minibatches 1000 --dropout 0.2 \
        --weight-decay 0.1 --keep-best                          # regularised, best checkpoint kept

Trains the vanilla (tanh) `RNNScratch` (or, with `--cell gru` / `--cell lstm`, the scratch
`GRUScratch` / `LSTMScratch` of `d2lmini.gates`) on the first 90% of a corpus for a fixed
wall-clock budget (evaluations are not counted), then reports its perplexity on the last
10%, read as a single stream (batch 1) after the end of the training text, with the hidden
state carried through (`d2lmini.train.evaluate_perplexity`), so every character is predicted
from the text before it, as the baselines predict it. Beside it,
for the same held-out text given the same training text: uniform, unigram and bigram
models and the gzip, bz2 and xz compressors (`d2lmini.metrics.baseline_bits`).

The defaults are the best settings this benchmark found for a 60-second budget on a
2-core CPU (320 hidden units, Adam with lr 0.01, batch 64, 35 steps, clipping at 1) with
a learning rate that falls along a half cosine from `lr` to 0 over the time budget;
the same as `d2lmini.train.TrainConfig`'s defaults, which were chosen from this benchmark.
The loop here is `d2lmini.train.train`'s, except that the time spent evaluating for the
curve is not counted against the budget. Every hyperparameter has a flag, checked as it is
read: a value outside its declared range (`d2lmini.settings`; NaN and infinity never pass), a
device that is not here, a plot's missing folder or a slice the text cannot hold is a usage error
naming the flag (exit status 2) before anything is trained.

Three options regularise a run, none of them the course's (the package and notebooks keep
their defaults): `--dropout p` zeroes each hidden unit that a gated cell feeds its output
layer with probability p while training (never while evaluating); `--weight-decay w` trains
with decoupled weight decay (AdamW, or SGD's own); `--keep-best` keeps the checkpoint with
the lowest perplexity on the mixture slice instead of the last. Each is judged on the slice
(printed as "slice:" lines), never on the held-out text.
The Time Machine comes from the d2lmini cache (`d2lmini.download.default_cache_dir()`), else from
`../shared/data/timemachine.txt` (copied to a temporary directory, never into the
repository), else it is downloaded into the cache.
"""

import argparse
import copy
import math
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from d2lmini.batching import validate_fits
from d2lmini.corpus import load_corpus
from d2lmini.device import seed_everything, try_gpu
from d2lmini.divergence import TrainingDiverged
from d2lmini.download import timemachine_is_cached
from d2lmini.dynamic import DynamicSettings, dynamic_log_probs, training_gradient_rms
from d2lmini.gates import GatedScratch, GRUScratch, LSTMScratch, gru_forward, lstm_forward
from d2lmini.lstm_bptt import lstm_forward_bptt
from d2lmini.metrics import Ladder, ladder_bits, perplexity_from_bits
from d2lmini.mixture import (
    fit_mixture_weight,
    harmonic_mean_of_probs,
    mixture_log_probs,
    perplexity_of,
    rnn_log_probs,
)
from d2lmini.ngram import KneserNey
from d2lmini.settings import (
    CORPORA,
    TRAIN_SETTINGS,
    Setting,
    validate_device_name,
    validate_settings,
    validate_value,
)
from d2lmini.train import (
    TrainConfig,
    TrainingRun,
    make_model,
    run_training,
    validate_cell_init,
    validate_training,
)

REPO = Path(__file__).resolve().parent.parent
SHARED_COPY = REPO.parent / "shared" / "data" / "timemachine.txt"


def load_named_corpus(name: str):
    """Return the corpus `name` ("timemachine" or "bundled"), finding The Time Machine as documented."""
    if name != "timemachine" or timemachine_is_cached() or not SHARED_COPY.is_file():
        return load_corpus(name)
    with tempfile.TemporaryDirectory() as data_dir:
        shutil.copy(SHARED_COPY, data_dir)
        return load_corpus(name, Path(data_dir))  # load_corpus checks the sha1


GATED_CELLS = {"gru": GRUScratch, "lstm": LSTMScratch}
CELL_NAMES = {"rnn": "RNN", "gru": "GRU", "lstm": "LSTM"}


def make_cell(cell: str, vocab_size: int, config: TrainConfig, device):
    """Return the seeded scratch model of `cell` ("rnn", "gru" or "lstm") on `device`."""
    if cell == "rnn":
        return make_model("scratch", vocab_size, config, device)
    if cell not in GATED_CELLS:
        raise ValueError(f"cell must be one of {', '.join(CELL_NAMES)}, not {cell!r}")
    generator = torch.Generator().manual_seed(config.seed)
    return GATED_CELLS[cell](vocab_size, config.num_hiddens, generator=generator).to(device)


def cell_hidden_states(cell: GatedScratch, X: torch.Tensor, state: torch.Tensor) -> tuple:
    """Run a gated scratch cell over X and return (hidden states (steps·batch, hiddens), state).

    The cell's own forward function with an identity output layer, so the backward pass is
    the cell's own (the LSTM's hand-written one included).
    """
    eye = torch.eye(cell.num_hiddens, dtype=cell.W_h.dtype, device=cell.W_h.device)
    zero = torch.zeros(cell.num_hiddens, dtype=cell.W_h.dtype, device=cell.W_h.device)
    if isinstance(cell, GRUScratch):
        return gru_forward(X, state, cell.W_x, cell.W_h, cell.b, cell.b_hn, eye, zero)
    if isinstance(cell, LSTMScratch):
        forward = lstm_forward_bptt if cell.hand_written_bptt else lstm_forward
        return forward(X, state, cell.W_x, cell.W_h, cell.b, eye, zero)
    raise TypeError(f"cell must be a GRUScratch or an LSTMScratch, not {type(cell).__name__}")


class OutputDropout(nn.Module):
    """A gated scratch cell trained with dropout between its hidden state and its output layer.

    While the module trains and gradients are on, each hidden unit fed to the output layer is
    zeroed with probability `rate` (the others scaled by 1 / (1 - rate)); the state carried to
    the next step is untouched. Under `torch.no_grad()` (every evaluation) it is the cell itself.
    """

    def __init__(self, cell: GatedScratch, rate: float):
        super().__init__()
        if not 0 <= rate < 1:
            raise ValueError(f"the dropout rate must be in [0, 1), not {rate!r}")
        self.cell, self.rate = cell, rate
        self.vocab_size, self.num_hiddens = cell.vocab_size, cell.num_hiddens

    def begin_state(self, batch_size: int) -> torch.Tensor:
        return self.cell.begin_state(batch_size)

    def forward(self, X: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not (self.training and torch.is_grad_enabled() and self.rate > 0):
            return self.cell(X, state)
        hiddens, state = cell_hidden_states(self.cell, X, state)
        hiddens = F.dropout(hiddens, self.rate, training=True)
        return torch.addmm(self.cell.b_q, hiddens, self.cell.W_hq), state


class BestCheckpoint:
    """An `on_checkpoint` callback that keeps a copy of the weights with the lowest validation perplexity."""

    def __init__(self, model: nn.Module):
        self.model, self.weights, self.minibatches, self.perplexity = model, None, None, math.inf

    def __call__(self, history) -> None:
        if history.valid_perplexity[-1] < self.perplexity:
            self.perplexity, self.minibatches = history.valid_perplexity[-1], history.minibatches[-1]
            self.weights = copy.deepcopy(self.model.state_dict())

    def restore(self) -> None:
        """Put the kept weights back into the model (nothing to do before any checkpoint)."""
        if self.weights is not None:
            self.model.load_state_dict(self.weights)


def train_rnn(corpus, fit_length: int, config: TrainConfig, device, cell: str = "rnn", *,
              dropout: float = 0.0, keep_best: bool = False):
    """Train the scratch model of `cell` on corpus.indices[:fit_length] through `d2lmini.train`'s loop.

    Returns (model, history, kept): the checkpoints are measured on the mixture slice that
    follows the training part (never on the held-out text). `dropout` (gated cells only, see
    `OutputDropout`) and the config's `weight_decay` (`d2lmini.train.make_optimizer`) regularise training;
    with `keep_best` the model ends with the weights of the checkpoint best on the slice, and
    `kept` is that checkpoint's minibatch count (else the last one's).
    """
    seed_everything(config.seed)
    model = make_cell(cell, len(corpus.vocab), config, device)
    trained = OutputDropout(model, dropout) if dropout else model
    train_indices = corpus.indices[:fit_length]
    slice_indices = corpus.indices[fit_length : int(len(corpus.indices) * 0.9)]
    best = BestCheckpoint(model) if keep_best else None
    validate_training(trained, train_indices, slice_indices, config)
    history = run_training(TrainingRun(trained, train_indices, slice_indices, config, on_checkpoint=best))
    if best is not None:
        best.restore()
        return model, history, best.minibatches
    return model, history, history.minibatches[-1]


def save_plot(history, rows: Ladder, path: Path, title: str, label: str = "RNN") -> None:
    """Save the model's perplexity on the slice against training seconds, with n-gram and PPMd lines.

    `label` names the model ("RNN", "GRU", "LSTM"); its mixture's row is `f"{label} + KN mixture"`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4), dpi=100)
    ax.plot(history.seconds, history.valid_perplexity, marker="o", markersize=3,
            label=f"scratch {label} (perplexity on the mixture slice)")
    best = f"best n-gram (KN n={rows.best_order})"
    for name, style in ((best, "--"), ("ppmd", ":"), (f"{label} + KN mixture", "-.")):
        if name in rows:
            ax.axhline(perplexity_from_bits(rows[name]), color="gray", linestyle=style, linewidth=1,
                       label=f"{name} (held-out)")
    ax.set_xlabel("training seconds")
    ax.set_ylabel("perplexity")
    ax.set_ylim(bottom=3.0, top=min(12.0, max(history.valid_perplexity) * 1.05))
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# Command-line flag: the `TrainConfig` field it sets (type, choices and help from `d2lmini.settings`).
SETTING_FLAGS = {"--hiddens": "num_hiddens", "--lr": "lr", "--optimizer": "optimizer",
                 "--weight-decay": "weight_decay", "--batch": "batch_size", "--steps": "num_steps",
                 "--theta": "theta", "--schedule": "lr_schedule", "--init": "init", "--seed": "seed"}


def add_setting(parser: argparse.ArgumentParser, flag: str, setting: Setting, default) -> None:
    """Add `flag` for the declared `setting`: its type, choices and help (0 means None where allowed).

    A number outside the setting's declared range (NaN and infinity included) is a usage error that
    names the flag and the setting, before anything runs.
    """
    help_text = setting.help + (f" (0: {setting.none_means})" if setting.optional else "")
    kind = setting_reader(setting, zero_is_none=setting.optional) if setting.kind in (int, float) else str
    parser.add_argument(flag, type=kind, default=default, choices=list(setting.choices) or None,
                        help=help_text)


def setting_reader(setting: Setting, zero_is_none: bool = False):
    """Return an argparse `type` that reads a number for `setting` and validates it as declared.

    With `zero_is_none`, 0 reads as None (the setting's "off"). Anything else outside the setting's
    range, or not a number of its kind, raises `argparse.ArgumentTypeError` with the setting's own
    message; argparse puts the flag before it.
    """
    required = replace(setting, optional=False)

    def read(text: str):
        try:
            value = setting.kind(text)
        except (ValueError, OverflowError):
            value = text  # not a number of its kind: the setting's own message says what it takes
        if zero_is_none and value == 0:
            return None
        try:
            return validate_value(required, value)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return read


def rate_reader(what: str, low: float, high: float, *, low_included: bool):
    """Return an argparse `type` for a finite number between `low` and `high` (`high` never included)."""
    bounds = f"from {low:g} up to (not including) {high:g}" if low_included else \
        f"between {low:g} and {high:g} (neither included)"

    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and (low <= value if low_included else low < value) and value < high):
            raise argparse.ArgumentTypeError(f"the {what} must be a number {bounds}, not {text!r}")
        return value

    return read


def device_reader(text: str) -> torch.device:
    """An argparse `type`: 'cpu', 'cuda', 'cuda:N' or 'mps', refused unless that device is here."""
    try:
        device = torch.device(validate_device_name(text))
    except (TypeError, ValueError) as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if device.type == "cuda" and not (torch.cuda.is_available()
                                      and (device.index or 0) < torch.cuda.device_count()):
        raise argparse.ArgumentTypeError(f"there is no CUDA GPU {text!r} here "
                                         f"({torch.cuda.device_count()} CUDA GPUs)")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise argparse.ArgumentTypeError("there is no Apple GPU (mps) here")
    return device


def plot_path(text: str) -> Path:
    """An argparse `type`: a PNG path whose folder exists, checked before the run rather than after it."""
    path = Path(text)
    if not text.strip():
        raise argparse.ArgumentTypeError("give the file to save the plot as, not an empty name")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file to save the plot as")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"the folder {str(path.parent)!r} does not exist")
    return path


DYNAMIC_GRID = [(lr, decay) for lr in (1e-5, 3e-5, 1e-4, 3e-4, 1e-3) for decay in (0.0, 0.01)]


def choose_dynamic_settings(model, indices, fit_length: int, train_length: int) -> DynamicSettings:
    """Pick dynamic evaluation's lr and decay on the slice at the end of the training text (not held-out)."""
    rms = training_gradient_rms(model, indices[:fit_length])
    scores = {}
    for lr, decay in DYNAMIC_GRID:
        settings = DynamicSettings(lr=lr, decay=decay)
        log_probs = dynamic_log_probs(model, indices[fit_length:train_length], indices[:fit_length], rms,
                                      settings)
        scores[settings] = perplexity_of(log_probs)
        print(f"  dynamic evaluation on the slice: lr {lr:g}, decay {decay:g}: "
              f"perplexity {scores[settings]:.3f}")
    return min(scores, key=scores.get)


def build_parser(defaults: TrainConfig) -> argparse.ArgumentParser:
    """The command line: every flag, each number checked as it is read (`setting_reader`, `rate_reader`)."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="timemachine", choices=list(CORPORA))
    parser.add_argument("--cell", default="rnn", choices=list(CELL_NAMES),
                        help="the recurrent cell: the tanh RNN, or the GRU or LSTM of notebook 09")
    parser.add_argument("--seconds", type=setting_reader(TRAIN_SETTINGS["max_seconds"]), default=None,
                        help="training budget (wall clock)")
    parser.add_argument("--minibatches", type=setting_reader(TRAIN_SETTINGS["max_minibatches"]), default=None,
                        help="training budget in minibatches (comparable under load)")
    for flag, name in SETTING_FLAGS.items():
        add_setting(parser, flag, TRAIN_SETTINGS[name], getattr(defaults, name))
    parser.add_argument("--dropout", type=rate_reader("dropout rate", 0, 1, low_included=True), default=0.0,
                        help="gated cells: dropout rate on the hidden state before the output layer")
    parser.add_argument("--keep-best", action="store_true",
                        help="keep the checkpoint with the lowest perplexity on the mixture slice")
    parser.add_argument("--slice", type=rate_reader("share of the training text", 0, 1, low_included=False),
                        default=0.1, help="share of the training text held back to fit the mixture weight")
    parser.add_argument("--plot", type=plot_path, default=None, help="save the curve as a PNG here")
    parser.add_argument("--dynamic", action="store_true",
                        help="also report dynamic evaluation, its lr and decay chosen on the slice")
    parser.add_argument("--device", type=device_reader, default=None,
                        help="cpu, cuda, cuda:N, mps (default: try_gpu())")
    return parser


def parse_arguments(argv=None) -> tuple[argparse.ArgumentParser, argparse.Namespace, TrainConfig]:
    """Read the command line; anything that cannot run is a usage error naming its flag (exit status 2).

    Returns the parser (for the checks that need the corpus, `check_split`), the arguments and the
    validated training configuration. Nothing is loaded or trained here.
    """
    defaults = TrainConfig()  # the course's defaults: the best settings this benchmark found
    parser = build_parser(defaults)
    args = parser.parse_args(argv)
    if args.seconds is None and args.minibatches is None:
        args.seconds = 60.0
    if args.dynamic and args.cell != "rnn":
        parser.error("--dynamic evaluates the tanh RNN only (d2lmini.dynamic); leave it out with --cell "
                     f"{args.cell}")
    if args.dropout and args.cell == "rnn":
        parser.error("--dropout is for the gated cells (--cell gru or --cell lstm)")
    try:
        config = validate_settings(TrainConfig(num_hiddens=args.hiddens, lr=args.lr, optimizer=args.optimizer,
                             weight_decay=args.weight_decay,
                             batch_size=args.batch, num_steps=args.steps, theta=args.theta,
                             lr_schedule=args.schedule, init=args.init, seed=args.seed, num_epochs=None,
                             max_seconds=args.seconds, max_minibatches=args.minibatches,
                             count_eval_time=False, checkpoints=12), TRAIN_SETTINGS)  # validation: one stream
    except (TypeError, ValueError) as error:  # a setting out of its declared range: say which
        parser.error(str(error))
    try:
        validate_cell_init(args.cell, config.init)
    except ValueError as error:
        parser.error(f"argument --init: {error}")
    return parser, args, config


def check_split(parser: argparse.ArgumentParser, args, config: TrainConfig, fit_length: int,
                slice_length: int) -> None:
    """Stop with a usage error unless the training part holds one minibatch and the slice 2 characters."""
    if slice_length < 2:
        parser.error(f"--slice {args.slice:g} leaves {slice_length} characters of the training text to fit "
                     "the mixture weight on; it needs at least 2: give a larger share")
    try:
        validate_fits(fit_length, config.batch_size, config.num_steps)
    except ValueError as error:
        parser.error(f"{error} (--batch {config.batch_size}, --steps {config.num_steps}, the training part "
                     f"of {fit_length:,} characters with --slice {args.slice:g})")


def main(argv=None):
    parser, args, config = parse_arguments(argv)
    label = CELL_NAMES[args.cell]
    device = args.device or try_gpu()
    corpus = load_named_corpus(args.corpus)
    train_text, valid_text = corpus.split_text(0.1)
    fit_length = int(len(train_text) * (1 - args.slice))
    fit_text, slice_text = train_text[:fit_length], train_text[fit_length:]
    check_split(parser, args, config, fit_length, len(slice_text))
    print(f"corpus {corpus.name}: {len(fit_text):,} characters to train the RNN, {len(slice_text):,} "
          f"(end of the training text) to fit the mixture weight, {len(valid_text):,} held out; "
          f"vocabulary {len(corpus.vocab)}; device {device}, {torch.get_num_threads()} threads")
    budget = f"{args.minibatches} minibatches" if args.minibatches else f"{args.seconds:g} s"
    print(f"{label}: {config.num_hiddens} hidden, {config.optimizer} lr {config.lr:g} {args.schedule}, "
          f"batch {config.batch_size}x{config.num_steps}, init {config.init}, seed {config.seed}, {budget}; "
          f"dropout {args.dropout:g}, weight decay {args.weight_decay:g}, "
          f"{'best checkpoint on the slice' if args.keep_best else 'last checkpoint'}")

    try:
        model, history, kept = train_rnn(corpus, fit_length, config, device, args.cell, dropout=args.dropout,
                                         keep_best=args.keep_best)
    except (TypeError, ValueError) as error:  # settings the text cannot hold, a budget too short for one step
        parser.error(str(error))
    except TrainingDiverged as error:
        sys.exit(f"quality.py: {error}")
    for minibatches, train_ppl, valid_ppl in zip(history.minibatches, history.train_perplexity,
                                                 history.valid_perplexity, strict=True):
        print(f"  checkpoint {minibatches:5d} minibatches: train {train_ppl:.3f}, slice {valid_ppl:.3f}"
              + (" (kept)" if minibatches == kept else ""))
    trained = history.seconds[-1] if history.seconds else float("nan")
    rate = history.tokens_per_second[-1] if history.tokens_per_second else float("nan")
    print(f"trained {trained:.1f} s; last checkpoint's rate {rate:,.0f} tokens/s", end="")
    if args.minibatches:
        print(f"; {args.minibatches * config.batch_size * config.num_steps / trained:,.0f} tokens/s overall")
    print()

    rows = ladder_bits(train_text, valid_text)
    # the mixture weight: both models scored on the slice they were not fitted on
    kn_order = rows.best_order
    slice_kn = KneserNey(kn_order).fit(fit_text, symbols=corpus.text).log_probs(
        slice_text, history=fit_text[-kn_order:])
    slice_rnn = rnn_log_probs(model, corpus.indices[fit_length:len(train_text)],
                              history=corpus.indices[:fit_length])
    lam = fit_mixture_weight(slice_rnn, slice_kn)
    slice_mixture = perplexity_of(mixture_log_probs(slice_rnn, slice_kn, lam))
    print(f"slice: {label} alone {perplexity_of(slice_rnn):.3f}, KN n={kn_order} "
          f"{perplexity_of(slice_kn):.3f}, mixture {slice_mixture:.3f} (lam={lam:.2f})")
    # held-out: the n-gram counts the whole training text, the RNN reads it all as context
    valid_kn = KneserNey(kn_order).fit(train_text, symbols=corpus.text).log_probs(
        valid_text, history=train_text[-kn_order:])
    valid_rnn = rnn_log_probs(model, corpus.indices[len(train_text):],
                              history=corpus.indices[:len(train_text)])
    ln2 = math.log(2)
    rows[f"scratch {label} (static)"] = -valid_rnn.mean() / ln2
    rows[f"{label} + KN mixture (lam={lam:.2f})"] = -mixture_log_probs(valid_rnn, valid_kn, lam).mean() / ln2
    if args.dynamic:
        settings = choose_dynamic_settings(model, corpus.indices, fit_length, len(train_text))
        rms = training_gradient_rms(model, corpus.indices[:fit_length], settings.segment)
        valid_dynamic = dynamic_log_probs(model, corpus.indices[len(train_text):],
                                          corpus.indices[:len(train_text)], rms, settings)
        rows[f"scratch RNN, dynamic evaluation (lr={settings.lr:g}, decay={settings.decay:g})"] = \
            -valid_dynamic.mean() / ln2
    print("| model | bits per character | perplexity |")
    print("|---|---|---|")
    for name, value in rows.items():
        print(f"| {name} | {value:.3f} | {perplexity_from_bits(value):.2f} |")
    print(f"\n{label} on held-out: perplexity {perplexity_of(valid_rnn):.2f}, "
          f"1/mean(p) {harmonic_mean_of_probs(valid_rnn):.2f}")
    if args.plot:
        rows[f"{label} + KN mixture"] = rows[f"{label} + KN mixture (lam={lam:.2f})"]
        save_plot(history, rows, args.plot, f"{corpus.name}: scratch {label}, {budget}", label)
        print(f"plot saved to {args.plot}")


if __name__ == "__main__":
    main()
