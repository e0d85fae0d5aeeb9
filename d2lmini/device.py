"""Choosing a device and making runs repeatable (introduced in notebook 00)."""

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from d2lmini.i18n import _


def try_gpu() -> torch.device:
    """Return the best available device: CUDA, then Apple MPS, then the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch (all devices); return a CPU generator seeded the same way.

    Random numbers in d2lmini are drawn on the CPU from such a generator and then moved
    to the model's device, so a seeded run gives the same numbers on every device.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def describe_device(device: torch.device) -> str:
    """Return a one-line human description of `device` (for notebook 00)."""
    if device.type == "cuda":
        # TRANSLATORS: {name} is the GPU's name ("NVIDIA H100").
        return _("CUDA GPU: {name}").format(name=torch.cuda.get_device_name(device))
    if device.type == "mps":
        return _("Apple GPU (MPS)")
    return _("CPU ({threads} threads)").format(threads=torch.get_num_threads())


@contextmanager
def exact_float32() -> Iterator[None]:
    """Inside the block, float32 products on an NVIDIA GPU are computed in float32 (notebooks 04, 09).

    cuDNN's RNN, GRU and LSTM (and cuBLAS, where switched on) may use TF32, a 10-bit mantissa, on
    recent NVIDIA GPUs: fast, but about 1e-3 away from float32. A check that the scratch model and
    torch's compute the same maths turns it off for its block; the previous settings come back
    after it. On a CPU or Apple's GPU it changes nothing.
    """
    cudnn, cublas = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = cudnn, cublas
