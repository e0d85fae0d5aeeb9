"""The self-checks of notebook 09's exercises (d2lmini.exercises.gates): right answers pass, wrong
ones and torch's built-in GRU and LSTM are refused."""

import pytest
import torch
from solution_files import load_solution

from d2lmini.exercises import NOT_ANSWERED
from d2lmini.exercises.coding import NOT_ATTEMPTED
from d2lmini.exercises.gates import check_gru_cell, check_lstm_cell, check_saturated_gate_slope

pytestmark = pytest.mark.torch_dependent

SOLUTION = load_solution("09")


def test_the_solutions_pass():
    for check, fn in ((check_gru_cell, SOLUTION.gru_cell), (check_lstm_cell, SOLUTION.lstm_cell)):
        result = check(fn)
        assert result, result.message
    assert check_saturated_gate_slope(SOLUTION.ANSWERS["check_saturated_gate_slope"])


def test_unattempted_exercises_say_so():
    assert check_gru_cell(lambda X, H, params: None).message == NOT_ATTEMPTED
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
