"""A Sphinx extension: the course's links on every page of the site, in the edition's language.

A notebook's page opens with "Open in Colab / Kaggle / Binder / download the notebook" (the
Chinese edition's open `notebooks/zh/…`); every page ends with "Report a problem with this page",
a new issue in the repository that names the page. The addresses come from `course_repository`
and `course_branch` in conf.py. The site has two editions (tools/build_site.py): English at the
root, Simplified Chinese (`language = "zh_CN"`) under `zh/`. Every page has a switch to the same
page in the other language (`_templates/language-switch.html`, and `<link rel="alternate">`); the
home page's `{course-editions}` directive links both editions, the first notebook's launch
links and the whole course (the edition's folder of notebooks) on Binder. A link in a page's source
to a file that is a page of the other edition (notebooks/zh/*.ipynb from an English notebook,
../NN.ipynb from a Chinese one, a site page's translation catalog from that page) becomes a link to
that page there. A link to an edition's PDF of the whole course by its name (`PDFS`; written by
tools/build_site.py into that edition's folder after Sphinx) becomes a link to it from the page.
"""

import html
import importlib.util
import posixpath
from pathlib import Path
from urllib.parse import quote, urlencode

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx import addnodes
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform

# What the links say in each edition; `lang` is the edition's HTML language tag.
LABELS = {
    "en": {
        "lang": "en", "name": "English", "folder": "",
        "colab": "Open in Colab", "kaggle": "Open in Kaggle", "binder": "Open in Binder",
        "download": "Download the notebook", "report": "Report a problem with this page",
        "report_title": "Site: a problem with {page}",
        "report_body": "Page: {page}\n\nWhat is wrong, and where on the page:\n",
        "switch": "This page in English", "editions": "This course in",
        "start": "Start with notebook 00", "colon": ": ", "whole": "The whole course on Binder",
    },
    "zh_CN": {
        "lang": "zh-CN", "name": "简体中文", "folder": "zh",
        "colab": "在 Colab 中打开", "kaggle": "在 Kaggle 中打开", "binder": "在 Binder 中打开",
        "download": "下载笔记本", "report": "报告本页的问题",
        "report_title": "Site (中文版): a problem with {page}",
        "report_body": "页面：{page}\n\n哪里有问题，在页面的什么位置：\n",
        "switch": "本页的中文版", "editions": "本课程的版本",
        "start": "从笔记本 00 开始", "colon": "：", "whole": "在 Binder 中打开整套课程",
    },
}
# Each edition's PDF of the whole course, in its folder of the site (tools/build_site.py prints them).
PDFS = {"en": "d2lmini-course.pdf", "zh_CN": "d2lmini-course-zh.pdf"}
# Where each page's source lies in the repository (its links are relative to it), per edition.
# The Chinese site pages' text is docs/instructors.md and site/index.md translated, links unchanged.
CATALOG_FOLDER = "site/locale/zh_CN/LC_MESSAGES"
SITE_PAGE_SOURCES = {"index": "site/index.md", "instructors": "docs/instructors.md"}


def edition(config) -> str:
    """Return the edition being built: "zh_CN" for a Chinese build, else "en"."""
    return "zh_CN" if (config.language or "en").replace("-", "_").startswith("zh") else "en"


def other(language: str) -> str:
    return "en" if language == "zh_CN" else "zh_CN"


def notebook_path(language: str, name: str) -> str:
    """The repository path of the notebook `name` (02_x.ipynb) in the `language` edition."""
    return f"notebooks/{name}" if language == "en" else f"notebooks/zh/{name}"


def notebook_links(repository: str, branch: str, notebook: str,
                   language: str = "en") -> list[tuple[str, str]]:
    """Return (label, address) of each place that opens `notebook` (a path such as notebooks/02_x.ipynb),
    labelled in `language`."""
    owner_repo = repository.removeprefix("https://github.com/")
    on_github = f"{repository}/blob/{branch}/{notebook}"
    labels = LABELS[language]
    return [
        (labels["colab"], f"https://colab.research.google.com/github/{owner_repo}/blob/{branch}/{notebook}"),
        (labels["kaggle"], f"https://kaggle.com/kernels/welcome?src={quote(on_github, safe='')}"),
        (labels["binder"], f"https://mybinder.org/v2/gh/{owner_repo}/{branch}?labpath={quote(notebook)}"),
    ]


def whole_course_link(repository: str, branch: str, language: str = "en") -> str:
    """The Binder address that opens JupyterLab on the folder of every notebook of the `language` edition."""
    owner_repo = repository.removeprefix("https://github.com/")
    folder = posixpath.dirname(notebook_path(language, "x.ipynb"))
    return f"https://mybinder.org/v2/gh/{owner_repo}/{branch}?urlpath={quote('lab/tree/' + folder)}"


def report_link(repository: str, page: str, language: str = "en") -> str:
    """Return the address of a new issue about the site's `page`, its title and body filled in."""
    labels = LABELS[language]
    query = urlencode({"title": labels["report_title"].format(page=page),
                       "body": labels["report_body"].format(page=page)})
    return f"{repository}/issues/new?{query}"


def file_url(from_language: str, from_page: str, to_language: str, name: str) -> str:
    """The relative address, from the page `from_page` of one edition, of the file `name` (a path from its
    edition's folder) in an edition."""
    up = "../" * from_page.count("/")
    if from_language != to_language:
        up += "../" if from_language == "zh_CN" else "zh/"
    return f"{up}{name}"


def page_url(from_language: str, from_page: str, to_language: str, to_page: str) -> str:
    """The relative address, from the page `from_page` of one edition, of `to_page` in an edition."""
    return file_url(from_language, from_page, to_language, f"{to_page}.html")


def pdf_link(language: str, docname: str, target: str) -> nodes.reference | None:
    """A link from the page `docname` to the edition's PDF that `target` names, or None if it names none."""
    found = [each for each, name in PDFS.items() if target == name]
    if not found:
        return None
    url = file_url(language, docname, found[0], PDFS[found[0]])
    return nodes.reference("", "", internal=False, refuri=url, classes=["course-pdf"])


def source_of(language: str, docname: str) -> str:
    """The repository path a page's links are written relative to."""
    if docname.startswith("notebooks/"):
        return notebook_path(language, docname.removeprefix("notebooks/") + ".ipynb")
    return SITE_PAGE_SOURCES.get(docname, f"site/{docname}.md")


def page_of(path: str, language: str) -> tuple[str, str] | None:
    """The (edition, page) a repository file is shown as on the site, seen from the `language`
    edition; None for a file the site does not show. A page's translation catalog stands for
    the page in the other language than the one it is seen from."""
    folder, name = posixpath.split(path)
    stem = posixpath.splitext(name)[0]
    if name.endswith(".ipynb") and folder in ("notebooks", "notebooks/zh"):
        return ("en" if folder == "notebooks" else "zh_CN"), f"notebooks/{stem}"
    if folder == CATALOG_FOLDER and name.endswith(".po") and stem in SITE_PAGE_SOURCES:
        return other(language), stem
    pages = {source: page for page, source in SITE_PAGE_SOURCES.items()}
    return ("en", pages[path]) if path in pages else None


class OtherEditionLinks(SphinxPostTransform):
    """Turn a link to another edition's page, or to an edition's PDF (both unresolved by MyST), into a
    link to it."""

    default_priority = 5  # before MyST's resolver (9), which would warn that the target is missing

    def run(self, **kwargs) -> None:
        language = edition(self.config)
        for node in list(self.document.findall(addnodes.pending_xref)):
            target = node.get("reftarget", "")
            if node.get("reftype") != "myst" or "://" in target or target.startswith("#"):
                continue
            # The page the link is written in: the singlehtml build resolves every page's links in one
            # document, the home page's.
            docname = node.get("refdoc") or self.env.docname
            base = posixpath.dirname(source_of(language, docname))
            reference = pdf_link(language, docname, target)
            if reference is not None:
                reference += node.children
                node.replace_self(reference)
                continue
            path, _, anchor = target.partition("#")
            found = page_of(posixpath.normpath(posixpath.join(base, path)), language)
            if found is None or found[0] == language:
                continue
            url = page_url(language, docname, *found) + (f"#{anchor}" if anchor else "")
            reference = nodes.reference("", "", internal=False, refuri=url)
            reference += node.children
            node.replace_self(reference)


def _raw(markup: str) -> nodes.raw:
    return nodes.raw("", markup, format="html")


def launch_markup(config, name: str, download: bool, classes: str = "course-launch", lead: str = "") -> str:
    """The paragraph of links that open the notebook `name` of the edition being built, after `lead`."""
    language = edition(config)
    notebook = notebook_path(language, name)
    links = notebook_links(config.course_repository, config.course_branch, notebook, language)
    items = [f'<a href="{html.escape(url)}">{html.escape(label)}</a>' for label, url in links]
    if download:
        items.append(f'<a href="{html.escape(name)}" download>{LABELS[language]["download"]}</a>')
    return f'<p class="{classes}">{lead}' + " · ".join(items) + "</p>"


class CourseEditions(Directive):
    """The home page's links to both editions and the launch links of the edition's first notebook."""

    has_content = False

    def run(self):
        config = self.state.document.settings.env.config
        language = edition(config)
        labels = LABELS[language]
        editions = []
        for each in LABELS:
            url = page_url(language, "index", each, "index")
            current = ' aria-current="page"' if each == language else ""
            editions.append(f'<a href="{url}" lang="{LABELS[each]["lang"]}" hreflang="{LABELS[each]["lang"]}"'
                            f'{current}>{LABELS[each]["name"]}</a>')
        start = launch_markup(config, "00_start_here.ipynb", False, "course-launch course-start",
                              f'<span>{labels["start"]}{labels["colon"]}</span>')
        lead = f'<p class="course-editions">{labels["editions"]}{labels["colon"]}'
        whole = html.escape(whole_course_link(config.course_repository, config.course_branch, language))
        whole = f'<p class="course-launch course-whole"><a href="{whole}">{labels["whole"]}</a></p>'
        return [_raw(lead + " · ".join(editions) + "</p>" + start + whole)]


def add_course_links(app, doctree) -> None:
    """Put the launch links at the top of a notebook's page and the report link at the end of every page."""
    config, docname = app.config, app.env.docname
    language = edition(config)
    source = app.env.doc2path(docname, False)
    sections = list(doctree.findall(nodes.section))
    if not sections:
        return
    top = sections[0]
    if str(source).endswith(".ipynb"):
        name = str(source).rsplit("/", 1)[-1]
        title_index = next((i for i, child in enumerate(top.children) if isinstance(child, nodes.title)), -1)
        top.insert(title_index + 1, _raw(launch_markup(config, name, True)))
    page = f"{LABELS[language]['folder']}/{docname}.html".lstrip("/")
    report = html.escape(report_link(config.course_repository, page, language))
    doctree.append(_raw(f'<p class="course-report"><a href="{report}">{LABELS[language]["report"]}</a></p>'))


def add_language_switch(app, pagename, templatename, context, doctree) -> None:
    """Give every page's template the address of the same page in the other language."""
    language = edition(app.config)
    there = other(language)
    url = page_url(language, pagename, there, pagename)
    context["course_switch"] = {"url": url, "lang": LABELS[there]["lang"], "label": LABELS[there]["switch"]}
    context["metatags"] = context.get("metatags", "") + (
        f'\n<link rel="alternate" hreflang="{LABELS[there]["lang"]}" href="{html.escape(url)}">')


def configure_edition(app, config) -> None:
    """The site's title in the language built (conf.py's `course_titles`); a Chinese build needs jieba,
    searches with it, and marks its formulas' (English) speech as English."""
    titles = config.course_titles or {}
    if edition(config) in titles:
        config.project = titles[edition(config)]
    if edition(config) == "zh_CN":
        if importlib.util.find_spec("jieba") is None:
            # Without jieba, Sphinx's Chinese search indexes no Chinese word at all.
            raise ExtensionError("the Chinese search needs jieba: pip install -r site/requirements.txt")
        app.add_search_language(chinese_search())
        if config.html_math_renderer != "build_time":  # typeset in the browser: mark its speech English there
            app.add_js_file("english-speech.js")  # (_static/english-speech.js)


def chinese_search():
    """Sphinx's Chinese search (jieba) with a query splitter that cuts a query into the longest words
    the index holds (chinese_query.js), and a JavaScript stemmer that exists."""
    from sphinx.search.zh import SearchChinese

    class CourseChinese(SearchChinese):
        js_splitter_code = (Path(__file__).parent / "chinese_query.js").read_text("utf-8")
        # Sphinx 9.0 ends language_data.js with `window.Stemmer = <language_name>Stemmer`, but the Chinese
        # search stems Latin words with the English stemmer, so ChineseStemmer is undefined and no query
        # runs (sphinx-doc/sphinx#14229, fixed upstream by #14416, not released in 9.0.4).
        language_name = "English"

    return CourseChinese


def setup(app):
    """Register the config values, the directive, the transforms and the hooks."""
    app.add_config_value("course_repository", "", "env")
    app.add_config_value("course_branch", "main", "env")
    app.add_config_value("course_titles", {}, "env")
    app.add_directive("course-editions", CourseEditions)
    app.add_post_transform(OtherEditionLinks)
    app.connect("config-inited", configure_edition)
    app.connect("doctree-read", add_course_links)
    app.connect("html-page-context", add_language_switch)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
