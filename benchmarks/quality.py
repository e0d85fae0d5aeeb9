"""How good a language model does the course's scratch RNN learn in a fixed time?

    python benchmarks/quality.py                         # The Time Machine, 60 s of training
    python benchmarks/quality.py --corpus bundled --seconds 30
    python benchmarks/quality.py --hiddens 512 --lr 0.005 --plot benchmarks/quality_curve.png

Trains the vanilla (tanh) `RNNScratch` on the first 90% of a corpus for a fixed
wall-clock budget (evaluations are not counted), then reports its perplexity on the last
10%, read in one pass as a single stream (batch 1) with the hidden state carried through
the whole text, so every character is predicted from everything before it. Beside it,
for the same held-out text given the same training text: uniform, unigram and bigram
models and the gzip, bz2 and xz compressors (`d2lmini.metrics.baseline_bits`).

The defaults are the best settings this benchmark found for a 60-second budget on a
2-core CPU (320 hidden units, Adam with lr 0.01, batch 64, 35 steps, clipping at 1) with
a learning rate that falls along a half cosine from `lr` to 0 over the time budget;
the same as `d2lmini.train.TrainConfig`'s defaults, which were chosen from this benchmark.
The loop here is `d2lmini.train.train`'s, except that the time spent evaluating for the
curve is not counted against the budget. Every hyperparameter has a flag.
The Time Machine comes from the d2lmini cache (`d2lmini.corpus.default_cache_dir()`), else from
`../shared/data/timemachine.txt` (copied to a temporary directory, never into the
repository), else it is downloaded into the cache.
"""

import argparse
import math
import shutil
import tempfile
import time
from dataclasses import fields
from pathlib import Path

import torch

from d2lmini.batching import make_batches
from d2lmini.corpus import load_corpus, timemachine_is_cached
from d2lmini.device import seed_everything, try_gpu
from d2lmini.metrics import baseline_bits, bits_from_nats, perplexity_from_bits
from d2lmini.train import (
    TrainConfig,
    TrainingDiverged,
    clip_gradients,
    evaluate_perplexity,
    make_model,
    make_optimizer,
    scheduled_lr,
    sequence_loss,
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


def held_out_perplexity(model, valid_indices) -> float:
    """Perplexity on `valid_indices` read as one stream (batch 1), state carried throughout."""
    return evaluate_perplexity(model, valid_indices, batch_size=1, num_steps=500)


def train_for(model, train_indices, valid_indices, config: TrainConfig, seconds: float,
              schedule: str = "constant", eval_every: float | None = None):
    """Train `model` for `seconds` of wall-clock time; return (curve, tokens, epochs).

    `curve` lists (training seconds, held-out perplexity) every `eval_every` seconds and at
    the end; time spent evaluating is not counted as training time.
    """
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(config.seed)
    optimizer = make_optimizer(config.optimizer, model.parameters(), config.lr)
    params = list(model.parameters())
    curve, tokens, epochs, paused = [], 0, 0, 0.0
    next_eval = eval_every if eval_every else math.inf
    start = time.perf_counter()

    def elapsed():
        return time.perf_counter() - start - paused

    while elapsed() < seconds:
        epochs += 1
        state = None
        for X, Y in make_batches(config.sampling, train_indices, config.batch_size,
                                 config.num_steps, generator, device):
            for group in optimizer.param_groups:
                group["lr"] = scheduled_lr(config.lr, schedule, elapsed() / seconds)
            if state is None or config.sampling != "sequential":
                state = model.begin_state(X.shape[0])
            outputs, state = model(X, state.detach())
            loss = sequence_loss(outputs, Y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            clip_gradients(params, config.theta)
            value = float(loss.detach())
            if not math.isfinite(value):
                raise TrainingDiverged(tokens // Y.numel(), epochs, value, config.lr)
            optimizer.step()
            tokens += Y.numel()
            if elapsed() >= next_eval:
                pause = time.perf_counter()
                curve.append((elapsed(), held_out_perplexity(model, valid_indices)))
                next_eval += eval_every
                paused += time.perf_counter() - pause
            if elapsed() >= seconds:
                break
    total = elapsed()
    curve.append((total, held_out_perplexity(model, valid_indices)))
    return curve, tokens, epochs, total


def save_plot(curve, baselines_bits, path: Path, title: str) -> None:
    """Save held-out perplexity against training seconds, with the compressors as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4), dpi=100)
    ax.plot([s for s, _ in curve], [p for _, p in curve], marker="o", markersize=3, label="scratch RNN")
    for name, style in (("gzip", ":"), ("xz", "-."), ("bz2", "--")):
        ax.axhline(perplexity_from_bits(baselines_bits[name]), color="gray", linestyle=style,
                   linewidth=1, label=name)
    ax.set_xlabel("training seconds")
    ax.set_ylabel("held-out perplexity")
    highest = max(max(p for _, p in curve), perplexity_from_bits(baselines_bits["gzip"]))
    ax.set_ylim(bottom=3.5, top=min(12.0, highest * 1.05))
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    defaults = TrainConfig()  # the course's defaults: the best settings this benchmark found
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="timemachine", choices=["timemachine", "bundled"])
    parser.add_argument("--seconds", type=float, default=60.0, help="training budget (wall clock)")
    parser.add_argument("--hiddens", type=int, default=defaults.num_hiddens)
    parser.add_argument("--lr", type=float, default=defaults.lr)
    parser.add_argument("--optimizer", default=defaults.optimizer, choices=["sgd", "adam"])
    parser.add_argument("--batch", type=int, default=defaults.batch_size)
    parser.add_argument("--steps", type=int, default=defaults.num_steps)
    parser.add_argument("--theta", type=float, default=defaults.theta,
                        help="clipping threshold (0 turns clipping off)")
    parser.add_argument("--sampling", default=defaults.sampling, choices=["sequential", "random"])
    parser.add_argument("--schedule", default=defaults.lr_schedule, choices=["constant", "cosine"],
                        help="cosine (default) decays the learning rate to 0 over the budget")
    parser.add_argument("--init", default=defaults.init, choices=["xavier", "normal"])
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--eval-every", type=float, default=None,
                        help="also evaluate every this many training seconds (for the curve)")
    parser.add_argument("--plot", type=Path, default=None, help="save the curve as a PNG here")
    parser.add_argument("--device", default=None, help="cpu, cuda, mps (default: try_gpu())")
    args = parser.parse_args(argv)

    config = TrainConfig(num_hiddens=args.hiddens, lr=args.lr, optimizer=args.optimizer,
                         batch_size=args.batch, num_steps=args.steps, theta=args.theta or None,
                         sampling=args.sampling, init=args.init, seed=args.seed)
    device = torch.device(args.device) if args.device else try_gpu()
    corpus = load_named_corpus(args.corpus)
    train_indices, valid_indices = corpus.split(0.1)
    train_text, valid_text = corpus.split_text(0.1)
    print(f"corpus {corpus.name}: {len(train_text):,} training and {len(valid_text):,} held-out "
          f"characters, vocabulary {len(corpus.vocab)}; device {device}, {torch.get_num_threads()} threads")
    settings = {f.name: getattr(config, f.name) for f in fields(config)
                if f.name not in ("num_epochs", "max_seconds")}
    print(f"settings: {settings}, schedule {args.schedule}, budget {args.seconds:g} s")

    seed_everything(config.seed)
    model = make_model("scratch", len(corpus.vocab), config, device)
    eval_every = args.eval_every or (args.seconds / 12 if args.plot else None)
    curve, tokens, epochs, seconds = train_for(model, train_indices, valid_indices, config,
                                               args.seconds, args.schedule, eval_every)
    for at, ppl in curve[:-1]:
        print(f"  after {at:5.1f} s: held-out perplexity {ppl:.2f}")
    perplexity = curve[-1][1]
    print(f"trained {seconds:.1f} s: {tokens:,} tokens ({tokens / seconds:,.0f} tokens/s), "
          f"{epochs} pass(es) over the training text\n")

    bits = baseline_bits(train_text, valid_text)
    bits["scratch RNN"] = bits_from_nats(math.log(perplexity))
    print("| model | bits per character | perplexity |")
    print("|---|---|---|")
    for name, value in bits.items():
        print(f"| {name} | {value:.3f} | {perplexity_from_bits(value):.2f} |")
    if args.plot:
        title = (f"{corpus.name}: {config.num_hiddens} hidden, {config.optimizer} lr {config.lr:g}, "
                 f"batch {config.batch_size}x{config.num_steps}, {args.schedule}")
        save_plot(curve, bits, args.plot, title)
        print(f"\nplot saved to {args.plot}")


if __name__ == "__main__":
    main()
