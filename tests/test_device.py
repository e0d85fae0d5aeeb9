"""Device choice and seeding."""

import random

import torch

from d2lmini.device import describe_device, seed_everything, try_gpu


def test_try_gpu_prefers_cuda_then_mps_then_cpu():
    device = try_gpu()
    if torch.cuda.is_available():
        assert device.type == "cuda"
    elif torch.backends.mps.is_available():
        assert device.type == "mps"
    else:
        assert device == torch.device("cpu")
    assert describe_device(device)


def test_seed_everything_makes_runs_repeatable():
    g = seed_everything(3)
    first = (random.random(), torch.rand(2).tolist(), torch.rand(2, generator=g).tolist())
    g = seed_everything(3)
    assert first == (random.random(), torch.rand(2).tolist(), torch.rand(2, generator=g).tolist())
