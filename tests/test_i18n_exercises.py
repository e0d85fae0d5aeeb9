"""The exercises wing speaks Chinese: self-checks, coding checks, capstone, guard and perplexity verdicts.

With `D2LMINI_LANG=zh_CN` every verdict of notebooks 01-09 (right, wrong, not answered, not attempted), its
feedback and hints, where a wrong entry is, the capstone's typical mistakes and its run (message, ladder,
figure), the guard's refusals and the perplexity verdicts come out in Chinese (CJK characters, and no English
sentence of the wing's catalog left); the same calls without the variable give the English, unchanged.
"""

import importlib
import os
import re
import types
from dataclasses import replace
from pathlib import Path

import matplotlib
import pytest
import torch
from catalog_checks import CatalogChecks
from solution_files import SOLUTIONS, load_answers, load_solution
from test_exercises_mistakes import as_student_cell

import d2lmini.rnn
from d2lmini import i18n
from d2lmini.exercises import Verdict, capstone, clipping, hidden_state, one_hot, perplexity, rnn_scratch
from d2lmini.exercises.capstone import pieces as capstone_pieces
from d2lmini.exercises.capstone.run import TRIGRAM, CapstoneRun, ladder_lines, show_run
from d2lmini.exercises.coding import NOT_ATTEMPTED, item_name, nested_name, outcome_problem
from d2lmini.exercises.guard import CappedText, Outcome, children
from d2lmini.verdicts import judge_perplexity

# the CJK font is someone else's: a figure drawn without it only warns
pytestmark = pytest.mark.filterwarnings("ignore:Glyph .* missing from:UserWarning")

CATALOG = Path(__file__).resolve().parent.parent / "d2lmini/locale/zh_CN/LC_MESSAGES/exercises.po"
# The notebooks' self-check modules, and which function of the instructors' solutions each coding check takes.
MODULES = {"01": "hidden_state", "02": "concat_matmul", "03": "one_hot", "04": "rnn_scratch", "05": "bptt",
           "06": "clipping", "07": "perplexity", "09": "gates"}
CODING = [("01", "check_rnn_step", "rnn_step"), ("01", "check_all_states", "all_states"),
          ("02", "check_fused_step", "fused_step"), ("03", "check_lookup", "lookup"),
          ("03", "check_one_hot", "one_hot"), ("03", "check_sequential_batches", "batches_with_tail"),
          ("04", "check_forward", "forward"), ("04", "check_train_loop", "train_loop"),
          ("05", "check_masked_loss_and_grad", "masked_loss_and_grad"), ("05", "check_bptt", "bptt"),
          ("05", "check_leaky_bptt", "leaky_bptt"), ("06", "check_clip_function", "my_clip"),
          ("07", "check_perplexity_function", "perplexity"), ("07", "check_kn_bigram", "kn_bigram"),
          ("09", "check_gru_cell", "gru_cell"), ("09", "check_lstm_cell", "lstm_cell"),
          ("09", "check_lstm_step_backward", "lstm_step_backward")]
QUESTIONS = [(notebook, name, answer)
             for notebook in MODULES for name, answer in load_answers(notebook).items()]


CHECKS = CatalogChecks(CATALOG)
assert_chinese, assert_english = CHECKS.assert_chinese, CHECKS.assert_english


@pytest.fixture
def chinese(monkeypatch):
    i18n.translations.cache_clear()
    monkeypatch.setenv("D2LMINI_LANG", "zh_CN")
    yield
    i18n.translations.cache_clear()


@pytest.fixture
def english(monkeypatch):
    monkeypatch.delenv("D2LMINI_LANG", raising=False)


def as_cell(path: Path, name: str) -> types.ModuleType:
    """The file at `path` as a student who wrote the same functions in a cell has them: no docstrings, so
    the guard does not take them for the file's own code."""
    module = types.ModuleType(name)
    code = compile(path.read_text(encoding="utf-8"), f"<cell {path.name}>", "exec", dont_inherit=True,
                   optimize=2)
    exec(code, module.__dict__)  # noqa: S102 - our own files
    return module


CAPSTONE = as_cell(SOLUTIONS / "capstone.py", "capstone_solution")
MISTAKES = as_student_cell("capstone")  # each mistake, as a student would write it
RUN = CapstoneRun([3.0, 2.5, 2.0], [2.0, 0.5, 0.4], 6.0, "the river ...", {"uniform": 27.0, TRIGRAM: 6.6},
                  1.0, 1.0)


def train_with(old: str, new: str):
    """The solution's capstone loop with `old` written as `new` (a student's mistake)."""
    source = (SOLUTIONS / "capstone.py").read_text(encoding="utf-8")
    namespace = dict(CAPSTONE.__dict__)
    code = source[source.index("def train("):].replace(old, new)
    exec(compile(code, "<cell>", "exec", dont_inherit=True, optimize=2), namespace)  # noqa: S102
    return namespace["train"]


def figure_texts(figure) -> str:
    """Every text a figure shows: titles, axis labels, legend entries, tick labels."""
    texts = []
    for ax in figure.axes:
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.get_yticklabels()]
        legend = ax.get_legend()
        if legend is not None:
            texts += legend.get_texts()
    return "\n".join(t.get_text() for t in texts if t.get_text())


# --- the question checks of notebooks 01-09 --------------------------------------------------------------


@pytest.mark.parametrize("notebook, name, answer", QUESTIONS, ids=[name for _, name, _ in QUESTIONS])
def test_every_question_check_says_right_and_wrong_in_chinese(chinese, notebook, name, answer):
    check = getattr(importlib.import_module(f"d2lmini.exercises.{MODULES[notebook]}"), name)
    right = check(answer)
    assert right and right.message.startswith("正确！"), right.message
    assert_chinese(right.message)
    for wrong in ("abc", (1, 2), 12345.678, 10**400):
        verdict = check(wrong)
        assert not verdict and verdict.message.startswith("还不对。"), verdict.message
        assert_chinese(verdict.message)
    assert check(None).message == "尚未作答：把 None 换成你的答案，然后运行这个单元格。"


@pytest.mark.parametrize("notebook, name, answer", QUESTIONS, ids=[name for _, name, _ in QUESTIONS])
def test_the_same_question_checks_are_english_without_the_variable(english, notebook, name, answer):
    check = getattr(importlib.import_module(f"d2lmini.exercises.{MODULES[notebook]}"), name)
    assert check(answer).message.startswith("Correct! ")
    assert check("abc").message.startswith("Not yet. ")
    assert_english(check(answer).message + check("abc").message)
    assert check(None).message == "Not answered yet: replace None by your answer and run the cell."


def test_a_number_close_but_not_right_is_told_so_in_chinese(chinese):
    too_short = rnn_scratch.check_temperature_probability(0.9)
    rounded_wrongly = perplexity.check_sequence_perplexity(3.3636 * 1.01)
    assert too_short.message == ("很接近——请多给几位数字。0.9 已经很近了；"
                                 "请给出正确舍入到至少 2 位有效数字的值。")
    assert rounded_wrongly.message.startswith("很接近，但 3.39")
    assert_chinese(rounded_wrongly.message)
    not_a_number = one_hot.check_one_hot_bytes("abc").message
    assert not_a_number.startswith("还不对。请用一个数作答，而不是 'abc'。数出张量")


def test_the_same_numbers_are_told_in_english(english):
    assert rnn_scratch.check_temperature_probability(0.9).message == (
        "Close — give more digits. 0.9 is near; give the value rounded correctly to at least 2 significant "
        "figures.")
    assert one_hot.check_one_hot_bytes("abc").message == (
        "Not yet. Answer with a number, not 'abc'. Count the numbers in the tensor (multiply the three "
        "sizes) and multiply by the bytes of one float32 (torch.float32 has element_size() == 4).")


# --- the coding checks ------------------------------------------------------------------------------------


def raises(*args):
    raise ValueError("boom")


def stub(*args):
    return None


@pytest.mark.slow
@pytest.mark.parametrize("notebook, name, solution", CODING, ids=[name for _, name, _ in CODING])
def test_every_coding_check_speaks_chinese(chinese, notebook, name, solution):
    check = getattr(importlib.import_module(f"d2lmini.exercises.{MODULES[notebook]}"), name)
    right = check(getattr(load_solution(notebook), solution))
    assert right and right.message.startswith("正确！"), right.message
    assert_chinese(right.message)
    assert check(stub).message == check(None).message == i18n._(NOT_ATTEMPTED) != NOT_ATTEMPTED
    assert check(stub).message.startswith("尚未尝试")
    for wrong in (3, raises, lambda *args: "hello"):
        verdict = check(wrong)
        assert not verdict and verdict.message.startswith("还不对。"), verdict.message
        assert_chinese(verdict.message)
    assert "而不是一个 int 对象" in check(3).message and "抛出了 ValueError：boom" in check(raises).message


def test_a_wrong_entry_is_located_in_chinese(chinese):
    solution_01, solution_04 = load_solution("01"), load_solution("04")

    def one_state_off(tokens, W_xh, W_hh, b_h):
        states = solution_01.all_states(tokens, W_xh, W_hh, b_h).clone()
        states[1, 0, 0] += 1
        return states

    def one_output_off(X, state, *params):
        outputs, H = solution_04.forward(X, state, *params)
        outputs = outputs.clone()
        outputs[2, 1] += 1
        return outputs, H

    def nan_entry(X, H, W_xh, W_hh, b_h):
        result = torch.tanh(X @ W_xh + H @ W_hh + b_h)
        result[0, 1] = float("nan")
        return result

    assert hidden_state.check_all_states(one_state_off).message == (
        "还不对。输入为「batch=2, steps=4, vocab=5, hiddens=3」时：结果（时间步 2，即 H_2；序列 0）有误"
        "（24 个元素中有 1 个不同）。")
    assert rnn_scratch.check_forward(one_output_off).message == (
        "还不对。输入为「batch=2, steps=3, vocab=6, hiddens=4」时：结果中的输出"
        "（第 2 行，即时间步 1、序列 0；第 1 列）有误（36 个元素中有 1 个不同）。")
    assert hidden_state.check_rnn_step(nan_entry).message == (
        "还不对。输入为「batch=3, inputs=4, hiddens=2」时：结果（第 0 行、第 1 列）含有 nan 或 inf。 "
        "可能的原因：你的结果在正确结果有限的地方出现了 nan 或 inf：找找是否除以了可能为 0 的量"
        "（全零梯度的范数、空集合的计数）、对 0 取了对数，或者对很大的数取了 exp。 "
        "请重读笔记 01 第 6 节（RNN 的单步计算及其输出）。")


def test_the_same_entries_are_located_in_english(english):
    solution_01 = load_solution("01")

    def one_state_off(tokens, W_xh, W_hh, b_h):
        states = solution_01.all_states(tokens, W_xh, W_hh, b_h).clone()
        states[1, 0, 0] += 1
        return states

    assert hidden_state.check_all_states(one_state_off).message == (
        "Not yet. For batch=2, steps=4, vocab=5, hiddens=3: the result is wrong at time step 2 (H_2), "
        "sequence 0 (1 of 24 entries differ).")


# --- the guard's refusals and what it tells about a function that misbehaves ------------------------------


def by_the_package(X, H, W_xh, W_hh, b_h):
    return d2lmini.rnn.rnn_step(X, H, W_xh, W_hh, b_h)


def by_torch(X, H, W_xh, W_hh, b_h):
    return torch.rnn_tanh_cell(X, H, W_xh.T, W_hh.T, b_h, torch.zeros_like(b_h))


def with_a_thread(X, H, W_xh, W_hh, b_h):
    import threading
    threading.Thread(target=print).start()
    return torch.tanh(X @ W_xh + H @ W_hh + b_h)


def with_a_signal(X, H, W_xh, W_hh, b_h):
    os.kill(os.getpid(), 0)  # refused before it runs
    return torch.tanh(X @ W_xh + H @ W_hh + b_h)


def in_place(X, H, W_xh, W_hh, b_h):
    H += 1
    return torch.tanh(X @ W_xh + H @ W_hh + b_h)


def printing(X, H, W_xh, W_hh, b_h):
    print("y" * 2500)
    return torch.tanh(X @ W_xh + H @ W_hh + b_h)


def test_the_guard_refuses_and_tells_in_chinese(chinese):
    said = {fn.__name__: hidden_state.check_rnn_step(fn).message
            for fn in (by_the_package, by_torch, with_a_thread, with_a_signal, in_place)}
    assert said["by_the_package"] == ("还不对。你的函数调用了 d2lmini.rnn.rnn_step，这是本包自己的代码。"
                                      "本练习要求你自己实现它，所以这里拒绝了这次调用。 可能的原因："
                                      "练习要你亲手写的那部分工作，你的函数交给了别的东西（torch 的"
                                      "内置函数、自动微分、本包自己的代码，或超出练习允许次数的乘法）："
                                      "即使数值正确，这条路也不是练习要练的。 请重读笔记 01 第 6 节"
                                      "（RNN 的单步计算及其输出）。")
    assert "torch 内置的 RNN" in said["by_torch"]
    assert "你的函数启动了一个新线程" in said["with_a_thread"]
    assert "os.kill，它可能结束笔记本的内核" in said["with_a_signal"]
    assert "原地修改了它的第 2 个输入" in said["in_place"]
    for message in said.values():
        assert_chinese(message)
    shown = hidden_state.check_rnn_step(printing).shown()
    assert shown.startswith("你的函数打印了：\nyyy")
    assert re.search(r"……（另外还打印了 [\d,]+ 个字符，未显示）", shown)


def test_the_same_refusals_are_english_without_the_variable(english):
    assert hidden_state.check_rnn_step(with_a_signal).message == (
        "Not yet. Your function calls os.kill, which could end the notebook's kernel with no verdict; it is "
        "refused here.")
    assert hidden_state.check_rnn_step(by_the_package).message == (
        "Not yet. Your function calls d2lmini.rnn.rnn_step, the package's own code. The exercise asks you to "
        "write it yourself, so that call is refused here. Likely cause: your function leaves to something "
        "else (a torch built-in, autograd, the package's own code, or more products than the exercise "
        "allows) the work the exercise asks you to write: even where its numbers are right, that route is "
        "not the exercise. Re-read notebook 01, section 6 (The RNN step and its output).")
    shown = hidden_state.check_rnn_step(printing).shown()
    assert shown.startswith("What your function printed:\nyyy")
    assert re.search(r"\.\.\. \([\d,]+ more characters printed, not shown\)", shown)


OUTCOMES = [Outcome(replaced=["torch.tanh"]), Outcome(threads=2), Outcome(processes=["process 12"]),
            Outcome(out_of_memory=True), Outcome(timed_out=True), Outcome(refused="torch.nn.RNN"),
            Outcome(error=ValueError("boom"))]


def test_what_went_wrong_in_a_call_is_told_in_chinese(chinese):
    for outcome in OUTCOMES:
        assert_chinese(outcome_problem(outcome, "一个情形"))
    assert children.name(2**30) == "进程 1073741824"
    capped = CappedText(3)
    capped.write("abcdef")
    assert capped.shown() == "abc\n……（另外还打印了 3 个字符，未显示）\n"


def test_the_same_is_told_in_english(english):
    assert outcome_problem(Outcome(threads=2), "L") == (
        "Your function left 2 thread(s) running (now stopped): a thread that outlives the check could change "
        "the notebook later. The exercises need no threads.")
    assert children.name(2**30) == "process 1073741824"
    for outcome in OUTCOMES:
        assert_english(outcome_problem(outcome, "a case"))


# --- the capstone (notebook 08) ---------------------------------------------------------------------------


def test_a_capstone_piece_is_told_its_likely_mistake_in_chinese(chinese):
    for mistake in MISTAKES.FORWARD_MISTAKES:
        message = capstone.check_forward(mistake.gives).message
        assert "可能的原因：" in message, message
        assert_chinese(message)
    message = capstone.check_forward(MISTAKES.FORWARD_MISTAKES[6].gives).message
    assert message == ("还不对。输入为「批量大小 3，4 个时间步，6 个词元，5 个隐藏单元」时："
                       "2 个输出中有 1 个有误。 【有误】outputs（第 0 行、第 0 列）有误"
                       "（72 个元素中有 72 个不同）。 【正确】hiddens。 可能的原因：时间步 t 的输出是用"
                       "这一步之前的状态 H_(t-1) 算的，而不是用 H_t：O_t = H_t W_hq + b_q，"
                       "在这一步之后计算。 提示：隐状态是对的，所以出错的是输出层：在堆叠起来的状态上计算 "
                       "O = H W_hq + b_q，按时间步优先的顺序（第 t * batch + b 行属于时间步 t、序列 b）。")
    clipped = capstone.check_clip(MISTAKES.CLIP_MISTAKES[1].gives).message
    assert "【有误】裁剪后的梯度 0（第 0 行、第 0 列）有误" in clipped and "【正确】范数。" in clipped
    assert_chinese(clipped)


def test_the_same_mistake_is_told_in_english(english):
    assert capstone.check_forward(MISTAKES.FORWARD_MISTAKES[6].gives).message == (
        "Not yet. For batch 3, 4 steps, 6 tokens, 5 hidden units: 1 of 2 outputs are wrong. Wrong: outputs "
        "is wrong at row 0, column 0 (72 of 72 entries differ). Right: hiddens. Likely cause: the output of "
        "step t is computed from the state before the step, H_(t-1), not from H_t: O_t = H_t W_hq + b_q, "
        "after the step. Hint: The hidden states are right, so the output layer is what is wrong: O = H W_hq "
        "+ b_q on the stacked states, step-major (row t * batch + b belongs to step t, sequence b).")


def test_a_piece_without_a_known_mistake_gets_a_hint_in_chinese(chinese):
    def one_gradient_off(X, state, hiddens, d_outputs, d_final, params):
        grads, d_state = CAPSTONE.backward(X, state, hiddens, d_outputs, d_final, params)
        return [grads[0] + 1, *grads[1:]], d_state

    def loss_off(outputs, Y):
        loss, d_outputs = CAPSTONE.loss_and_grad(outputs, Y)
        return loss + 1, d_outputs

    for message in (capstone.check_backward(one_gradient_off).message,
                    capstone.check_loss_and_grad(loss_off).message):
        assert "提示：" in message
        assert_chinese(message)
    assert "提示：只有 dW_xh 不对" in capstone.check_backward(one_gradient_off).message


def test_the_nested_items_of_a_result_are_named_in_chinese(chinese):
    unnamed = nested_name(nested_name(i18n._("the result"), i18n._("the gradients")), item_name(1))
    verdict = Verdict.not_yet(f"{unnamed}的形状为 (3,)；应为 (4, 4)。")
    named = capstone_pieces._named_items(verdict, capstone_pieces.GRADIENTS, capstone_pieces.GRADIENT_NAMES)
    assert unnamed == "结果中的梯度中的第 1 项"
    assert named.message == "还不对。结果中的dW_hh的形状为 (3,)；应为 (4, 4)。"
    assert named.problem == "结果中的dW_hh的形状为 (3,)；应为 (4, 4)。"


def test_the_capstone_names_its_first_failing_piece_in_chinese(chinese):
    pieces = {name: getattr(CAPSTONE, name) for name in
              ("minibatches", "forward", "loss_and_grad", "backward", "clip", "sgd", "perplexity", "train")}
    assert capstone.check_capstone().message == i18n._(NOT_ATTEMPTED)
    assert capstone.check_capstone(**dict(pieces, clip=stub)).message == (
        "还不对。第一个还不正确的部分是 clip，即 clip(grads, theta)：它仍然返回 None。")
    assert capstone.check_capstone(**dict(pieces, train=3)).message == (
        "还不对。第一个还不正确的部分是训练循环 train(indices, params, budget)："
        "请传入函数本身，而不是一个 int 对象。")


@pytest.mark.slow
def test_the_loop_is_told_its_mistake_in_chinese(chinese):
    fresh = capstone.check_train(train_with("state = hiddens[-1]", "state = torch.zeros_like(state)"))
    assert fresh.message == ("还不对。你的循环能运行，但每个小批量都从零状态开始。在顺序分区下，"
                             "一个小批量的第 i 行接着上一个小批量的第 i 行：应把最终的隐状态传递下去。")
    # Worded inside the guard (the result's conversion), not refused as the package's own code.
    two_things = capstone.check_train(train_with("return params, losses, norms", "return params, losses"))
    assert two_things.message == "还不对。train 应该返回三样东西：(params, losses, norms)。"


@pytest.mark.slow
def test_the_same_loop_mistake_is_told_in_english(english):
    fresh = capstone.check_train(train_with("state = hiddens[-1]", "state = torch.zeros_like(state)"))
    assert fresh.message == (
        "Not yet. Your loop runs, but every minibatch starts from a zero state. With sequential partitioning "
        "row i of a minibatch continues row i of the one before: carry the final hidden state on.")


def test_the_capstone_run_is_judged_and_drawn_in_chinese(chinese):
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    verdict = capstone._judge(RUN, "")
    assert verdict and verdict.message.startswith("正确！你的 RNN 用 1 秒训练了 3 个小批量")
    assert "基线阶梯（验证集困惑度，同一文本以同样方式读取）：" in verdict.message
    assert_chinese(verdict.message)
    for run in (replace(RUN, perplexity=8.0), replace(RUN, norms=[0.1, 0.2, 0.3])):
        assert_chinese(capstone._judge(run, "").message)
    assert ladder_lines(RUN)[-1].startswith("→ 你的 RNN")
    plt.close("all")
    show_run(RUN)
    texts = figure_texts(plt.gcf())
    assert "你的 RNN 的学习过程" in texts and "它在基线阶梯上的位置" in texts and "你的 RNN" in texts
    assert_chinese(texts)
    plt.close("all")


def test_the_same_run_is_judged_and_drawn_in_english(english):
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    verdict = capstone._judge(replace(RUN, norms=[0.1, 0.2, 0.3]), "")
    assert verdict.message == (
        "Not yet. The model beats the trigram, but clipping never acted in this run, so it was not tested: "
        "Your RNN trained for 3 minibatches in 1 s (training loss 3.00 nats at the first, 2.50 over the last "
        "20) and reads the validation text, as one stream, at perplexity 6.000; the Kneser-Ney trigram gives "
        "6.600. Clipping acted at 0 of 3 minibatches (largest joint norm 0.3, θ = 1).")
    assert ladder_lines(RUN)[-1] == f"→ {'your RNN':<24} {6.0:7.3f}"
    plt.close("all")
    show_run(RUN)
    texts = figure_texts(plt.gcf())
    assert "Your RNN learning" in texts and "your RNN" in texts
    assert_english(texts)
    plt.close("all")


def test_a_budget_that_cannot_run_is_refused_in_chinese(chinese):
    with pytest.raises(TypeError) as not_a_budget:
        capstone.validate_budget("x")
    with pytest.raises(ValueError) as missing:
        capstone.validate_budget(capstone.Budget(num_steps=None))
    with pytest.raises(ValueError) as no_probe:
        capstone.estimated_seconds(probe=0)
    for error in (not_a_budget, missing, no_probe):
        assert_chinese(str(error.value))
    assert "必须给出 num_steps，不能是 None。" in str(missing.value)


def test_the_same_budget_is_refused_in_english(english):
    with pytest.raises(ValueError) as missing:
        capstone.validate_budget(capstone.Budget(num_steps=None))
    assert str(missing.value) == ("check_capstone's budget (set by whoever calls the check, not by the "
                                  "student's code): budget.num_steps = None cannot run. The num_steps must "
                                  "be given, not None.")


# --- the perplexity verdicts (notebook 06's panel, the lab) -----------------------------------------------

BASELINES = {"uniform": 28.0, "unigram": 16.5, "Kneser-Ney 5-gram": 4.5, "PPMd compressor": 4.2}


def test_perplexity_verdicts_are_chinese(chinese):
    assert judge_perplexity(30.0, BASELINES).text == "困惑度 30：不比均匀猜测（28）好"
    assert judge_perplexity(6.4, BASELINES).text == (
        "困惑度 6.4：比瞎猜好，但仍比这些基线差：Kneser-Ney 5元语法（4.5）、PPMd 压缩器（4.2）")
    assert judge_perplexity(4.0, {"uniform": 28.0, "unigram": 16.5}).text == (
        "困惑度 4，优于以下基线：均匀猜测（28）、一元语法（16.5）")
    with pytest.raises(ValueError) as no_uniform:
        judge_perplexity(3.0, {"unigram": 3.0})
    assert_chinese(str(no_uniform.value))


def test_the_same_perplexity_verdicts_are_english(english):
    assert judge_perplexity(30.0, BASELINES).text == "perplexity 30: no better than a uniform guess (28)"
    assert judge_perplexity(6.4, BASELINES).text == (
        "perplexity 6.4: better than guessing, but worse than the Kneser-Ney 5-gram (4.5), the PPMd "
        "compressor (4.2)")
    assert judge_perplexity(4.0, {"uniform": 28.0, "unigram": 16.5}).text == (
        "perplexity 4: better than the uniform (28), the unigram (16.5)")


def test_clipping_and_one_hot_cases_are_labelled_in_chinese(chinese):
    verdict = clipping.check_clip_function(raises)
    assert verdict.message == ("还不对。输入为「联合范数远高于 θ = 1 的梯度」时，"
                               "你的函数抛出了 ValueError：boom")
    assert one_hot.check_sequential_batches(raises).message.startswith(
        "还不对。输入为「含 1000 个词元的文本，batch_size=4, num_steps=10, offset=7」时")
