"""A Sphinx extension: the course's links at the top of every page of the site.

A notebook's page opens with "Open in Colab / Kaggle / Binder / download the notebook"; every
page ends with "Report a problem with this page", a new issue in the repository that names the
page. The addresses come from `course_repository` and `course_branch` in conf.py.
"""

import html
from urllib.parse import quote, urlencode

from docutils import nodes


def notebook_links(repository: str, branch: str, notebook: str) -> list[tuple[str, str]]:
    """Return (label, address) of each place that opens `notebook` (a path such as notebooks/02_x.ipynb)."""
    owner_repo = repository.removeprefix("https://github.com/")
    on_github = f"{repository}/blob/{branch}/{notebook}"
    return [
        ("Open in Colab", f"https://colab.research.google.com/github/{owner_repo}/blob/{branch}/{notebook}"),
        ("Open in Kaggle", f"https://kaggle.com/kernels/welcome?src={quote(on_github, safe='')}"),
        ("Open in Binder", f"https://mybinder.org/v2/gh/{owner_repo}/{branch}?labpath={quote(notebook)}"),
    ]


def report_link(repository: str, page: str) -> str:
    """Return the address of a new issue about the site's `page`, its title and body filled in."""
    query = urlencode({"title": f"Site: a problem with {page}",
                       "body": f"Page: {page}\n\nWhat is wrong, and where on the page:\n"})
    return f"{repository}/issues/new?{query}"


def _raw(markup: str) -> nodes.raw:
    return nodes.raw("", markup, format="html")


def add_course_links(app, doctree) -> None:
    """Put the launch links at the top of a notebook's page and the report link at the end of every page."""
    config, docname = app.config, app.env.docname
    source = app.env.doc2path(docname, False)
    sections = list(doctree.findall(nodes.section))
    if not sections:
        return
    top = sections[0]
    if str(source).endswith(".ipynb"):
        name = str(source).rsplit("/", 1)[-1]
        links = notebook_links(config.course_repository, config.course_branch, f"notebooks/{name}")
        items = [f'<a href="{html.escape(url)}">{label}</a>' for label, url in links]
        items.append(f'<a href="{html.escape(name)}" download>Download the notebook</a>')
        markup = '<p class="course-launch">' + " · ".join(items) + "</p>"
        title_index = next((i for i, child in enumerate(top.children) if isinstance(child, nodes.title)), -1)
        top.insert(title_index + 1, _raw(markup))
    report = html.escape(report_link(config.course_repository, f"{docname}.html"))
    doctree.append(_raw(f'<p class="course-report"><a href="{report}">'
                        "Report a problem with this page</a></p>"))


def setup(app):
    """Register the config values and the doctree hook."""
    app.add_config_value("course_repository", "", "env")
    app.add_config_value("course_branch", "main", "env")
    app.connect("doctree-read", add_course_links)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
