"""The lab's memory: every run of a session, what changed between runs, and an export (notebook 08).

`RunLog` keeps the `LabResult` of each run of the perplexity lab in order. `changed_settings`
says which settings differ from the run before; `curve_labels` names runs by what differs
among them, for the legend of overlaid curves; `RunLog.records()` flattens the runs into
plain rows (settings and results) for `to_csv` or `to_dataframe` and a student's own plot.
"""

import csv
import io
import math
from dataclasses import fields, replace

from d2lmini.i18n import N_, _
from d2lmini.lab import SAMPLE_SETTINGS, LabResult, LabSettings
from d2lmini.lab.sweep import SweepResult
from d2lmini.settings import EXPORT_PATH, LAB_SETTINGS, short_repr, validate_value

# The settings a run's summary and a curve's label show, in the order of the lab's controls.
SHOWN_SETTINGS = ("corpus", "cell", "num_hiddens", "lr", "optimizer", "batch_size", "num_steps", "theta",
                  "max_minibatches", "prefix", "temperature")
# Short names for labels and summaries ("hidden 128"), shown translated.
SHORT_NAMES = {"corpus": "", "cell": "",
               # TRANSLATORS: short for the hidden size, in "hidden 128".
               "num_hiddens": N_("hidden"),
               # TRANSLATORS: short for the learning rate, in "lr 0.01".
               "lr": N_("lr"), "optimizer": "",
               # TRANSLATORS: short for the batch size, in "batch 32".
               "batch_size": N_("batch"),
               # TRANSLATORS: short for the steps per minibatch, in "steps 35".
               "num_steps": N_("steps"), "theta": "θ",
               # TRANSLATORS: short for the number of minibatches trained, in "minibatches 600".
               "max_minibatches": N_("minibatches"), "prefix": N_("prefix"),
               "temperature": "T"}
# How settings are named in exported rows and which of the results go with them.
RESULT_COLUMNS = ("valid_perplexity", "valid_bits", "train_perplexity", "minibatches", "seconds",
                  "wall_seconds", "stopped", "sample")


def changed_settings(before: LabSettings | None, after: LabSettings) -> list[str]:
    """Return the names of the settings of `after` that differ from `before` (all shown ones if None)."""
    if before is None:
        return []
    return [item.name for item in fields(after) if getattr(before, item.name) != getattr(after, item.name)]


def short_label(label: str) -> str:
    """Return a choice's label without its explanation in brackets ("SGD (as in the book)" -> "SGD"), in the
    language d2lmini speaks now (the English is cut, then translated: "bundled corpus" -> its translation)."""
    return _(label.split(" (")[0])


def setting_text(settings: LabSettings, name: str) -> str:
    """Return one setting of a run as a panel writes it: "hidden 128", "θ off", "Adam", "GRU"."""
    value = getattr(settings, name)
    if name in ("corpus", "cell", "optimizer"):
        return short_label(LAB_SETTINGS[name].choices[value])
    if name == "theta" and value is None:
        # TRANSLATORS: no gradient clipping, in a run's settings (θ is the clipping threshold).
        return _("θ off")
    if name == "temperature" and value is None:
        return _("greedy")
    shown = repr(value) if name == "prefix" else f"{value:g}" if isinstance(value, float) else str(value)
    short = SHORT_NAMES.get(name, name)
    return f"{_(short) if short else short} {shown}".strip()


def curve_labels(results: list[LabResult], numbers: list[int]) -> list[str]:
    """Return a legend label for each run: its number and the settings that differ among `results`.

    Settings that only change the sample are left out (they do not change a curve); when the
    runs differ in nothing else, the label is the number alone.
    """
    varying = [name for name in SHOWN_SETTINGS if name not in SAMPLE_SETTINGS
               and len({repr(getattr(r.settings, name)) for r in results}) > 1]
    varying += [item.name for item in fields(LabSettings) if item.name not in SHOWN_SETTINGS
                and item.name not in SAMPLE_SETTINGS
                and len({repr(getattr(r.settings, item.name)) for r in results}) > 1]
    return [f"#{number}" + (": " + ", ".join(setting_text(r.settings, name) for name in varying)
                            if varying else "")
            for r, number in zip(results, numbers, strict=True)]


def result_values(result: LabResult) -> dict:
    """Return a run's results as plain values: validation perplexity and bits, training perplexity, ...

    `seconds` is the training clock, `wall_seconds` the whole run (evaluation and sample too). A
    run stopped part way (an interrupt) reports its last checkpoint's validation perplexity;
    `stopped` says why it stopped (None for a finished run).
    """
    valid = result.valid_perplexity
    if valid is None and result.history.valid_perplexity:
        valid = result.history.valid_perplexity[-1]
    train = result.train_perplexity
    if train is None and result.history.train_perplexity:
        train = result.history.train_perplexity[-1]
    return {"valid_perplexity": valid,
            "valid_bits": None if valid is None or not valid > 0 else math.log2(valid),
            "train_perplexity": train,
            "minibatches": result.minibatches,
            "seconds": round(result.seconds, 3),
            "wall_seconds": round(result.wall_seconds, 3),
            "stopped": result.error,
            "sample": result.sample}


class RunLog:
    """Every run of a lab session, oldest first; `clear()` forgets them.

    Only the newest run keeps its trained model (to resample from it); older runs keep
    their settings, history and numbers.
    """

    def __init__(self):
        self.results: list[LabResult] = []
        self.numbers: list[int] = []
        self._next = 1

    def __len__(self) -> int:
        return len(self.results)

    def add(self, result: LabResult) -> int:
        """Keep `result` as the newest run and return its number (1, 2, ... since the last clear).

        Raises TypeError for anything but one run's `LabResult` (a sweep's runs are added one by one).
        """
        if not isinstance(result, LabResult) or not isinstance(result.settings, LabSettings):
            if isinstance(result, SweepResult):
                template = _("A run log keeps the LabResult of one run (what run_lab returns), not {value}. "
                             "Add a sweep's runs one by one: for run in sweep.results: log.add(run).")
            else:
                template = _("A run log keeps the LabResult of one run (what run_lab returns), not {value}.")
            raise TypeError(template.format(value=short_repr(result)))
        if self.results:
            self.results[-1] = replace(self.results[-1], model=None)
        self.results.append(result)
        self.numbers.append(self._next)
        self._next += 1
        return self.numbers[-1]

    def clear(self) -> None:
        """Forget every run; numbering starts again at 1."""
        self.results, self.numbers, self._next = [], [], 1

    @property
    def next_number(self) -> int:
        """The number the next run will get."""
        return self._next

    def latest(self) -> LabResult | None:
        """Return the newest run, or None."""
        return self.results[-1] if self.results else None

    def changes(self, index: int) -> list[str]:
        """Return the settings in which run `index` (0-based) differs from the run before it."""
        before = self.results[index - 1].settings if index > 0 else None
        return changed_settings(before, self.results[index].settings)

    def records(self) -> list[dict]:
        """Return one plain dict per run: its number, every setting (`data_dir` as text) and its results."""
        rows = []
        for number, result in zip(self.numbers, self.results, strict=True):
            row = {"run": number}
            for item in fields(result.settings):
                value = getattr(result.settings, item.name)
                plain = value is None or isinstance(value, int | float | str)
                row[item.name] = value if plain else str(value)
            row.update(result_values(result))
            rows.append(row)
        return rows

    def to_csv(self, path=None) -> str:
        """Return the runs as CSV text (a header and one line per run); also write it to `path` if given.

        A `path` that is not a file name raises TypeError naming it; a file that cannot be written, OSError.
        """
        if path is not None:
            path = validate_value(EXPORT_PATH, path)
        rows = self.records()
        columns = ["run", *(item.name for item in fields(LabSettings)), *RESULT_COLUMNS]
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        text = buffer.getvalue()
        if path is not None:
            with open(path, "w", encoding="utf-8", newline="") as file:
                file.write(text)
        return text

    def to_dataframe(self):
        """Return the runs as a pandas DataFrame (one row per run); needs pandas (Colab has it)."""
        try:
            import pandas  # optional: only this export needs it
        except ImportError:
            raise ImportError(_("to_dataframe needs pandas (pip install pandas); to_csv() needs nothing "
                                "more.")) from None
        return pandas.DataFrame(self.records())
