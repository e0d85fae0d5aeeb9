"""Every route to torch's fused recurrent cells and every copy of the package's reference is refused
(#45, item 3).

A student's function that reaches torch's RNN, GRU or LSTM kernels by a back door
(`torch.ops.aten`, `torch._VF`, an operator looked up afresh, torch's decompositions) or runs a
copy of the package's own step (compiled at any optimisation level, renamed, carried in a
default, a closure or a global, through `marshal`) is refused, in the self-check and in the
grader's caller process, while the instructors' answers still pass.
"""

import inspect
import marshal
import types

import pytest
import torch
from solution_files import SOLUTIONS, load_solution, needs_solutions_beside_the_package

import d2lmini.bptt
import d2lmini.gates
import d2lmini.rnn
from d2lmini.exercises import bptt, concat_matmul, gates, hidden_state
from d2lmini.exercises.guard import refusals
from d2lmini.grading.base.remote import encode
from d2lmini.grading.run import caller

pytestmark = pytest.mark.torch_dependent


def _fresh_operator(name: str):
    return torch._C._get_operation_overload(f"aten::{name}", "")[0]


# How a fused operator NAME can be reached: each a function of (name, *args).
ROUTES = {
    "torch.NAME": lambda name, *a: getattr(torch, name)(*a),
    "torch._VF.NAME": lambda name, *a: getattr(torch._VF, name)(*a),
    "torch.ops.aten.NAME": lambda name, *a: getattr(torch.ops.aten, name)(*a),
    "torch.ops.aten.NAME.default": lambda name, *a: getattr(torch.ops.aten, name).default(*a),
    "a fresh operator namespace": lambda name, *a: getattr(torch._ops._OpNamespace("aten"), name)(*a),
    "the dispatcher's operator itself": lambda name, *a: _fresh_operator(name)(*a),
    "torch's decomposition": lambda name, *a: getattr(torch.ops.aten, name).default.decompose(*a),
}


def rnn_step_by(route):
    def rnn_step(X, H, W_xh, W_hh, b_h):
        return ROUTES[route]("rnn_tanh_cell", X, H, W_xh.T, W_hh.T, b_h, torch.zeros_like(b_h))
    return rnn_step


def gru_cell_by(route):
    def gru_cell(X, H, params):
        W_x = torch.cat([params["W_xr"], params["W_xz"], params["W_xn"]], dim=1).T
        W_h = torch.cat([params["W_hr"], params["W_hz"], params["W_hn"]], dim=1).T
        b_x = torch.cat([params["b_r"], params["b_z"], params["b_n"]])
        b_h = torch.cat([torch.zeros_like(params["b_r"]), torch.zeros_like(params["b_z"]), params["b_hn"]])
        return ROUTES[route]("gru_cell", X, H, W_x, W_h, b_x, b_h)
    return gru_cell


def lstm_cell_by(route):
    def lstm_cell(X, H, C, params):
        W_x, W_h, b = (torch.cat([params[form.format(gate)] for gate in "ifgo"], dim=-1)
                       for form in ("W_x{}", "W_h{}", "b_{}"))
        H, C = ROUTES[route]("lstm_cell", X, (H, C), W_x.T, W_h.T, b, torch.zeros_like(b))
        return H, C
    return lstm_cell


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("check, make", [
    (hidden_state.check_rnn_step, rnn_step_by), (concat_matmul.check_fused_step, rnn_step_by),
    (gates.check_gru_cell, gru_cell_by), (gates.check_lstm_cell, lstm_cell_by),
], ids=["rnn_step", "fused_step", "gru_cell", "lstm_cell"])
def test_every_route_to_torchs_fused_cell_is_refused(check, make, route):
    result = check(make(route))
    assert not result and "write it yourself" in result.message, result.message
    assert "built-in" in result.message, result.message


def test_the_routes_compute_the_right_numbers_so_only_the_refusal_stops_them():
    """Without the ban, each route gives the right GRU step: the refusal above is what stops it."""
    cases = list(gates._gru_cases(torch.device("cpu")))
    for route in ROUTES:
        for case in cases:
            assert torch.allclose(gru_cell_by(route)(*case.args), gates.gru_cell_reference(*case.args),
                                  atol=1e-5), route


# --- copies of the package's reference ------------------------------------------------------------------


def copy_of(function, optimize: int = 0, rename: str | None = None):
    """The package's `function` compiled from its source in a cell, at `optimize`, perhaps renamed."""
    namespace = {"torch": torch}
    exec(compile(inspect.getsource(function), "<cell>", "exec", optimize=optimize), namespace)  # noqa: S102
    copied = namespace[function.__name__]
    if rename:
        code = copied.__code__
        code = code.replace(co_name=rename, co_qualname=rename,
                            co_varnames=tuple(f"v{i}" for i in range(len(code.co_varnames))))
        copied = types.FunctionType(code, namespace, rename, copied.__defaults__)
    return copied


def by_marshal(function):
    code = marshal.loads(marshal.dumps(function.__code__)).replace(co_filename="<cell>")
    return types.FunctionType(code, {"torch": torch}, "mine")


def gru_cell_with(step, carried: str):
    """gru_cell(X, H, params) that runs `step` (a copy of gates.gru_step) carried as `carried` says."""
    def fused(params):
        W_x = torch.cat([params["W_xr"], params["W_xz"], params["W_xn"]], dim=1)
        W_h = torch.cat([params["W_hr"], params["W_hz"], params["W_hn"]], dim=1)
        return W_x, W_h, torch.cat([params["b_r"], params["b_z"], params["b_n"]])

    if carried == "default":
        def gru_cell(X, H, params, step=step):
            W_x, W_h, b = fused(params)
            return step(X @ W_x + b, H, W_h, params["b_hn"])
    elif carried == "closure":
        def gru_cell(X, H, params):
            W_x, W_h, b = fused(params)
            return step(X @ W_x + b, H, W_h, params["b_hn"])
    else:
        namespace = {"fused": fused, "hidden": step}
        exec("def gru_cell(X, H, params):\n    W_x, W_h, b = fused(params)\n"  # noqa: S102
             "    return hidden(X @ W_x + b, H, W_h, params['b_hn'])\n", namespace)
        gru_cell = namespace["gru_cell"]
    return gru_cell


@pytest.mark.parametrize("optimize", [0, 1, 2])
@pytest.mark.parametrize("carried", ["default", "closure", "global"])
def test_a_copy_of_the_gru_step_is_refused_at_any_optimisation_level_however_carried(optimize, carried):
    result = gates.check_gru_cell(gru_cell_with(copy_of(d2lmini.gates.gru_step, optimize), carried))
    assert not result and "a copy of d2lmini.gates.gru_step" in result.message, result.message


@pytest.mark.parametrize("step", [
    pytest.param(lambda: copy_of(d2lmini.gates.gru_step, 2, rename="mine"), id="optimize=2, renamed"),
    pytest.param(lambda: copy_of(d2lmini.gates.gru_step, 0, rename="mine"), id="renamed"),
    pytest.param(lambda: by_marshal(d2lmini.gates.gru_step), id="marshal"),
])
def test_a_renamed_or_marshalled_copy_is_refused(step):
    result = gates.check_gru_cell(gru_cell_with(step(), "closure"))
    assert not result and "a copy of d2lmini.gates.gru_step" in result.message, result.message


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_a_copy_of_the_lstm_step_is_refused_at_any_optimisation_level(optimize):
    step = copy_of(d2lmini.gates.lstm_step, optimize)

    def lstm_cell(X, H, C, params):
        W_x, W_h, b = (torch.cat([params[form.format(gate)] for gate in "ifgo"], dim=-1)
                       for form in ("W_x{}", "W_h{}", "b_{}"))
        return step(X @ W_x + b, H, C, W_h)

    result = gates.check_lstm_cell(lstm_cell)
    assert not result and "a copy of d2lmini.gates.lstm_step" in result.message, result.message


@pytest.mark.parametrize("optimize", [0, 1])
def test_a_copy_of_a_one_line_step_is_refused_while_it_keeps_its_docstring(optimize):
    step = copy_of(d2lmini.rnn.rnn_step, optimize, rename="mine")
    result = hidden_state.check_rnn_step(lambda *args: step(*args))
    assert not result and "a copy of d2lmini.rnn.rnn_step" in result.message, result.message


@pytest.mark.parametrize("optimize", [1, 2])
def test_the_bptt_module_compiled_at_any_level_is_refused(optimize):
    namespace = {}
    exec(compile(inspect.getsource(d2lmini.bptt), "<cell>", "exec", optimize=optimize), namespace)  # noqa: S102

    def by_the_copy(X, state, hiddens, d_outputs, W_hh, W_hq):
        cache = {"X": X, "state": state, "hiddens": hiddens, "W_hh": W_hh, "W_hq": W_hq,
                 "W_xh": torch.empty(W_hq.shape[1], W_hq.shape[0], dtype=W_hh.dtype)}
        _, dA_all, _ = namespace["hidden_gradients"](d_outputs, None, cache)
        grads = namespace["weight_gradients"](d_outputs, dA_all, cache)
        return grads["W_xh"], grads["W_hh"], grads["b_h"]

    result = bptt.check_bptt(by_the_copy)
    assert not result and "a copy of d2lmini.bptt" in result.message, result.message


@needs_solutions_beside_the_package
def test_no_function_of_the_solutions_reads_as_a_copy_of_the_package():
    """The forms that leave names and docstrings out must not catch a correct answer written by hand."""
    refusals._load_known_code()
    for path in sorted(SOLUTIONS.glob("*.py")):
        module = compile(path.read_text(encoding="utf-8"), "<cell>", "exec")
        for code in refusals._named_functions(module):
            twins = [refusals._PACKAGE_CODE.get(form) for form in refusals._fingerprints(code) if form]
            assert not any(twins), (path.name, code.co_name, twins)


@needs_solutions_beside_the_package
@pytest.mark.parametrize("check, name", [(gates.check_gru_cell, "gru_cell"),
                                         (gates.check_lstm_cell, "lstm_cell")])
def test_the_answers_written_in_a_cell_still_pass(check, name):
    result = check(getattr(load_solution("09"), name))
    assert result, result.message


# --- the grader's caller process ----------------------------------------------------------------------


@pytest.mark.parametrize("route", ["torch.ops.aten.NAME", "torch.ops.aten.NAME.default", "torch._VF.NAME"])
def test_the_graders_caller_refuses_the_routes_its_guard_sees(route):
    case = next(iter(gates._gru_cases(torch.device("cpu"))))
    reply = caller.call(gru_cell_by(route), {"args": [encode(a) for a in case.args], "bans": ["GATED"]})
    assert reply["refused"] and "GRU" in reply["refused"], reply["refused"]


def test_the_graders_caller_reports_an_operator_looked_up_afresh_for_the_judge_to_refuse():
    case = next(iter(gates._gru_cases(torch.device("cpu"))))
    reply = caller.call(gru_cell_by("the dispatcher's operator itself"),
                        {"args": [encode(a) for a in case.args], "bans": ["GATED"]})
    assert refusals.banned_call(reply["calls"], (refusals.GATED,)) is not None, reply["calls"]
