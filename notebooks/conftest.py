"""Collect the course notebooks for nbval: lax, sanitized, current environment, stderr ignored.

`python -m pytest` needs no nbval flags: every notebook here is run in a fresh kernel
from the current environment; only cells tagged `nbval-check-output` have their output
compared, after `sanitize.cfg`; and stderr (warnings, progress bars) is never compared,
because it differs between library versions and machines. nbval has no switch for that
last point, so the collector and cell below are small subclasses of nbval's own.
"""

from pathlib import Path

from nbval.plugin import IPyNbCell, IPyNbFile

SANITIZE_FILE = Path(__file__).with_name("sanitize.cfg")


def without_stderr(outputs):
    """Return `outputs` without the stream outputs written to stderr."""
    return [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]


class CourseNotebookCell(IPyNbCell):
    """An nbval cell that compares everything but stderr."""

    def compare_outputs(self, test, ref, skip_compare=None):
        return super().compare_outputs(without_stderr(test), without_stderr(ref), skip_compare)


class CourseNotebook(IPyNbFile):
    """An nbval notebook in lax mode whose cells are `CourseNotebookCell`s."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.compare_outputs = False  # lax: compare only the cells tagged nbval-check-output

    def collect(self):
        for item in super().collect():
            yield CourseNotebookCell.from_parent(
                self, name=item.name, cell_num=item.cell_num, cell=item.cell, options=item.options)


def pytest_configure(config):
    option = config.option
    option.nbval_current_env = True
    option.nbval_sanitize_with = option.nbval_sanitize_with or str(SANITIZE_FILE)


def pytest_collect_file(file_path, parent):
    option = parent.config.option
    if file_path.suffix == ".ipynb" and not (option.nbval or option.nbval_lax):
        return CourseNotebook.from_parent(parent, path=file_path)
    return None
