"""Sphinx configuration of the course site (built by tools/build_site.py from a staged copy).

The stored notebooks are rendered as they are (never executed); each page gets the course's
links (Colab, Kaggle, Binder, download, report a problem) and the switch to the same page in the
other language from `_ext/course_links.py`. One configuration for both editions: English by
default, Simplified Chinese with `-D language=zh_CN` (its notebooks are the stored Chinese ones;
the site's own pages are translated by the catalogs in `locale/`, its title by `course_titles`).
"""

import logging
import os
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

with open(HERE / "pyproject.toml", "rb") as handle:
    REPOSITORY = tomllib.load(handle)["project"]["urls"]["Repository"]

project = "d2lmini: recurrent neural networks from scratch"
# The site's title in each edition (course_links sets `project` from it on the language built).
course_titles = {"en": project, "zh_CN": "d2lmini：从零实现循环神经网络"}
author = "the d2lmini authors"
copyright = "the d2lmini authors"
extensions = ["myst_nb", "course_links"]
exclude_patterns = ["_build", "**.ipynb_checkpoints", "pyproject.toml", "locale", "_downloads", "_print"]
templates_path = ["_templates"]

# The Chinese edition's translations of index.md and instructors.md: locale/<language>/LC_MESSAGES/
# <page>.po, one catalog per page (tools/build_site.py --update-catalogs); Sphinx compiles them.
locale_dirs = ["locale"]
gettext_compact = False
gettext_location = False  # no line numbers in the catalogs: they would change with every edit of a page
# Chinese search: Sphinx splits the pages' text into words with jieba, which also learns the course's
# terms from this list (tools/build_site.py writes it from docs/glossary.md); English ignores it.
html_search_options = {"dict": str(HERE / "search_words.txt")}
try:
    import jieba

    jieba.setLogLevel(logging.WARNING)  # not "Building prefix dict…" on every build
except ImportError:  # course_links stops a Chinese build without it: its pages would not be searchable
    pass

nb_execution_mode = "off"  # the stored outputs are the page; nothing runs at build time
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "mystnb.unknown_mime_type"]

# Formulas are typeset when the site is built: tools/build_site.py stages MathJax's fonts in
# _static/mathjax/ and, after Sphinx, typesets every page's formulas with mathjax-full in Node
# (tools/typeset_math.mjs), each with its speech text (an aria-label, English ClearSpeak, a bar read
# "given"; the Chinese edition's formulas marked lang="en": the speech rules have no Chinese). The
# pages load no MathJax (_ext/build_time_math.py), so a page is complete when it has loaded.
# Without the fonts (a build without --mathjax), MathJax from its CDN typesets them in the browser,
# with the same speech (_static/english-speech.js marks the Chinese edition's).
if (HERE / "_static" / "mathjax").is_dir():
    extensions.append("build_time_math")
    html_math_renderer = "build_time"
else:
    mathjax3_config = {
        "loader": {"load": ["a11y/semantic-enrich"]},
        "options": {"enableEnrichment": True, "sre": {"speech": "deep", "domain": "clearspeak",
                                                      "style": "VerticalLine_Given", "locale": "en"}},
    }

html_theme = "sphinx_book_theme"
html_title = "d2lmini"
html_static_path = ["_static"]
html_css_files = ["course.css"]
# The course as one PDF per edition (tools/build_site.py): the singlehtml builder with the tag "pdf",
# printed by Chromium; its print stylesheet and the CJK font it embeds (_print/) are that build's alone.
if "pdf" in tags:  # noqa: F821 (Sphinx gives conf.py its tags)
    html_static_path.append("_print")
    html_css_files.append("course-print.css")
html_extra_path = ["_downloads"]
html_theme_options = {
    "repository_url": REPOSITORY,
    "repository_branch": "main",
    "use_repository_button": True,
    # Off: its links are to _sources/, which the site does not ship (html_copy_source); each notebook's
    # page has the course's own "Download the notebook" (course_links), and a browser prints any page.
    "use_download_button": False,
    "use_fullscreen_button": False,
    "show_toc_level": 2,
    # The switch to this page in the other language, beside the theme's buttons (_templates/).
    "article_header_end": ["language-switch.html", "article-header-buttons.html"],
}
html_last_updated_fmt = None
html_show_sourcelink = False
# No _sources/: each notebook is already beside its page for download (_downloads/), once.
html_copy_source = False
course_repository = REPOSITORY
course_branch = os.environ.get("D2LMINI_SITE_BRANCH", "main")
