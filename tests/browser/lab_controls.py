"""The perplexity lab's sliders as the browser tests set them (tests/test_browser_lab.py and _access.py)."""

# The longest run the lab accepts (it refuses settings estimated past 15 s): 3,000 minibatches at
# the default sizes, 14.7 s where the kernel had a core to itself.
LONG_RUN = {"minibatches": "3000"}


def slider_readout(page, label: str):
    """The editable number beside the lab's slider whose description is `label`."""
    slider = page.locator(".perplexity-lab .widget-slider", has=page.locator("label", has_text=label))
    return slider.locator(".widget-readout")


def type_into(readout, value: str) -> None:
    """Type `value` into a slider's readout and press Enter, as a keyboard user sets it."""
    readout.fill(value)
    readout.press("Enter")


def set_sliders(page, values: dict[str, str]) -> None:
    """Set each lab slider named in `values` (description -> value) through its readout."""
    for label, value in values.items():
        type_into(slider_readout(page, label), value)
