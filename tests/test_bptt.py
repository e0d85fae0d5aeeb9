"""Tests for the hand-written backpropagation through time (d2lmini.bptt, notebook 05)."""

import inspect

import pytest
import torch
import torch.nn.functional as F

from d2lmini import bptt
from d2lmini.bptt import (
    PARAM_NAMES,
    bptt_backward,
    bptt_backward_truncated,
    bptt_forward,
    hand_gradients,
    hidden_gradients,
    hidden_states,
    plain_backward,
    plain_forward,
    sequence_loss_and_grad,
    step_backward,
)
from d2lmini.gradcheck import (
    autograd_gradients,
    finite_difference_gradients,
    gradient_norms_back_in_time,
    max_relative_error,
    relative_error,
    rescale_to_spectral_radius,
    rescaled_model,
    sample_entries,
    spectral_radius,
)
from d2lmini.rnn import init_rnn_params, rnn_forward, rnn_forward_one_hot

pytestmark = pytest.mark.torch_dependent


def make_problem(batch, steps, vocab, hiddens, dtype=torch.float64, seed=0, device="cpu"):
    """Random parameters (with non-zero biases), a non-zero state, inputs and labels."""
    gen = torch.Generator().manual_seed(seed)
    params = init_rnn_params(vocab, hiddens, "lecun", gen)
    params["b_h"] = 0.3 * torch.randn(hiddens, generator=gen)
    params["b_q"] = 0.3 * torch.randn(vocab, generator=gen)
    params = {n: p.to(dtype).to(device) for n, p in params.items()}
    state = (0.5 * torch.randn(batch, hiddens, generator=gen)).to(dtype).to(device)
    X = torch.randint(0, vocab, (batch, steps), generator=gen).to(device)
    Y = torch.randint(0, vocab, (batch, steps), generator=gen).to(device)
    return X, Y, state, params


SHAPES = [(1, 1, 3, 2), (2, 5, 7, 4), (3, 8, 11, 6), (4, 12, 28, 16), (5, 3, 4, 9)]


@pytest.mark.parametrize("batch,steps,vocab,hiddens", SHAPES)
def test_hand_gradients_equal_autograd(batch, steps, vocab, hiddens):
    X, Y, state, params = make_problem(batch, steps, vocab, hiddens)
    loss_hand, hand = hand_gradients(X, Y, state, params)
    loss_auto, auto = autograd_gradients(X, Y, state, params)
    assert loss_hand == pytest.approx(loss_auto, rel=1e-12)
    assert set(hand) == set(PARAM_NAMES) | {"state"}
    for name in hand:
        assert relative_error(hand[name], auto[name]) < 1e-6, name


def test_forward_equals_rnn_forward_and_keeps_the_hidden_states():
    X, _, state, params = make_problem(3, 6, 9, 5)
    args = [params[n] for n in PARAM_NAMES]
    outputs, final, cache = bptt_forward(X, state, *args)
    expected_outputs, expected_final = rnn_forward(X, state, *args)
    torch.testing.assert_close(outputs, expected_outputs)
    torch.testing.assert_close(final, expected_final)
    assert cache["hiddens"].shape == (6, 3, 5)
    torch.testing.assert_close(cache["hiddens"][-1], final)
    assert cache["state"] is state and cache["X"] is X


def explicit_tanh_recursion(X, state, W_xh, W_hh, b_h):
    """The textbook one-hot loop `rnn_forward_one_hot` with an identity output layer, so
    its outputs are the hidden states H_t themselves: (steps, batch, hiddens)."""
    num_hiddens = W_hh.shape[0]
    identity = torch.eye(num_hiddens, dtype=W_hh.dtype, device=W_hh.device)
    outputs, _ = rnn_forward_one_hot(X, state, W_xh, W_hh, b_h, identity, torch.zeros_like(b_h))
    return outputs.reshape(X.shape[1], X.shape[0], num_hiddens)


@pytest.mark.parametrize("weight_scale", [0.5, 1.0, 8.0])  # 8: most units saturate at +-1
def test_hidden_states_through_sigmoid_equal_the_tanh_recursion(weight_scale):
    X, _, state, params = make_problem(4, 9, 7, 6, seed=5)
    W_xh, W_hh = params["W_xh"] * weight_scale, params["W_hh"] * weight_scale
    expected = explicit_tanh_recursion(X, state, W_xh, W_hh, params["b_h"])
    torch.testing.assert_close(hidden_states(X, state, W_xh, W_hh, params["b_h"]), expected,
                               rtol=0, atol=1e-13)


def test_hidden_states_through_sigmoid_in_float32_are_off_by_rounding_only():
    X, _, state, params = make_problem(32, 35, 28, 256, dtype=torch.float32, seed=6)
    args = (X, state, params["W_xh"], params["W_hh"], params["b_h"])
    exact = explicit_tanh_recursion(*(a.double() if a.is_floating_point() else a for a in args))
    error = (hidden_states(*args).double() - exact).abs().max().item()
    assert 0 < error < 1e-5


def test_forward_with_no_steps_returns_the_state():
    X, _, state, params = make_problem(3, 0, 5, 4)
    outputs, final, cache = bptt_forward(X, state, *(params[n] for n in PARAM_NAMES))
    assert outputs.shape == (0, 5) and cache["hiddens"].shape == (0, 3, 4)
    assert final is state


@pytest.mark.parametrize("name", list(PARAM_NAMES) + ["state"])
def test_hand_gradients_equal_central_finite_differences(name):
    X, Y, state, params = make_problem(2, 6, 5, 4, seed=3)
    _, hand = hand_gradients(X, Y, state, params)
    target = state if name == "state" else params[name]
    entries = sample_entries(target.shape, 6, torch.Generator().manual_seed(1))
    # W_xh rows of tokens that never occur have zero gradient: make sure we test used rows.
    if name == "W_xh":
        entries = [(int(X[0, 0]), j) for j in range(4)] + entries
    numeric = finite_difference_gradients(X, Y, state, params, name, entries)
    analytic = torch.stack([hand[name][e] for e in entries])
    assert float(analytic.abs().max()) > 1e-4  # the check is not comparing zeros
    assert relative_error(analytic, numeric) < 1e-6


def test_d_final_state_is_added_to_the_gradient():
    X, Y, state, params = make_problem(3, 5, 6, 4, seed=2)
    G = torch.randn(3, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    # Autograd on L = cross-entropy + <G, H_T>.
    leaves = {n: p.clone().requires_grad_(True) for n, p in params.items()}
    leaves["state"] = state.clone().requires_grad_(True)
    outputs, final = rnn_forward(X, leaves["state"], *(leaves[n] for n in PARAM_NAMES))
    (F.cross_entropy(outputs, Y.T.reshape(-1)) + (G * final).sum()).backward()
    out, _, cache = bptt_forward(X, state, *(params[n] for n in PARAM_NAMES))
    _, d_outputs = sequence_loss_and_grad(out, Y)
    hand = bptt_backward(d_outputs, G, cache)
    for name, leaf in leaves.items():
        assert relative_error(hand[name], leaf.grad) < 1e-6, name
    # Without it the answer differs, so the argument is really used.
    assert relative_error(bptt_backward(d_outputs, None, cache)["W_hh"], hand["W_hh"]) > 1e-3


def test_only_d_final_state_gives_no_output_layer_gradient():
    X, _, state, params = make_problem(2, 4, 5, 3)
    outputs, _, cache = bptt_forward(X, state, *(params[n] for n in PARAM_NAMES))
    grads = bptt_backward(torch.zeros_like(outputs), torch.ones(2, 3, dtype=torch.float64), cache)
    assert float(grads["W_hq"].abs().max()) == 0.0 and float(grads["b_q"].abs().max()) == 0.0
    assert float(grads["W_hh"].abs().max()) > 0.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_and_shapes_are_preserved(dtype):
    X, Y, state, params = make_problem(3, 4, 7, 5, dtype=dtype)
    outputs, final, cache = bptt_forward(X, state, *(params[n] for n in PARAM_NAMES))
    assert outputs.dtype == dtype and final.dtype == dtype and outputs.shape == (12, 7)
    _, d_outputs = sequence_loss_and_grad(outputs, Y)
    grads = bptt_backward(d_outputs, None, cache)
    for name in PARAM_NAMES:
        assert grads[name].dtype == dtype and grads[name].shape == params[name].shape, name
    assert grads["state"].shape == state.shape and grads["state"].dtype == dtype
    if dtype == torch.float32:  # float32 agrees with autograd to float32 precision
        _, auto = autograd_gradients(X, Y, state, params)
        assert max_relative_error(grads, auto) < 1e-5


def test_no_autograd_graph_is_built():
    X, Y, state, params = make_problem(2, 3, 4, 3)
    params = {n: p.requires_grad_(True) for n, p in params.items()}
    outputs, _, cache = bptt_forward(X, state, *(params[n] for n in PARAM_NAMES))
    grads = bptt_backward(sequence_loss_and_grad(outputs.detach(), Y)[1], None, cache)
    assert not outputs.requires_grad and not any(g.requires_grad for g in grads.values())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_runs_on_cuda():
    X, Y, state, params = make_problem(2, 5, 6, 4, device="cuda")
    _, hand = hand_gradients(X, Y, state, params)
    _, auto = autograd_gradients(X, Y, state, params)
    assert hand["W_hh"].device.type == "cuda"
    assert max_relative_error(hand, auto) < 1e-6


@pytest.mark.parametrize("window", [1, 2, 3, 4, 7])
def test_truncated_bptt_equals_autograd_with_detached_state(window):
    X, Y, state, params = make_problem(2, 7, 6, 5, seed=4)
    _, hand = hand_gradients(X, Y, state, params, window=window)
    _, auto = autograd_gradients(X, Y, state, params, window=window)
    assert max_relative_error(hand, auto) < 1e-6
    _, full = hand_gradients(X, Y, state, params)
    if window < 7:  # truncation really changes the gradient
        assert relative_error(hand["W_hh"], full["W_hh"]) > 1e-4
    else:
        assert max_relative_error(hand, full) < 1e-12


def test_truncated_gradient_flows_only_within_its_window():
    X, Y, state, params = make_problem(2, 6, 5, 4, seed=6)
    outputs, _, cache = bptt_forward(X, state, *(params[n] for n in PARAM_NAMES))
    _, d_outputs = sequence_loss_and_grad(outputs, Y)
    d_outputs[: 3 * 2] = 0  # the loss now only looks at steps 3, 4, 5
    truncated = bptt_backward_truncated(d_outputs, None, cache, window=3)
    assert float(truncated["state"].abs().max()) == 0.0  # steps 3..5 cannot reach the initial state
    assert float(bptt_backward(d_outputs, None, cache)["state"].abs().max()) > 0.0
    # Window 1: no recursion at all, so dA_t = (dO_t W_hq^T) * (1 - H_t^2) and
    # dW_hh = sum_t H_{t-1}^T dA_t, computed here step by step.
    one = bptt_backward_truncated(d_outputs, None, cache, window=1)
    hiddens, expected = cache["hiddens"], torch.zeros_like(params["W_hh"])
    previous = state
    for t in range(6):
        dA = (d_outputs[2 * t : 2 * t + 2] @ params["W_hq"].T) * (1 - hiddens[t] ** 2)
        expected += previous.T @ dA
        previous = hiddens[t]
    assert relative_error(one["W_hh"], expected) < 1e-12
    with pytest.raises(ValueError, match="at least 1"):
        bptt_backward_truncated(d_outputs, None, cache, window=0)


def test_step_backward_summed_over_time_equals_bptt_backward():
    X, Y, state, params = make_problem(3, 5, 6, 4, seed=7)
    outputs, _, cache = bptt_forward(X, state, *(params[n] for n in PARAM_NAMES))
    _, d_outputs = sequence_loss_and_grad(outputs, Y)
    dH_all, dA_all, _ = hidden_gradients(d_outputs, None, cache)
    grads = bptt_backward(d_outputs, None, cache)
    totals = {n: torch.zeros_like(params[n]) for n in ("W_xh", "W_hh", "b_h")}
    hiddens = cache["hiddens"]
    for t in range(5):
        previous = state if t == 0 else hiddens[t - 1]
        step = step_backward(dH_all[t], hiddens[t], previous, X[:, t], params["W_xh"], params["W_hh"])
        torch.testing.assert_close(step["A"], dA_all[t])
        if t > 0:  # what step t sends back plus H_{t-1}'s own output gradient is dH_{t-1}
            own = (d_outputs[3 * (t - 1) : 3 * t] @ params["W_hq"].T)
            torch.testing.assert_close(step["H_prev"] + own, dH_all[t - 1])
        for name in totals:
            totals[name] += step[name]
    for name, total in totals.items():
        assert relative_error(total, grads[name]) < 1e-12, name


def test_step_backward_input_gradient_matches_autograd():
    gen = torch.Generator().manual_seed(8)
    W_xh, W_hh = torch.randn(5, 3, generator=gen, dtype=torch.float64), torch.randn(3, 3, generator=gen,
                                                                                     dtype=torch.float64)
    H_prev = torch.randn(2, 3, generator=gen, dtype=torch.float64)
    x_t = torch.tensor([4, 1])
    X_t = F.one_hot(x_t, 5).double().requires_grad_(True)
    H_prev_leaf = H_prev.clone().requires_grad_(True)
    H_t = torch.tanh(X_t @ W_xh + H_prev_leaf @ W_hh)
    dH = torch.randn(2, 3, generator=gen, dtype=torch.float64)
    (H_t * dH).sum().backward()
    step = step_backward(dH, H_t.detach(), H_prev, x_t, W_xh, W_hh)
    assert relative_error(step["X"], X_t.grad) < 1e-12
    assert relative_error(step["H_prev"], H_prev_leaf.grad) < 1e-12


def test_sequence_loss_and_grad_matches_autograd():
    gen = torch.Generator().manual_seed(9)
    outputs = torch.randn(12, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    Y = torch.randint(0, 5, (3, 4), generator=gen)
    loss, d_outputs = sequence_loss_and_grad(outputs.detach(), Y)
    F.cross_entropy(outputs, Y.T.reshape(-1)).backward()
    assert float(loss) == pytest.approx(float(F.cross_entropy(outputs.detach(), Y.T.reshape(-1))), rel=1e-12)
    assert relative_error(d_outputs, outputs.grad) < 1e-12
    assert float(d_outputs.sum(1).abs().max()) < 1e-12  # every row of softmax - one_hot sums to 0


def test_relative_error_and_sampled_entries():
    assert relative_error(torch.tensor([3.0, 4.0]), torch.tensor([3.0, 4.0])) == 0.0
    assert relative_error(torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.0])) == pytest.approx(1.0)
    assert relative_error(torch.zeros(3), torch.zeros(3)) == 0.0
    assert relative_error(torch.tensor([1.0]), torch.tensor([1.1])) == pytest.approx(0.1 / 1.1)
    entries = sample_entries((4, 5), 7, torch.Generator().manual_seed(0))
    assert len(set(entries)) == 7 and all(0 <= i < 4 and 0 <= j < 5 for i, j in entries)
    assert len(sample_entries((2, 2), 10, torch.Generator().manual_seed(0))) == 4


def test_spectral_radius_and_rescaling():
    rotation = torch.tensor([[0.0, -2.0], [2.0, 0.0]])  # eigenvalues +-2i
    assert spectral_radius(rotation) == pytest.approx(2.0)
    W = torch.randn(6, 6, generator=torch.Generator().manual_seed(1))
    assert spectral_radius(rescale_to_spectral_radius(W, 0.7)) == pytest.approx(0.7, rel=1e-6)
    params = rescaled_model(1.3, num_hiddens=10, vocab_size=5)
    assert spectral_radius(params["W_hh"]) == pytest.approx(1.3, rel=1e-6)
    assert float(rescaled_model(1.3, 10, 5, input_scale=0.0)["W_xh"].abs().max()) == 0.0


@pytest.mark.parametrize("radius", [0.5, 0.9, 1.3])
def test_without_inputs_the_gradient_scales_like_the_spectral_radius(radius):
    # From a zero state with no inputs, H stays 0, tanh' = 1 and every step back multiplies
    # by W_hh^T: the norms behave like radius^k for large k (power iteration).
    norms = gradient_norms_back_in_time(radius, 150, num_hiddens=12, input_scale=0.0)
    assert len(norms) == 151 and norms[0] == pytest.approx(1.0)
    assert norms[150] / norms[140] == pytest.approx(radius**10, rel=0.05)


def test_with_inputs_the_norms_stay_below_the_largest_singular_value_power():
    # |1 - h^2| <= 1, so ||dL/dH_{T-k}|| <= sigma_max(W_hh)^k for a unit dL/dH_T.
    for radius in (0.8, 2.0):
        norms = gradient_norms_back_in_time(radius, 30, num_hiddens=12)
        sigma = float(torch.linalg.matrix_norm(rescaled_model(radius, 12)["W_hh"], ord=2))
        assert all(n <= sigma**k * (1 + 1e-9) for k, n in enumerate(norms))
    assert gradient_norms_back_in_time(0.5, 30)[30] < 1e-6  # vanishing
    assert gradient_norms_back_in_time(2.0, 30, input_scale=0.0)[30] > 1e6  # exploding


# ---------------------------------------------------------------------------------------
# The plain loop of notebook 05's first lesson


def plain_gradients(X, Y, state, params, backward=plain_backward):
    """(loss, gradients) of the mean cross-entropy through `plain_forward` and `backward`."""
    outputs, _, cache = plain_forward(X, state, *(params[n] for n in PARAM_NAMES))
    loss, d_outputs = sequence_loss_and_grad(outputs, Y)
    return float(loss), backward(d_outputs, None, cache)


@pytest.mark.parametrize("batch,steps,vocab,hiddens", SHAPES)
def test_plain_loop_equals_autograd(batch, steps, vocab, hiddens):
    X, Y, state, params = make_problem(batch, steps, vocab, hiddens, seed=11)
    loss_plain, plain = plain_gradients(X, Y, state, params)
    loss_auto, auto = autograd_gradients(X, Y, state, params)
    assert loss_plain == pytest.approx(loss_auto, rel=1e-12)
    assert set(plain) == set(PARAM_NAMES) | {"state"}
    for name in plain:
        assert relative_error(plain[name], auto[name]) < 1e-12, name


def test_plain_forward_equals_rnn_forward_and_the_fast_forward():
    X, _, state, params = make_problem(3, 7, 9, 5, seed=12)
    args = [params[n] for n in PARAM_NAMES]
    outputs, final, cache = plain_forward(X, state, *args)
    expected_outputs, expected_final = rnn_forward(X, state, *args)
    torch.testing.assert_close(outputs, expected_outputs, rtol=0, atol=1e-13)
    torch.testing.assert_close(final, expected_final, rtol=0, atol=1e-13)
    _, _, fast = bptt_forward(X, state, *args)
    torch.testing.assert_close(cache["hiddens"], fast["hiddens"], rtol=0, atol=1e-13)
    assert set(cache) == set(fast) and cache["state"] is state


def test_fast_backward_equals_the_plain_loop():
    X, Y, state, params = make_problem(4, 9, 8, 6, seed=13)
    G = torch.randn(4, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    outputs, _, cache = plain_forward(X, state, *(params[n] for n in PARAM_NAMES))
    _, d_outputs = sequence_loss_and_grad(outputs, Y)
    plain = plain_backward(d_outputs, G, cache)
    fast = bptt_backward(d_outputs, G, cache)
    assert max_relative_error(plain, fast) < 1e-12
    truncated = bptt_backward_truncated(d_outputs, G, cache, window=3)  # a different gradient
    assert relative_error(truncated["W_hh"], plain["W_hh"]) > 1e-4


def test_plain_loop_with_no_steps_hands_the_final_gradient_back():
    X, _, state, params = make_problem(3, 0, 5, 4)
    outputs, final, cache = plain_forward(X, state, *(params[n] for n in PARAM_NAMES))
    assert outputs.shape == (0, 5) and final is state and cache["hiddens"].shape == (0, 3, 4)
    G = torch.ones(3, 4, dtype=torch.float64)
    grads = plain_backward(outputs, G, cache)
    assert torch.equal(grads["state"], G) and float(grads["W_hh"].abs().max()) == 0.0


def planted_plain_backward(old: str, new: str):
    """A copy of `plain_backward` whose one-step backward has `old` replaced by `new`."""
    step_source = inspect.getsource(bptt.step_backward)
    assert old in step_source
    namespace = {"torch": torch, "F": F, "PARAM_NAMES": PARAM_NAMES}
    exec(step_source.replace(old, new) + "\n" + inspect.getsource(bptt.plain_backward), namespace)
    return namespace["plain_backward"]


@pytest.mark.parametrize("old,new", [
    ('"H_prev": dA @ W_hh.T', '"H_prev": dA @ W_hh'),  # W_hh square: the shapes still fit
    ('"W_hh": H_prev.T @ dA', '"W_hh": dA.T @ H_prev'),  # the transposed gradient
])
def test_a_wrong_transpose_in_the_plain_loop_is_caught(old, new):
    X, Y, state, params = make_problem(3, 6, 7, 5, seed=14)
    _, auto = autograd_gradients(X, Y, state, params)
    _, right = plain_gradients(X, Y, state, params, planted_plain_backward(old, old))
    _, wrong = plain_gradients(X, Y, state, params, planted_plain_backward(old, new))
    assert max_relative_error(right, auto) < 1e-12  # the copy itself is faithful
    assert relative_error(wrong["W_hh"], auto["W_hh"]) > 1e-2
