"""Sphinx configuration of the course site (built by tools/build_site.py from a staged copy).

The stored notebooks are rendered as they are (never executed); each page gets the course's
links (Colab, Kaggle, Binder, download, report a problem) from `_ext/course_links.py`.
"""

import os
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

with open(HERE / "pyproject.toml", "rb") as handle:
    REPOSITORY = tomllib.load(handle)["project"]["urls"]["Repository"]

project = "d2lmini: recurrent neural networks from scratch"
author = "the d2lmini authors"
copyright = "the d2lmini authors"
extensions = ["myst_nb", "course_links"]
exclude_patterns = ["_build", "**.ipynb_checkpoints", "pyproject.toml"]

nb_execution_mode = "off"  # the stored outputs are the page; nothing runs at build time
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "mystnb.unknown_mime_type"]

# MathJax from the npm registry, served with the site (tools/build_site.py copies it in), so
# the pages render their math offline; without it, Sphinx's default address is used.
if (HERE / "_static" / "mathjax" / "tex-mml-chtml.js").exists():
    mathjax_path = "mathjax/tex-mml-chtml.js"
# Speech for every formula: MathJax's semantic enrichment (the speech rule engine, English) gives each
# formula an aria-label a screen reader reads, beside the assistive MathML that only some read.
mathjax3_config = {
    "loader": {"load": ["a11y/semantic-enrich"]},
    "options": {"enableEnrichment": True, "sre": {"speech": "deep", "domain": "clearspeak", "locale": "en"}},
}

html_theme = "sphinx_book_theme"
html_title = "d2lmini"
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_extra_path = ["_downloads"]
html_theme_options = {
    "repository_url": REPOSITORY,
    "repository_branch": "main",
    "use_repository_button": True,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "show_toc_level": 2,
}
html_last_updated_fmt = None
html_show_sourcelink = False
course_repository = REPOSITORY
course_branch = os.environ.get("D2LMINI_SITE_BRANCH", "main")
