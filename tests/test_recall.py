"""The recall source, the echo loss, the cell-path measurements and the shipped results (notebook 09)."""

import json
import math
import re
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from d2lmini.cell_path import cell_path_products, lstm_forget_gates, rnn_jacobian_norms, rnn_states
from d2lmini.gates import LSTMScratch
from d2lmini.recall import (
    RECALL_CELLS,
    SHIPPED_TIMEMACHINE,
    RecallSource,
    echo_bits,
    recall_data,
    shipped_models,
    shipped_result,
)
from d2lmini.rnn import RNNScratch

pytestmark = pytest.mark.torch_dependent
README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_episode_is_key_noise_cue_key():
    source = RecallSource(lag=7)
    text = source.sample(50, seed=3)
    assert len(text) == 50 * 8
    for start in range(0, len(text), 8):
        episode = text[start:start + 8]
        assert episode[0] in "abcd" and set(episode[1:6]) <= set("wxyz") and episode[6] == "?"
        assert episode[7] == episode[0]


def test_the_floor_counts_the_key_and_the_noise_only():
    source = RecallSource(lag=30)
    assert source.floor_bits() == pytest.approx((2 + 28 * 2) / 31)
    assert source.forgetful_bits() == 2


@settings(max_examples=30, deadline=None)
@given(st.text(max_size=4), st.text(max_size=4), st.text(max_size=2), st.integers(-3, 40))
def test_any_bad_setting_gives_a_clear_message(keys, noise, cue, lag):
    try:
        RecallSource(keys=keys, noise=noise, cue=cue, lag=lag)
    except ValueError as error:
        assert re.search(r"keys|lag", str(error))


class Oracle(torch.nn.Module):
    """A model that knows the recall source: certain of every echo, uniform elsewhere."""

    def __init__(self, vocab, source, forget=False):
        super().__init__()
        self.vocab_size, self.W = len(vocab), torch.nn.Parameter(torch.zeros(1))
        self.cue, self.keys = vocab.indices(source.cue)[0], vocab.indices(source.keys)
        self.forget = forget

    def begin_state(self, batch_size):
        return torch.zeros(batch_size, 2)  # [the last key seen, steps]

    def forward(self, X, state):
        outputs = []
        for x in X[0]:
            key = state[0, 0]
            if int(x) in self.keys:
                state = torch.tensor([[float(x), 0.0]])
            logits = torch.zeros(self.vocab_size)
            if int(x) == self.cue:
                if self.forget:
                    logits[self.keys] = 10.0
                else:
                    logits[int(key)] = 100.0
            outputs.append(logits)
        return torch.stack(outputs), state


def test_the_echo_loss_is_zero_for_a_memory_and_two_bits_for_a_guess():
    source = RecallSource(lag=6)
    data = recall_data(source)
    valid = data["valid"][:140]
    assert echo_bits(Oracle(data["vocab"], source), valid, data["vocab"].indices("?")[0]) < 1e-6
    guess = echo_bits(Oracle(data["vocab"], source, forget=True), valid, data["vocab"].indices("?")[0])
    assert guess == pytest.approx(2.0, abs=1e-3)


def test_the_cell_path_product_is_the_product_of_the_forget_gates():
    forgets = torch.rand(30, 5) * 0.5 + 0.5
    products = cell_path_products(forgets, 7)
    assert products.shape == (24, 5)
    assert torch.allclose(products[3], forgets[3:10].double().prod(0), rtol=1e-10)


def test_the_forget_gates_are_those_of_the_lstm_step():
    model = LSTMScratch(6, 4, generator=torch.Generator().manual_seed(0))
    indices = torch.tensor([0, 3, 5, 1])
    forgets = lstm_forget_gates(model, indices)
    with torch.no_grad():
        first = torch.sigmoid(model.W_x[0] + model.b)[4:8]   # zero state: only the input term
    assert torch.allclose(forgets[0], first)


def test_the_rnn_jacobian_norm_is_that_of_autograd():
    model = RNNScratch(5, 6, generator=torch.Generator().manual_seed(1))
    indices = torch.tensor([0, 1, 2, 3, 4, 0, 1, 2])
    states = rnn_states(model, indices)

    def forward_from(H, start, stop):
        for t in range(start, stop):
            H = torch.tanh(model.W_xh[indices[t]] + model.b_h + H @ model.W_hh)
        return H

    J = torch.autograd.functional.jacobian(lambda H: forward_from(H, 4, 8), states[3].detach())
    measured = rnn_jacobian_norms(model, indices, 4, [7])
    assert float(measured[0]) == pytest.approx(float(torch.linalg.matrix_norm(J.double(), ord=2)), rel=1e-4)
    with pytest.raises(ValueError, match="fewer than"):
        rnn_jacobian_norms(model, indices, 4, [2])


def test_the_shipped_result_is_the_benchmark_s_and_its_models_reproduce_it():
    result = shipped_result()
    assert result["command"].startswith("OMP_NUM_THREADS=1 python benchmarks/gates_win.py")
    source = RecallSource(**result["source"])
    data = recall_data(source)
    models = shipped_models(len(data["vocab"]))
    cue = data["vocab"].indices(source.cue)[0]
    for run in result["runs"]:
        if run["seed"] == result["runs"][0]["seed"]:
            assert run["hiddens"] == RECALL_CELLS[run["cell"]][1]
            model = models[run["cell"]]
            assert echo_bits(model, data["test"], cue) == pytest.approx(run["test_echo_bits"], abs=1e-4)


def test_the_shipped_time_machine_numbers_are_readme_s():
    readme = README.read_text(encoding="utf-8")
    result = json.loads(SHIPPED_TIMEMACHINE.read_text(encoding="utf-8"))
    for run in result["runs"]:
        program, flags = run["command"].replace("OMP_NUM_THREADS=1 ", "").split(" --", 1)
        assert program == "python benchmarks/quality.py"
        shown = f"| {run['held_out_perplexity']:.2f} |"
        rows = [line for line in readme.splitlines() if line.startswith("|")
                and shown in line.replace("**", "") and f"{run['minibatches']:,}" in line]
        assert rows, (run, "no README row with that perplexity and those minibatches")
        assert f"minibatches {run['minibatches']}" in flags
    assert math.isclose(result["baselines"]["KN n=6"], 3.76)
