"""Shared fixtures for the unit tests."""

import signal

import matplotlib.pyplot as plt
import pytest
import torch

from d2lmini import kernel_settings
from d2lmini.corpus import load_corpus

# A shell's background job (`command &`, as .ci/run starts some) inherits ■ (SIGINT) ignored; a terminal
# and a Jupyter kernel have Python's own handler, which the tests of ■ assume and the fixture below
# compares against.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def leaves_the_kernel_settings_as_found():
    """Fail the test that changes a process-wide setting (grad mode, default device, ...) and puts it back.

    One test that leaves gradients off would otherwise fail every later training test.
    """
    before = kernel_settings.snapshot()
    yield
    changes = kernel_settings.restore(before)
    if changes:
        pytest.fail("The test left process-wide settings changed: "
                    + kernel_settings.describe(changes, "it"), pytrace=False)


@pytest.fixture(scope="session")
def bundled():
    """The bundled corpus (loaded once per test session)."""
    return load_corpus("bundled")


@pytest.fixture
def generator():
    """A freshly seeded CPU generator."""
    return torch.Generator().manual_seed(0)


@pytest.fixture
def ax():
    """A fresh matplotlib Axes, closed after the test."""
    figure, axes = plt.subplots()
    yield axes
    plt.close(figure)
