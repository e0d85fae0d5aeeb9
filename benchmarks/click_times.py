"""How long does one click take at the slowest settings a panel allows? (notebooks 00-07)

    python benchmarks/click_times.py [--repeats 3] [--only NN]

Builds every panel of notebooks 00-07 as its notebook does (same model sizes), sets its
controls from Python to the slowest values they allow, and times one `panel.update()` (one
click) with one torch thread and with torch's default number of threads. Prints a Markdown
table of the median seconds. The panel's first drawing (in its notebook cell, which also
fills the caches: the corpus, the baselines) is not a click and is not timed. No panel may
take more than about 15 s on the reference machine (README, "Every click is bounded"); the
limits that keep it so are tested in tests/test_widgets_*.py, tests/test_cost.py and
tests/test_lab*.py.

The perplexity lab (notebook 08) trains on one thread whatever torch's setting (its `num_threads`),
so its two columns measure the same thing. Its rows: the defaults (with each recurrent cell), every
slider at its maximum alone, the slowest combination it accepts, a refused one, a new sample, and
the suggested hidden-size sweep (a sweep may take longer than a click; the lab shows its estimate
first).
"""

import argparse
import contextlib
import io
import statistics
import time
import unittest.mock
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib
import torch

matplotlib.use("Agg")

from d2lmini.corpus import load_corpus  # noqa: E402
from d2lmini.lab import LabSettings, RunTooLong, validate_click  # noqa: E402
from d2lmini.rnn import RNNScratch  # noqa: E402
from d2lmini.settings import LAB_SETTINGS  # noqa: E402
from d2lmini.train import TrainConfig  # noqa: E402
from d2lmini.widgets.clipping import LR_CHOICES, THETA_CHOICES, make_clipping_panel  # noqa: E402
from d2lmini.widgets.concat_matmul import make_concat_matmul_panel  # noqa: E402
from d2lmini.widgets.generate import make_generate_panel  # noqa: E402
from d2lmini.widgets.gradients import make_gradient_reach_panel  # noqa: E402
from d2lmini.widgets.hidden_state import MAX_SENTENCE, make_hidden_state_explorer  # noqa: E402
from d2lmini.widgets.lab import make_lab  # noqa: E402
from d2lmini.widgets.one_hot import make_one_hot_panel  # noqa: E402
from d2lmini.widgets.start import make_temperature_panel  # noqa: E402


@dataclass
class Case:
    """One panel at its slowest settings: `build()` returns the panel with its controls set."""

    notebook: str
    panel: str
    settings: str
    build: Callable[[], object]
    click: str = "update"  # the panel method a click calls


def _set(panel, **values):
    """Set the panel's controls to `values` without redrawing after each one; return the panel.

    The panel's observers call `update`, which is replaced by a no-op only while the values
    are set, so the one timed `update()` afterwards computes everything once.
    """
    with unittest.mock.patch.object(type(panel), "update"):
        for name, value in values.items():
            getattr(panel, name).value = value
    return panel


def cases() -> list[Case]:
    """Every panel of notebooks 00-06 at the slowest values its controls allow."""
    corpus = load_corpus("bundled")
    vocab, text = corpus.vocab, corpus.text
    long_sentence = text[:MAX_SENTENCE]
    explorer_model = RNNScratch(len(vocab), 32, generator=torch.Generator().manual_seed(0))  # as in 01
    generator_model = RNNScratch(len(vocab), TrainConfig().num_hiddens,  # 04's `net`: the defaults
                                 generator=torch.Generator().manual_seed(0))
    slowest_rate = max(lr for lr in LR_CHOICES if lr <= 2.5)  # larger rates diverge and stop early
    return [
        Case("00", "temperature", "temperature 0.1",
             lambda: _set(make_temperature_panel(), slider=0.1)),
        Case("01", "hidden-state explorer", f"a {MAX_SENTENCE}-character sentence, last step",
             lambda: _set(make_hidden_state_explorer(explorer_model, vocab, long_sentence),
                          step=len(long_sentence))),
        Case("02", "concat-matmul", "batch 16, inputs 32, hiddens 32",
             lambda: _set(make_concat_matmul_panel(), batch=16, num_inputs=32, num_hiddens=32)),
        Case("03", "one-hot", "a 100,000-character text, batch 8, steps 12, random",
             lambda: _set(make_one_hot_panel(vocab), text=text[:100_000], batch_size=8, num_steps=12,
                          sampling="random")),
        Case("04", "text generator", "a 10,000-character prefix, 400 characters, temperature 1",
             lambda: _set(make_generate_panel(generator_model, vocab), prefix=text[:10_000],
                          num_chars=400)),
        Case("05", "gradient reach", "ρ 2.5, truncation 51, token inputs",
             lambda: _set(make_gradient_reach_panel(), radius=2.5, truncation=51, inputs=True)),
        Case("06", "clipping", f"θ {THETA_CHOICES[1]}, learning rate {slowest_rate:g} (2 epochs)",
             lambda: _set(make_clipping_panel(corpus), theta=THETA_CHOICES[1], lr=slowest_rate)),
        Case("06", "clipping", f"θ off, learning rate {min(LR_CHOICES):g} (2 epochs)",
             lambda: _set(make_clipping_panel(corpus), theta="off", lr=min(LR_CHOICES))),
        *lab_cases(),
    ]


def largest_budget(**settings) -> int:
    """The most minibatches (in the slider's steps) the lab accepts with `settings`."""
    low, high, step = LAB_SETTINGS["max_minibatches"].slider
    accepted = low
    for budget in range(low, high + 1, step):
        try:
            validate_click(LabSettings(max_minibatches=budget, **settings))
            accepted = budget
        except RunTooLong:
            break
    return accepted


def lab_cases() -> list[Case]:
    """The perplexity lab of notebook 08: each slider at its maximum, the slowest accepted run, the rest."""
    tops = {name: LAB_SETTINGS[name].slider[1] for name in ("num_hiddens", "batch_size", "num_steps",
                                                             "max_minibatches")}
    attribute = {"num_hiddens": "hidden_size", "batch_size": "batch_size", "num_steps": "num_steps",
                 "max_minibatches": "budget"}
    cases = [Case("08", "lab", "the defaults", make_lab)]
    cases += [Case("08", "lab", f"the defaults with the {cell.upper()} cell",
                   lambda cell=cell: _set(make_lab(), cell=cell)) for cell in ("gru", "lstm")]
    cases += [Case("08", "lab", f"{LAB_SETTINGS[name].label} {top} (its maximum)",
                   lambda name=name, top=top: _set(make_lab(), **{attribute[name]: top}))
              for name, top in tops.items()]
    budget = largest_budget(num_hiddens=tops["num_hiddens"])
    cases += [
        Case("08", "lab", f"hidden size {tops['num_hiddens']} and {budget} minibatches (slowest accepted)",
             lambda: _set(make_lab(), hidden_size=tops["num_hiddens"], budget=budget)),
        Case("08", "lab", "hidden size and batch size at their maxima (refused)",
             lambda: _set(make_lab(), hidden_size=tops["num_hiddens"], batch_size=tops["batch_size"])),
        Case("08", "lab", "a new temperature after a default run (resampled)", _resampling_lab, "resample"),
        Case("08", "lab sweep", "hidden size 32, 128, 384 (the suggestion)", make_lab, "sweep"),
    ]
    return cases


def _resampling_lab():
    panel = make_lab()
    panel.update()
    with unittest.mock.patch.object(type(panel), "resample"):
        panel.temperature.value = 1.5
    return panel


def time_click(case: Case, threads: int, repeats: int) -> float:
    """Median seconds of one `update()` of `case`'s panel on `threads` torch threads."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        # 00's panel draws into an Output widget, which outside a notebook writes to stdout
        with contextlib.redirect_stdout(io.StringIO()):
            panel = case.build()
            seconds = []
            for _ in range(repeats):
                start = time.perf_counter()
                getattr(panel, case.click)()
                seconds.append(time.perf_counter() - start)
        return statistics.median(seconds)
    finally:
        torch.set_num_threads(before)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", help="time only the panels of this notebook (00 ... 08)")
    args = parser.parse_args(argv)
    default_threads = torch.get_num_threads()
    print(f"median of {args.repeats} clicks; torch {torch.__version__}, default {default_threads} threads")
    print(f"| notebook | panel | slowest settings | 1 thread (s) | {default_threads} threads (s) |")
    print("|---|---|---|---|---|")
    for case in cases():
        if args.only and case.notebook != args.only:
            continue
        one, default = (time_click(case, threads, args.repeats) for threads in (1, default_threads))
        print(f"| {case.notebook} | {case.panel} | {case.settings} | {one:.2f} | {default:.2f} |", flush=True)


if __name__ == "__main__":
    main()
