"""What the perplexity lab of notebook 08 shows, as PNG and HTML: curves, a sweep, numbers, the runs table.

Plain functions of results (`d2lmini.lab.LabResult`, `d2lmini.lab.runs.RunLog`,
`d2lmini.lab.sweep.SweepResult`); the panel in `d2lmini.widgets.lab` puts them on the page and
tests call them directly.
"""

import html
import math

from matplotlib.figure import Figure

from d2lmini.i18n import N_, _, ngettext
from d2lmini.lab import LabResult, baseline_name, cell_name, describe_settings
from d2lmini.lab.runs import SHOWN_SETTINGS, RunLog, curve_labels, result_values, setting_text
from d2lmini.lab.sweep import SweepResult, value_text
from d2lmini.palette import REFERENCE_LINE_COLOUR, series_style
from d2lmini.plot import LineLabels, figure_png
from d2lmini.settings import LAB_SETTINGS
from d2lmini.train import History
from d2lmini.verdicts import judge_perplexity

PLOT_WIDTH_PX, PLOT_HEIGHT_PX, PLOT_DPI = 576, 306, 90
OK_COLOUR, WARN_COLOUR, ERROR_COLOUR = "#225522", "#a35200", "#b30000"
# How many of the newest runs the chart overlays.
MAX_CURVES = 5
# How many of the newest runs the table lists (all of them are exported).
MAX_ROWS = 10
HIGHLIGHT = "background:#fff3b0"
# What marks a changed setting besides the highlight, which alone is colour (1.1:1 on white).
CHANGED_MARK = "✱"
BASELINE_STYLES = ("--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)), (0, (1, 3)))
CURVES_TITLE = N_("Validation perplexity, run by run")
# TRANSLATORS: a line on the chart: the synthetic source's entropy floor, which no model can go below.
ENTROPY_FLOOR_LINE = N_("entropy floor (a limit)")


def _figure() -> tuple[Figure, object]:
    figure = Figure(figsize=(PLOT_WIDTH_PX / PLOT_DPI, PLOT_HEIGHT_PX / PLOT_DPI), dpi=PLOT_DPI)
    return figure, figure.subplots()


def _baseline_lines(ax, lines: dict[str, float], in_legend: bool = False) -> None:
    """Draw each baseline as a grey horizontal line, named beside it or (`in_legend`) in the legend."""
    for (name, value), style in zip(lines.items(), BASELINE_STYLES, strict=False):
        ax.axhline(value, linestyle=style, color=REFERENCE_LINE_COLOUR, linewidth=1,
                   label=f"{baseline_name(name)} {value:.2f}" if in_legend else None)
    if not in_legend:  # right of the plot, moved apart, and only for lines in sight
        LineLabels(ax, {f"{baseline_name(name)} {value:.2f}": value for name, value in lines.items()},
                   fontsize=7)


def curves_png(curves: list[tuple[str, History]], baselines: dict[str, float], floor: float | None = None,
               title: str = CURVES_TITLE) -> bytes:
    """Return `curves_figure(...)` as a PNG (576 x 306 px)."""
    return figure_png(curves_figure(curves, baselines, floor, title), dpi=PLOT_DPI)


def curves_figure(curves: list[tuple[str, History]], baselines: dict[str, float], floor: float | None = None,
                  title: str = CURVES_TITLE) -> Figure:
    """Return a figure of the validation curves of several runs, newest last, with baselines.

    Each run has its own colour, line style and marker (`d2lmini.palette.series_style`).
    `curves` holds (label, history) pairs; the newest (last) run is drawn thick, with its
    training curve dotted in its colour. The y-axis runs from 1 to a little above the unigram baseline, where
    runs are told apart (a curve far above it leaves the chart). Where a curve holds estimates
    (`History.valid_estimated`: cold-started streams, at the checkpoints before the last) the
    title says so; a run's last point is read as one stream, as the baselines are. The `title` is shown
    translated when the catalog knows it (the default does).
    """
    figure, ax = _figure()
    title = _(title)
    lines = dict(baselines)
    if floor is not None:
        lines[ENTROPY_FLOOR_LINE] = floor
    _baseline_lines(ax, lines)
    for index, (name, history) in enumerate(curves):
        newest = index == len(curves) - 1
        style = series_style(index)
        ax.plot(history.minibatches, history.valid_perplexity, linewidth=2 if newest else 1.2, markersize=3,
                label=name, **style)
        if newest and history.train_perplexity:
            ax.plot(history.minibatches, history.train_perplexity, linestyle=(0, (1, 1)),
                    color=style["color"], linewidth=1, label=_("(its training text)"))
    shown = [v for _name, h in curves for v in h.valid_perplexity + h.train_perplexity]
    finite = [v for v in shown if math.isfinite(v)]
    # Zoomed on the runs: a little above the unigram line (curves far above it leave the chart).
    top = 1.15 * baselines["unigram"] if "unigram" in baselines else max(finite, default=10.0) * 1.25
    ax.set_ylim(1, top)
    ax.set_xlim(0, None if any(h.minibatches for _name, h in curves) else 1)
    ax.set_xlabel(_("minibatches trained"))
    ax.set_ylabel(_("perplexity"))
    if any(any(h.valid_estimated) for _name, h in curves):
        title += "\n" + _("(points before a run's last: an estimate from cold-started streams; its last: one "
                          "stream)")
    ax.set_title(title, fontsize=10 if "\n" not in title else 8)
    if curves:
        ax.legend(loc="upper right", fontsize=7)
    return figure


def curves_alt(curves: list, baselines: dict[str, float], floor: float | None = None) -> str:
    """Return the alt text of `curves_png`'s chart: each run's first and last validation perplexities."""
    runs = []
    for name, history in curves:
        values = [v for v in history.valid_perplexity if math.isfinite(v)]
        if values:
            # TRANSLATORS: one run's curve: {name} is its label ("#2: hidden 256").
            runs.append(_("{name} from {first:.3g} to {last:.3g} over {minibatches} minibatches").format(
                name=name, first=values[0], last=values[-1], minibatches=history.minibatches[-1]))
    lines = dict(baselines, **({} if floor is None else {"entropy floor": floor}))
    shown = "; ".join(runs) or _("no run yet")
    if lines:
        # TRANSLATORS: {runs} lists each run's curve, separated by "; "; {lines} the baselines with their
        # perplexities ("uniform 27, unigram 17.4").
        return _("Validation perplexity against minibatches trained: {runs}. Lines: {lines}.").format(
            runs=shown,
            lines=", ".join(f"{baseline_name(name)} {value:.3g}" for name, value in lines.items()))
    return _("Validation perplexity against minibatches trained: {runs}.").format(runs=shown)


def sweep_alt(sweep: SweepResult, lines: dict[str, float]) -> str:
    """Return the text alternative of `sweep_png`'s chart: the final validation perplexity of each value."""
    points = ", ".join(f"{value_text(v, sweep.name)}: " + (_("no number") if r.valid_perplexity is None
                                                   or not math.isfinite(r.valid_perplexity)
                                                   else f"{r.valid_perplexity:.3g}")
                       for v, r in zip(sweep.values, sweep.results, strict=False))
    label = LAB_SETTINGS[sweep.name].shown_label()
    points = points or _("none yet")
    if lines:
        # TRANSLATORS: {label} is the setting swept; {points} each value with its perplexity ("32: 5.1, ...");
        # {lines} the baselines with their perplexities.
        return _("Sweep of the {label}, final validation perplexity: {points}. Lines: {lines}.").format(
            label=label, points=points,
            lines=", ".join(f"{baseline_name(name)} {value:.3g}" for name, value in lines.items()))
    return _("Sweep of the {label}, final validation perplexity: "
             "{points}.").format(label=label, points=points)


def sweep_png(sweep: SweepResult, lines: dict[str, float]) -> bytes:
    """Return `sweep_figure(sweep, lines)` as a PNG."""
    return figure_png(sweep_figure(sweep, lines), dpi=PLOT_DPI)


def sweep_figure(sweep: SweepResult, lines: dict[str, float]) -> Figure:
    """Return the figure of a sweep: final validation perplexity against the swept value, with `lines`.

    `lines` are the baselines to compare with (the n-gram and PPMd). Numbers spread over orders
    of magnitude go on a log axis; a sweep including "off" (θ) or of named choices (the cell) puts
    the values side by side.
    """
    figure, ax = _figure()
    _baseline_lines(ax, lines, in_legend=True)
    values = sweep.values[:len(sweep.results)]
    points = [(value, r.valid_perplexity) for value, r in zip(values, sweep.results, strict=True)]
    # "off" and a named choice (a cell) have no place on a log axis
    categorical = any(value is None or isinstance(value, str) for value in sweep.values)
    if categorical:
        where = {value: index for index, value in enumerate(sweep.values)}
        ax.set_xticks(range(len(sweep.values)), labels=[value_text(v, sweep.name) for v in sweep.values])
    finished = [(v, p) for v, p in points if p is not None and math.isfinite(p)]
    xs = [where[v] if categorical else v for v, _ppl in finished]
    legend = (_("validation (one stream)") if sweep.name == "cell"
              else _("{cell}, validation (one stream)").format(cell=cell_name(sweep.settings.cell)))
    ax.plot(xs, [p for _value, p in finished], label=legend, **series_style(0))
    for x, (_value, p) in zip(xs, finished, strict=True):
        ax.annotate(f"{p:.2f}", (x, p), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
    failed = [v for v, p in points if p is None or not math.isfinite(p)]
    if not categorical:
        ax.set_xscale("log")
        ax.set_xticks(sweep.values, labels=[value_text(v, sweep.name) for v in sweep.values])
        ax.minorticks_off()
    top = max([p for _value, p in finished] + list(lines.values()), default=10.0)
    ax.set_ylim(1, top * 1.3)
    label = LAB_SETTINGS[sweep.name].shown_label()
    ax.set_xlabel(label)
    ax.set_ylabel(_("final validation perplexity"))
    if failed:
        # TRANSLATORS: {values} lists the values whose runs ended without a number.
        title = _("Sweep of the {label} (no number for {values})").format(
            label=label, values=", ".join(value_text(v, sweep.name) for v in failed))
    else:
        title = _("Sweep of the {label}").format(label=label)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper right", fontsize=7)
    return figure


def numbers_html(result: LabResult) -> str:
    """Return a compact table of a run's perplexity and bits per character beside the baselines."""
    values, model = result_values(result), cell_name(result.settings.cell)
    columns = []
    # TRANSLATORS: column headings: {model} is "RNN", "GRU" or "LSTM"; {name} a baseline ("unigram").
    if values["train_perplexity"] is not None:
        columns.append((_("{model}, training").format(model=model), values["train_perplexity"]))
    if values["valid_perplexity"] is not None:
        columns.append((_("{model}, validation").format(model=model), values["valid_perplexity"]))
    columns += [(_("{name} baseline").format(name=baseline_name(name)), value)
                for name, value in result.baselines.items()]
    if result.floor is not None:
        columns.append((_("entropy floor (no model can beat it)"), result.floor))
    columns = [(name, ppl) for name, ppl in columns if math.isfinite(ppl) and ppl > 0]
    head = "".join(f"<th style='padding:0 6px'>{html.escape(name)}</th>" for name, _ppl in columns)
    ppl = "".join(f"<td style='text-align:right'>{value:.2f}</td>" for _name, value in columns)
    bits = "".join(f"<td style='text-align:right'>{math.log2(value):.3f}</td>" for _name, value in columns)
    perplexity, bits_per_char = _("perplexity"), _("bits/char")
    return (f"<table style='font-size:12px'><tr><th></th>{head}</tr><tr><td>{perplexity}</td>{ppl}</tr>"
            f"<tr><td>{bits_per_char}</td>{bits}</tr></table>")


def verdict_html(result: LabResult, strong: dict[str, float] | None = None) -> str:
    """Return the coloured message for a finished run: green only when it beats a uniform guess.

    The run is judged by `d2lmini.verdicts.judge_perplexity` beside its baselines and `strong`
    (name: perplexity, see `d2lmini.lab.strong_baselines`), the baselines an expert would pick;
    the message says which of them the run beats and which are still ahead of it.
    """
    settings, strong = result.settings, strong or {}
    verdict = judge_perplexity(result.valid_perplexity, {**result.baselines, **strong})
    fields = {"minibatches": result.minibatches, "seconds": result.seconds,
              "settings": describe_settings(settings), "perplexity": result.valid_perplexity,
              "bits": result.valid_bits}
    below = [name for name in verdict.beaten if name in result.baselines]
    if verdict.status == "exploded":
        colour = WARN_COLOUR
        # TRANSLATORS: a finished run; {settings} is its settings in one line ("bundled corpus, RNN, hidden
        # size 128, ..."), {bits} its validation cross-entropy in bits.
        text = _("Trained {minibatches} minibatches in {seconds:.1f} s ({settings}). Validation perplexity "
                 "{perplexity:.2f} = {bits:.3f} bits per character (one stream, as the baselines read it): "
                 "worse than guessing uniformly among the characters (perplexity {uniform:.2f}). This model "
                 "has not learned yet: try more minibatches, a larger batch or a different learning "
                 "rate.").format(
            uniform=result.baselines["uniform"], **fields)
    else:
        colour = OK_COLOUR
        if below:
            # TRANSLATORS: a finished run; {settings} is its settings in one line; {baselines} names the
            # baselines beaten ("uniform and the unigram").
            text = ngettext("Trained {minibatches} minibatches in {seconds:.1f} s ({settings}). Validation "
                            "perplexity {perplexity:.2f} = {bits:.3f} bits per character (one stream, as the "
                            "baselines read it), below the {baselines} baseline.",
                            "Trained {minibatches} minibatches in {seconds:.1f} s ({settings}). Validation "
                            "perplexity {perplexity:.2f} = {bits:.3f} bits per character (one stream, as the "
                            "baselines read it), below the {baselines} baselines.", len(below)).format(
                baselines=_joined(_("{first} and the {second}"), [baseline_name(name) for name in below]),
                **fields)
        else:
            # TRANSLATORS: a finished run; {settings} is its settings in one line.
            text = _("Trained {minibatches} minibatches in {seconds:.1f} s ({settings}). Validation "
                     "perplexity {perplexity:.2f} = {bits:.3f} bits per character (one stream, as the "
                     "baselines read it), not yet below the unigram baseline.").format(**fields)
        # TRANSLATORS: a baseline with its perplexity, in "It also beats the PPMd compressor (3.87)".
        beaten = [_("the {name} ({perplexity:.2f})").format(name=baseline_name(name), perplexity=strong[name])
                  for name in verdict.beaten if name in strong]
        ahead = [_("the {name} ({perplexity:.2f})").format(name=baseline_name(name), perplexity=strong[name])
                 for name in verdict.missed if name in strong]
        if beaten:
            # TRANSLATORS: {baselines} names the strong baselines the run beats ("the Kneser-Ney 5-gram (4.12)
            # and the PPMd compressor (3.87)").
            text = _sentences(text, _("It also beats {baselines}.").format(
                baselines=_joined(_("{first} and {second}"), beaten)))
        if ahead:
            text = _sentences(text, _("Still ahead of it: {baselines}.").format(
                baselines=_joined(_("{first} and {second}"), ahead)))
    if result.stopped_at_time_limit:
        text = _sentences(text, _("Stopped at the {seconds:g} s safety limit before the {minibatches} "
                                  "minibatches asked for.").format(seconds=settings.max_seconds,
                                                       minibatches=settings.max_minibatches))
    return f"<p style='color:{colour};margin:2px 0'>{html.escape(text)}</p>"


def _joined(pair: str, items: list[str]) -> str:
    """Return `items` joined two by two with the template `pair` ("{first} and {second}")."""
    text = items[0] if items else ""
    for item in items[1:]:
        text = pair.format(first=text, second=item)
    return text


def _sentences(first: str, second: str) -> str:
    """Return two sentences one after the other, as the language d2lmini speaks now writes them."""
    # TRANSLATORS: two sentences, one after the other (Chinese needs no space between them).
    return _("{first} {second}").format(first=first, second=second)


def _changed(text: str) -> str:
    """Return `text` (HTML) marked as changed: a symbol that is read out, and a highlight."""
    return f"<span style='{HIGHLIGHT}'>{CHANGED_MARK}&nbsp;{text}</span>"


def _settings_cell(result: LabResult, changed: list[str]) -> str:
    parts = []
    for name in SHOWN_SETTINGS:
        text = html.escape(setting_text(result.settings, name))
        parts.append(_changed(text) if name in changed else text)
    others = [name for name in changed if name not in SHOWN_SETTINGS]
    parts += [_changed(html.escape(setting_text(result.settings, n))) for n in others]
    return " · ".join(parts)


def _number(value, digits: int) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def runs_html(runs: RunLog) -> str:
    """Return the table of the session's runs: settings (what changed from the run before marked ✱),
    validation perplexity and bits, training perplexity, minibatches, time and the start of the sample."""
    if not len(runs):
        none = _("No runs yet: each run you train is listed here.")
        return f"<p style='color:#555;margin:2px 0'>{none}</p>"
    rows = []
    first = max(0, len(runs) - MAX_ROWS)
    for index in range(first, len(runs)):
        result, number = runs.results[index], runs.numbers[index]
        values = result_values(result)
        sample = (values["sample"] or "")[:40]
        status = "" if result.error is None else (
            " <i>" + _("(stopped)") + "</i>" if result.interrupted or result.history.minibatches
            else " <i>" + _("(no result)") + "</i>")
        rows.append(f"<tr class='lab-run'><th scope='row'>#{number}{status}</th>"
                    f"<td style='font-size:11px'>{_settings_cell(result, runs.changes(index))}</td>"
                    f"<td style='text-align:right'><b>{_number(values['valid_perplexity'], 2)}</b></td>"
                    f"<td style='text-align:right'>{_number(values['valid_bits'], 3)}</td>"
                    f"<td style='text-align:right'>{_number(values['train_perplexity'], 2)}</td>"
                    f"<td style='text-align:right'>{values['minibatches']}</td>"
                    f"<td style='text-align:right'>{values['wall_seconds']:.1f} s</td>"
                    f"<td><code>{html.escape(sample)}</code></td></tr>")
    earlier = ("<p style='color:#555;margin:2px 0'>" + ngettext(
        "{count} earlier run not shown (all are in the export).",
        "{count} earlier runs not shown (all are in the export).", first).format(count=first) + "</p>"
        if first else "")
    # TRANSLATORS: the columns of the runs table; {mark} is the symbol that marks a changed setting.
    head = "".join(f"<th scope='col'>{name}</th>" for name in (
        _("run"), _("settings (changed from the run before: marked {mark})").format(mark=CHANGED_MARK),
        _("validation perplexity"), _("bits/char"), _("training perplexity"), _("minibatches"), _("time"),
        _("sample")))
    head = f"<tr>{head}</tr>"
    return f"<table class='lab-runs-table' style='font-size:12px'>{head}{''.join(rows)}</table>{earlier}"


def overlay(runs: RunLog, live: LabResult | None = None) -> list[tuple[str, History]]:
    """Return the (label, history) pairs the chart overlays: the newest runs, then `live` (a run in progress).

    Each label is the run's number and what differs among the runs shown.
    """
    keep = MAX_CURVES - (live is not None)
    results, numbers = runs.results[-keep:], runs.numbers[-keep:]
    if live is not None:
        results, numbers = [*results, live], [*numbers, runs.next_number]
    labels = curve_labels(results, numbers) if results else []
    return [(_("{label} (training…)").format(label=label) if result is live else label, result.history)
            for label, result in zip(labels, results, strict=True)
            if result.history.minibatches or result is live]
