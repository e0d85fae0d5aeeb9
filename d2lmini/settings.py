"""Every setting of training, the perplexity lab and `predict`, declared once (notebooks 04, 06, 07).

A `Setting` says what values a setting takes (its type, range or choices), how a panel
names it (`label`) and what it does (`help`). Everything else is derived from these
declarations: `validate_value` and `validate_settings` (the one validation, whose messages name
the setting by its label), the limits and menus of the widgets in `d2lmini.widgets.lab`
and `d2lmini.widgets.clipping`, and the command-line choices of `benchmarks/quality.py`.

The named choices (recurrent cells, optimizers, learning-rate schedules, clipping modes,
sampling, weight initialisation) are spelled out here and nowhere else; adding a learning-rate schedule is
one entry in `LR_SCHEDULES`.
"""

import decimal
import math
import numbers
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

import numpy as np
import torch


def constant_rate(progress: float) -> float:
    """Return 1: the learning rate stays where it started (the book's plain SGD)."""
    return 1.0


def cosine_decay(progress: float) -> float:
    """Return the share of the learning rate left at `progress` along a half cosine (1 at 0, 0 at 1)."""
    return 0.5 * (1 + math.cos(math.pi * progress))


# name: (what a menu shows, the share of the learning rate used at progress p in [0, 1]).
LR_SCHEDULES: dict[str, tuple[str, Callable[[float], float]]] = {
    "constant": ("constant", constant_rate),
    "cosine": ("half cosine down to 0", cosine_decay),
}
# name: (what a menu shows, the torch optimizer).
OPTIMIZERS: dict[str, tuple[str, type[torch.optim.Optimizer]]] = {
    "sgd": ("SGD (as in the book)", torch.optim.SGD),
    "adam": ("Adam", torch.optim.Adam),
}
CLIP_MODES = {"norm": "joint norm (notebook 06)", "value": "per element"}
SAMPLINGS = {"sequential": "sequential partitioning", "random": "random sampling"}
# The recurrent cell of a model (notebook 09): the course's RNN, or one of the gated cells.
CELLS = {"rnn": "RNN (tanh)", "gru": "GRU", "lstm": "LSTM"}
INITS = {"lecun": "LeCun, N(0, 1/fan_in)", "normal": "N(0, 0.01²), as in the book"}
CORPORA = {"bundled": "bundled corpus", "markov": "synthetic Markov source",
           "timemachine": "The Time Machine"}
DEVICES = {"cpu": "CPU", "cuda": "CUDA GPU", "mps": "Apple GPU"}

# The longest prefix `predict` and the lab read: reading it costs time and memory in proportion.
MAX_PREFIX = 10_000
# The most characters `predict` generates in one call.
MAX_GENERATED = 10_000


@dataclass(frozen=True)
class Setting:
    """One setting: its type, range or choices, its label on a panel and its help.

    `kind` is int, float, str, bool or "path". Numbers lie in [low, high] (`low_open`: low
    itself excluded) and must be finite; strings are one of `choices` when there are any,
    else at most `max_length` characters; `optional` allows None (`none_means` says what it
    means). `menu` lists values a panel offers; `slider` is a panel's (min, max, step),
    with `log_slider` the exponents of 10.
    """

    name: str
    label: str
    help: str
    kind: object
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: dict = field(default_factory=dict)
    optional: bool = False
    none_means: str = ""
    max_length: int | None = None
    min_length: int = 0
    menu: tuple = ()
    slider: tuple | None = None
    log_slider: bool = False

    def allowed(self) -> str:
        """Return, in words, the values this setting accepts."""
        if self.choices:
            what = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind is bool:
            what = "True or False"
        elif self.kind == "path":
            what = "a path (text or a pathlib.Path)"
        elif self.kind is str:
            length = f" of {self.min_length} to {self.max_length:,} characters" if self.max_length else ""
            what = "text" + length
        elif self.low == 0 and self.low_open and self.high is None:
            what = "a positive " + ("whole number" if self.kind is int else "number")
        else:
            what = ("a whole number" if self.kind is int else "a number") + self._range()
        return what + (f", or None ({self.none_means})" if self.optional else "")

    def _range(self) -> str:
        if self.low is not None and self.high is not None:
            lower = f"above {self.low:,}" if self.low_open else f"from {self.low:,}"
            return f" {lower} up to {self.high:,}"
        if self.low is not None:
            return f" above {self.low:,}" if self.low_open else f" of at least {self.low:,}"
        return ""


def short_repr(value) -> str:
    """Return repr(value) cut to 60 characters; never raises."""
    try:
        text = repr(value)
    except Exception:
        text = f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def _is_bool(value) -> bool:
    return isinstance(value, bool | np.bool_)


def _type_ok(setting: Setting, value) -> bool:
    if setting.kind is bool:
        return _is_bool(value)
    if _is_bool(value) and setting.kind in (int, float):
        return False  # True is not a number of units, even though Python counts it as 1
    if setting.kind is int:
        return isinstance(value, numbers.Integral)
    if setting.kind is float:
        return isinstance(value, numbers.Real | decimal.Decimal)
    if setting.kind == "path":
        return isinstance(value, str | os.PathLike)
    return isinstance(value, str)


def _plain(setting: Setting, value):
    """Return `value` as the plain Python type `setting` means (np.int64 -> int, Fraction -> float, ...).

    Raises OverflowError or ValueError for a number no float can hold (10**400, Decimal('sNaN')).
    """
    if setting.kind is bool:
        return bool(value)
    if setting.kind is int:
        return int(value)
    if setting.kind is float:
        return float(value)
    if setting.kind is str or isinstance(value, str):
        return str(value)  # np.str_ too
    return value


def _value_ok(setting: Setting, value) -> bool:
    if setting.choices:
        return value in setting.choices
    if setting.kind is str:
        return setting.min_length <= len(value) <= (setting.max_length or math.inf)
    if setting.kind not in (int, float):
        return True
    if setting.kind is float and not math.isfinite(value):
        return False
    if setting.low is not None and (value <= setting.low if setting.low_open else value < setting.low):
        return False
    return setting.high is None or value <= setting.high


def validate_value(setting: Setting, value):
    """Return `value` as a plain Python value; raise TypeError (wrong type) or ValueError (out of range).

    Messages name `setting` by its label. Any number type is taken alike: numpy scalars,
    `Fraction` and `Decimal` become the int or float the setting means, bools are never
    numbers, so nothing after the check sees an unusual type.
    """
    if value is None and setting.optional:
        return None
    message = (f"The {setting.label} ({setting.name}) must be {setting.allowed()}, "
               f"not {short_repr(value)}.")
    if not _type_ok(setting, value):
        raise TypeError(message)
    try:
        plain = _plain(setting, value)
    except (OverflowError, ValueError, ArithmeticError):
        raise ValueError(message) from None
    if setting.kind is str and setting.min_length and plain == "":
        raise ValueError(f"The {setting.label} is empty: type at least {setting.min_length} character"
                         f"{'s' if setting.min_length > 1 else ''} ({setting.name}).")
    if not _value_ok(setting, plain):
        raise ValueError(message)
    return plain


def validate_settings(obj, schema: dict[str, Setting]):
    """Validate every field of the dataclass `obj` that `schema` declares; raise the first error.

    Each field is made plain in place (`validate_value`: np.int64 -> int, Fraction -> float),
    so what runs afterwards sees only Python's own types. Returns `obj`.
    """
    for item in fields(obj):
        if item.name in schema:
            value = getattr(obj, item.name)
            plain = validate_value(schema[item.name], value)
            if plain is not value:
                setattr(obj, item.name, plain)
    return obj


def _declare(*settings: Setting) -> dict[str, Setting]:
    return {s.name: s for s in settings}


def _whole(name, label, help, low=1, high=None, **more) -> Setting:
    return Setting(name, label, help, int, low=low, high=high, **more)


# Training (`d2lmini.train.TrainConfig`).
TRAIN_SETTINGS = _declare(
    Setting("cell", "recurrent cell", "what one step computes: the RNN's tanh, or a gated GRU or LSTM",
            str, choices=CELLS),
    _whole("num_hiddens", "hidden size", "units in the hidden state", 1, 100_000, slider=(8, 384, 8)),
    Setting("lr", "learning rate", "size of each update (at the start of the schedule)", float, 0,
            low_open=True, menu=(0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0,
                                 6.0, 10.0, 30.0, 100.0, 1000.0), log_slider=True, slider=(-3, 3, 0.1)),
    Setting("optimizer", "optimizer", "how gradients become updates", str,
            choices={k: label for k, (label, _) in OPTIMIZERS.items()}),
    _whole("batch_size", "batch size", "rows (streams of text) per minibatch", 1, 100_000,
           slider=(1, 256, 1)),
    _whole("num_steps", "steps per minibatch", "time steps backpropagated through", 1, 100_000,
           slider=(1, 240, 1)),
    Setting("theta", "clipping θ", "gradient clipping threshold", float, 0, low_open=True,
            optional=True, none_means="no clipping", menu=(0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0)),
    Setting("clip_mode", "clipping mode", "what is clipped at θ", str, choices=CLIP_MODES),
    Setting("lr_schedule", "schedule", "how the learning rate changes over the budget", str,
            choices={k: label for k, (label, _) in LR_SCHEDULES.items()}),
    _whole("num_epochs", "epochs", "passes over the training text", 1, 100_000, optional=True,
           none_means="no limit"),
    _whole("max_minibatches", "minibatches", "minibatches to train", 1, 10_000_000, optional=True,
           none_means="no limit", slider=(20, 3000, 20)),
    Setting("max_seconds", "time limit", "seconds of training", float, 0.01, 86_400.0, optional=True,
            none_means="no limit"),
    Setting("count_eval_time", "count evaluation time", "whether evaluation counts against the time limit",
            bool),
    _whole("checkpoints", "checkpoints", "measurements per run", 1, 1000, optional=True,
           none_means="one per epoch"),
    _whole("eval_batch_size", "evaluation batch size", "streams the validation text is read as", 1,
           100_000, optional=True, none_means="the batch size"),
    _whole("eval_num_steps", "evaluation steps", "characters read per call when evaluating", 1, 100_000,
           optional=True, none_means="the steps per minibatch"),
    Setting("sampling", "sampling", "how minibatches are cut from the text", str, choices=SAMPLINGS),
    Setting("init", "initialisation", "how the weights start", str, choices=INITS),
    _whole("seed", "seed", "seed of every random number", 0, 2**63 - 1),
)

# `predict` (d2lmini.rnn), shared by the lab's sample.
PREDICT_SETTINGS = _declare(
    Setting("prefix", "prefix", "text the model reads before generating", str, min_length=1,
            max_length=MAX_PREFIX),
    _whole("num_chars", "characters to generate", "length of the generated text", 0, MAX_GENERATED),
    Setting("temperature", "temperature", "sampling temperature (small: nearly greedy)", float, 0,
            low_open=True, optional=True, none_means="greedy"),
)

# Loading a corpus (`d2lmini.corpus.load_corpus`, `d2lmini.download.download_timemachine`), shared by
# the lab.
CORPUS_SETTINGS = _declare(
    Setting("corpus", "corpus", "the text to learn", str, choices=CORPORA),
    Setting("data_dir", "data folder", "where The Time Machine is cached", "path", optional=True,
            none_means="the default cache"),
    Setting("timeout", "download timeout", "seconds a download may take", float, 0, 600, low_open=True),
)

# Where the lab's runs are exported (`d2lmini.lab.runs.RunLog.to_csv`, the panel's "Save as CSV").
EXPORT_PATH = Setting("path", "CSV file", "where the runs are saved", "path")

# What only the lab has (`d2lmini.lab.LabSettings`), with `predict`'s sample settings.
LAB_SETTINGS = {
    **TRAIN_SETTINGS,
    **_declare(CORPUS_SETTINGS["corpus"]),
    **PREDICT_SETTINGS,
    **_declare(
        Setting("device", "device", "where the model trains", str, optional=True,
                none_means="the best available", max_length=12),
        _whole("num_threads", "threads", "CPU threads torch may use while the lab trains", 1, 1024,
               optional=True, none_means="leave torch's setting alone"),
        CORPUS_SETTINGS["data_dir"],
        Setting("timemachine_url", "download address", "where The Time Machine is fetched from", str,
                max_length=2000),
        replace(CORPUS_SETTINGS["timeout"], name="download_timeout"),
    ),
}


def validate_device_name(name) -> str | None:
    """Return `name`; raise TypeError/ValueError unless it is None, 'cpu', 'cuda', 'cuda:N' or 'mps'."""
    name = validate_value(LAB_SETTINGS["device"], name)
    if name is not None and name not in DEVICES and not (name.startswith("cuda:") and name[5:].isdigit()):
        raise ValueError(f"The device (device) must be 'cpu', 'cuda', 'cuda:N', 'mps' or None (the best "
                         f"available), not {short_repr(name)}.")
    return name
