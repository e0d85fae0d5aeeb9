"""The regularising options of benchmarks/quality.py: output dropout, weight decay, the best checkpoint."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from settings_examples import an_invalid_choice

from d2lmini.gates import GRUScratch, LSTMScratch
from d2lmini.settings import TRAIN_SETTINGS
from d2lmini.train import History, TrainConfig, evaluate_perplexity, make_optimizer

pytestmark = pytest.mark.torch_dependent

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def quality():
    spec = importlib.util.spec_from_file_location("quality", REPO / "benchmarks" / "quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cells():
    generator = torch.Generator().manual_seed(1)
    yield GRUScratch(7, 6, generator=generator)
    yield LSTMScratch(7, 6, generator=generator)
    yield LSTMScratch(7, 6, generator=generator, hand_written_bptt=False)


@pytest.mark.parametrize("cell", list(_cells()), ids=["gru", "lstm", "lstm-autograd"])
def test_hidden_states_through_the_output_layer_give_the_cells_outputs(quality, cell):
    X = torch.randint(0, 7, (3, 5), generator=torch.Generator().manual_seed(2))
    state = cell.begin_state(3) + 0.1
    outputs, final = cell(X, state)
    hiddens, final_too = quality.cell_hidden_states(cell, X, state)
    assert hiddens.shape == (15, 6)
    torch.testing.assert_close(torch.addmm(cell.b_q, hiddens, cell.W_hq), outputs)
    torch.testing.assert_close(final_too, final)


@pytest.mark.parametrize("cell", list(_cells()), ids=["gru", "lstm", "lstm-autograd"])
def test_output_dropout_acts_only_while_training_with_gradients(quality, cell):
    model = quality.OutputDropout(cell, 0.5)
    X = torch.randint(0, 7, (4, 6), generator=torch.Generator().manual_seed(3))
    state = model.begin_state(4)
    outputs, final = cell(X, state)
    torch.manual_seed(0)
    dropped, final_dropped = model(X, state)
    assert not torch.allclose(dropped, outputs)
    torch.testing.assert_close(final_dropped, final)  # the state carried on is not dropped
    dropped.sum().backward()
    assert all(p.grad is not None for p in cell.parameters())
    with torch.no_grad():
        torch.testing.assert_close(model(X, state)[0], outputs)
    model.eval()
    torch.testing.assert_close(model(X, state)[0], outputs)
    with pytest.raises(ValueError, match="dropout rate"):
        quality.OutputDropout(cell, 1.0)


def test_weight_decay_is_decoupled_for_adam_and_the_package_makes_it():
    """One training setup (#44): the benchmark's --weight-decay is TrainConfig.weight_decay, made by the
    package's make_optimizer (AdamW for Adam, SGD's own), and 0 gives exactly the optimizer without it."""
    weight = torch.nn.Parameter(torch.ones(3))
    optimizer = make_optimizer("adam", [weight], lr=0.1, weight_decay=0.5)
    assert isinstance(optimizer, torch.optim.AdamW)
    weight.grad = torch.zeros(3)
    optimizer.step()
    torch.testing.assert_close(weight.detach(), torch.full((3,), 1 - 0.1 * 0.5))
    assert make_optimizer("sgd", [weight], 0.1, 0.5).defaults["weight_decay"] == 0.5
    assert type(make_optimizer("adam", [weight], 0.1)) is torch.optim.Adam
    with pytest.raises(ValueError, match="optimizer"):
        make_optimizer(an_invalid_choice(TRAIN_SETTINGS["optimizer"]), [weight], 0.1, 0.5)


@pytest.mark.parametrize("flag, value", [("--weight-decay", "nan"), ("--weight-decay", "inf"),
                                         ("--weight-decay", "-1"), ("--lr", "0")])
def test_a_bad_setting_is_a_usage_error_naming_it_not_a_traceback(quality, capsys, flag, value):
    with pytest.raises(SystemExit) as exit_:
        quality.main([flag, value, "--minibatches", "1"])
    assert exit_.value.code == 2
    setting = TRAIN_SETTINGS[{"--weight-decay": "weight_decay", "--lr": "lr"}[flag]]
    assert setting.label in capsys.readouterr().err


def test_best_checkpoint_restores_the_weights_of_the_lowest_perplexity(quality):
    model = torch.nn.Linear(2, 1)
    best, history = quality.BestCheckpoint(model), History()
    for minibatches, perplexity, value in ((10, 5.0, 1.0), (20, 4.0, 2.0), (30, 4.5, 3.0)):
        with torch.no_grad():
            model.weight.fill_(value)
        history.minibatches.append(minibatches)
        history.valid_perplexity.append(perplexity)
        best(history)
    best.restore()
    assert best.minibatches == 20 and best.perplexity == 4.0
    assert torch.all(model.weight == 2.0)


def test_train_rnn_keeps_the_best_checkpoint_on_the_slice(quality):
    indices = torch.randint(0, 5, (900,), generator=torch.Generator().manual_seed(4))
    corpus = SimpleNamespace(indices=indices, vocab=range(5))
    config = TrainConfig(num_hiddens=8, batch_size=4, num_steps=5, num_epochs=None, max_minibatches=12,
                         checkpoints=4, lr=0.05, weight_decay=0.1)
    model, history, kept = quality.train_rnn(corpus, 700, config, "cpu", "gru", dropout=0.3, keep_best=True)
    assert isinstance(model, GRUScratch)  # the cell itself, not the dropout wrapper
    best = min(range(len(history.minibatches)), key=history.valid_perplexity.__getitem__)
    assert kept == history.minibatches[best]
    slice_ppl = evaluate_perplexity(model, indices[700:810], indices[:700])
    assert slice_ppl == pytest.approx(history.valid_perplexity[best], rel=1e-5)


def test_dropout_is_refused_for_the_tanh_rnn(quality):
    with pytest.raises(SystemExit):
        quality.main(["--cell", "rnn", "--dropout", "0.2"])
