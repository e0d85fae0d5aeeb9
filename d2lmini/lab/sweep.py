"""A sweep in the perplexity lab: one setting, a few values, one run each (notebook 08).

`run_sweep(settings, "num_hiddens", [32, 128, 512])` trains one fresh model per value with
everything else the same (seed, budget, data) through `d2lmini.lab.run_lab`, and returns a
`SweepResult` whose `perplexities()` put the final validation perplexity against the value,
the U-curves of hidden size, learning rate and sequence length, or the cells side by side.
`parse_values` reads the
values as a student types them. A sweep stops at an interrupt, keeping the runs finished so far.
"""

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from d2lmini.i18n import _
from d2lmini.lab import MAX_CLICK_SECONDS, LabPlan, LabResult, LabSettings, plan_lab, run_lab
from d2lmini.settings import LAB_SETTINGS, OFF, off_words, short_repr, validate_value

# The settings a sweep can vary (those the lab's controls set that change the trained model).
SWEEPABLE = ("cell", "num_hiddens", "lr", "num_steps", "batch_size", "theta", "max_minibatches")
MAX_VALUES = 8
# A sweep started from the panel is refused when its runs add up to more than this many seconds
# on the reference machine (each run must also pass `d2lmini.lab.validate_click`).
MAX_SWEEP_SECONDS = 60.0
# Values a panel suggests for each setting: a factor of about 4 between neighbours; every cell.
SUGGESTED_VALUES = {"cell": ", ".join(LAB_SETTINGS["cell"].choices), "num_hiddens": "32, 128, 384",
                    "lr": "0.001, 0.01, 0.1", "num_steps": "8, 35, 140",
                    "batch_size": "8, 32, 128", "theta": "0.1, 1, off", "max_minibatches": "150, 600, 2400"}


def suggested_values(name: str) -> str:
    """Return `SUGGESTED_VALUES[name]` as a panel shows it: "off" in the language d2lmini speaks now
    (`parse_values` reads it in English too)."""
    return ", ".join(_(OFF) if value == OFF else value for value in SUGGESTED_VALUES[name].split(", "))


@dataclass
class SweepResult:
    """The runs of a sweep of `name` over `values`, in order; `stopped` says why it ended early (or None)."""

    settings: LabSettings
    name: str
    values: list
    results: list[LabResult] = field(default_factory=list)
    stopped: str | None = None

    def perplexities(self) -> list[tuple[object, float]]:
        """Return (value, final validation perplexity) for every run that finished with a number."""
        return [(value, r.valid_perplexity) for value, r in zip(self.values, self.results, strict=False)
                if r.valid_perplexity is not None and math.isfinite(r.valid_perplexity)]

    def best(self) -> tuple[object, float] | None:
        """Return the (value, perplexity) with the lowest validation perplexity, or None."""
        finished = self.perplexities()
        return min(finished, key=lambda pair: pair[1]) if finished else None


def value_text(value, name: str | None = None) -> str:
    """Return a swept value as a panel writes it: "off" for None (no clipping), a named choice of the
    setting `name` by its short label ("GRU"), else the number (words in the language d2lmini speaks now)."""
    if value is None:
        return _(OFF)
    if isinstance(value, str):
        choices = LAB_SETTINGS[name].choices if name in LAB_SETTINGS else {}
        return _(choices.get(value, value).split(" (")[0])
    return f"{value:g}"


def validate_sweepable(name: str) -> None:
    """Raise ValueError, listing the settings a sweep can vary, unless `name` is one of them."""
    if not isinstance(name, str) or name not in SWEEPABLE:
        labels = ", ".join(f"{LAB_SETTINGS[n].shown_label()} ({n})" for n in SWEEPABLE)
        # TRANSLATORS: {settings} lists the settings a sweep can vary, each "label (name)".
        raise ValueError(_("A sweep varies one of: {settings}; not {value}.").format(settings=labels,
                                                                                    value=short_repr(name)))


def validate_sweep(name: str, values: Iterable) -> list:
    """Return `values` as a list of plain numbers; raise TypeError/ValueError (naming the setting by its
    label) unless `name` can be swept over them."""
    validate_sweepable(name)
    setting = LAB_SETTINGS[name]
    label = setting.shown_label()
    if isinstance(values, str | bytes | dict) or not isinstance(values, Iterable):
        # TRANSLATORS: {label} is the setting swept ("hidden size"); {example} values such as 32, 128, 384.
        raise TypeError(_("A sweep of the {label} needs a list of 2 to {most} values such as [{example}], "
                          "not {value}.").format(label=label, most=MAX_VALUES, example=suggested_values(name),
                                             value=short_repr(values)))
    values = list(itertools.islice(values, MAX_VALUES + 1))  # a generator may never end
    if len(values) > MAX_VALUES:
        raise ValueError(_("A sweep of the {label} needs 2 to {most} values, not more.").format(
            label=label, most=MAX_VALUES))
    if len(values) < 2:
        raise ValueError(_("A sweep of the {label} needs 2 to {most} values, not {count}.").format(
            label=label, most=MAX_VALUES, count=len(values)))
    values = [validate_value(setting, value) for value in values]
    if len(set(values)) != len(values):
        raise ValueError(_("The values of the {label} repeat: each run would be the same.").format(
            label=label))
    return values


def parse_values(name: str, text: str) -> list:
    """Return the values typed in `text` ("32, 64, 128"; "off" is no clipping for θ; "rnn, gru" for the
    cell, a choice by its name or short label in any case), checked for `name`.

    Raises ValueError naming the setting and the value that is not allowed.
    """
    validate_sweepable(name)
    setting, values = LAB_SETTINGS[name], []
    label = setting.shown_label()
    if not isinstance(text, str):
        raise TypeError(_("The values of the {label} are typed as text such as {example}, not "
                          "{value}.").format(
            label=label, example=repr(suggested_values(name)), value=short_repr(text)))
    for word in text.replace(";", ",").replace(" ", ",").replace("，", ",").split(","):
        word = word.strip()
        if not word:
            continue
        if word.lower() in off_words() and setting.optional:
            values.append(None)
            continue
        if setting.choices:
            values.append(_choice(setting, word))
            continue
        try:
            number = float(word)
        except ValueError:
            raise ValueError(_("{word} is not a number: type the values of the {label} separated by commas, "
                               "e.g. 32, 64, 128.").format(word=repr(word), label=label)) from None
        if setting.kind is int:
            if not number.is_integer():
                raise ValueError(_("The {label} takes whole numbers, not {word}.").format(
                    label=label, word=word))
            number = int(number)
        values.append(number)
    return validate_sweep(name, values)


def _choice(setting, word: str) -> str:
    """Return the choice of `setting` that `word` names (its name or short label, in English or as shown
    now, any case)."""
    for choice, label in setting.choices.items():
        short = label.split(" (")[0]
        if word.lower() in (choice.lower(), short.lower(), _(short).lower()):
            return choice
    # TRANSLATORS: {choices} lists the names to type (rnn, gru, lstm).
    raise ValueError(_("{word} is not a {label}: type some of {choices} separated by commas.").format(
        word=repr(word), label=setting.shown_label(), choices=", ".join(setting.choices)))


def sweep_settings(settings: LabSettings, name: str, values: list) -> list[LabSettings]:
    """Return one `LabSettings` per value: `settings` with `name` set to that value."""
    if not isinstance(settings, LabSettings):
        raise TypeError(_("A sweep starts from a d2lmini.lab.LabSettings, not {type}.").format(
            type=type(settings).__name__))
    values = validate_sweep(name, values)
    return [replace(settings, **{name: value}) for value in values]


def plan_sweep(settings: LabSettings, name: str, values: list) -> list[LabPlan]:
    """Return one `d2lmini.lab.LabPlan` per value; raise ValueError if a run or the whole is too long.

    Each value is planned once (validated, corpus loaded, cost estimated: `plan_lab`); each run
    must pass `validate_click` and all of them together must stay under `MAX_SWEEP_SECONDS` on
    the reference machine (`d2lmini.lab.cost`). The panel runs these plans (`run_sweep(..., plans=...)`).
    """
    plans = []
    for run_settings in sweep_settings(settings, name, values):
        try:
            plans.append(plan_lab(run_settings, click_limit=MAX_CLICK_SECONDS))
        except ValueError as error:
            value = value_text(getattr(run_settings, name), name)
            # TRANSLATORS: {label} is the setting swept, {value} its value in this run, {error} why the run
            # is refused.
            raise ValueError(_("With the {label} at {value}: {error}").format(
                label=LAB_SETTINGS[name].shown_label(), value=value, error=error)) from None
    total = sum(plan.cost.seconds for plan in plans)
    if total > MAX_SWEEP_SECONDS:
        raise ValueError(_("This sweep would take about {total:.0f} s on the reference machine; a sweep is "
                           "kept under {most:.0f} s. Use fewer values or fewer minibatches.").format(
            total=total, most=MAX_SWEEP_SECONDS))
    return plans


def validate_sweep_time(settings: LabSettings, name: str, values: list) -> list[float]:
    """Return each run's reference estimate in seconds; raise ValueError as `plan_sweep` does."""
    return [plan.cost.seconds for plan in plan_sweep(settings, name, values)]


def run_sweep(settings: LabSettings, name: str, values: list,
              on_run: Callable[[int, LabResult], None] | None = None,
              on_checkpoint: Callable | None = None,
              should_stop: Callable[[], bool] | None = None,
              plans: list[LabPlan] | None = None) -> SweepResult:
    """Train one run per value of `name` (same seed and budget) and return the `SweepResult`.

    `on_run(index, result)` is called after each run, `on_checkpoint(history)` during each
    (as in `run_lab`), and `should_stop()` after every minibatch. An interrupt (■, Ctrl-C) or a
    stop request stops the sweep: the run it hit keeps what it trained, later values are not
    run, and `stopped` says so. A run that fails (divergence, a
    refused setting) is kept with its message and the sweep goes on. `plans` (from
    `plan_sweep`, one per value) are run as they are; without them each value is planned once,
    when its run starts.
    """
    runs = sweep_settings(settings, name, values) if plans is None else plans
    sweep = SweepResult(settings, name, [getattr(run.settings if plans else run, name) for run in runs])
    try:
        for index, run in enumerate(runs):
            if should_stop is not None and should_stop():
                break
            result = run_lab(run, on_checkpoint=on_checkpoint, should_stop=should_stop)
            sweep.results.append(result)
            if on_run is not None:
                on_run(index, result)
            if result.interrupted:
                break
    except KeyboardInterrupt:
        pass
    if len(sweep.results) < len(sweep.values) or (sweep.results and sweep.results[-1].interrupted):
        sweep.stopped = _("Stopped by an interrupt after {done} of {count} runs; the runs so far are "
                          "kept.").format(done=len(sweep.results), count=len(sweep.values))
    return sweep
