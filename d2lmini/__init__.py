"""d2lmini: helpers for the RNN notebooks.

Importing the package imports whole, with ■ held, what torch and matplotlib would otherwise
import lazily in the middle of a student's cell (the first optimizer imports torch._dynamo and
sympy, the first plot matplotlib.pyplot): an interrupt there would leave them half-imported
until the kernel restarts. A ■ held here is delivered once they are imported.
"""

# Bound by name so that importing again after a delivered ■ binds them on the package again.
from d2lmini import interrupt, kernel_settings  # noqa: F401

interrupt.import_whole("torch._dynamo", "matplotlib.pyplot")
