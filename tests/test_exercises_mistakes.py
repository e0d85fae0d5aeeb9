"""The catalogue of mistakes (`d2lmini.exercises.mistakes`): each one, planted, is named by its cause.

Every catalogued mistake is planted as a student's function (the catalogue's own module run as a
notebook cell, each function given one more statement so that it is the student's code, not a copy
of the package's) and checked by its exercise's self-check: the verdict must be "Not yet", name that
mistake's cause and its section, and quote no number of the reference's result.
"""

import ast
import importlib
import types

import pytest
from test_exercises_held_apart import CASES, quotes_a_reference_number

from d2lmini.exercises import coding
from d2lmini.exercises.mistakes import CATALOGUE, OWN
from d2lmini.i18n import _

pytestmark = pytest.mark.torch_dependent  # each mistake is recognised by torch's numbers

CHECKS = {
    "01:rnn_step": "hidden_state.check_rnn_step",
    "01:all_states": "hidden_state.check_all_states",
    "02:fused_step": "concat_matmul.check_fused_step",
    "03:lookup": "one_hot.check_lookup",
    "03:one_hot": "one_hot.check_one_hot",
    "03:sequential_batches": "one_hot.check_sequential_batches",
    "04:train_loop": "rnn_scratch.check_train_loop",
    "05:masked_loss_and_grad": "bptt.check_masked_loss_and_grad",
    "05:leaky_bptt": "bptt.check_leaky_bptt",
    "06:clip_function": "clipping.check_clip_function",
    "07:perplexity_function": "perplexity.check_perplexity_function",
    "07:kn_bigram": "perplexity.check_kn_bigram",
    "09:gru_cell": "gates.check_gru_cell",
    "09:lstm_cell": "gates.check_lstm_cell",
    "09:lstm_step_backward": "gates.check_lstm_step_backward",
    **{
        f"08:{piece}": f"capstone.check_{piece}"
        for piece in ("minibatches", "forward", "loss_and_grad", "backward", "clip", "sgd", "perplexity")
    },
}
MODULES = {
    "01": "recurrence",
    "02": "recurrence",
    "03": "inputs",
    "04": "training",
    "05": "backprop",
    "06": "measures",
    "07": "measures",
    "08": "capstone",
    "09": "gated",
}


def check_of(exercise: str):
    """The self-check function of the exercise with this id."""
    module, name = CHECKS[exercise].split(".")
    return getattr(importlib.import_module(f"d2lmini.exercises.{module}"), name)


class _Planted(ast.NodeTransformer):
    """Give every function one more first statement: the same mistakes, written by a student."""

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.body.insert(0, ast.parse("planted_by_a_student = True").body[0])
        return node


SIBLING = "d2lmini.exercises.mistakes."


class _FromSiblingCells(ast.NodeTransformer):
    """Drop each import from another catalogue module, noting its names: the cell takes them from that
    module's own cell, so that a helper it shares (notebook 05's `BpttLoop`) is the student's code too."""

    def __init__(self):
        self.imported: list[tuple[str, str]] = []  # (sibling module, name)

    def visit_ImportFrom(self, node):
        if not (node.module or "").startswith(SIBLING):
            return node
        self.imported += [(node.module.removeprefix(SIBLING), alias.name) for alias in node.names]
        return None


def as_student_cell(module_name: str, cells: dict[str, types.ModuleType] | None = None) -> types.ModuleType:
    """The catalogue module `module_name`, run as a student's notebook cell (its imports from other
    catalogue modules taken from their cells in `cells`, made first when missing)."""
    cells = {} if cells is None else cells
    module = importlib.import_module(f"d2lmini.exercises.mistakes.{module_name}")
    siblings = _FromSiblingCells()
    tree = _Planted().visit(siblings.visit(ast.parse(open(module.__file__, encoding="utf-8").read())))
    cell = types.ModuleType(f"cell_{module_name}")
    for sibling, name in siblings.imported:
        if sibling not in cells:
            cells[sibling] = as_student_cell(sibling, cells)
        setattr(cell, name, getattr(cells[sibling], name))
    exec(
        compile(ast.fix_missing_locations(tree), "<cell>", "exec", dont_inherit=True, optimize=2),  # noqa: S102
        cell.__dict__,
    )
    return cell


def student_cells() -> dict[str, types.ModuleType]:
    """Every catalogue module of `MODULES` as a student's cell."""
    cells: dict[str, types.ModuleType] = {}
    for name in sorted(set(MODULES.values())):
        if name not in cells:
            cells[name] = as_student_cell(name, cells)
    return cells


CELLS = student_cells()


def _is(value, exercise, index) -> bool:
    original = OWN[exercise]  # the module's own tuple; the catalogue adds the shared mistakes after it
    if isinstance(value, dict):
        return any(_is(v, exercise, index) for v in value.values())
    return (
        len(value) == len(original)
        and all(isinstance(m, coding.Mistake) for m in value)
        and [m.cause for m in value] == [m.cause for m in original]
    )


def planted_mistake(exercise: str, index: int) -> coding.Mistake:
    """The cell's copy of mistake `index` of `exercise` (its `gives` is then the student's function)."""
    cell = CELLS[MODULES[exercise[:2]]]
    for value in cell.__dict__.values():
        candidates = value.values() if isinstance(value, dict) else [value]
        for mistakes in candidates:
            if isinstance(mistakes, tuple) and _is(mistakes, exercise, index):
                return mistakes[index]
    raise LookupError(exercise)


PLANTED = [
    (exercise, i)
    for exercise, mistakes in CATALOGUE.items()
    for i, m in enumerate(mistakes)
    if m.gives is not None
]


def first_of_its_cause(exercise: str, index: int) -> bool:
    causes = [m.cause for m in CATALOGUE[exercise]]
    return causes.index(causes[index]) == index


@pytest.mark.parametrize("exercise, index", PLANTED, ids=[f"{e}-{i}" for e, i in PLANTED])
def test_each_catalogued_mistake_planted_is_named_with_its_cause_and_section(exercise, index):
    mistake = CATALOGUE[exercise][index]
    verdict = check_of(exercise)(planted_mistake(exercise, index).gives)
    assert not verdict and verdict.message.startswith("Not yet."), verdict.message
    assert mistake.said() in verdict.message, verdict.message
    assert mistake.section == "" or _("Re-read {section}.").format(section=mistake.section) in verdict.message
    if exercise in CASES:
        assert quotes_a_reference_number(verdict.message, exercise) is None, verdict.message
