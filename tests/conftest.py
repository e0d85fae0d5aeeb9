"""Shared fixtures for the unit tests."""

import matplotlib.pyplot as plt
import pytest
import torch

from d2lmini.corpus import load_corpus


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
