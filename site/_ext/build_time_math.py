"""A Sphinx extension: formulas written for MathJax, but no MathJax on the pages (issue 47).

The "build_time" HTML math renderer writes each formula as Sphinx's MathJax renderer does (with
MyST's amsmath environments), `<span class="math">\\(...\\)</span>` and `<div class="math">\\[...\\]</div>`,
and adds no MathJax script: tools/build_site.py then typesets them with tools/typeset_math.mjs, so that
a page is complete when it has loaded. conf.py selects it (`html_math_renderer = "build_time"`).
"""

from myst_parser.sphinx_ext.mathjax import html_visit_displaymath
from sphinx.ext.mathjax import html_visit_math

RENDERER = "build_time"


def setup(app):
    """Register the renderer (sphinx.ext.mathjax's page hook adds its script only for its own renderer)."""
    app.add_html_math_renderer(RENDERER, (html_visit_math, None), (html_visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
