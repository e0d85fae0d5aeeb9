"""A self-check leaves the kernel as it found it, and no shortcut pays (#28, deliverable 5).

Each test is a student's function that takes one of the shortcuts issue #28 lists (or
breaks the kernel in one of its ways) and checks that it is refused, with a clear verdict,
and that nothing it changed is left behind.
"""

import gc
import importlib.util
import inspect
import io
import subprocess
import sys
import textwrap
import threading
import time
import tomllib
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from solution_files import SOLUTIONS, load_solution, needs_solutions_beside_the_package

import d2lmini.bptt
import d2lmini.rnn
from d2lmini.exercises import (
    bptt,
    clipping,
    coding,
    concat_matmul,
    gates,
    guard,
    hidden_state,
    one_hot,
    perplexity,
    rnn_scratch,
)
from d2lmini.exercises.coding import Case

pytestmark = pytest.mark.torch_dependent

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def short_limit(monkeypatch):
    monkeypatch.setattr(guard, "TIME_LIMIT", 0.5)


def rnn_step(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + H @ W_hh + b_h)


# --- limits: memory and time ------------------------------------------------------------------------


def grows_a_list(*args):
    kept = []
    while True:
        kept.append(torch.ones(2_500_000))  # 10 MB more at each step


def one_huge_allocation(*args):
    return torch.ones(400_000_000)  # 1.6 GB in one call


@pytest.mark.parametrize("wrong", [grows_a_list, one_huge_allocation], ids=lambda f: f.__name__)
def test_a_function_that_eats_memory_is_stopped_with_a_verdict_about_memory(wrong, monkeypatch):
    monkeypatch.setattr(guard, "MEMORY_LIMIT", 300 * 2**20)
    monkeypatch.setattr(guard, "TIME_LIMIT", 20.0)  # the memory limit, not the time limit, must stop it
    start = time.monotonic()
    result = hidden_state.check_rnn_step(wrong)
    assert not result and "more memory than the check allows" in result.message, result.message
    assert "loop that never ends" not in result.message
    assert time.monotonic() - start < 15


def test_time_sleep_does_not_hold_the_check(short_limit):
    start = time.monotonic()
    result = hidden_state.check_rnn_step(lambda *args: time.sleep(100))
    assert time.monotonic() - start < 5
    assert not result and "still running after 0.5 seconds" in result.message, result.message


# --- settings and threads are put back ----------------------------------------------------------------


def switches_gradients_off(*args):
    torch.set_grad_enabled(False)
    return rnn_step(*args)


def changes_the_default_dtype(*args):
    torch.set_default_dtype(torch.float64)
    return rnn_step(*args)


@pytest.mark.parametrize("wrong, words", [
    (switches_gradients_off, "torch.set_grad_enabled"),
    (changes_the_default_dtype, "torch.set_default_dtype"),
], ids=["grad", "dtype"])
def test_a_changed_setting_is_put_back_and_named(wrong, words):
    result = hidden_state.check_rnn_step(wrong)
    assert not result and words in result.message and "put back" in result.message, result.message
    assert "Storage" not in result.message
    assert torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32


def starts_a_thread_that_patches_torch_later(*args):
    def later():
        time.sleep(0.5)
        torch.tanh = lambda x: x

    threading.Thread(target=later, daemon=True).start()
    return rnn_step(*args)


def reaches_the_package_from_a_thread(*args):
    box = []
    thread = threading.Thread(target=lambda: box.append(d2lmini.rnn.rnn_step(*args)))
    thread.start()
    thread.join()
    return box[0]


def starts_a_raw_thread(*args):
    import _thread
    _thread.start_new_thread(time.sleep, (0.5,))
    return rnn_step(*args)


def reaches_the_package_from_a_pool(*args):
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(d2lmini.rnn.rnn_step, *args).result()


THREADS = [starts_a_thread_that_patches_torch_later, reaches_the_package_from_a_thread, starts_a_raw_thread]


def test_a_thread_a_library_starts_is_watched_too():
    result = hidden_state.check_rnn_step(reaches_the_package_from_a_pool)
    assert not result and "d2lmini.rnn.rnn_step" in result.message, result.message
    assert threading.getprofile() is None


@pytest.mark.parametrize("wrong", THREADS, ids=lambda f: f.__name__)
def test_a_thread_is_refused_and_none_outlives_the_check(wrong):
    original, before = torch.tanh, threading.active_count()
    result = hidden_state.check_rnn_step(wrong)
    assert not result and "thread" in result.message, result.message
    time.sleep(0.8)
    assert torch.tanh is original and threading.active_count() == before


def removes_the_hook_then_calls_the_package(*args):
    sys.setprofile(None)
    return d2lmini.rnn.rnn_step(*args)


def test_switching_the_hook_off_is_refused():
    result = hidden_state.check_rnn_step(removes_the_hook_then_calls_the_package)
    assert not result and "sys.setprofile" in result.message, result.message
    assert sys.getprofile() is None


def exits_the_process(*args):
    import os
    os._exit(0)


def test_os_exit_is_refused_and_the_process_lives():
    result = hidden_state.check_rnn_step(exits_the_process)
    assert not result and "os._exit" in result.message, result.message


FIRST_COMPILE = """
import sys
if sys.argv[1] == "kernel":
    import IPython  # as in a kernel: d2lmini then imports torch._dynamo whole (d2lmini.held)
import torch
from d2lmini.exercises import guard, hidden_state
# In a kernel torch._dynamo is imported with d2lmini; in a plain process (the grader's caller) the
# student's torch.compile imports it inside the check, which must not blame them either.
assert ("torch._dynamo" in sys.modules) == (sys.argv[1] == "kernel")
def rnn_step(X, H, W_xh, W_hh, b_h):
    return torch.compile(lambda a: torch.tanh(a), backend="eager")(X @ W_xh + H @ W_hh + b_h)
result = hidden_state.check_rnn_step(rnn_step)
print(result.message)
assert result, result.message
"""


@pytest.mark.slow
@pytest.mark.skipif(tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 4), reason=(
    "torch 2.3's dynamo installs the functions it generates as globals of the checker's own module "
    "and its compile workers call os._exit, so the check reports both (a limit at the lowest torch)"))
@pytest.mark.parametrize("process", ["kernel", "plain"])
def test_the_first_torch_compile_of_a_kernel_is_not_blamed_for_replacing_manual_seed(process):
    done = subprocess.run([sys.executable, "-c", FIRST_COMPILE, process], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "manual_seed" not in done.stdout


HALF_IMPORTED = """
import sys, time, pathlib, tempfile, torch
from d2lmini.exercises import guard, hidden_state
guard.TIME_LIMIT = 0.2
folder = pathlib.Path(tempfile.mkdtemp())
(folder / "slow_module.py").write_text("import time\\nfor _ in range(40):\\n"
                                       "    time.sleep(0.02)\\nDONE = True\\n")
sys.path.insert(0, str(folder))
def rnn_step(X, H, W_xh, W_hh, b_h):
    import slow_module
    return torch.tanh(X @ W_xh + H @ W_hh + b_h) if slow_module.DONE else None
result = hidden_state.check_rnn_step(rnn_step)
assert result, result.message
import slow_module
assert slow_module.DONE
"""


@pytest.mark.slow
def test_the_time_limit_never_leaves_a_module_half_imported():
    done = subprocess.run([sys.executable, "-c", HALF_IMPORTED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_torch_wrapping_its_own_function_is_not_a_replacement(monkeypatch):
    monkeypatch.setattr(guard, "TIME_LIMIT", 120.0)  # a first import of torch._dynamo takes seconds

    def imports_dynamo(*args):
        import torch._dynamo  # noqa: F401 - wraps torch.manual_seed the first time
        return rnn_step(*args)

    result = hidden_state.check_rnn_step(imports_dynamo)
    assert result, result.message


def test_saving_a_tensor_is_not_a_replacement(monkeypatch):
    # The first pickling of a tensor in a process caches copyreg's Tensor.__slotnames__.
    monkeypatch.delattr(torch.Tensor, "__slotnames__", raising=False)

    def saves_its_state(*args):
        torch.save(args[0], io.BytesIO())
        return rnn_step(*args)

    result = hidden_state.check_rnn_step(saves_its_state)
    assert result, result.message


def loop_without_detach_retaining_the_graph(model, batches, optimizer):
    state, losses = None, []
    for X, Y in batches:
        state = model.begin_state(X.shape[0]) if state is None else state
        outputs, state = model(X, state)
        loss = F.cross_entropy(outputs, Y.T.reshape(-1))
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def test_retain_graph_without_detach_gets_the_detach_hint():
    result = rnn_scratch.check_train_loop(loop_without_detach_retaining_the_graph)
    assert not result and "detach it before it enters the next one" in result.message, result.message


# --- nothing readable ----------------------------------------------------------------------------------


@pytest.mark.parametrize("check, giveaway", [
    (one_hot.check_carry_state, "sequential"), (clipping.check_clipped_entry, "is 6"),
    (clipping.check_per_tensor_bound, "sqrt(5)"), (clipping.check_value_clip_bound, "7772"),
    (clipping.check_value_clip_bound, "sqrt("), (clipping.check_max_step, "at most 2.5"),
])
def test_no_docstring_gives_the_answer(check, giveaway):
    assert giveaway not in (check.__doc__ or ""), check.__doc__


def test_the_hint_of_06_q3_does_not_give_the_parameter_count():
    result = clipping.check_value_clip_bound(1.0)
    assert not result and "7772" not in result.message and "7,772" not in result.message


def reference_values_of_the_first_case(cases):
    case = next(iter(cases(torch.device("cpu"))))
    return case.reference(*case.args)


def perplexity_off_by_one(logits, targets):
    return load_solution("07").perplexity(logits, targets) + 1


def kn_halved(text, context, char, discount=0.75):
    return load_solution("07").kn_bigram(text, context, char, discount) / 2


def loop_returning_double_the_loss(model, batches, optimizer):
    return 2 * load_solution("04").train_loop(model, batches, optimizer)


@pytest.mark.parametrize("check, wrong, cases", [
    (perplexity.check_perplexity_function, perplexity_off_by_one, perplexity._perplexity_cases),
    (perplexity.check_kn_bigram, kn_halved, perplexity._kn_cases),
])
def test_a_message_never_prints_the_expected_value(check, wrong, cases):
    expected = reference_values_of_the_first_case(cases)
    result = check(wrong)
    assert not result and "not the right value" in result.message, result.message
    for form in (f"{expected:.6g}", f"{expected:.4g}", f"{expected:.3g}"):
        assert form not in result.message, (form, result.message)


def test_the_training_loop_message_never_prints_the_reference_loss():
    _, loss = rnn_scratch._reference_loop(torch.device("cpu"), carry_state=True)
    result = rnn_scratch.check_train_loop(loop_returning_double_the_loss)
    assert not result and "mean loss" in result.message, result.message
    for form in (f"{loss:.6g}", f"{loss:.4g}", f"{loss:.3g}"):
        assert form not in result.message


# --- nothing reachable: torch's built-ins, the package, copies, the checker, the solutions --------------


def perplexity_by_the_c_function(logits, targets):
    return float(torch._C._nn.cross_entropy_loss(logits, targets).exp())


def all_states_by_nn_rnn(tokens, W_xh, W_hh, b_h):
    rnn = torch.nn.RNN(W_xh.shape[0], W_hh.shape[0], bias=False, dtype=W_xh.dtype)
    return rnn(F.one_hot(tokens.T, W_xh.shape[0]).to(W_xh.dtype))[0]


def all_states_by_rnn_tanh(tokens, W_xh, W_hh, b_h):
    inputs = F.one_hot(tokens.T, W_xh.shape[0]).to(W_xh.dtype)
    H0 = torch.zeros(1, tokens.shape[0], W_hh.shape[0], dtype=W_hh.dtype)
    weights = [W_xh.T, W_hh.T, b_h, torch.zeros_like(b_h)]
    return torch.rnn_tanh(inputs, H0, weights, True, 1, 0.0, False, False, False)[0]


def step_by_rnn_tanh_cell(X, H, W_xh, W_hh, b_h):
    return torch.rnn_tanh_cell(X, H, W_xh.T, W_hh.T, b_h, torch.zeros_like(b_h))


def step_by_the_vf_alias(X, H, W_xh, W_hh, b_h):
    return torch._VF.rnn_tanh_cell(X, H, W_xh.T, W_hh.T, b_h, torch.zeros_like(b_h))


@pytest.mark.parametrize("check, wrong, words", [
    (perplexity.check_perplexity_function, perplexity_by_the_c_function, "cross-entropy"),
    (hidden_state.check_all_states, all_states_by_nn_rnn, "built-in RNN"),
    (hidden_state.check_all_states, all_states_by_rnn_tanh, "built-in RNN"),
    (hidden_state.check_rnn_step, step_by_rnn_tanh_cell, "built-in RNN"),
    (concat_matmul.check_fused_step, step_by_the_vf_alias, "built-in RNN"),
], ids=lambda v: getattr(v, "__name__", None))
def test_torchs_built_in_version_is_refused_by_any_name(check, wrong, words):
    result = check(wrong)
    assert not result and words in result.message and "write it yourself" in result.message, result.message


def copy_of_the_bptt_module():
    namespace = {}
    exec(compile(inspect.getsource(d2lmini.bptt), "<cell>", "exec"), namespace)  # noqa: S102 - the shortcut
    return namespace


def bptt_by_a_copy_of_the_package(X, state, hiddens, d_outputs, W_hh, W_hq):
    copy = copy_of_the_bptt_module()
    vocab_size, num_hiddens = W_hq.shape[1], W_hq.shape[0]
    cache = {"X": X, "state": state, "hiddens": hiddens, "W_hh": W_hh, "W_hq": W_hq,
             "W_xh": torch.empty(vocab_size, num_hiddens, dtype=W_hh.dtype)}
    _, dA_all, _ = copy["hidden_gradients"](d_outputs, None, cache)
    grads = copy["weight_gradients"](d_outputs, dA_all, cache)
    return grads["W_xh"], grads["W_hh"], grads["b_h"]


def step_by_a_copy_of_one_function(*args):
    namespace = {"torch": torch}
    exec(compile(inspect.getsource(d2lmini.rnn.rnn_step), "<cell>", "exec"), namespace)  # noqa: S102
    return namespace["rnn_step"](*args)


def loop_by_the_cached_reference(model, batches, optimizer):
    reference, loss = rnn_scratch._reference_loop(model.W_xh.device, True)
    with torch.no_grad():
        for mine, theirs in zip(model.parameters(), reference, strict=True):
            mine.copy_(theirs)
    return loss


@pytest.mark.parametrize("check, wrong, words", [
    (bptt.check_bptt, bptt_by_a_copy_of_the_package, "a copy of d2lmini.bptt"),
    (hidden_state.check_rnn_step, step_by_a_copy_of_one_function, "a copy of d2lmini.rnn.rnn_step"),
    (rnn_scratch.check_train_loop, loop_by_the_cached_reference, "rnn_scratch._reference_loop"),
], ids=lambda v: getattr(v, "__name__", None))
def test_the_package_is_refused_under_any_name(check, wrong, words):
    result = check(wrong)
    assert not result and words in result.message and "write it yourself" in result.message, result.message


def patches_the_checker(*args):
    coding.first_difference = lambda *a, **k: None
    return torch.zeros(1)


def test_patching_the_checker_does_not_pass_and_does_not_stay():
    original = coding.first_difference
    result = hidden_state.check_rnn_step(patches_the_checker)
    assert not result and "first_difference" in result.message and "put back" in result.message
    assert coding.first_difference is original
    assert not hidden_state.check_rnn_step(lambda *args: torch.zeros(1))


def expected_from_the_frames(*args):
    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, Case) and value.args is args and value.expected is not None:
                return value.expected
        frame = frame.f_back
    return torch.zeros(1)


def expected_from_the_garbage_collector(*args):
    for thing in gc.get_objects():
        if type(thing) is Case and thing.args is args:
            if thing.expected is not None:
                return thing.expected
            return thing.reference(*args)  # the reference itself: refused
    return torch.zeros(1)


def any_tensor_of_the_right_shape_from_the_frames(*args):
    shape = (args[0].shape[0], args[2].shape[1])
    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, torch.Tensor) and value.shape == shape and value is not args[1]:
                return value
        frame = frame.f_back
    return torch.zeros(1)


@pytest.mark.parametrize("wrong", [expected_from_the_frames, expected_from_the_garbage_collector,
                                   any_tensor_of_the_right_shape_from_the_frames], ids=lambda f: f.__name__)
def test_the_expected_value_is_not_within_reach(wrong):
    assert not hidden_state.check_rnn_step(wrong)


def import_the_solutions(notebook: str):
    """As `import solutions.notebook_NN` does from a clone: the solution file itself."""
    spec = importlib.util.spec_from_file_location(f"solutions.notebook_{notebook}",
                                                  SOLUTIONS / f"notebook_{notebook}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_the_solutions_anywhere(notebook: str):
    path = SOLUTIONS / f"notebook_{notebook}.py"
    namespace = {}
    exec(compile(path.read_text(encoding="utf-8"), "<cell>", "exec"), namespace)  # noqa: S102
    return namespace


@needs_solutions_beside_the_package
@pytest.mark.parametrize("check, notebook, name", [
    (hidden_state.check_all_states, "01", "all_states"), (one_hot.check_one_hot, "03", "one_hot"),
    (rnn_scratch.check_train_loop, "04", "train_loop"), (bptt.check_bptt, "05", "bptt"),
    (clipping.check_clip_function, "06", "my_clip"), (perplexity.check_kn_bigram, "07", "kn_bigram"),
    (gates.check_gru_cell, "09", "gru_cell"), (gates.check_lstm_cell, "09", "lstm_cell"),
    (gates.check_lstm_step_backward, "09", "lstm_step_backward"),
])
def test_the_instructors_solutions_are_refused(check, notebook, name):
    for fn in (getattr(import_the_solutions(notebook), name), compile_the_solutions_anywhere(notebook)[name]):
        result = check(fn)
        assert not result and "instructors' solutions" in result.message, result.message
    assert check(getattr(load_solution(notebook), name))  # the same code written in a cell passes


def test_the_solutions_are_not_installed_nor_brought_by_the_colab_cell():
    with open(ROOT / "pyproject.toml", "rb") as handle:
        include = tomllib.load(handle)["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == ["d2lmini*"]
    from setuptools import find_packages
    assert not [p for p in find_packages(str(ROOT), include=include) if "solution" in p]
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from colab_cell import install_cell_source
    finally:
        sys.path.remove(str(ROOT / "tools"))
    source = install_cell_source("https://example.org/d2lmini")
    assert "pip" in source and "git clone" not in source and "sys.path" not in source


def test_the_guard_warns_in_its_docstring_what_it_cannot_prevent():
    text = textwrap.dedent(guard.__doc__)
    assert "cannot be prevented" in text and "grader" in text
