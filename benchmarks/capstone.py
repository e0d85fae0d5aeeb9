"""How long does the capstone's check take with the instructors' solution? (notebook 08)

    python benchmarks/capstone.py

Runs, in one process on one torch thread: the solution's loop alone on the course corpus
with the capstone's budget (plain, then under the self-check's guard), and the whole
`check_capstone` (every piece's check, the loop check, the run on the course corpus, the
one-stream score, the sample and the ladder). Prints a Markdown table of the wall-clock and
CPU seconds of each, their ratio to the plain loop, and the validation perplexity the check
reports beside the Kneser-Ney trigram's. CPU seconds are what one core spends, so on a
loaded machine they show what an idle two-core laptop would take (the check runs on one
thread). The capstone is meant to take under a minute there.
"""

import importlib.util
import time
from pathlib import Path

import torch

from d2lmini.corpus import load_corpus
from d2lmini.exercises import capstone
from d2lmini.exercises.capstone.loop import initial_params
from d2lmini.exercises.guard import run_guarded

SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "capstone.py"
NAMES = ("minibatches", "forward", "loss_and_grad", "backward", "clip", "sgd", "perplexity", "train")


def load_solution():
    spec = importlib.util.spec_from_file_location("solution_capstone", SOLUTION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn, *args):
    """(result, wall seconds, CPU seconds of this process) of fn(*args)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    solution = load_solution()
    torch.set_num_threads(1)
    corpus = load_corpus("bundled")
    train_indices, _ = corpus.split()
    budget = capstone.Budget()
    params = initial_params(len(corpus.vocab), budget)
    rows = []
    _, wall, cpu = timed(solution.train, train_indices, params, budget)
    rows.append(("the solution's loop, plain", wall, cpu))
    _, wall, cpu = timed(run_guarded, solution.train, (train_indices, params, budget), None, None,
                         frozenset(), 300.0)
    rows.append(("the solution's loop, under the guard", wall, cpu))
    verdict, wall, cpu = timed(capstone.check_capstone, *(getattr(solution, name) for name in NAMES))
    rows.append(("check_capstone, everything", wall, cpu))
    plain = rows[0][1]
    print("| run | wall s | CPU s | wall / plain loop |\n|---|---|---|---|")
    for name, wall, cpu in rows:
        print(f"| {name} | {wall:.1f} | {cpu:.1f} | {wall / plain:.2f} |")
    run = verdict.run
    print(f"\n{'passed' if verdict else 'FAILED'}: validation perplexity (one stream) {run.perplexity:.4f}, "
          f"Kneser-Ney trigram {run.ladder['KN n=3']:.4f}; {len(run.losses)} minibatches, clipping acted at "
          f"{run.clipped} (largest joint norm {max(run.norms):.3g}, theta {run.theta:g})")


if __name__ == "__main__":
    main()
