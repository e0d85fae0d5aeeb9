"""The fast scratch RNN (hand-written BPTT as one autograd node) against autograd on rnn_forward."""

import pytest
import torch
import torch.nn.functional as F

from d2lmini.bptt import rnn_forward_bptt
from d2lmini.rnn import RNNScratch, init_rnn_params, rnn_forward

pytestmark = pytest.mark.torch_dependent

NAMES = ("W_xh", "W_hh", "b_h", "W_hq", "b_q")


def float64_problem(seed=0, vocab=7, hiddens=5, batch=3, steps=6):
    generator = torch.Generator().manual_seed(seed)
    params = {n: p.double() for n, p in init_rnn_params(vocab, hiddens, generator=generator).items()}
    params["b_h"] = torch.randn(hiddens, generator=generator, dtype=torch.float64) * 0.1
    params["b_q"] = torch.randn(vocab, generator=generator, dtype=torch.float64) * 0.1
    X = torch.randint(vocab, (batch, steps), generator=generator)
    state = torch.randn(batch, hiddens, generator=generator, dtype=torch.float64) * 0.5
    return X, state, params


def gradients(forward, X, state, params, weights_out, weights_state):
    """Gradients of a loss that uses both outputs and the final state, w.r.t. params and state."""
    leaves = {n: p.clone().requires_grad_(True) for n, p in params.items()}
    leaves["state"] = state.clone().requires_grad_(True)
    outputs, final = forward(X, leaves["state"], *(leaves[n] for n in NAMES))
    loss = (outputs * weights_out).sum() + (torch.tanh(final) * weights_state).sum()
    loss.backward()
    return outputs.detach(), final.detach(), {n: leaf.grad for n, leaf in leaves.items()}


def test_outputs_and_all_gradients_equal_autograd_in_float64():
    X, state, params = float64_problem()
    generator = torch.Generator().manual_seed(1)
    outputs, _ = rnn_forward(X, state, *(params[n] for n in NAMES))
    w_out = torch.randn(outputs.shape, generator=generator, dtype=torch.float64)
    w_state = torch.randn(state.shape, generator=generator, dtype=torch.float64)
    out_a, final_a, grads_a = gradients(rnn_forward, X, state, params, w_out, w_state)
    out_b, final_b, grads_b = gradients(rnn_forward_bptt, X, state, params, w_out, w_state)
    torch.testing.assert_close(out_b, out_a, rtol=0, atol=1e-13)
    torch.testing.assert_close(final_b, final_a, rtol=0, atol=1e-13)
    for name in (*NAMES, "state"):
        assert grads_b[name].abs().max() > 0, name  # every gradient is really exercised
        torch.testing.assert_close(grads_b[name], grads_a[name], rtol=1e-10, atol=1e-12)


def test_gradcheck_against_finite_differences():
    X, state, params = float64_problem(seed=2, vocab=4, hiddens=3, batch=2, steps=4)
    inputs = [state.requires_grad_(True)] + [params[n].requires_grad_(True) for n in NAMES]
    assert torch.autograd.gradcheck(lambda *a: rnn_forward_bptt(X, *a), inputs)


@pytest.mark.parametrize("use", ["outputs", "state"])
def test_only_one_output_used(use):
    """The loss may use only the outputs, or only the final state (autograd then sends None)."""
    X, state, params = float64_problem(seed=3)

    def loss_of(forward):
        leaves = [params[n].clone().requires_grad_(True) for n in NAMES]
        outputs, final = forward(X, state, *leaves)
        (outputs.sum() if use == "outputs" else final.pow(2).sum()).backward()
        return [leaf.grad for leaf in leaves]

    hand, reference = loss_of(rnn_forward_bptt), loss_of(rnn_forward)
    assert hand[1].abs().max() > 0  # dW_hh is exercised either way
    for got, expected, param in zip(hand, reference, (params[n] for n in NAMES), strict=True):
        # autograd leaves the output layer's gradient at None when only the state is used
        expected = torch.zeros_like(param) if expected is None else expected
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


def test_module_trains_the_same_either_way():
    """Three SGD steps with truncated BPTT give the same weights with and without hand-written BPTT."""
    generator = torch.Generator().manual_seed(4)
    batches = [(torch.randint(9, (4, 5), generator=generator), torch.randint(9, (4, 5), generator=generator))
               for _ in range(3)]
    weights = []
    for hand in (True, False):
        model = RNNScratch(9, 6, generator=torch.Generator().manual_seed(5), hand_written_bptt=hand).double()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        state = model.begin_state(4).double()
        for X, Y in batches:
            outputs, state = model(X, state.detach())
            loss = F.cross_entropy(outputs, Y.T.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        weights.append({n: p.detach().clone() for n, p in model.named_parameters()})
    assert RNNScratch(9, 6, hand_written_bptt=True).hand_written_bptt
    for name in NAMES:
        assert not torch.equal(weights[0][name], RNNScratch(9, 6, generator=torch.Generator().manual_seed(5))
                               .get_parameter(name).double())  # training changed it
        torch.testing.assert_close(weights[0][name], weights[1][name], rtol=1e-10, atol=1e-12)


def test_in_place_change_before_backward_is_caught():
    X, state, params = float64_problem(seed=6)
    W_hh = params["W_hh"].clone().requires_grad_(True)
    args = (params["W_xh"], W_hh, params["b_h"], params["W_hq"], params["b_q"])
    outputs, _ = rnn_forward_bptt(X, state, *args)
    with torch.no_grad():
        W_hh.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        outputs.sum().backward()
