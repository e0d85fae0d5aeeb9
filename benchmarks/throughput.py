"""Training throughput of three character-level RNNs, measured side by side.

    python benchmarks/throughput.py                     # hidden 32, 128, 256, 512 (about a minute)
    python benchmarks/throughput.py --hiddens 128 --repeats 9 --seconds 0.5
    python benchmarks/throughput.py --gated --hiddens 128 256 --threads 1 2   # GRU and LSTM

Tokens per second of a full training step (forward, cross-entropy, backward, global-norm
clipping, SGD update) for

  (a) the d2lmini scratch RNN, as the notebooks train it (`RNNScratch()` + `train_epoch`);
  (b) a book-style loop written here: one-hot inputs, `X_t @ W_xh + H @ W_hh + b` and the
      output layer at every step, outputs concatenated, clipping and SGD by hand;
  (c) `torch.nn.RNN` with a linear output layer (`TorchRNN` + `train_epoch`);

and, as a reference row (a'), `RNNScratch` with its other gradient path (autograd on
`rnn_forward` or the hand-written BPTT of `d2lmini.bptt`, whichever is not the default). The
implementations take turns in one process (a block of minibatches each, in rotating
order), so a busy machine slows them alike; each ratio is the median over repeats of the
ratio measured within one round.

"matmul bound": the tokens/second allowed by this machine's own speed on the matrix
products one training step cannot avoid (per step H W_hh and dA W_hh^T, then dW_hh,
the output layer and its two gradients), timed in the same rotation. Thread settings
are PyTorch's defaults (or whatever you set through OMP_NUM_THREADS).
"""

import argparse
import os
import platform
import statistics
import time

import torch
import torch.nn.functional as F

from d2lmini.device import try_gpu
from d2lmini.gates import GRUScratch, LSTMScratch, TorchGated
from d2lmini.rnn import RNNScratch, TorchRNN
from d2lmini.train import History, train_epoch

LR, THETA = 0.5, 1.0


def book_style_block_fn(vocab_size, num_hiddens, batch_size, device):
    """Return run(batches) that trains the textbook loop: one-hot inputs, everything per step."""
    generator = torch.Generator().manual_seed(0)
    shapes = [(vocab_size, num_hiddens), (num_hiddens, num_hiddens), (num_hiddens,),
              (num_hiddens, vocab_size), (vocab_size,)]
    params = [(torch.randn(shape, generator=generator) * 0.01).to(device).requires_grad_()
              for shape in shapes]
    W_xh, W_hh, b_h, W_hq, b_q = params

    def run(batches):
        state = torch.zeros(batch_size, num_hiddens, device=device)
        for X, Y in batches:
            H = state.detach()
            outputs = []
            for X_t in F.one_hot(X.T, vocab_size).float():
                H = torch.tanh(torch.mm(X_t, W_xh) + torch.mm(H, W_hh) + b_h)
                outputs.append(torch.mm(H, W_hq) + b_q)
            state = H
            loss = F.cross_entropy(torch.cat(outputs, dim=0), Y.T.reshape(-1)).mean()
            loss.backward()
            with torch.no_grad():
                norm = torch.sqrt(sum(torch.sum(p.grad**2) for p in params))
                if norm > THETA:
                    for p in params:
                        p.grad[:] *= THETA / norm
                for p in params:
                    p -= LR * p.grad
                    p.grad.zero_()
            loss.item()

    return run


def course_block_fn(model):
    """Return run(batches) that trains `model` with d2lmini's `train_epoch` (state carried)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)

    def run(batches):
        train_epoch(model, batches, optimizer, THETA, True, History(), 1)

    return run


def matmul_block_fn(num_hiddens, batch_size, num_steps, vocab_size, device):
    """Return run(batches) that does only the unavoidable matmuls of each training step."""
    generator = torch.Generator().manual_seed(1)

    def rand(*shape):
        return torch.randn(*shape, generator=generator).to(device)

    W_hh, W_hq = rand(num_hiddens, num_hiddens), rand(num_hiddens, vocab_size)
    H, dA = rand(batch_size, num_hiddens), rand(batch_size, num_hiddens)
    out_small = torch.empty(batch_size, num_hiddens, device=device)
    H_all, dA_all = rand(num_steps * batch_size, num_hiddens), rand(num_steps * batch_size, num_hiddens)
    d_out = rand(num_steps * batch_size, vocab_size)
    out_w = torch.empty(num_hiddens, num_hiddens, device=device)
    out_o = torch.empty(num_steps * batch_size, vocab_size, device=device)
    out_h = torch.empty(num_steps * batch_size, num_hiddens, device=device)
    out_q = torch.empty(num_hiddens, vocab_size, device=device)
    W_hh_T, H_all_T = W_hh.T, H_all.T

    def run(batches):
        for _ in batches:
            for _ in range(num_steps):
                torch.mm(H, W_hh, out=out_small)  # forward recurrence
            torch.mm(H_all, W_hq, out=out_o)  # output layer, all steps
            torch.mm(d_out, W_hq.T, out=out_h)  # its gradient w.r.t. the hidden states
            torch.mm(H_all_T, d_out, out=out_q)  # and w.r.t. W_hq
            for _ in range(num_steps):
                torch.mm(dA, W_hh_T, out=out_small)  # backward recurrence
            torch.mm(H_all_T, dA_all, out=out_w)  # dW_hh, all steps

    return run


def synchronize(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def measure(num_hiddens, args, device):
    """Return {name: [tokens/s per round]} for one hidden size."""
    V, B, T = args.vocab, args.batch, args.steps
    pool = random_pool(args, device)

    default = RNNScratch(1, 1).hand_written_bptt

    def scratch(hand_written_bptt):
        model = RNNScratch(V, num_hiddens, generator=torch.Generator().manual_seed(0),
                           hand_written_bptt=hand_written_bptt)
        return course_block_fn(model.to(device))

    torch.manual_seed(0)
    runs = {
        "a": scratch(default),
        "b": book_style_block_fn(V, num_hiddens, B, device),
        "c": course_block_fn(TorchRNN(V, num_hiddens).to(device)),
        "other": scratch(not default),
        "bound": matmul_block_fn(num_hiddens, B, T, V, device),
    }
    return interleave(runs, pool, args, device)


def interleave(runs, pool, args, device):
    """Time each run in blocks of ~args.seconds, taking turns; return {name: [tokens/s per round]}."""
    B, T = pool[0][0].shape

    def timed(run, count):
        batches = [pool[i % len(pool)] for i in range(count)]
        synchronize(device)
        start = time.perf_counter()
        run(batches)
        synchronize(device)
        return time.perf_counter() - start

    # Warm up, then size each block so that it lasts about args.seconds.
    per_block = {}
    for name, run in runs.items():
        timed(run, 3)
        per_block[name] = max(1, round(args.seconds / (timed(run, 3) / 3)))
    names = list(runs)
    results = {name: [] for name in names}
    for repeat in range(args.repeats):
        order = names[repeat % len(names):] + names[: repeat % len(names)]
        for name in order:
            count = per_block[name]
            results[name].append(count * B * T / timed(runs[name], count))
    return results


def random_pool(args, device):
    """Sixteen minibatches of random tokens (X, Y), each (batch, steps), on `device`."""
    generator = torch.Generator().manual_seed(0)
    return [(torch.randint(args.vocab, (args.batch, args.steps), generator=generator).to(device),
             torch.randint(args.vocab, (args.batch, args.steps), generator=generator).to(device))
            for _ in range(16)]


def measure_gated(num_hiddens, args, device):
    """Return {name: [tokens/s per round]} for the scratch GRU and LSTM and torch's, one hidden size."""
    V = args.vocab
    torch.manual_seed(0)
    runs = {}
    for cell, scratch_class in (("gru", GRUScratch), ("lstm", LSTMScratch)):
        scratch = scratch_class(V, num_hiddens, generator=torch.Generator().manual_seed(0)).to(device)
        runs[f"{cell} scratch"] = course_block_fn(scratch)
        runs[f"{cell} torch"] = course_block_fn(TorchGated(cell, V, num_hiddens).to(device))
    return interleave(runs, random_pool(args, device), args, device)


def print_gated_table(args, device):
    """Print tokens/s of the scratch GRU and LSTM beside torch.nn.GRU / torch.nn.LSTM."""
    print("| threads | hidden | cell | scratch tok/s | torch tok/s | scratch/torch |")
    print("|---|---|---|---|---|---|")
    for threads in args.threads:
        torch.set_num_threads(threads)
        for num_hiddens in args.hiddens:
            results = measure_gated(num_hiddens, args, device)
            for cell in ("gru", "lstm"):
                mine, theirs = results[f"{cell} scratch"], results[f"{cell} torch"]
                ratio = statistics.median(x / y for x, y in zip(mine, theirs, strict=True))
                print(f"| {threads} | {num_hiddens} | {cell} | {statistics.median(mine):,.0f} | "
                      f"{statistics.median(theirs):,.0f} | {ratio:.2f} |", flush=True)


def median_ratio(results, top, bottom):
    return statistics.median(x / y for x, y in zip(results[top], results[bottom], strict=True))


def machine_description(device) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    text = (f"{cpu}, {os.cpu_count()} logical CPUs, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads, device {device}")
    if hasattr(os, "getloadavg"):
        text += ", load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    return text


TARGET_AB = {32: 2.0, 128: 2.0, 256: 1.5, 512: 1.15}
TARGET_AC = {32: 1.2, 128: 1.2, 256: 1.2, 512: 1.0}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hiddens", type=int, nargs="+", default=[32, 128, 256, 512])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=35)
    parser.add_argument("--vocab", type=int, default=28)
    parser.add_argument("--repeats", type=int, default=11, help="rounds per hidden size (median over them)")
    parser.add_argument("--seconds", type=float, default=0.15, help="length of one block of minibatches")
    parser.add_argument("--device", default=None, help="cpu, cuda, mps (default: d2lmini.device.try_gpu())")
    parser.add_argument("--gated", action="store_true",
                        help="the scratch GRU and LSTM against torch.nn.GRU / LSTM instead of the RNNs")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts for --gated")
    args = parser.parse_args(argv)
    device = torch.device(args.device) if args.device else try_gpu()
    print(f"machine: {machine_description(device)}")
    if args.gated:
        print(f"batch {args.batch}, {args.steps} steps, vocabulary {args.vocab}, full training steps "
              f"(forward, cross-entropy, backward, clipping, SGD), median of {args.repeats} rounds\n")
        print_gated_table(args, device)
        return
    print(f"batch {args.batch}, {args.steps} steps, vocabulary {args.vocab}, "
          f"median of {args.repeats} interleaved rounds of ~{args.seconds:g} s blocks\n")
    modes = {True: "hand-written BPTT", False: "autograd"}
    default = RNNScratch(1, 1).hand_written_bptt
    print(f"(a) d2lmini RNNScratch, default ({modes[default]})   (b) book-style one-hot loop   "
          f"(c) torch.nn.RNN + Linear\n(a') RNNScratch with {modes[not default]}   "
          "bound: tokens/s allowed by this machine's matmul speed\n")
    header = ("| hidden | (a) tok/s | (b) tok/s | (c) tok/s | (a') tok/s | a/b | a/c | a'/b | "
              "bound tok/s | a | b | c | targets a/b, a/c |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for num_hiddens in args.hiddens:
        results = measure(num_hiddens, args, device)
        med = {name: statistics.median(values) for name, values in results.items()}
        ab, ac = median_ratio(results, "a", "b"), median_ratio(results, "a", "c")
        a2b = median_ratio(results, "other", "b")
        frac = {name: median_ratio(results, name, "bound") for name in ("a", "b", "c")}
        targets = ""
        if num_hiddens in TARGET_AB:
            targets = (f"≥{TARGET_AB[num_hiddens]:g} {'met' if ab >= TARGET_AB[num_hiddens] else 'NOT met'}, "
                       f"≥{TARGET_AC[num_hiddens]:g} {'met' if ac >= TARGET_AC[num_hiddens] else 'NOT met'}")
        print(f"| {num_hiddens} | {med['a']:,.0f} | {med['b']:,.0f} | {med['c']:,.0f} | "
              f"{med['other']:,.0f} | "
              f"{ab:.2f} | {ac:.2f} | {a2b:.2f} | {med['bound']:,.0f} | "
              f"{frac['a']:.0%} | {frac['b']:.0%} | {frac['c']:.0%} | {targets} |", flush=True)


if __name__ == "__main__":
    main()
