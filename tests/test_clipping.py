"""Gradient clipping (notebook 06): the joint-norm rule, per-element clipping and the rule a run uses."""

import math

import pytest
import torch

from d2lmini.clipping import clip_gradient_values, clip_gradients, clipping_rule

pytestmark = pytest.mark.torch_dependent


def params_with_grads(*grads):
    params = [torch.zeros_like(g, requires_grad=True) for g in grads]
    for p, g in zip(params, grads, strict=True):
        p.grad = g.clone()
    return params


def joint(params):
    return torch.cat([p.grad.flatten() for p in params])


def test_clipping_bounds_the_joint_norm_and_keeps_the_direction():
    params = params_with_grads(torch.tensor([3.0, 0.0]), torch.tensor([[0.0, 4.0]]))
    before = joint(params)
    norm = clip_gradients(params, theta=1.0)
    after = joint(params)
    assert norm == pytest.approx(5.0)
    assert after.norm() == pytest.approx(1.0)
    assert torch.allclose(after, before / 5.0), "same direction, every tensor scaled alike"


def test_clipping_does_nothing_below_the_threshold_or_when_off():
    params = params_with_grads(torch.tensor([0.3, 0.4]))
    assert clip_gradients(params, theta=1.0) == pytest.approx(0.5)
    assert torch.equal(joint(params), torch.tensor([0.3, 0.4]))
    big = params_with_grads(torch.tensor([30.0, 40.0]))
    assert clip_gradients(big, theta=None) == pytest.approx(50.0)
    assert torch.equal(joint(big), torch.tensor([30.0, 40.0]))
    with pytest.raises(ValueError):
        clip_gradients(big, theta=0)


def test_clipping_agrees_with_torch(generator):
    grads = [torch.randn(5, 3, generator=generator) * 10, torch.randn(7, generator=generator)]
    ours, theirs = params_with_grads(*grads), params_with_grads(*grads)
    clip_gradients(ours, 2.0)
    torch.nn.utils.clip_grad_norm_(theirs, 2.0)
    assert torch.allclose(joint(ours), joint(theirs), atol=1e-6)


def test_per_element_clipping_bounds_every_entry_and_can_turn_the_direction():
    params = params_with_grads(torch.tensor([3.0, 0.5]), torch.tensor([[-4.0]]))
    norm, cosine = clip_gradient_values(params, 1.0)
    assert norm == pytest.approx(math.sqrt(9 + 0.25 + 16))
    assert torch.equal(joint(params), torch.tensor([1.0, 0.5, -1.0]))
    expected = (3 * 1 + 0.5 * 0.5 + 4 * 1) / (norm * math.sqrt(2.25))
    assert cosine == pytest.approx(expected) and cosine < 0.99




def test_the_clipping_rule_is_decided_once_and_reports_what_it_did():
    params = params_with_grads(torch.tensor([3.0, 0.0]), torch.tensor([[0.0, 4.0]]))
    clipped = clipping_rule(1.0, "norm")(params)
    assert clipped.norm == pytest.approx(5.0) and clipped.acted and clipped.cosine is None
    params = params_with_grads(torch.tensor([0.3, 0.4]))
    assert not clipping_rule(1.0, "norm")(params).acted
    assert not clipping_rule(None, "value")(params).acted, "no threshold: only measured"
    params = params_with_grads(torch.tensor([3.0, 0.5]), torch.tensor([[-4.0]]))
    clipped = clipping_rule(1.0, "value")(params)
    assert clipped.acted and clipped.cosine < 0.99
    with pytest.raises(ValueError, match="clip_mode"):
        clipping_rule(1.0, "sign")
    with pytest.raises(ValueError, match="positive"):
        clipping_rule(0.0, "norm")
