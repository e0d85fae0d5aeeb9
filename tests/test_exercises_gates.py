"""The self-checks of notebook 09's exercises (d2lmini.exercises.gates): right answers pass, wrong
ones and torch's built-in GRU and LSTM are refused."""

import pytest
import torch
from solution_files import load_solution

from d2lmini.exercises import NOT_ANSWERED
from d2lmini.exercises.coding import NOT_ATTEMPTED
from d2lmini.exercises.gates import (
    _lstm_backward_cases,
    check_gru_cell,
    check_lstm_cell,
    check_lstm_step_backward,
    check_saturated_gate_slope,
    reference_lstm_step_backward,
)
from d2lmini.gates import lstm_step

pytestmark = pytest.mark.torch_dependent

SOLUTION = load_solution("09")


def test_the_solutions_pass():
    for check, fn in ((check_gru_cell, SOLUTION.gru_cell), (check_lstm_cell, SOLUTION.lstm_cell),
                      (check_lstm_step_backward, SOLUTION.lstm_step_backward)):
        result = check(fn)
        assert result, result.message
    assert check_saturated_gate_slope(SOLUTION.ANSWERS["check_saturated_gate_slope"])


def test_unattempted_exercises_say_so():
    assert check_gru_cell(lambda X, H, params: None).message == NOT_ATTEMPTED
    assert check_lstm_step_backward(lambda dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C: None).message == (
        NOT_ATTEMPTED)
    assert check_saturated_gate_slope(None).message == NOT_ANSWERED


def d2l_candidate(X, H, p):
    """The book's candidate, (R ⊙ H) W_hn: a different function from torch's."""
    R = torch.sigmoid(X @ p["W_xr"] + H @ p["W_hr"] + p["b_r"])
    Z = torch.sigmoid(X @ p["W_xz"] + H @ p["W_hz"] + p["b_z"])
    N = torch.tanh(X @ p["W_xn"] + p["b_n"] + (R * H) @ p["W_hn"] + p["b_hn"])
    return Z * H + (1 - Z) * N


def swapped_gates(X, H, C, p):
    I = torch.sigmoid(X @ p["W_xf"] + H @ p["W_hf"] + p["b_f"])  # the forget gate's weights as input gate
    F = torch.sigmoid(X @ p["W_xi"] + H @ p["W_hi"] + p["b_i"])
    G = torch.tanh(X @ p["W_xg"] + H @ p["W_hg"] + p["b_g"])
    O = torch.sigmoid(X @ p["W_xo"] + H @ p["W_ho"] + p["b_o"])
    C = F * C + I * G
    return O * torch.tanh(C), C


def test_wrong_steps_are_named():
    assert "wrong" in check_gru_cell(d2l_candidate).message
    assert "wrong" in check_lstm_cell(swapped_gates).message


def torch_lstm_cell(X, H, C, p):
    W_ih = torch.cat([p[f"W_x{g}"] for g in "ifgo"], 1).T
    W_hh = torch.cat([p[f"W_h{g}"] for g in "ifgo"], 1).T
    b = torch.cat([p[f"b_{g}"] for g in "ifgo"])
    return torch.lstm_cell(X, (H, C), W_ih, W_hh, b, torch.zeros_like(b))


def torch_gru_layer(X, H, p):
    layer = torch.nn.GRU(X.shape[1], H.shape[1]).to(X.device)
    with torch.no_grad():
        layer.weight_ih_l0.copy_(torch.cat([p["W_xr"], p["W_xz"], p["W_xn"]], 1).T)
        layer.weight_hh_l0.copy_(torch.cat([p["W_hr"], p["W_hz"], p["W_hn"]], 1).T)
        layer.bias_ih_l0.copy_(torch.cat([p["b_r"], p["b_z"], p["b_n"]]))
        layer.bias_hh_l0.zero_()
        layer.bias_hh_l0[2 * H.shape[1]:] = p["b_hn"]
    return layer(X[None], H[None])[1][0]


def torch_vf_gru_cell(X, H, p):
    W_ih = torch.cat([p["W_xr"], p["W_xz"], p["W_xn"]], 1).T
    W_hh = torch.cat([p["W_hr"], p["W_hz"], p["W_hn"]], 1).T
    b_ih = torch.cat([p["b_r"], p["b_z"], p["b_n"]])
    b_hh = torch.cat([torch.zeros_like(p["b_r"]), torch.zeros_like(p["b_z"]), p["b_hn"]])
    return torch._VF.gru_cell(X, H, W_ih, W_hh, b_ih, b_hh)


@pytest.mark.parametrize("check, fn", [(check_lstm_cell, torch_lstm_cell), (check_gru_cell, torch_gru_layer),
                                       (check_gru_cell, torch_vf_gru_cell)])
def test_torch_builtin_cells_are_refused(check, fn):
    result = check(fn)
    assert not result and "torch's built-in GRU and LSTM" in result.message, result.message


def test_the_package_step_is_refused():
    from d2lmini.exercises.gates import lstm_cell_reference
    result = check_lstm_cell(lambda X, H, C, p: lstm_cell_reference(X, H, C, p))
    assert not result and "package's own code" in result.message, result.message


@pytest.mark.parametrize("answer", [0.0452, 0.04518, 4.52e-2])
def test_the_saturation_answer_in_its_forms(answer):
    assert check_saturated_gate_slope(answer)


@pytest.mark.parametrize("answer", [0.9526, 0.25, 0.0474])  # σ(3), σ'(0), 1 - σ(3)
def test_near_misses_on_saturation_are_wrong(answer):
    assert not check_saturated_gate_slope(answer)


def gru_with_functional_sigmoid(X, H, d):
    """Fair: torch.nn.functional's sigmoid, the biases added by addmm, the mix by lerp."""
    R = torch.nn.functional.sigmoid(torch.addmm(d["b_r"], X, d["W_xr"]) + H @ d["W_hr"])
    Z = torch.nn.functional.sigmoid(torch.addmm(d["b_z"], X, d["W_xz"]) + H @ d["W_hz"])
    N = torch.tanh(torch.addmm(d["b_n"], X, d["W_xn"]) + R * torch.addmm(d["b_hn"], H, d["W_hn"]))
    return torch.lerp(N, H, Z)  # N + Z (H - N) = Z H + (1 - Z) N


def lstm_with_a_module_sigmoid(X, H, C, p):
    sigmoid = torch.nn.Sigmoid()
    gates = [X @ p[f"W_x{g}"] + H @ p[f"W_h{g}"] + p[f"b_{g}"] for g in "ifgo"]
    I, F, O = sigmoid(gates[0]), sigmoid(gates[1]), sigmoid(gates[3])
    C = torch.addcmul(F * C, I, torch.tanh(gates[2]))
    return O * torch.tanh(C), C


def test_other_correct_ways_of_writing_the_steps_pass():
    for check, fn in ((check_gru_cell, gru_with_functional_sigmoid),
                      (check_lstm_cell, lstm_with_a_module_sigmoid)):
        result = check(fn)
        assert result, result.message


# --- exercise 4: one LSTM step backward, by hand ---------------------------------------------------


def step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C, slip=None):
    """One LSTM step backward written another way than the solution (one gate at a time), right (slip
    None) or with a slip the catalogue does not list."""
    h = C.shape[1]
    I, F, G, O = (gates[:, k * h:(k + 1) * h] for k in range(4))
    tanh_C = torch.tanh(C)
    d_cell = dC + dH * O * (1 - tanh_C * tanh_C)
    if slip == "cell path also scaled by O":
        d_cell = d_cell * O
    d_a = [d_cell * G * I * (1 - I), d_cell * C_prev * F * (1 - F), d_cell * I * (1 - G * G),
           dH * tanh_C * O * (1 - O)]
    if slip == "candidate's gradient doubled":
        d_a[2] = 2 * d_a[2]
    dA = torch.cat(d_a, dim=1)
    dH_prev = torch.einsum("bk,hk->bh", dA, W_h)
    return dA @ W_x.T, dH_prev, d_cell * F, X.T @ dA, torch.einsum("bh,bk->hk", H_prev, dA), dA.sum(0)


def test_the_step_backward_written_another_way_passes():
    result = check_lstm_step_backward(step_backward)
    assert result and result.message.startswith("Correct!"), result.message


@pytest.mark.parametrize("slip", ["cell path also scaled by O", "candidate's gradient doubled"])
def test_wrong_step_backwards_fail(slip):
    def wrong(*args):
        return step_backward(*args, slip=slip)

    result = check_lstm_step_backward(wrong)
    assert not result and result.message.startswith("Not yet."), result.message
    assert "outputs are wrong" in result.message, result.message


def test_the_step_backward_names_which_outputs_are_wrong():
    def db_averaged(*args):
        *rest, db = step_backward(*args)
        return (*rest, db / args[0].shape[0])

    message = check_lstm_step_backward(db_averaged).message
    assert "1 of 6 outputs are wrong" in message and "Right: dX, dH_prev, dC_prev, dW_x, dW_h." in message
    assert "Likely cause: db is averaged over the batch" in message, message


def own_step(X, H_prev, C_prev, W_x, W_h):
    """The forward step, written in the test (not the package's): (H_t, C_t)."""
    h = H_prev.shape[1]
    a = X @ W_x + H_prev @ W_h
    C_t = torch.sigmoid(a[:, h:2 * h]) * C_prev + torch.sigmoid(a[:, :h]) * torch.tanh(a[:, 2 * h:3 * h])
    return torch.sigmoid(a[:, 3 * h:]) * torch.tanh(C_t), C_t


def zero_db(W_h):
    return torch.zeros(W_h.shape[1], dtype=W_h.dtype)


def by_autograd(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    leaves = [t.clone().requires_grad_() for t in (X, H_prev, C_prev, W_x, W_h)]
    return (*torch.autograd.grad(own_step(*leaves), leaves, grad_outputs=(dH, dC)), zero_db(W_h))


def by_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    leaves = [t.clone().requires_grad_() for t in (X, H_prev, C_prev, W_x, W_h)]
    H_t, C_t = own_step(*leaves)
    ((H_t * dH).sum() + (C_t * dC).sum()).backward()
    return (*(leaf.grad for leaf in leaves), zero_db(W_h))


def by_torch_func(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    _, pullback = torch.func.vjp(own_step, X, H_prev, C_prev, W_x, W_h)
    return (*pullback((dH, dC)), zero_db(W_h))


def by_torch_cell(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    with torch.no_grad():
        torch.lstm_cell(X, (H_prev, C_prev), W_x.T, W_h.T)
    return step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C)


@pytest.mark.parametrize("fn, words", [(by_autograd, "autograd"), (by_backward, "autograd"),
                                       (by_torch_func, "autograd"),
                                       (by_torch_cell, "torch's built-in GRU and LSTM")],
                         ids=["autograd.grad", "backward", "torch.func.vjp", "torch.lstm_cell"])
def test_autograd_and_torchs_lstm_are_refused_in_the_step_backward(fn, words):
    result = check_lstm_step_backward(fn)
    assert not result and words in result.message, result.message


def test_the_packages_reference_is_refused_in_the_step_backward():
    def by_the_reference(*args):
        return reference_lstm_step_backward(*args, b=torch.zeros(args[6].shape[1], dtype=args[6].dtype))

    result = check_lstm_step_backward(by_the_reference)
    assert not result and "package's own code" in result.message, result.message


def test_the_step_backward_reference_is_the_step_differentiated():
    """The autograd reference agrees with a central difference of <dH, H_t> + <dC, C_t> (not circular), and
    the cache a case hands over is what `lstm_step` computes."""
    case = next(iter(_lstm_backward_cases(torch.device("cpu"))))
    dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C = case.args
    b = case.reference.keywords["b"]
    H_t, C_t = lstm_step(X @ W_x + b, H_prev, C_prev, W_h)
    assert torch.allclose(C, C_t, rtol=0, atol=1e-14)  # the same step, summed in another order
    assert torch.allclose(gates[:, 3 * C.shape[1]:] * torch.tanh(C), H_t, rtol=0, atol=1e-14)

    def loss(W_h, C_prev):
        H_t, C_t = lstm_step(X @ W_x + b, H_prev, C_prev, W_h)
        return float((H_t * dH).sum() + (C_t * dC).sum())

    _, _, dC_prev, _, dW_h, _ = case.reference(*case.args)
    bump = torch.zeros_like(W_h)
    bump[1, 6] = 1e-6
    assert abs((loss(W_h + bump, C_prev) - loss(W_h - bump, C_prev)) / 2e-6 - float(dW_h[1, 6])) < 1e-7
    bump = torch.zeros_like(C_prev)
    bump[2, 3] = 1e-6
    assert abs((loss(W_h, C_prev + bump) - loss(W_h, C_prev - bump)) / 2e-6 - float(dC_prev[2, 3])) < 1e-7


def test_the_step_backward_cases_cover_the_edges():
    cases = list(_lstm_backward_cases(torch.device("cpu")))
    assert all(c.args[0].dtype == torch.float64 for c in cases)  # compared in float64
    assert any(c.args[2].sum(1).eq(1).all() and (c.args[2] * (1 - c.args[2])).eq(0).all()
               for c in cases)  # one-hot inputs
    assert any(c.args[3].shape == (1, 1) for c in cases)  # batch 1, one hidden unit
    assert any(not c.args[1].any() for c in cases) and any(c.args[1].abs().min() > 0 for c in cases)  # dC = 0
    for case in cases:  # no gate saturated throughout: each slope matters
        gates = case.args[7]
        assert ((gates.abs() > 0.05) & (gates.abs() < 0.95)).float().mean() > 0.5
