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

from d2lmini.lab import MAX_CLICK_SECONDS, LabPlan, LabResult, LabSettings, plan_lab, run_lab
from d2lmini.settings import LAB_SETTINGS, short_repr, validate_value

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
    setting `name` by its short label ("GRU"), else the number."""
    if value is None:
        return "off"
    if isinstance(value, str):
        choices = LAB_SETTINGS[name].choices if name in LAB_SETTINGS else {}
        return choices.get(value, value).split(" (")[0]
    return f"{value:g}"


def validate_sweepable(name: str) -> None:
    """Raise ValueError, listing the settings a sweep can vary, unless `name` is one of them."""
    if not isinstance(name, str) or name not in SWEEPABLE:
        labels = ", ".join(f"{LAB_SETTINGS[n].label} ({n})" for n in SWEEPABLE)
        raise ValueError(f"A sweep varies one of: {labels}; not {short_repr(name)}.")


def validate_sweep(name: str, values: Iterable) -> list:
    """Return `values` as a list of plain numbers; raise TypeError/ValueError (naming the setting by its
    label) unless `name` can be swept over them."""
    validate_sweepable(name)
    setting = LAB_SETTINGS[name]
    if isinstance(values, str | bytes | dict) or not isinstance(values, Iterable):
        raise TypeError(f"A sweep of the {setting.label} needs a list of 2 to {MAX_VALUES} values such as "
                        f"[{SUGGESTED_VALUES[name]}], not {short_repr(values)}.")
    values = list(itertools.islice(values, MAX_VALUES + 1))  # a generator may never end
    if not 2 <= len(values) <= MAX_VALUES:
        raise ValueError(f"A sweep of the {setting.label} needs 2 to {MAX_VALUES} values, "
                         f"not {len(values) if len(values) <= MAX_VALUES else 'more'}.")
    values = [validate_value(setting, value) for value in values]
    if len(set(values)) != len(values):
        raise ValueError(f"The values of the {setting.label} repeat: each run would be the same.")
    return values


def parse_values(name: str, text: str) -> list:
    """Return the values typed in `text` ("32, 64, 128"; "off" is no clipping for θ; "rnn, gru" for the
    cell, a choice by its name or short label in any case), checked for `name`.

    Raises ValueError naming the setting and the value that is not allowed.
    """
    validate_sweepable(name)
    setting, values = LAB_SETTINGS[name], []
    if not isinstance(text, str):
        raise TypeError(f"The values of the {setting.label} are typed as text such as "
                        f"{SUGGESTED_VALUES[name]!r}, not {short_repr(text)}.")
    for word in text.replace(";", ",").replace(" ", ",").split(","):
        word = word.strip()
        if not word:
            continue
        if word.lower() == "off" and setting.optional:
            values.append(None)
            continue
        if setting.choices:
            values.append(_choice(setting, word))
            continue
        try:
            number = float(word)
        except ValueError:
            raise ValueError(f"{word!r} is not a number: type the values of the {setting.label} separated "
                             "by commas, e.g. 32, 64, 128.") from None
        if setting.kind is int:
            if not number.is_integer():
                raise ValueError(f"The {setting.label} takes whole numbers, not {word}.")
            number = int(number)
        values.append(number)
    return validate_sweep(name, values)


def _choice(setting, word: str) -> str:
    """Return the choice of `setting` that `word` names (its name or short label, any case)."""
    for choice, label in setting.choices.items():
        if word.lower() in (choice.lower(), label.split(" (")[0].lower()):
            return choice
    raise ValueError(f"{word!r} is not a {setting.label}: type some of "
                     f"{', '.join(setting.choices)} separated by commas.")


def sweep_settings(settings: LabSettings, name: str, values: list) -> list[LabSettings]:
    """Return one `LabSettings` per value: `settings` with `name` set to that value."""
    if not isinstance(settings, LabSettings):
        raise TypeError(f"A sweep starts from a d2lmini.lab.LabSettings, not {type(settings).__name__}.")
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
            raise ValueError(f"With the {LAB_SETTINGS[name].label} at {value}: {error}") from None
    total = sum(plan.cost.seconds for plan in plans)
    if total > MAX_SWEEP_SECONDS:
        raise ValueError(f"This sweep would take about {total:.0f} s on the reference machine; a sweep is "
                         f"kept under {MAX_SWEEP_SECONDS:.0f} s. Use fewer values or fewer minibatches.")
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
        sweep.stopped = (f"Stopped by an interrupt after {len(sweep.results)} of {len(sweep.values)} runs; "
                         "the runs so far are kept.")
    return sweep
