"""Device choice and seeding."""

import random

import pytest
import torch

from d2lmini.device import describe_device, exact_float32, seed_everything, try_gpu

pytestmark = pytest.mark.torch_dependent


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


def test_a_verdict_is_truthy_when_right_and_shows_its_message_without_printing(capsys):
    from IPython.lib.pretty import pretty

    from d2lmini.exercises import close_enough, verdict

    right = verdict(close_enough(1.25, 1.25), "well done", "try again")
    wrong = verdict(close_enough("abc", 1.25), "well done", "try again")
    assert right and not wrong
    assert capsys.readouterr().out == ""  # a check prints nothing; a cell ending in it shows it once
    assert (pretty(right), pretty(wrong)) == ("Correct! well done", "Not yet. try again")


def test_a_count_is_a_number_that_rounds_to_the_expected_whole_number():
    from d2lmini.exercises import is_count

    assert is_count(3, 3) and is_count(3.0, 3)
    assert not is_count("3", 3), "text is not a number answer (the same rule as every checker)"
    assert not is_count(True, 1), "True is not an answer"
    assert not is_count(4, 3) and not is_count(None, 3) and not is_count("three", 3)


def test_exact_float32_turns_tf32_off_inside_and_puts_the_settings_back():
    before = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = True
    try:
        with exact_float32():
            assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
        assert torch.backends.cudnn.allow_tf32
        with pytest.raises(RuntimeError), exact_float32():
            raise RuntimeError("a failing check inside the block")
        assert torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before
