"""Interactive panels for the notebooks, one module per notebook.

Every panel is a thin layer of ipywidgets over a plain function that computes what
the panel shows; tests call those functions (and set widget values) without a browser.
"""
