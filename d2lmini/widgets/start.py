"""The warm-up panel of notebook 00: how a slider changes a softmax (temperature)."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

EXAMPLE_SCORES = {"e": 2.0, "a": 1.0, "o": 0.5, "z": -1.0}


def softmax_with_temperature(scores: dict[str, float], temperature: float) -> dict[str, float]:
    """Return softmax(score / temperature) for each key of `scores`; temperature must be > 0."""
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, not {temperature}")
    probs = torch.softmax(torch.tensor(list(scores.values()), dtype=torch.float64) / temperature, 0)
    return dict(zip(scores, probs.tolist(), strict=True))


def make_temperature_panel(scores: dict[str, float] = EXAMPLE_SCORES) -> widgets.VBox:
    """Return a slider for the temperature and a bar chart of the probabilities it gives.

    `panel.shown` holds the probabilities currently drawn (for tests).
    """
    slider = widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05,
                                    description="temperature", continuous_update=False,
                                    style={"description_width": "initial"},  # the label in full
                                    layout=widgets.Layout(width="420px"))
    output = widgets.Output()

    def redraw(_=None):
        probs = softmax_with_temperature(scores, slider.value)
        panel.shown = probs
        with output:
            output.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(4, 2.2))
            ax.bar(list(probs), list(probs.values()), color="tab:blue")
            ax.set_ylim(0, 1)
            ax.set_ylabel("probability")
            ax.set_title(f"temperature {slider.value:.2f}")
            plt.show()

    panel = widgets.VBox([slider, output])
    panel.slider, panel.shown = slider, {}
    slider.observe(redraw, names="value")
    redraw()
    return panel
