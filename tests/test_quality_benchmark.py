"""The regularising options of benchmarks/quality.py: output dropout, weight decay, the best checkpoint."""

import importlib.util
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from settings_examples import an_invalid_choice

from d2lmini.gates import GRUScratch, LSTMScratch
from d2lmini.settings import TRAIN_SETTINGS, validate_value
from d2lmini.train import History, TrainConfig, evaluate_perplexity, make_optimizer

pytestmark = pytest.mark.torch_dependent

REPO = Path(__file__).resolve().parent.parent


def _load_quality():
    """benchmarks/quality.py as a module (a script, not in the package)."""
    spec = importlib.util.spec_from_file_location("quality", REPO / "benchmarks" / "quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


QUALITY = _load_quality()


@pytest.fixture(scope="module")
def quality():
    return QUALITY


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


# Each bad value, with the flag the message must name (#43 item 9). Before: --weight-decay nan and the
# settings named the setting but not the flag, --slice nan/0/1 and --device garbage were tracebacks after
# loading the corpus, --cell gru --init normal trained with LeCun's rule without a word.
BAD_OPTIONS = [
    (["--weight-decay", "nan"], "--weight-decay"), (["--weight-decay", "inf"], "--weight-decay"),
    (["--weight-decay", "-1"], "--weight-decay"), (["--lr", "0"], "--lr"), (["--lr", "inf"], "--lr"),
    (["--seconds", "nan"], "--seconds"), (["--seconds", "0"], "--seconds"),
    (["--seconds=-inf"], "--seconds"), (["--minibatches", "0"], "--minibatches"),
    (["--hiddens", "0"], "--hiddens"), (["--theta", "nan"], "--theta"),
    (["--batch", "-3"], "--batch"), (["--steps", "1e9"], "--steps"), (["--seed", "-1"], "--seed"),
    (["--cell", "gru", "--dropout", "nan"], "--dropout"), (["--slice", "nan"], "--slice"),
    (["--slice", "0"], "--slice"), (["--slice", "1"], "--slice"), (["--slice=-inf"], "--slice"),
    (["--slice", "1e-9"], "--slice"), (["--device", "garbage"], "--device"),
    (["--cell", "gru", "--init", "normal"], "--init"), (["--batch", "100000", "--steps", "1000"], "--batch"),
]


@pytest.mark.parametrize("arguments, flag", BAD_OPTIONS, ids=[" ".join(a) for a, _flag in BAD_OPTIONS])
def test_a_bad_option_is_a_usage_error_naming_its_flag_before_training(quality, capsys, arguments, flag):
    with pytest.raises(SystemExit) as exit_:
        quality.main([*arguments, "--corpus", "bundled", "--minibatches", "1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and flag in err.splitlines()[-1], err
    assert "Traceback" not in err


def test_a_bad_setting_names_the_setting_as_the_panels_do(quality, capsys):
    with pytest.raises(SystemExit):
        quality.main(["--weight-decay", "nan"])
    assert TRAIN_SETTINGS["weight_decay"].label in capsys.readouterr().err


def test_a_plot_into_a_missing_folder_is_refused_before_the_run(quality, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        quality.parse_arguments(["--plot", str(tmp_path / "gone" / "curve.png")])
    assert exit_.value.code == 2 and "argument --plot: the folder" in capsys.readouterr().err
    _parser, args, _config = quality.parse_arguments(["--plot", str(tmp_path / "curve.png")])
    assert args.plot == tmp_path / "curve.png"


# The numeric options and the declared setting each reads (None: the benchmark's own rate options).
NUMERIC_FLAGS = {"--seconds": "max_seconds", "--minibatches": "max_minibatches", "--dropout": None,
                 "--slice": None, **{flag: name for flag, name in QUALITY.SETTING_FLAGS.items()
                                     if TRAIN_SETTINGS[name].kind in (int, float)}}
ODD_NUMBERS = st.sampled_from(["nan", "-nan", "inf", "-inf", "1e400", "-0", "0", "1", "0x10", "1_000", " 7 ",
                               "", "1e-9", "9" * 30, "9" * 5000, "½", "٣"])
NUMBER_TEXT = (ODD_NUMBERS | st.floats().map(repr) | st.integers().map(str)
               | st.integers(-5, 300).map(str) | st.text(max_size=12))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(NUMERIC_FLAGS)), NUMBER_TEXT)
def test_any_value_of_a_numeric_option_is_taken_as_declared_or_refused_naming_the_flag(quality, capsys,
                                                                                          flag, text):
    """Whatever is typed after a numeric flag: the value parses inside its declared range, or argparse
    refuses it with one line naming the flag (exit 2); never a traceback, never NaN or infinity let in."""
    arguments = [f"{flag}={text}"] + (["--cell", "gru"] if flag == "--dropout" else [])
    try:
        _parser, args, config = quality.parse_arguments(arguments)
    except SystemExit as exit_:
        err = capsys.readouterr().err
        assert exit_.code == 2 and f": error: argument {flag}: " in err.splitlines()[-1], err
        return
    value = getattr(args, flag[2:].replace("-", "_"))
    name = NUMERIC_FLAGS[flag]
    if name is None:
        assert math.isfinite(value) and (0 <= value < 1 if flag == "--dropout" else 0 < value < 1)
    elif value is not None or not TRAIN_SETTINGS[name].optional:
        assert validate_value(TRAIN_SETTINGS[name], value) == value
        assert getattr(config, name) == value


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
