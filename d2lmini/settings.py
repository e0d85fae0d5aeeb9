"""Every setting of training, the perplexity lab and `predict`, declared once (notebooks 04, 06, 07).

A `Setting` says what values a setting takes (its type, range or choices), how a panel
names it (`label`) and what it does (`help`): English, marked for translation (`N_`) and shown
translated (`Setting.shown_label()`, `shown_help()`, or `_(label)` for a choice's label).
Everything else is derived from these declarations: `validate_value` and `validate_settings`
(the one validation, whose messages name the setting by its label), the limits and menus of the
widgets in `d2lmini.widgets.lab` and `d2lmini.widgets.clipping`, and the command-line choices of
`benchmarks/quality.py`.

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

from d2lmini.i18n import N_, _, ngettext


def constant_rate(progress: float) -> float:
    """Return 1: the learning rate stays where it started (the book's plain SGD)."""
    return 1.0


def cosine_decay(progress: float) -> float:
    """Return the share of the learning rate left at `progress` along a half cosine (1 at 0, 0 at 1)."""
    return 0.5 * (1 + math.cos(math.pi * progress))


# The labels of the named choices below, of every `Setting` (`label`, `help`, `none_means`) are
# English, marked with `N_`: whatever shows one translates it there, with `_(label)` (the language is
# chosen after import). Code compares the names (the keys), never the labels.
# name: (what a menu shows, the share of the learning rate used at progress p in [0, 1]).
LR_SCHEDULES: dict[str, tuple[str, Callable[[float], float]]] = {
    # TRANSLATORS: a learning-rate schedule, in a menu: the rate stays the same.
    "constant": (N_("constant"), constant_rate),
    # TRANSLATORS: a learning-rate schedule, in a menu: the rate falls along half a cosine to 0.
    "cosine": (N_("half cosine down to 0"), cosine_decay),
}
# name: (what a menu shows, the torch optimizer).
OPTIMIZERS: dict[str, tuple[str, type[torch.optim.Optimizer]]] = {
    "sgd": (N_("SGD (as in the book)"), torch.optim.SGD),
    "adam": ("Adam", torch.optim.Adam),
}
# An optimizer given a weight decay: Adam's becomes AdamW's decoupled decay; SGD keeps its own.
DECOUPLED_DECAY: dict[str, type[torch.optim.Optimizer]] = {"adam": torch.optim.AdamW}
# TRANSLATORS: clipping modes, in a menu: the joint norm of all gradients, or each entry on its own.
CLIP_MODES = {"norm": N_("joint norm (notebook 06)"), "value": N_("per element")}
SAMPLINGS = {"sequential": N_("sequential partitioning"), "random": N_("random sampling")}
# The recurrent cell of a model (notebook 09): the course's RNN, or one of the gated cells.
CELLS = {"rnn": N_("RNN (tanh)"), "gru": "GRU", "lstm": "LSTM"}
# TRANSLATORS: weight initialisations, in a menu; N(0, σ²) is a normal distribution.
INITS = {"lecun": N_("LeCun, N(0, 1/fan_in)"), "normal": N_("N(0, 0.01²), as in the book")}
CORPORA = {"bundled": N_("bundled corpus"), "markov": N_("synthetic Markov source"),
           "timemachine": N_("The Time Machine")}
DEVICES = {"cpu": "CPU", "cuda": N_("CUDA GPU"), "mps": N_("Apple GPU")}

# TRANSLATORS: a menu's choice for "no value": no clipping (θ), also a checkbox that is not ticked.
OFF = N_("off")


def off_words() -> set[str]:
    """Return the words that mean "off" in a menu or a typed list: "off" and its translation now."""
    return {OFF, _(OFF).strip().lower()}


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

    def shown_label(self) -> str:
        """Return `label` in the language d2lmini speaks now (what a panel and a message show)."""
        return _(self.label)

    def shown_help(self) -> str:
        """Return `help` in the language d2lmini speaks now."""
        return _(self.help)

    def allowed(self) -> str:
        """Return, in words, the values this setting accepts (in the language d2lmini speaks now)."""
        if self.choices:
            what = _("one of {choices}").format(choices=", ".join(repr(c) for c in self.choices))
        elif self.kind is bool:
            what = _("True or False")
        elif self.kind == "path":
            what = _("a path (text or a pathlib.Path)")
        elif self.kind is str:
            what = (_("text of {low} to {high:,} characters").format(low=self.min_length,
                                                                      high=self.max_length)
                    if self.max_length else _("text"))
        elif self.low == 0 and self.low_open and self.high is None:
            what = _("a positive whole number") if self.kind is int else _("a positive number")
        else:
            what = self._number_range()
        if self.optional:
            # TRANSLATORS: {allowed} is what a setting accepts ("a whole number from 1 up to 100"); None is
            # Python's None, kept as it is; {none_means} says what None does ("no limit").
            what = _("{allowed}, or None ({none_means})").format(allowed=what, none_means=_(self.none_means))
        return what

    def _number_range(self) -> str:
        """Return "a whole number" / "a number" with this setting's range, as one phrase."""
        whole = self.kind is int
        low, high = self.low, self.high
        if low is not None and high is not None:
            if self.low_open:
                template = (_("a whole number above {low:,} up to {high:,}") if whole
                            else _("a number above {low:,} up to {high:,}"))
            else:
                template = (_("a whole number from {low:,} up to {high:,}") if whole
                            else _("a number from {low:,} up to {high:,}"))
        elif low is not None:
            if self.low_open:
                template = _("a whole number above {low:,}") if whole else _("a number above {low:,}")
            else:
                template = (_("a whole number of at least {low:,}") if whole
                            else _("a number of at least {low:,}"))
        else:
            template = _("a whole number") if whole else _("a number")
        return template.format(low=low, high=high)


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
    # TRANSLATORS: {label} is the setting as a panel names it ("hidden size"), {name} its name in code
    # (num_hiddens), {allowed} what it accepts, {value} the value given, as Python writes it.
    message = _("The {label} ({name}) must be {allowed}, not {value}.").format(
        label=setting.shown_label(), name=setting.name, allowed=setting.allowed(), value=short_repr(value))
    if not _type_ok(setting, value):
        raise TypeError(message)
    try:
        plain = _plain(setting, value)
    except (OverflowError, ValueError, ArithmeticError):
        raise ValueError(message) from None
    if setting.kind is str and setting.min_length and plain == "":
        raise ValueError(ngettext("The {label} is empty: type at least {n} character ({name}).",
                                  "The {label} is empty: type at least {n} characters ({name}).",
                                  setting.min_length).format(label=setting.shown_label(),
                                                             n=setting.min_length, name=setting.name))
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
    Setting("cell", N_("recurrent cell"),
            N_("what one step computes: the RNN's tanh, or a gated GRU or LSTM"), str, choices=CELLS),
    _whole("num_hiddens", N_("hidden size"), N_("units in the hidden state"), 1, 100_000,
           slider=(8, 384, 8)),
    Setting("lr", N_("learning rate"), N_("size of each update (at the start of the schedule)"), float, 0,
            low_open=True, menu=(0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0,
                                 6.0, 10.0, 30.0, 100.0, 1000.0), log_slider=True, slider=(-3, 3, 0.1)),
    Setting("optimizer", N_("optimizer"), N_("how gradients become updates"), str,
            choices={k: label for k, (label, _optimizer) in OPTIMIZERS.items()}),
    Setting("weight_decay", N_("weight decay"),
            N_("how much each update shrinks the weights (Adam: decoupled, as AdamW)"), float, 0.0, 1.0),
    _whole("batch_size", N_("batch size"), N_("rows (streams of text) per minibatch"), 1, 100_000,
           slider=(1, 256, 1)),
    _whole("num_steps", N_("steps per minibatch"), N_("time steps backpropagated through"), 1, 100_000,
           slider=(1, 240, 1)),
    Setting("theta", N_("clipping θ"), N_("gradient clipping threshold"), float, 0, low_open=True,
            optional=True, none_means=N_("no clipping"), menu=(0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0)),
    Setting("clip_mode", N_("clipping mode"), N_("what is clipped at θ"), str, choices=CLIP_MODES),
    Setting("lr_schedule", N_("schedule"), N_("how the learning rate changes over the budget"), str,
            choices={k: label for k, (label, _share) in LR_SCHEDULES.items()}),
    _whole("num_epochs", N_("epochs"), N_("passes over the training text"), 1, 100_000, optional=True,
           none_means=N_("no limit")),
    _whole("max_minibatches", N_("minibatches"), N_("minibatches to train"), 1, 10_000_000, optional=True,
           none_means=N_("no limit"), slider=(20, 3000, 20)),
    Setting("max_seconds", N_("time limit"), N_("seconds of training"), float, 0.01, 86_400.0,
            optional=True, none_means=N_("no limit")),
    Setting("count_eval_time", N_("count evaluation time"),
            N_("whether evaluation counts against the time limit"), bool),
    _whole("checkpoints", N_("checkpoints"), N_("measurements per run"), 1, 1000, optional=True,
           none_means=N_("one per epoch")),
    _whole("eval_batch_size", N_("evaluation batch size"), N_("streams the validation text is read as"), 1,
           100_000, optional=True, none_means=N_("the batch size")),
    _whole("eval_num_steps", N_("evaluation steps"), N_("characters read per call when evaluating"), 1,
           100_000, optional=True, none_means=N_("the steps per minibatch")),
    Setting("sampling", N_("sampling"), N_("how minibatches are cut from the text"), str, choices=SAMPLINGS),
    Setting("init", N_("initialisation"), N_("how the weights start"), str, choices=INITS),
    _whole("seed", N_("seed"), N_("seed of every random number"), 0, 2**63 - 1),
)

# `predict` (d2lmini.rnn), shared by the lab's sample.
PREDICT_SETTINGS = _declare(
    Setting("prefix", N_("prefix"), N_("text the model reads before generating"), str, min_length=1,
            max_length=MAX_PREFIX),
    _whole("num_chars", N_("characters to generate"), N_("length of the generated text"), 0,
           MAX_GENERATED),
    Setting("temperature", N_("temperature"), N_("sampling temperature (small: nearly greedy)"), float, 0,
            low_open=True, optional=True, none_means=N_("greedy")),
)

# Loading a corpus (`d2lmini.corpus.load_corpus`, `d2lmini.download.download_timemachine`), shared by
# the lab.
CORPUS_SETTINGS = _declare(
    Setting("corpus", N_("corpus"), N_("the text to learn"), str, choices=CORPORA),
    Setting("data_dir", N_("data folder"), N_("where The Time Machine is cached"), "path", optional=True,
            none_means=N_("the default cache")),
    Setting("timeout", N_("download timeout"), N_("seconds a download may take"), float, 0, 600,
            low_open=True),
)

# Where the lab's runs are exported (`d2lmini.lab.runs.RunLog.to_csv`, the panel's "Save as CSV").
EXPORT_PATH = Setting("path", N_("CSV file"), N_("where the runs are saved"), "path")

# What only the lab has (`d2lmini.lab.LabSettings`), with `predict`'s sample settings.
LAB_SETTINGS = {
    **TRAIN_SETTINGS,
    **_declare(CORPUS_SETTINGS["corpus"]),
    **PREDICT_SETTINGS,
    **_declare(
        Setting("device", N_("device"), N_("where the model trains"), str, optional=True,
                none_means=N_("the best available"), max_length=12),
        _whole("num_threads", N_("threads"), N_("CPU threads torch may use while the lab trains"), 1, 1024,
               optional=True, none_means=N_("leave torch's setting alone")),
        CORPUS_SETTINGS["data_dir"],
        Setting("timemachine_url", N_("download address"), N_("where The Time Machine is fetched from"), str,
                max_length=2000),
        replace(CORPUS_SETTINGS["timeout"], name="download_timeout"),
    ),
}


def validate_device_name(name) -> str | None:
    """Return `name`; raise TypeError/ValueError unless it is None, 'cpu', 'cuda', 'cuda:N' or 'mps'."""
    name = validate_value(LAB_SETTINGS["device"], name)
    if name is not None and name not in DEVICES and not (name.startswith("cuda:") and name[5:].isdigit()):
        raise ValueError(_("The {label} (device) must be 'cpu', 'cuda', 'cuda:N', 'mps' or None (the best "
                           "available), not {value}.").format(label=LAB_SETTINGS["device"].shown_label(),
                                                               value=short_repr(name)))
    return name
