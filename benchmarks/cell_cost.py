"""How much more does a GRU or an LSTM step cost than an RNN step? The lab's cell factors (notebook 08).

    OMP_NUM_THREADS=1 python benchmarks/cell_cost.py [--repeats 7] [--hiddens 64 128 256]

Times, on one torch thread as the lab trains, the three parts of a lab run that `d2lmini.lab.cost`
estimates, for each cell at the same hidden size: a training minibatch of the lab's default shape
(32 x 35, forward, backward, clipping and an Adam step), reading the validation text without a
gradient as one stream (`EVAL_CHUNK` characters per call, the run's last evaluation) and as 32
streams (35 per call, the lab's estimates at its checkpoints), and generating a sample with
`predict`. The cells
are timed in turn within each repeat; each time is the CPU time of this process (`time.process_time`),
so that waiting for a core that other processes hold is not counted: on a busy machine wall-clock
time punishes the longer operation, which waits more often. The table gives the fastest time of
each over the repeats and its ratio to the RNN's. `d2lmini.lab.cost.CELL_FACTORS` holds these ratios.
"""

import argparse
import time

import torch
import torch.nn.functional as F

from d2lmini.clipping import clip_gradients
from d2lmini.corpus import load_corpus
from d2lmini.rnn import predict
from d2lmini.train import EVAL_CHUNK, TrainConfig, make_model

CELLS = ("rnn", "gru", "lstm")


def minibatch_seconds(model, optimizer, X, Y) -> float:
    """Seconds of one training minibatch: forward, loss, backward, clipping at 1, an optimizer step."""
    start = time.process_time()
    outputs, _ = model(X, model.begin_state(X.shape[0]))
    loss = F.cross_entropy(outputs, Y.T.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    clip_gradients(model.parameters(), 1.0)
    optimizer.step()
    return time.process_time() - start


@torch.no_grad()
def stream_seconds(model, indices, streams: int = 1, chunk: int = EVAL_CHUNK) -> float:
    """Seconds to read `indices` as `streams` side by side, `chunk` characters per call."""
    rows = indices[:len(indices) // streams * streams].reshape(streams, -1)
    start = time.process_time()
    state = model.begin_state(streams)
    for begin in range(0, rows.shape[1], chunk):
        _, state = model(rows[:, begin:begin + chunk], state)
    return time.process_time() - start


def predict_seconds(model, vocab) -> float:
    """Seconds of the lab's default sample: 120 characters after the prefix "the "."""
    start = time.process_time()
    predict(model, vocab, "the ", 120, 0.7, torch.Generator().manual_seed(0))
    return time.process_time() - start


def time_cells(num_hiddens: int, repeats: int) -> dict[str, dict[str, float]]:
    """Return {cell: {part: seconds}} at `num_hiddens`: the fastest of the repeats (the one a busy machine
    disturbed least), the cells timed in turn in each repeat."""
    corpus = load_corpus("bundled")
    train, valid = corpus.split()
    vocab = corpus.vocab
    generator = torch.Generator().manual_seed(0)
    starts = torch.randint(0, len(train) - 36, (32,), generator=generator)
    X = torch.stack([train[s:s + 35] for s in starts])
    Y = torch.stack([train[s + 1:s + 36] for s in starts])
    models = {cell: make_model("scratch", len(vocab), TrainConfig(num_hiddens=num_hiddens, cell=cell))
              for cell in CELLS}
    optimizers = {cell: torch.optim.Adam(model.parameters(), lr=0.01) for cell, model in models.items()}
    parts = ("train", "stream", "streams", "predict")
    times = {cell: {part: [] for part in parts} for cell in CELLS}
    for repeat in range(repeats + 1):
        for cell, model in models.items():
            train_s = min(minibatch_seconds(model, optimizers[cell], X, Y) for _ in range(10))
            seconds = (train_s, stream_seconds(model, valid), stream_seconds(model, valid, 32, 35),
                       predict_seconds(model, vocab))
            if repeat:  # the first round warms up the allocator and oneDNN
                for part, value in zip(parts, seconds, strict=True):
                    times[cell][part].append(value)
    return {cell: {part: min(values) for part, values in cell_times.items()}
            for cell, cell_times in times.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--hiddens", type=int, nargs="+", default=[64, 128, 256])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the lab trains on one thread (LabSettings.num_threads)
    print("| hidden | cell | minibatch (ms) | ratio | one stream (ms) | ratio | 32 streams (ms) | ratio "
          "| sample (ms) | ratio |")
    print("|---:|---|" + "---:|" * 8)
    for num_hiddens in args.hiddens:
        times = time_cells(num_hiddens, args.repeats)
        rnn = times["rnn"]
        for cell in CELLS:
            row = [f"{1000 * times[cell][p]:.1f} | {times[cell][p] / rnn[p]:.2f}"
                   for p in ("train", "stream", "streams", "predict")]
            print(f"| {num_hiddens} | {cell} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
