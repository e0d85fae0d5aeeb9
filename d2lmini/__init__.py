"""d2lmini: helpers for the RNN notebooks.

Importing the package in IPython (a notebook's kernel) imports whole, with ■ held, torch and
what torch and matplotlib would otherwise import lazily in the middle of a student's cell (the
first optimizer imports torch._dynamo and sympy, the first plot matplotlib.pyplot): an
interrupt there would leave them half-imported until the kernel restarts. A ■ held here is
delivered once they are imported. (■ during a notebook's own `import torch`, before the
package, no package can help.)"""

import importlib.metadata
import sys

from d2lmini import held

# Only where ■ can arrive mid-cell: IPython (a Jupyter kernel, Colab's, IPython in a terminal). A plain
# process, such as the grader's sandboxed caller started once per exercise, imports them when it needs
# them (torch._dynamo and pyplot are 40 % of its start); the guard's time limits already let an import
# finish uncounted (`guard.limits.IMPORT_GRACE`).
if "IPython" in sys.modules:
    held.import_whole("torch", "torch._dynamo", "matplotlib.pyplot", "d2lmini.interrupt")

# Bound by name, so that importing the package again after a delivered ■ binds them on it again.
from d2lmini import interrupt, kernel_settings  # noqa: E402, F401

# Figures draw Chinese (D2LMINI_LANG=zh_CN) with the font the package ships, in every notebook.
from d2lmini.fonts import add_cjk_fallback  # noqa: E402

add_cjk_fallback()

# The version is written once, in pyproject.toml; the installed distribution's metadata carries it here.
try:
    __version__ = importlib.metadata.version("d2lmini")
except importlib.metadata.PackageNotFoundError:  # a source tree on sys.path, never installed
    __version__ = "0+unknown"
