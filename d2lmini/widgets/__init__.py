"""Interactive panels for the notebooks, one module per notebook.

Every panel is a thin layer of ipywidgets over a plain function that computes what
the panel shows; tests call those functions (and set widget values) without a browser.
The panels use only ipywidgets APIs present in both 7.7 (Google Colab) and 8.x.
"""

import contextlib


@contextlib.contextmanager
def controls_disabled(controls):
    """Disable every widget in `controls` while the `with` block runs, then restore each one's state.

    A panel wraps its computation in this, so a student cannot move a control mid-run and
    get a result that belongs to a value the control no longer shows.
    """
    before = [control.disabled for control in controls]
    for control in controls:
        control.disabled = True
    try:
        yield
    finally:
        for control, was_disabled in zip(controls, before, strict=True):
            control.disabled = was_disabled
