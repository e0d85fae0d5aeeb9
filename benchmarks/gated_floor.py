"""How fast could a scratch LSTM made of PyTorch calls train, at best? A lower bound beside torch.nn.LSTM.

    python benchmarks/gated_floor.py --hiddens 128 256 --threads 1 2

On a CPU `torch.nn.LSTM` runs oneDNN's fused kernel: one call for the whole sequence, its gate
arithmetic done inside the matrix products and split across the cores. A scratch LSTM makes one
PyTorch call per operation and step. This script times, per training step (batch 32, 35 steps,
vocabulary 28, as `throughput.py --gated`), taking turns in one process:

  torch     torch.nn.LSTM + Linear, a full training step (`train_epoch`: forward, cross-entropy,
            backward, clipping, SGD)
  scratch   d2lmini's LSTMScratch (hand-written BPTT), the same full training step

and the parts that no scratch LSTM of per-step calls can skip, each done the cheapest way:

  products  the products with W_h: H W_h at every step, dA W_hᵀ at every step, and dW_h over all
            steps; by torch.mm, and by oneDNN's packed GEMM (the kernel torch's LSTM uses) where
            this torch has it; the bound takes the faster
  chain     the elementwise work that waits on the recursion, at its fewest calls: per step 6
            forward (σ of three gates, tanh of the candidate, F ⊙ C, + I ⊙ G, tanh(C), O ⊙ tanh(C))
            and 4 backward (dC += dH ⊙ ∂C/∂H, the three gates' gradients from dC, the output
            gate's from dH, dC ⊙ F), at the thread setting or on one thread, whichever is
            faster; the derivatives that do not wait on the recursion are left out
  lookup    the input term for all steps (one row lookup) and its gradients dW_x and db
  shared    what torch's step does too: the output layer, cross-entropy, backward through the
            output layer, clipping and SGD over all the LSTM's parameters

bound = products + chain + lookup + shared, per round. torch/bound is the most that scratch/torch
could reach; below 1.00 no scratch LSTM of per-step PyTorch calls matches torch's step on this
machine at that setting: only a kernel that fuses the gate arithmetic into the products could.
Each column is the median over rounds.
"""

import argparse
import statistics

import torch
import torch.nn.functional as F
from throughput import course_block_fn, interleave, machine_description, random_pool
from torch import nn

from d2lmini.gates import LSTMScratch, TorchGated, lstm_forward

PARTS = ("products", "chain", "lookup", "shared")


def gate_views(gates):
    """The views one step's chain works on, made once: gates (batch, 4, hiddens) as [O, I, F, G].

    Returns (the sigmoid's three blocks O, I, F; O; I; F; G; the three blocks I, F, G).
    """
    return (gates[:, :3], *gates.unbind(1), gates[:, 1:])


def chain_forward_step(views, C, C_next, tanh_C, H_next):
    """One LSTM step's elementwise work in 6 calls, on the step's pre-activations (`gate_views`).

    The gates are laid out [O, I, F, G], so that one sigmoid covers the first three blocks and
    the gradients that dC multiplies (I, F, G) are the last three. Writes C_t, tanh(C_t) and
    H_t; returns (H_t, C_t).
    """
    sigmoid_blocks, o, i, f, g, _ = views
    sigmoid_blocks.sigmoid_()
    g.tanh_()
    torch.mul(f, C, out=C_next).addcmul_(i, g)
    torch.tanh(C_next, out=tanh_C)
    return torch.mul(o, tanh_C, out=H_next), C_next


def chain_backward_step(dH, dC, dC_rows, to_dC, factor_views, forget):
    """One step's elementwise backward work in 4 calls, over the gates' precomputed factors.

    `factor_views` (`gate_views` of the factors [O', I', F', G']) become the gates' gradients;
    dC (and dC_rows, the same memory as (batch, 1, hiddens)) becomes dC_{t-1}. The product with
    W_hᵀ, which gives dH_{t-1}, is not here.
    """
    _, d_o, _, _, _, d_ifg = factor_views
    dC.addcmul_(dH, to_dC)
    d_ifg.mul_(dC_rows)
    d_o.mul_(dH)
    return dC.mul_(forget)


def chain_block_fn(hiddens, batch, steps):
    """Return run(batches) that does only the chain: every step's elementwise work, both ways."""
    generator = torch.Generator().manual_seed(2)
    gates = torch.randn(steps, batch, 4, hiddens, generator=generator)
    cells, hs = torch.zeros(steps + 1, batch, hiddens), torch.zeros(steps + 1, batch, hiddens)
    tanh_cells = torch.zeros(steps, batch, hiddens)
    factors = torch.rand(steps, batch, 4, hiddens, generator=generator)
    to_dC = torch.rand(steps, batch, hiddens, generator=generator)
    forward = list(zip(map(gate_views, gates), cells[:-1], cells[1:], tanh_cells, hs[1:], strict=True))
    backward = list(zip(to_dC, map(gate_views, factors), gates[:, :, 2], strict=True))[::-1]
    dH, dC = torch.ones(batch, hiddens), torch.zeros(batch, hiddens)
    dC_rows = dC.unsqueeze(1)

    def run(batches):
        for _ in batches:
            for views, C, C_next, tanh_C, H_next in forward:
                chain_forward_step(views, C, C_next, tanh_C, H_next)
            dC.zero_()
            for to_dC_t, factor_views, forget in backward:
                chain_backward_step(dH, dC, dC_rows, to_dC_t, factor_views, forget)

    return run


def products_block_fn(hiddens, batch, steps, packed: bool):
    """Return run(batches) that does the step's products with W_h, by torch.mm or oneDNN's packed GEMM."""
    generator = torch.Generator().manual_seed(3)
    W_h = torch.randn(hiddens, 4 * hiddens, generator=generator)
    H = torch.randn(batch, hiddens, generator=generator)
    dA = torch.randn(batch, 4 * hiddens, generator=generator)
    hs_T = torch.randn(steps * batch, hiddens, generator=generator).T
    d_gates = torch.randn(steps * batch, 4 * hiddens, generator=generator)
    gates_out, dH_out = torch.empty(batch, 4 * hiddens), torch.empty(batch, hiddens)
    dW_h = torch.empty_like(W_h)

    def by_mm():
        for _ in range(steps):
            torch.mm(H, W_h, out=gates_out)
        W_h_T = W_h.T
        for _ in range(steps):
            torch.mm(dA, W_h_T, out=dH_out)

    def by_packed():
        # the weights change at every SGD update, so they are packed once per training step
        forward = torch.ops.mkldnn._reorder_linear_weight(W_h.T.contiguous(), batch)
        backward = torch.ops.mkldnn._reorder_linear_weight(W_h, batch)
        for _ in range(steps):
            torch.ops.mkldnn._linear_pointwise(H, forward, None, "none", [], "")
        for _ in range(steps):
            torch.ops.mkldnn._linear_pointwise(dA, backward, None, "none", [], "")

    per_step = by_packed if packed else by_mm

    def run(batches):
        for _ in batches:
            per_step()
            torch.mm(hs_T, d_gates, out=dW_h)

    return run


def has_packed_gemm() -> bool:
    """Whether this torch offers oneDNN's packed GEMM (a private op that Inductor uses)."""
    try:
        products_block_fn(4, 2, 1, packed=True)([None])
    except (AttributeError, RuntimeError, NotImplementedError, TypeError):
        return False
    return True


def on_one_thread(run):
    """Return `run` done on one thread (a cell could drop to one thread for its small calls)."""
    def run_on_one_thread(batches):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            run(batches)
        finally:
            torch.set_num_threads(threads)

    return run_on_one_thread


def lookup_block_fn(vocab, hiddens, batch, steps):
    """Return run(batches) that does the input term's lookup for all steps and its gradients."""
    generator = torch.Generator().manual_seed(4)
    table = torch.randn(vocab, 4 * hiddens, generator=generator)
    d_gates = torch.randn(steps * batch, 4 * hiddens, generator=generator)
    ones = torch.ones(steps * batch)

    def run(batches):
        for X, _ in batches:
            F.embedding(X.T, table)
            torch.zeros_like(table).index_add_(0, X.T.reshape(-1), d_gates)
            ones @ d_gates

    return run


class GradientsArrive(torch.autograd.Function):
    """Pass outputs through; in backward, give each listed parameter a gradient of zeros."""

    @staticmethod
    def forward(ctx, outputs, *params):
        ctx.shapes = [p.shape for p in params]
        return outputs.view_as(outputs)

    @staticmethod
    def backward(ctx, d_outputs):
        return (d_outputs, *(d_outputs.new_zeros(shape) for shape in ctx.shapes))


class AroundScratchLSTM(nn.Module):
    """A model holding a scratch LSTM's parameters (`self.cell`) that `train_epoch` can train."""

    def __init__(self, vocab, hiddens, **options):
        super().__init__()
        self.cell = LSTMScratch(vocab, hiddens, generator=torch.Generator().manual_seed(0), **options)
        self.vocab_size = vocab  # train_step's divergence check reads it

    def begin_state(self, batch_size):
        return self.cell.begin_state(batch_size)


class OutputLayerOnly(AroundScratchLSTM):
    """An LSTM's parameters with fixed hidden states: a training step of only the shared work."""

    def __init__(self, vocab, hiddens, batch, steps):
        super().__init__(vocab, hiddens)
        self.hiddens = torch.randn(steps * batch, hiddens, generator=torch.Generator().manual_seed(5))

    def forward(self, X, state):
        cell = self.cell
        outputs = torch.addmm(cell.b_q, self.hiddens, cell.W_hq)
        return GradientsArrive.apply(outputs, cell.W_x, cell.W_h, cell.b), state


class CompiledLSTM(AroundScratchLSTM):
    """The scratch LSTM's forward (`gates.lstm_forward`, autograd) compiled by torch.compile.

    Inductor fuses the gate arithmetic into C++ kernels; this is the one way to fuse it without
    writing a kernel. It needs a C++ compiler, and compiles for tens of seconds on first use.
    """

    def __init__(self, vocab, hiddens):
        super().__init__(vocab, hiddens, hand_written_bptt=False)
        self.compiled = torch.compile(lstm_forward, dynamic=False)

    def forward(self, X, state):
        cell = self.cell
        return self.compiled(X, state, cell.W_x, cell.W_h, cell.b, cell.W_hq, cell.b_q)


def measure_floor(hiddens, args):
    """Return {name: [ms per training step, per round]} for the two LSTMs and the bound's parts."""
    V, B, T = args.vocab, args.batch, args.steps
    torch.manual_seed(0)
    runs = {
        "torch": course_block_fn(TorchGated("lstm", V, hiddens)),
        "scratch": course_block_fn(LSTMScratch(V, hiddens, generator=torch.Generator().manual_seed(0))),
        "products mm": products_block_fn(hiddens, B, T, packed=False),
        "chain": chain_block_fn(hiddens, B, T),
        "chain 1 thread": on_one_thread(chain_block_fn(hiddens, B, T)),
        "lookup": lookup_block_fn(V, hiddens, B, T),
        "shared": course_block_fn(OutputLayerOnly(V, hiddens, B, T)),
    }
    if args.compile:
        runs["compiled"] = course_block_fn(CompiledLSTM(V, hiddens))
    if has_packed_gemm():
        runs["products packed"] = products_block_fn(hiddens, B, T, packed=True)
    cpu = torch.device("cpu")
    tokens_per_second = interleave(runs, random_pool(args, cpu), args, cpu)
    ms = {name: [1e3 * B * T / rate for rate in rates] for name, rates in tokens_per_second.items()}
    by_each_gemm = [ms[name] for name in ms if name.startswith("products ")]
    ms["products"] = [min(times) for times in zip(*by_each_gemm, strict=True)]
    ms["chain"] = [min(times) for times in zip(ms["chain"], ms.pop("chain 1 thread"), strict=True)]
    ms["bound"] = [sum(parts) for parts in zip(*(ms[part] for part in PARTS), strict=True)]
    return ms


def floor_row(threads, hiddens, ms) -> str:
    """One row of the table: medians of each column and of the per-round ratios."""
    def median(name):
        return statistics.median(ms[name])

    def ratio(top, bottom):
        return statistics.median(x / y for x, y in zip(ms[top], ms[bottom], strict=True))

    packed = f"{median('products packed'):.2f}" if "products packed" in ms else "n/a"
    compiled = f" {ratio('torch', 'compiled'):.2f} |" if "compiled" in ms else ""
    parts = " | ".join(f"{median(part):.2f}" for part in PARTS[1:])
    return (f"| {threads} | {hiddens} | {median('torch'):.2f} | {median('scratch'):.2f} | "
            f"{median('products mm'):.2f} | {packed} | {parts} | {median('bound'):.2f} | "
            f"{ratio('torch', 'scratch'):.2f} | {ratio('torch', 'bound'):.2f} |{compiled}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hiddens", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=35)
    parser.add_argument("--vocab", type=int, default=28)
    parser.add_argument("--repeats", type=int, default=11, help="rounds per setting (median over them)")
    parser.add_argument("--seconds", type=float, default=0.15, help="length of one block of minibatches")
    parser.add_argument("--compile", action="store_true",
                        help="add the scratch LSTM compiled by torch.compile (needs a C++ compiler; "
                             "about 35 s of compiling per setting)")
    args = parser.parse_args(argv)
    print(f"machine: {machine_description(torch.device('cpu'))} (this bound is about CPU kernels)")
    print(f"batch {args.batch}, {args.steps} steps, vocabulary {args.vocab}; milliseconds per training "
          f"step, median of {args.repeats} rounds\n")
    print("| threads | hidden | torch | scratch | products (mm) | products (oneDNN packed) | chain | "
          "lookup | shared | bound | scratch/torch speed | torch/bound: the most scratch/torch can reach |"
          + (" compiled scratch/torch speed |" if args.compile else ""))
    print("|---" * (13 if args.compile else 12) + "|")
    threads_before = torch.get_num_threads()
    try:
        for threads in args.threads:
            torch.set_num_threads(threads)
            for hiddens in args.hiddens:
                print(floor_row(threads, hiddens, measure_floor(hiddens, args)), flush=True)
    finally:
        torch.set_num_threads(threads_before)


if __name__ == "__main__":
    main()
