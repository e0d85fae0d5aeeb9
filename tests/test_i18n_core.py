"""The core wing speaks Chinese with D2LMINI_LANG=zh_CN and its English is unchanged without it.

The core wing is every module of d2lmini outside widgets/, lab/, exercises/, grading/, settings.py and
verdicts.py: the figures and their text alternatives, the plots, the figure checks, training, its
divergence net and stop messages, the download, the kernel settings put back, and the messages of
validation of the public functions. Each test reads what a student reads in both languages: in
Chinese it must hold Chinese and no English sentence of the wing's catalog; in English it must be
the English of before, byte for byte.
"""

import gettext
import re
import socket
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from catalog_checks import english_messages  # noqa: E402
from torch import nn  # noqa: E402

from d2lmini import i18n  # noqa: E402
from d2lmini.batching import make_batches, sequential_batches, validate_fits  # noqa: E402
from d2lmini.bptt import bptt_backward_truncated  # noqa: E402
from d2lmini.clipping import clip_gradients, clipping_rule  # noqa: E402
from d2lmini.corpus import load_corpus  # noqa: E402
from d2lmini.device import describe_device  # noqa: E402
from d2lmini.divergence import TrainingDiverged  # noqa: E402
from d2lmini.download import DataUnavailableError, UnsupportedURLError, download_timemachine  # noqa: E402
from d2lmini.dynamic import DynamicSettings  # noqa: E402
from d2lmini.figure_checks import alt_problems, figure_problems, word_count  # noqa: E402
from d2lmini.figures import (  # noqa: E402
    batch_transpose_alt,
    block_matmul_alt,
    bptt_graph_alt,
    draw_batch_transpose,
    draw_block_matmul,
    draw_bptt_graph,
    draw_partition,
    draw_reach_curves,
    draw_shift,
    draw_unrolled_rnn,
    partition_alt,
    reach_curves_alt,
    shift_alt,
    unrolled_rnn_alt,
)
from d2lmini.gates import TorchGated  # noqa: E402
from d2lmini.kernel_settings import SAID, Change, describe  # noqa: E402
from d2lmini.markov import EchoSource  # noqa: E402
from d2lmini.mixture import fit_mixture_weight, mixture_log_probs  # noqa: E402
from d2lmini.ngram import KneserNey  # noqa: E402
from d2lmini.one_hot_steps import one_hot_cell  # noqa: E402
from d2lmini.plot import figure_html, perplexity_alt, plot_perplexity, png_size  # noqa: E402
from d2lmini.rnn import RNNScratch, predict, validate_prefix  # noqa: E402
from d2lmini.text import tokenize  # noqa: E402
from d2lmini.train import History, TrainConfig, make_model, train, validate_config, validate_indices  # noqa: E402
from d2lmini.widgets.one_hot import minibatch_positions  # noqa: E402

# It trains a tiny model and draws gradients that torch computes (README, "Tests").
pytestmark = pytest.mark.torch_dependent

CATALOG = Path(i18n.__file__).with_name("locale") / "zh_CN" / "LC_MESSAGES" / "core.po"
HAN = re.compile(r"[\u4e00-\u9fff]")
# A run of three or more English words: what a sentence of the catalog leaves when it is not translated.
WORDS = re.compile(r"(?<!\w)[A-Za-z]+(?: [A-Za-z]+){2,}(?!\w)")
KEPT_IN_ENGLISH = {"The Time Machine"}  # the book's own title, given beside 《时间机器》


def english_runs() -> set[str]:
    """Every run of three or more English words in the English of the core catalog."""
    runs = set()
    for english in english_messages(CATALOG):
        text = re.sub(r"\{[^{}]*\}", "|", english)
        runs.update(run for run in WORDS.findall(text) if run not in KEPT_IN_ENGLISH)
    return runs


ENGLISH_RUNS = english_runs()


def assert_chinese(text: str) -> None:
    """`text` is in Chinese: it holds Han characters and no untranslated English of the catalog."""
    assert HAN.search(text), f"no Chinese in {text!r}"
    left = sorted(run for run in ENGLISH_RUNS if run in text)
    assert not left, f"English left in {text!r}: {left}"


def assert_english(text: str) -> None:
    assert not HAN.search(text), f"Chinese in the English {text!r}"


@pytest.fixture
def chinese(monkeypatch):
    """d2lmini speaks Chinese for the test."""
    monkeypatch.setenv("D2LMINI_LANG", "zh_CN")


def speak(monkeypatch, language: str) -> None:
    if language == "zh_CN":
        monkeypatch.setenv("D2LMINI_LANG", "zh_CN")
    else:
        monkeypatch.delenv("D2LMINI_LANG", raising=False)


@pytest.fixture(autouse=True)
def quiet_missing_glyphs():
    """The CJK font is another wing's: a glyph it lacks is not this wing's failure."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Gg]lyph.*")
        yield


def test_the_catalog_is_complete_and_compiled():
    pofile = pytest.importorskip("babel.messages.pofile")  # the lowest venv: the wheel, no .po, no Babel
    if not CATALOG.exists():
        pytest.skip("an installed wheel ships the compiled catalog only")
    with CATALOG.open("rb") as handle:
        catalog = pofile.read_po(handle)
    with CATALOG.with_suffix(".mo").open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    messages = [m for m in catalog if m.id]
    assert len(messages) > 150
    for message in messages:
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        english = message.id if isinstance(message.id, tuple) else (message.id,)
        assert all(strings) and not message.fuzzy, message.id
        assert all(HAN.search(s) for s in strings) or not WORDS.search(english[0]), message.id
        shown = (compiled.ngettext(*english, 2) if len(english) == 2 else compiled.gettext(english[0]))
        assert shown == strings[0], f"core.mo is not core.po compiled: {english[0]!r}"


# --------------------------------------------------------------------------- figures and their alts

def _partition(ax):
    text = "the quick brown fox jumps over the lazy dog, twice" * 2
    positions = minibatch_positions(len(text), "sequential", 3, 5, seed=4)
    draw_partition(ax, text, positions, "sequential partitioning")
    return partition_alt(text, positions, "sequential partitioning")


def _reach(ax):
    return reach_curves_alt(draw_reach_curves(ax, [0.5, 1.5], max_k=12, input_scale=0.0), 0.0)


def _reach_with_inputs(ax):
    return reach_curves_alt(draw_reach_curves(ax, [0.9, 1.1], max_k=8, input_scale=1.0), 1.0)


HISTORY = History(epoch=[0.5, 1.0, 1.5], train_perplexity=[9.5, 7.0, 6.1], valid_perplexity=[9.0, 7.2, 6.6],
                  minibatches=[10, 20, 30])


def _perplexity(ax):
    plot_perplexity(ax, HISTORY, {"unigram": 12.5})
    return perplexity_alt(HISTORY, {"unigram": 12.5})


def _batch_transpose(ax):
    vocab = load_corpus("bundled").vocab
    draw_batch_transpose(ax, ["abc", "def"], vocab)
    return batch_transpose_alt(["abc", "def"], vocab)


# name: (draw on ax and return the alt, the alt's English start, the title's English start)
FIGURES = {
    "unrolled RNN (01)": (lambda ax: (draw_unrolled_rnn(ax, 3), unrolled_rnn_alt(3))[1],
                          "Diagram of an RNN unrolled over 3 time steps.",
                          "An RNN unrolled over 3 time steps"),
    "block matmul (02)": (lambda ax: (draw_block_matmul(ax, 8, 28, 16), block_matmul_alt(8, 28, 16))[1],
                          "Block picture of [X, H] times [W_xh; W_hh]: X (8 x 28)",
                          "batch = 8, inputs = 28, hiddens = 16: [X, H] is 8×44"),
    "shift (03)": (lambda ax: (draw_shift(ax, "machine"), shift_alt("machine"))[1],
                   "Diagram of the shift by one: the text 'machine' on top",
                   "Labels are the inputs shifted one token to the left"),
    "partition (03)": (_partition, "sequential partitioning: the 100 characters of the text in a grid",
                       "sequential partitioning: 6 minibatches of 3 × 5; 90 of 100 characters are inputs"),
    "batch transpose (03)": (_batch_transpose, "Diagram of a minibatch in three shapes.", ""),
    "BPTT graph (05)": (lambda ax: (draw_bptt_graph(ax, 3), bptt_graph_alt(3))[1],
                        "Diagram of backpropagation through time over 3 steps.",
                        "Backpropagation through time over 3 steps"),
    "reach curves (05)": (_reach, "Gradient norm against steps back in time k, log scale, with no inputs.",
                          "no inputs (H stays 0, tanh' = 1)"),
    "reach curves with inputs (05)": (_reach_with_inputs, "Gradient norm against steps back in time k, log "
                                      "scale, with random token inputs.", "random token inputs"),
    "perplexity plot (04, 07)": (_perplexity, "Perplexity during training: epochs 0.5 to 1.5; train "
                                 "perplexity from 9.5 to 6.1; validation perplexity from 9 to 6.6; lines at "
                                 "unigram 12.5.", "Perplexity during training"),
}


def figure_words(figure) -> list[str]:
    """Every piece of text that `figure` shows a reader: titles, axis labels, legends, notes."""
    words = []
    for ax in figure.axes:
        words += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()] + [t.get_text() for t in ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            words += [t.get_text() for t in legend.get_texts()]
    return [w for w in words if w]


def draw(name):
    figure, ax = plt.subplots(figsize=(8, 4))
    alt = FIGURES[name][0](ax)
    return figure, ax, alt


@pytest.mark.parametrize("name", FIGURES)
def test_each_figure_is_drawn_and_described_in_chinese_and_in_english(monkeypatch, name):
    _draw, alt_start, title_start = FIGURES[name]
    speak(monkeypatch, "zh_CN")
    figure, ax, alt = draw(name)
    try:
        assert_chinese(alt)
        # the Chinese alt passes the same checks: specific, its numbers drawn, readable without colour
        assert figure_problems(figure, alt) == []
        translatable = [w for w in figure_words(figure) if WORDS.search(w) or HAN.search(w)]
        assert translatable, "the figure shows no text to translate"
        for words in translatable:
            assert_chinese(words)
    finally:
        plt.close(figure)
    speak(monkeypatch, "en")
    figure, ax, alt = draw(name)
    try:
        assert alt.startswith(alt_start) and ax.get_title().startswith(title_start)
        assert_english(alt)
        for words in figure_words(figure):
            assert_english(words)
        assert figure_problems(figure, alt) == []
    finally:
        plt.close(figure)


def test_the_perplexity_plot_names_its_curves_and_axes_in_chinese(monkeypatch):
    for language, expected in (("zh_CN", ("迭代周期", "困惑度", ["训练集", "验证集"])),
                               ("en", ("epoch", "perplexity", ["train", "validation"]))):
        speak(monkeypatch, language)
        figure, ax = plt.subplots()
        try:
            plot_perplexity(ax, HISTORY)
            legend = [t.get_text() for t in ax.get_legend().get_texts()]
            assert (ax.get_xlabel(), ax.get_ylabel(), legend) == expected
            # a caller's own title is shown as given (no catalog has it), an empty one stays empty
            plot_perplexity(ax, HISTORY, title="my own run")
            assert ax.get_title() == "my own run"
            plot_perplexity(ax, HISTORY, title="")
            assert ax.get_title() == ""
        finally:
            plt.close(figure)


def test_the_figure_checks_judge_a_chinese_alt_as_they_judge_an_english_one(chinese, monkeypatch):
    figure, _ax, alt = draw("perplexity plot (04, 07)")
    try:
        assert word_count(alt) >= 8 and word_count("图") == 1 and word_count("two words") == 2
        generic = alt_problems("图。", figure)
        assert generic and all(HAN.search(p) for p in generic)  # said in Chinese
        # a number written right against Han characters is read, and a stale one is caught
        stale = alt_problems(alt + "共训练了37个迭代周期。", figure)
        assert any("37" in p for p in stale)
        assert alt_problems(alt + "共训练了1.5个迭代周期。", figure) == []
        with pytest.raises(ValueError) as info:
            figure_html(b"", "  ")
        assert_chinese(str(info.value))
        with pytest.raises(ValueError) as info:
            png_size(b"not a png")
        assert_chinese(str(info.value))
    finally:
        plt.close(figure)
    speak(monkeypatch, "en")
    figure, _ax, alt = draw("perplexity plot (04, 07)")
    try:
        assert alt_problems("figure", figure) == ["the alt text 'figure' does not say what the figure shows"]
        assert alt_problems(alt + " Trained for 37 epochs.", figure) == [
            "the alt text states 37, which the figure does not draw"]
    finally:
        plt.close(figure)


# --------------------------------------------------------------------------- training and its messages

def test_a_diverged_run_says_so_in_chinese(chinese, monkeypatch):
    error = TrainingDiverged(step=12, epoch=1, loss=45.25, lr=2.5)
    assert_chinese(str(error))
    assert "45.25" in str(error) and "2.5" in str(error) and "梯度裁剪" in str(error)
    assert_chinese(error.reason)
    clipped = TrainingDiverged(step=3, epoch=2, loss=1.0, lr=0.5, grad_norm=float("inf"), clipping=True)
    assert_chinese(str(clipped)) and "梯度裁剪" not in str(clipped)
    speak(monkeypatch, "en")
    assert str(TrainingDiverged(step=12, epoch=1, loss=45.25, lr=2.5)) == (
        "Training diverged: the loss became 45.25 nats per token at minibatch 12 of the run (epoch 1) "
        "(learning rate 2.5). Try a learning rate ten times smaller, or turn on gradient clipping (a "
        "threshold such as 1).")
    clipped = TrainingDiverged(step=3, epoch=2, loss=1.0, lr=0.5, grad_norm=float("inf"), clipping=True)
    assert str(clipped) == (
        "Training diverged: the gradient norm became inf at minibatch 3 of the run (epoch 2) (learning rate "
        "0.5). Try a learning rate ten times smaller.")


def _tiny_run(bundled, stop_after: int):
    config = TrainConfig(num_hiddens=8, batch_size=2, num_steps=5, num_epochs=None, max_minibatches=20,
                         lr_schedule="constant")
    model = make_model("scratch", len(bundled.vocab), config)
    train_indices, valid_indices = bundled.indices[:2000], bundled.indices[2000:2400]
    calls = []

    def should_stop() -> bool:
        calls.append(1)
        return len(calls) >= stop_after

    with pytest.warns(RuntimeWarning) as caught:
        history = train(model, train_indices, valid_indices, config, should_stop=should_stop)
    return history, str(caught[0].message)


def test_an_interrupted_run_says_so_in_chinese(monkeypatch, bundled):
    speak(monkeypatch, "zh_CN")
    history, warned = _tiny_run(bundled, 2)
    assert history.interrupted and history.stopped == warned
    assert_chinese(history.stopped)
    assert "2" in history.stopped
    speak(monkeypatch, "en")
    history, warned = _tiny_run(bundled, 2)
    assert history.stopped == ("Training was stopped by an interrupt after 2 minibatches; the model and its "
                               "history so far are kept.")


def test_a_training_call_that_cannot_work_says_why_in_chinese(monkeypatch, bundled):
    short = torch.tensor([3])
    floats = torch.zeros(10)
    for language in ("zh_CN", "en"):
        speak(monkeypatch, language)
        messages = []
        for call in (lambda: validate_config(TrainConfig(num_epochs=None)),
                     lambda: validate_indices(short, "training text"),
                     lambda: validate_indices(floats, "training text"),
                     lambda: validate_indices(torch.tensor([0, 99]), "validation text", 28),
                     lambda: make_model("keras", 28, TrainConfig()),
                     lambda: make_model("scratch", 28, TrainConfig(cell="gru", init="normal")),
                     lambda: validate_fits(10, 5, 5)):
            with pytest.raises((TypeError, ValueError)) as info:
                call()
            messages.append(str(info.value))
        for message in messages:
            (assert_chinese if language == "zh_CN" else assert_english)(message)
    assert messages[:2] == [
        "Give a budget: epochs (num_epochs), minibatches (max_minibatches) or a time limit (max_seconds).",
        "The training text holds 1 token: at least 2 are needed to measure anything (one to read, one to "
        "predict)."]
    assert messages[5] == ("The initialisation (init) 'normal' is the book's for the RNN; the scratch GRU "
                           "starts from LeCun's rule: use init='lecun'.")


def test_predict_refuses_a_prefix_it_cannot_read_in_chinese(monkeypatch, bundled):
    model = RNNScratch(len(bundled.vocab), 8)
    for language in ("zh_CN", "en"):
        speak(monkeypatch, language)
        with pytest.raises(ValueError) as unknown:
            validate_prefix("héllo", bundled.vocab)
        with pytest.raises(TypeError) as wrong_vocab:
            predict(model, "abc", "the", 3)
        with pytest.raises(ValueError) as wrong_size:
            predict(RNNScratch(5, 8), bundled.vocab, "the", 3)
        for error in (unknown, wrong_vocab, wrong_size):
            (assert_chinese if language == "zh_CN" else assert_english)(str(error.value))
    assert str(unknown.value).startswith("The prefix contains characters the model has never seen: ['é'].")


# --------------------------------------------------------------------------- the download

def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/timemachine.txt"


def test_a_failed_download_says_what_to_do_in_chinese(chinese, monkeypatch, tmp_path):
    url = _closed_port_url()
    with pytest.raises(DataUnavailableError) as info:
        download_timemachine(tmp_path, url, timeout=5)
    message = str(info.value)
    assert_chinese(message)
    assert "《时间机器》" in message and url in message and "load_corpus('bundled')" in message
    with pytest.raises(UnsupportedURLError) as refused:
        download_timemachine(tmp_path, "file:///etc/passwd")
    assert_chinese(str(refused.value))
    speak(monkeypatch, "en")
    with pytest.raises(DataUnavailableError) as info:
        download_timemachine(tmp_path, url, timeout=5)
    message = str(info.value)
    assert message.startswith(f"Could not download The Time Machine from {url} (")
    assert message.endswith(f"Are you offline? Download {url} in a web browser and save it as "
                            f"{tmp_path / 'timemachine.txt'}, or use the bundled corpus (the lab's 'bundled "
                            "corpus' choice, or load_corpus('bundled') in code).")


# --------------------------------------------------------------------------- settings put back, device

def test_a_changed_kernel_setting_is_named_in_chinese(chinese, monkeypatch):
    said = describe([Change("grad", SAID["grad"](False), True)])
    assert said == "你的函数关闭了梯度计算（torch.set_grad_enabled）；这项设置已被恢复。"
    both = describe([Change("grad", SAID["grad"](False), True),
                     Change("interop_threads", SAID["interop_threads"](3), False)], "训练")
    assert_chinese(both)
    assert_chinese(describe_device(torch.device("cpu")))
    speak(monkeypatch, "en")
    assert describe([Change("grad", SAID["grad"](False), True)]) == (
        "Your function switched gradients off (torch.set_grad_enabled); that was put back.")
    changes = [Change("deterministic", SAID["deterministic"]((True, True)), True),
               Change("dtype", SAID["dtype"](torch.float64), True),
               Change("interop_threads", SAID["interop_threads"](3), False)]
    assert describe(changes, "Training") == (
        "Training switched deterministic algorithms on (warn only) (torch.use_deterministic_algorithms) and "
        "set the default dtype to torch.float64 (torch.set_default_dtype); each was put back. It also set "
        "torch's inter-op thread count to 3 (torch.set_num_interop_threads), which could not be put back: "
        "restart the kernel (Kernel > Restart) to undo it.")
    assert describe_device(torch.device("cpu")) == f"CPU ({torch.get_num_threads()} threads)"


# --------------------------------------------------------------------------- bad input to public functions

def _with_grad() -> list[torch.Tensor]:
    weight = torch.ones(3, requires_grad=True)
    weight.grad = torch.ones(3)
    return [weight]


BAD_INPUT = {
    "tokenize": (lambda: tokenize("abc", "line"), "level must be 'char' or 'word', not 'line'"),
    "corpus split": (lambda: load_corpus("bundled").split(2),
                     "valid_fraction must be between 0 and 1, not 2"),
    "sampling": (lambda: make_batches("shuffled", torch.arange(100), 2, 5),
                 "sampling must be 'random' or 'sequential', not 'shuffled'"),
    "offset": (lambda: next(sequential_batches(torch.arange(100), 2, 5, offset=7)),
               "offset must be in 0 ... num_steps - 1 = 4, not 7"),
    "clipping threshold": (lambda: clip_gradients(_with_grad(), -1.0),
                           "the clipping threshold must be positive (or None for off), not -1.0"),
    "clip mode": (lambda: clipping_rule(1.0, "sign"), "clip_mode must be 'norm' or 'value', not 'sign'"),
    "truncation window": (lambda: bptt_backward_truncated(None, None, None, 0),
                          "the truncation window must be at least 1 step, not 0"),
    "gated cell": (lambda: TorchGated("rnn", 5, 4), "cell must be 'gru' or 'lstm', not 'rnn'"),
    "dynamic settings": (lambda: DynamicSettings(lr=-1.0),
                         "need lr >= 0, 0 <= decay <= 1, segment >= 1 and "),
    "echo source": (lambda: EchoSource(lag=0), "lag must be an integer >= 1, got 0"),
    "mixture weight": (lambda: fit_mixture_weight(np.zeros(3), np.zeros(4)),
                       "log_p_a and log_p_b must have the same shape, got (3,) and (4,)"),
    "mixture lam": (lambda: mixture_log_probs(np.zeros(3), np.zeros(3), 2.0),
                    "lam must be in [0, 1], got 2.0"),
    "n-gram order": (lambda: KneserNey(0), "order must be an integer >= 1, got 0"),
    "n-gram text": (lambda: KneserNey(3).fit("ab"), "text must be longer than order=3, got 2 characters"),
    "n-gram unfitted": (lambda: KneserNey(2).prob("a", "b"),
                        "call fit(text) before asking for probabilities"),
    "one-hot cell": (lambda: one_hot_cell(nn.Linear(2, 2)), "model must be a scratch model ("),
    "unrolled steps": (lambda: draw_unrolled_rnn(None, 0), "num_steps must be at least 1, not 0"),
    "shift word": (lambda: draw_shift(None, "a"), "the word needs at least two characters"),
}


@pytest.mark.parametrize("name", BAD_INPUT)
def test_a_public_function_refuses_bad_input_in_chinese(monkeypatch, name):
    call, english = BAD_INPUT[name]
    speak(monkeypatch, "zh_CN")
    with pytest.raises((TypeError, ValueError, RuntimeError)) as info:
        call()
    assert_chinese(str(info.value))
    speak(monkeypatch, "en")
    with pytest.raises((TypeError, ValueError, RuntimeError)) as info:
        call()
    assert str(info.value).startswith(english)
    assert_english(str(info.value))
