"""Notebook 09's typical mistakes: the GRU and the LSTM step with one weight matrix per gate, and the
backward pass of one LSTM step.

Each `_..._with` function is the step (or its backward pass) written with its flags' mistakes (defaults:
none); `GRU_CELL`, `LSTM_CELL` and `LSTM_STEP_BACKWARD` list the mistakes in the order they are tried.
"""

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch

from d2lmini.exercises.coding import Mistake
from d2lmini.exercises.mistakes.backprop import BRANCH_SECTION, STEP_SECTION
from d2lmini.i18n import N_

GRU_SECTION = N_("notebook 09, section 1 (The GRU)")
TRANSPOSED = N_(
    "{name} is transposed: H (batch, hiddens) multiplies each hidden weight as it is, of shape "
    "(hidden inputs, hidden outputs)."
)
NO_BIAS = N_("{name} is missing: every gate and the candidate have their own bias.")
TANH_GATE = N_("the gate {name} uses tanh: a gate is a sigmoid, a share between 0 and 1.")
SIGMOID_CANDIDATE = N_(
    "the gate {name} uses the wrong squashing: the gates I, F and O are sigmoids, the candidate G is a tanh."
)
LSTM_SECTION = N_("notebook 09, section 2 (The LSTM)")


def _affine(X, H, p, gate, transpose=(), bias=True, slip=None):
    slip = slip or Slip()
    W_h = slip.weight(p, f"W_h{gate}")
    W_h = W_h.T if gate in transpose else W_h
    return (
        (0 if slip.missing == f"W_x{gate}" else X @ slip.weight(p, f"W_x{gate}"))
        + (0 if slip.missing == f"W_h{gate}" else H @ W_h)
        + (p[f"b_{gate}"] if bias and f"b_{gate}" not in bias_off(bias) else 0)
    )


@dataclass(frozen=True)
class Slip:
    """A slip any gated step can make in one gate (defaults: none): a weight read from another gate
    (`borrowed`: (the weight written, the one read), a line copied and not fully renamed), an input's
    term left out (`missing`: its weight's name), or gates squashed by other functions (`squashing`:
    (gate letter, function) pairs)."""

    borrowed: tuple[str, str] = ("", "")
    missing: str = ""
    squashing: tuple[tuple[str, Callable], ...] = ()

    def weight(self, params: dict, name: str) -> torch.Tensor:
        """The weight `name` as the step with this slip reads it."""
        return params[self.borrowed[1] if name == self.borrowed[0] else name]

    def squash(self, gate: str, right: Callable) -> Callable:
        """The function the step with this slip squashes `gate` with (`right` when it has no slip there)."""
        return dict(self.squashing).get(gate, right)


def _sign_lost_sigmoid(x: torch.Tensor) -> torch.Tensor:
    """The sigmoid written 1 / (1 + exp(x)): the exponent's sign lost."""
    return 1 / (1 + torch.exp(x))


def _twice(function: Callable) -> Callable:
    return lambda x: function(function(x))


BORROWED = N_(
    "{used} is used where {own} belongs (a line copied from another gate and not fully renamed): each gate "
    "and the candidate have their own weights."
)
MISSING_TERM = N_(
    "the term with {weight} is missing from {gate}: every gate and the candidate read both the input X "
    "and the previous state H."
)
RELU_SQUASH = N_("{gate} goes through relu: it goes through {right}.")
SIGN_LOST = N_(
    "the sigmoid of {gate} is written 1 / (1 + exp(x)), the exponent's sign lost (the same numbers as "
    "1 - {gate}, the gate used the other way round): sigmoid(x) = 1 / (1 + exp(-x))."
)
SIGN_LOST_EVERYWHERE = N_(
    "the sigmoid is written 1 / (1 + exp(x)), the exponent's sign lost: sigmoid(x) = 1 / (1 + exp(-x))."
)
NOT_SQUASHED = N_("{gate} is not squashed: it goes through {right}.")
SQUASHED_TWICE = N_("{gate} is squashed twice: {right} is applied once.")
SQUASHINGS_SWAPPED = N_(
    "the squashings of {first} and {second} are swapped: {first} goes through {first_right}, {second} "
    "through {second_right}."
)


def gate_slips(letters: dict[str, str], right: dict[str, Callable], with_, section: str,
               worded: frozenset[tuple[str, str]] = frozenset()) -> tuple[Mistake, ...]:
    """The mistakes of `Slip` for a gated step: `letters` maps each gate's letter in the weights' names to
    its name in the notebook ("n" -> "N"), `right` each letter to its squashing, `with_(slip=...)` the
    step with a slip. `worded` names the (squashing, gate letter) slips the step's own mistakes already
    word ("relu", "sign lost": a sigmoid with the sign lost is 1 - the gate, "used the other way round")."""
    def name_of(function: Callable) -> str:
        return "sigmoid" if function is torch.sigmoid else "tanh"

    def mistake(cause: str, slip: Slip, **fields: str) -> Mistake:
        return Mistake(cause, partial(with_, slip=slip), section, tuple(fields.items()))

    mistakes = []
    for gate, other in itertools.permutations(letters, 2):
        for kind in "xh":
            used, own = f"W_{kind}{other}", f"W_{kind}{gate}"
            mistakes.append(mistake(BORROWED, Slip(borrowed=(own, used)), used=used, own=own))
    for gate in letters:
        for kind in "xh":
            mistakes.append(mistake(MISSING_TERM, Slip(missing=f"W_{kind}{gate}"), weight=f"W_{kind}{gate}",
                                    gate=letters[gate]))
    for gate, function in right.items():
        named = {"gate": letters[gate], "right": name_of(function)}
        if ("relu", gate) not in worded:
            mistakes.append(mistake(RELU_SQUASH, Slip(squashing=((gate, torch.relu),)), **named))
        mistakes += [mistake(NOT_SQUASHED, Slip(squashing=((gate, lambda x: x),)), **named),
                     mistake(SQUASHED_TWICE, Slip(squashing=((gate, _twice(function)),)), **named)]
        if function is torch.sigmoid and ("sign lost", gate) not in worded:
            sign_lost = Slip(squashing=((gate, _sign_lost_sigmoid),))
            mistakes.append(mistake(SIGN_LOST, sign_lost, gate=letters[gate]))
    sigmoids = tuple((gate, _sign_lost_sigmoid) for gate, function in right.items()
                     if function is torch.sigmoid)
    mistakes.append(mistake(SIGN_LOST_EVERYWHERE, Slip(squashing=sigmoids)))
    for first, second in itertools.combinations(right, 2):
        if right[first] is not right[second]:
            swapped = Slip(squashing=((first, right[second]), (second, right[first])))
            mistakes.append(mistake(SQUASHINGS_SWAPPED, swapped, first=letters[first], second=letters[second],
                                    first_right=name_of(right[first]), second_right=name_of(right[second])))
    return tuple(mistakes)


def bias_off(bias) -> tuple:
    """The biases left out: `bias` is True (none), False (all) or the names of those left out."""
    return () if bias is True or bias is False else bias


def _gru_with(
    X,
    H,
    params,
    chung=False,
    reset_first=False,
    b_hn="inside",
    swap_gates=False,
    gate=torch.sigmoid,
    candidate=torch.tanh,
    transpose=(),
    reset=True,
    interpolate="cho",
    bias=True,
    tanh_gate="",
    reset_kept=False,
    slip=None,
):
    """H' of a GRU step with the flags' mistakes (Chung's update gate, d2l's reset before the product...);
    `slip` is one of the slips any gated step can make (`Slip`)."""
    p, slip = params, slip or Slip()
    r, z = ("z", "r") if swap_gates else ("r", "z")
    R = slip.squash("r", torch.tanh if tanh_gate == "r" else gate)(_affine(X, H, p, r, transpose, bias, slip))
    R = 1 - R if reset_kept else R
    Z = slip.squash("z", torch.tanh if tanh_gate == "z" else gate)(_affine(X, H, p, z, transpose, bias, slip))
    W_hn = slip.weight(p, "W_hn").T if "n" in transpose else slip.weight(p, "W_hn")
    if slip.missing == "W_hn":
        W_hn = torch.zeros_like(W_hn)
    W_xn = torch.zeros_like(p["W_xn"]) if slip.missing == "W_xn" else slip.weight(p, "W_xn")
    b_n = 0 if bias is False or "b_n" in bias_off(bias) else p["b_n"]
    b_hn_term = 0 if bias is False else p["b_hn"]
    hidden = (R * H) @ W_hn if reset_first else H @ W_hn
    if b_hn == "missing":
        b_hn_term = 0
    if b_hn == "outside" or reset_first:
        inner = X @ W_xn + b_n + b_hn_term + (hidden if reset_first or not reset else R * hidden)
    else:
        inner = X @ W_xn + b_n + (R * (hidden + b_hn_term) if reset else hidden + b_hn_term)
    N = slip.squash("n", candidate)(inner)
    if interpolate == "none":
        return N
    if interpolate == "no complement":
        return Z * H + N
    if interpolate == "no old state":
        return (1 - Z) * N
    return Z * N + (1 - Z) * H if chung else Z * H + (1 - Z) * N


GRU_CELL = (
    Mistake(
        N_(
            "the update gate is used the other way round: H' = Z ⊙ N + (1 - Z) ⊙ H. That is correct in "
            "Chung et al. (2014); this course checks the convention of Cho et al. and torch.nn.GRU, where "
            "Z keeps the old state: H' = Z ⊙ H + (1 - Z) ⊙ N."
        ),
        partial(_gru_with, chung=True),
        GRU_SECTION,
    ),
    Mistake(
        N_(
            "the reset gate is applied before the product, to H itself ((R ⊙ H) W_hn, as Dive into Deep "
            "Learning writes it). That form is a correct GRU too, but this course checks torch's: R "
            "scales the product and its bias, R ⊙ (H W_hn + b_hn)."
        ),
        partial(_gru_with, reset_first=True),
        GRU_SECTION,
    ),
    Mistake(
        N_(
            "the reset gate is applied before the product, to H itself, and the candidate has one bias "
            "(as Dive into Deep Learning writes it). That form is a correct GRU too, but this course checks "
            "torch's: R scales the product and its own bias, R ⊙ (H W_hn + b_hn)."
        ),
        partial(_gru_with, reset_first=True, b_hn="missing"),
        GRU_SECTION,
    ),
    Mistake(
        N_(
            "b_hn is added outside the reset gate: in torch's GRU the reset gate scales the hidden term "
            "together with its bias, R ⊙ (H W_hn + b_hn)."
        ),
        partial(_gru_with, b_hn="outside"),
        GRU_SECTION,
    ),
    Mistake(
        N_("b_hn, the candidate's hidden bias, is missing: it sits inside the reset gate's product."),
        partial(_gru_with, b_hn="missing"),
        GRU_SECTION,
    ),
    Mistake(
        N_(
            "the reset and update gates are swapped: each gate has its own weights (W_xr, W_hr, b_r for "
            "the reset gate R, the z ones for the update gate Z), and R goes into the candidate, Z into "
            "the mix of old and new."
        ),
        partial(_gru_with, swap_gates=True),
        GRU_SECTION,
    ),
    Mistake(
        N_(
            "tanh and sigmoid are swapped: the gates are sigmoids (between 0 and 1, a share to keep), "
            "the candidate is a tanh."
        ),
        partial(_gru_with, gate=torch.tanh, candidate=torch.sigmoid),
        GRU_SECTION,
    ),
    Mistake(
        N_(
            "the candidate is squashed by a sigmoid: the gates are sigmoids, but the candidate state is a "
            "tanh, like the RNN's state."
        ),
        partial(_gru_with, candidate=torch.sigmoid),
        GRU_SECTION,
    ),
    Mistake(
        N_("the gates use tanh: a gate is a sigmoid, a share between 0 and 1."),
        partial(_gru_with, gate=torch.tanh),
        GRU_SECTION,
    ),
    Mistake(
        N_(
            "the hidden weights are transposed: H (batch, hiddens) multiplies W_h of shape (hidden "
            "inputs, hidden outputs) as it is, H @ W_h."
        ),
        partial(_gru_with, transpose=tuple("rzn")),
        GRU_SECTION,
    ),
    *(
        Mistake(TRANSPOSED, partial(_gru_with, transpose=(gate,)), GRU_SECTION, (("name", f"W_h{gate}"),))
        for gate in "rzn"
    ),
    *(
        Mistake(NO_BIAS, partial(_gru_with, bias=(name,)), GRU_SECTION, (("name", name),))
        for name in ("b_r", "b_z", "b_n")
    ),
    *(
        Mistake(TANH_GATE, partial(_gru_with, tanh_gate=gate), GRU_SECTION, (("name", name),))
        for gate, name in (("r", "R"), ("z", "Z"))
    ),
    Mistake(
        N_(
            "the old state is missing from the new one: the update gate Z gives the old state a share Z "
            "and the candidate the rest, 1 - Z."
        ),
        partial(_gru_with, interpolate="no old state"),
        GRU_SECTION,
    ),
    Mistake(
        N_(
            "the reset gate is used the other way round: R is the share of the hidden term the candidate "
            "keeps, so it scales that term by R, not 1 - R."
        ),
        partial(_gru_with, reset_kept=True),
        GRU_SECTION,
    ),
    Mistake(
        N_("the candidate uses relu: it is a tanh, like the RNN's state."),
        partial(_gru_with, candidate=torch.relu),
        GRU_SECTION,
    ),
    Mistake(
        N_("the reset gate is computed but never used: it scales the hidden term of the candidate."),
        partial(_gru_with, reset=False),
        GRU_SECTION,
    ),
    Mistake(
        N_(
            "the step returns the candidate itself: the new state mixes the old state and the candidate "
            "with the update gate."
        ),
        partial(_gru_with, interpolate="none"),
        GRU_SECTION,
    ),
    Mistake(
        N_(
            "the candidate is added without its share: the update gate Z gives the old state a share Z "
            "and the candidate the rest, 1 - Z."
        ),
        partial(_gru_with, interpolate="no complement"),
        GRU_SECTION,
    ),
    Mistake(
        N_("the biases are missing: every gate and the candidate have their own bias."),
        partial(_gru_with, bias=False),
        GRU_SECTION,
    ),
    *gate_slips({"r": "R", "z": "Z", "n": "N"}, {"r": torch.sigmoid, "z": torch.sigmoid, "n": torch.tanh},
                _gru_with, GRU_SECTION, frozenset({("sign lost", "r"), ("sign lost", "z"), ("relu", "n")})),
)


def _lstm_with(
    X,
    H,
    C,
    params,
    order="ifgo",
    swapped=False,
    cell=torch.tanh,
    gate=torch.sigmoid,
    squash="tanh",
    new_cell=True,
    input_gate=True,
    transpose=(),
    bias=True,
    old_cell=False,
    one_gate="",
    forget="F",
    output="outside",
    cell_out="C",
    slip=None,
):
    """(H', C') of an LSTM step with the flags' mistakes (gates in another order, (C, H) swapped, ...);
    `slip` is one of the slips any gated step can make (`Slip`)."""
    p, slip = params, slip or Slip()
    I, F, G, O = (_affine(X, H, p, g, transpose, bias, slip) for g in order)
    swap = {"i": torch.tanh, "f": torch.tanh, "o": torch.tanh, "g": torch.sigmoid}
    I, F, O = (
        slip.squash("i", swap["i"] if one_gate == "i" else gate)(I),
        slip.squash("f", swap["f"] if one_gate == "f" else gate)(F),
        slip.squash("o", swap["o"] if one_gate == "o" else gate)(O),
    )
    G = slip.squash("g", swap["g"] if one_gate == "g" else cell)(G)
    kept = {"F": F * C, "none": C, "1 - F": (1 - F) * C}[forget]
    written = {True: I * G, False: G, "1 - F": (1 - F) * G}[input_gate]
    C_new = kept + written
    read = C_new if new_cell else C
    if output == "inside":
        H_new = torch.tanh(O * read)
    else:
        squashings = {"tanh": torch.tanh, "none": lambda c: c, "sigmoid": torch.sigmoid, "relu": torch.relu}
        H_new = O * squashings[squash](read)
    returned = {"C": C_new, "tanh": torch.tanh(C_new)}[cell_out]
    result = (H_new, C if old_cell else returned)
    return result[::-1] if swapped else result


LSTM_CELL = (
    Mistake(
        N_(
            "(C', H') is returned in place of (H', C'): the step returns the new hidden state first, then "
            "the new cell, as torch.nn.LSTMCell does."
        ),
        partial(_lstm_with, swapped=True),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "the input and forget gates are swapped: the forget gate F scales the old cell, the input "
            "gate I scales the candidate G."
        ),
        partial(_lstm_with, order="figo"),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "the gates are taken in another order: each of I, F, G and O has its own weights, named by "
            "its letter (W_xi, W_xf, W_xg, W_xo)."
        ),
        partial(_lstm_with, order="ifog"),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "the gates are taken in another order: each of I, F, G and O has its own weights, named by "
            "its letter (W_xi, W_xf, W_xg, W_xo)."
        ),
        partial(_lstm_with, order="oifg"),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "tanh and sigmoid are swapped: the three gates are sigmoids (shares between 0 and 1), the "
            "candidate G and the squashing of the cell are tanh."
        ),
        partial(_lstm_with, cell=torch.sigmoid, gate=torch.tanh),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "the candidate G is a sigmoid: it is a tanh (a value between -1 and 1 to write into the "
            "cell); only the gates are sigmoids."
        ),
        partial(_lstm_with, cell=torch.sigmoid),
        LSTM_SECTION,
    ),
    Mistake(
        N_("the new cell is not squashed before the output gate: H' is O times tanh of the new cell."),
        partial(_lstm_with, squash="none"),
        LSTM_SECTION,
    ),
    Mistake(
        N_("the cell is squashed by a sigmoid before the output gate: H' is O times tanh of the new cell."),
        partial(_lstm_with, squash="sigmoid"),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "H' is computed from the old cell C: the output gate reads the new cell, the one this step "
            "has just written."
        ),
        partial(_lstm_with, new_cell=False),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "the cell returned is the old one: the step returns the new cell, F ⊙ C plus what the input "
            "gate lets in."
        ),
        partial(_lstm_with, old_cell=True),
        LSTM_SECTION,
    ),
    Mistake(
        N_("the input gate is missing: the candidate enters the cell scaled by I."),
        partial(_lstm_with, input_gate=False),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "the hidden weights are transposed: H (batch, hiddens) multiplies W_h of shape (hidden "
            "inputs, hidden outputs) as it is, H @ W_h."
        ),
        partial(_lstm_with, transpose=tuple("ifgo")),
        LSTM_SECTION,
    ),
    *(
        Mistake(TRANSPOSED, partial(_lstm_with, transpose=(gate,)), LSTM_SECTION, (("name", f"W_h{gate}"),))
        for gate in "ifgo"
    ),
    *(
        Mistake(NO_BIAS, partial(_lstm_with, bias=(f"b_{gate}",)), LSTM_SECTION, (("name", f"b_{gate}"),))
        for gate in "ifgo"
    ),
    *(
        Mistake(
            SIGMOID_CANDIDATE, partial(_lstm_with, one_gate=gate), LSTM_SECTION, (("name", gate.upper()),)
        )
        for gate in "ifo"
    ),
    Mistake(
        N_(
            "the input gate is replaced by 1 - F: that is the coupled input and forget gate (CIFG) that "
            "Greff et al. (2017) study, a correct variant; this course checks the LSTM of torch.nn.LSTM, "
            "whose input gate I has its own weights."
        ),
        partial(_lstm_with, input_gate="1 - F"),
        LSTM_SECTION,
    ),
    Mistake(
        N_("the forget gate is missing: the old cell enters the new one scaled by F."),
        partial(_lstm_with, forget="none"),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "the forget gate is used the other way round: F is the share of the old cell that is kept, "
            "so the old cell is scaled by F, not 1 - F."
        ),
        partial(_lstm_with, forget="1 - F"),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "the output gate is applied inside the tanh: the new cell is squashed by tanh first, then "
            "scaled by O."
        ),
        partial(_lstm_with, output="inside"),
        LSTM_SECTION,
    ),
    Mistake(
        N_(
            "the cell returned is squashed by tanh: the cell itself is returned, unsquashed; only H' "
            "reads it through tanh."
        ),
        partial(_lstm_with, cell_out="tanh"),
        LSTM_SECTION,
    ),
    Mistake(
        N_("the biases are missing: every gate and the candidate have their own bias."),
        partial(_lstm_with, bias=False),
        LSTM_SECTION,
    ),
    Mistake(
        N_("the cell is squashed by relu before the output gate: H' is O times tanh of the new cell."),
        partial(_lstm_with, squash="relu"),
        LSTM_SECTION,
    ),
    *gate_slips({"i": "I", "f": "F", "g": "G", "o": "O"},
                {"i": torch.sigmoid, "f": torch.sigmoid, "g": torch.tanh, "o": torch.sigmoid}, _lstm_with,
                LSTM_SECTION, frozenset({("sign lost", "f")})),
)


ADDITIVE_SECTION = N_("notebook 09, section 3 (Why gates help: the additive path)")
SLOPE_SECTION = N_("notebook 09, exercise 3 (the slope of a saturated gate)")
EQUATIONS_SECTION = N_("notebook 09, exercise 4 (the step's equations above its cell)")
GATE_ORDER = N_(
    "the gate blocks are taken in another order: section 2 stacks them as [I, F, G, O] (torch's order), "
    "in gates and in dA alike."
)
GATE_AS_SLOPE = N_(
    "the slope of the gate {name} is written as the gate itself: a sigmoid's slope is σ(1 - σ), here "
    "{name}(1 - {name})."
)
TRANSPOSED_GRADIENT = N_(
    "d{name} is transposed: a weight's gradient has the weight's shape, {inputs}^T dA (inputs of the "
    "product by the four gates' columns)."
)


def _lstm_backward_with(
    dH,
    dC,
    X,
    H_prev,
    C_prev,
    W_x,
    W_h,
    gates,
    C,
    read="ifgo",
    write="ifgo",
    cell_slope="1 - tanh^2",
    carried=True,
    through_H=True,
    output_gate=True,
    forget_reads="C_prev",
    output_reads="tanh",
    partners=True,
    gate_slope="s(1 - s)",
    slope_of="ifo",
    candidate_slope="1 - G^2",
    back="whole",
    db="sum",
    transposed=(),
    factor=("", ""),
    identity=False,
):
    """(dX, dH_prev, dC_prev, dW_x, dW_h, db) of one LSTM step's backward pass with the flags' mistakes;
    `factor` (gate, tensor) multiplies that gate's gradient by another of the step's tensors (`FACTORS`)."""
    blocks = dict(zip(read, gates.chunk(4, dim=1), strict=True))
    I, F, G, O = (blocks[gate] for gate in "ifgo")
    tanh_C = torch.tanh(C)
    tensors = {"I": I, "F": F, "G": G, "O": O, "C_prev": C_prev, "C": C, "tanh(C)": tanh_C,
               "tanh(C_prev)": torch.tanh(C_prev)}
    slope = {"1 - tanh^2": 1 - tanh_C**2, "1 - C^2": 1 - C**2, "(1 - tanh)^2": (1 - tanh_C) ** 2, "none": 1}
    through = dH * (O if output_gate else 1) * slope[cell_slope]
    dC_cell = (dC if carried else 0) + (through if through_H else 0)
    dI, dG = (dC_cell * G, dC_cell * I) if partners else (dC_cell * I, dC_cell * G)
    dF = dC_cell * (C_prev if forget_reads == "C_prev" else C)
    dO = dH * (tanh_C if output_reads == "tanh" else C)
    gate, used = factor
    if gate:
        dI, dF, dG, dO = ((dH if g == "o" else dC_cell) * tensors[used] if g == gate else d
                          for g, d in zip("ifgo", (dI, dF, dG, dO), strict=True))
    sigmoid_slope = {"s(1 - s)": lambda s: s * (1 - s), "s": lambda s: s, "1 - s^2": lambda s: 1 - s**2,
                     "none": lambda s: 1}
    candidate = {"1 - G^2": 1 - G**2, "G(1 - G)": G * (1 - G)}[candidate_slope]
    slopes = {gate: sigmoid_slope[gate_slope if gate in slope_of else "s(1 - s)"] for gate in "ifo"}
    dA = {"i": dI * slopes["i"](I), "f": dF * slopes["f"](F), "g": dG * candidate, "o": dO * slopes["o"](O)}
    dA = torch.cat([dA[gate] for gate in write], dim=1)
    dC_prev = {"whole": dC_cell * F, "no forget": dC_cell, "carried only": dC * F}[back]
    dW_x = dA.T @ X if "W_x" in transposed else X.T @ dA
    dW_h = dA.T @ H_prev if "W_h" in transposed else H_prev.T @ dA
    db_ = {"sum": dA.sum(0), "sum over axis 1": dA.sum(1), "mean": dA.mean(0)}[db]
    return dA @ W_x.T, dA @ W_h.T + (dH if identity else 0), dC_prev, dW_x, dW_h, db_


# The tensor each gate's gradient multiplies in the forward step: I ⊙ G, F ⊙ C_prev, O ⊙ tanh(C).
FACTORS = {"i": "G", "f": "C_prev", "g": "I", "o": "tanh(C)"}
WRONG_FACTOR = N_(
    "the gradient of {gate} multiplies by {used}: in the step, {gate} multiplies {own}, so the gradient "
    "reaching {gate} is the gradient of that product times {own}."
)
NO_GATE_SLOPE = N_(
    "the sigmoid's slope of {gate} is missing: the gradient reaching {gate}'s pre-activation is the one "
    "reaching {gate} times {gate}(1 - {gate})."
)


def factor_slips(section: str, worded: frozenset[tuple[str, str]]) -> tuple[Mistake, ...]:
    """Each gate's gradient multiplied by another of the step's tensors (but the (gate, tensor) pairs the
    step's own mistakes already word), and each gate's sigmoid slope left out."""
    tensors = ("I", "F", "G", "O", "C_prev", "C", "tanh(C)", "tanh(C_prev)")
    wrong = tuple(
        Mistake(WRONG_FACTOR, partial(_lstm_backward_with, factor=(gate, used)), section,
                (("gate", gate.upper()), ("used", used), ("own", own)))
        for gate, own in FACTORS.items() for used in tensors
        if used not in (own, gate.upper()) and (gate, used) not in worded
    )
    unsloped = tuple(
        Mistake(NO_GATE_SLOPE, partial(_lstm_backward_with, gate_slope="none", slope_of=gate), section,
                (("gate", gate.upper()),))
        for gate in "ifo"
    )
    return wrong + unsloped


LSTM_STEP_BACKWARD = (
    Mistake(GATE_ORDER, partial(_lstm_backward_with, read="ifog", write="ifog"), LSTM_SECTION),
    Mistake(GATE_ORDER, partial(_lstm_backward_with, write="ifog"), LSTM_SECTION),
    Mistake(GATE_ORDER, partial(_lstm_backward_with, read="ifog"), LSTM_SECTION),
    Mistake(
        N_(
            "the gradient reaching C_t through H_t misses tanh's slope: H_t = O_t ⊙ tanh(C_t), so dH ⊙ O_t "
            "is multiplied by 1 - tanh²(C_t)."
        ),
        partial(_lstm_backward_with, cell_slope="none"),
        EQUATIONS_SECTION,
    ),
    Mistake(
        N_(
            "the gradient reaching C_t through H_t misses the output gate: H_t = O_t ⊙ tanh(C_t), so dH is "
            "multiplied by O_t and by tanh's slope, 1 - tanh²(C_t)."
        ),
        partial(_lstm_backward_with, output_gate=False),
        EQUATIONS_SECTION,
    ),
    Mistake(
        N_(
            "tanh's slope is taken as 1 - C_t²: that form holds for the output of a tanh (H_t in notebook "
            "05's RNN); C_t is the tanh's input here, so the slope is 1 - tanh²(C_t)."
        ),
        partial(_lstm_backward_with, cell_slope="1 - C^2"),
        STEP_SECTION,
    ),
    Mistake(
        N_("tanh's slope is written (1 - tanh(C_t))²: it is 1 - tanh²(C_t), one minus the square."),
        partial(_lstm_backward_with, cell_slope="(1 - tanh)^2"),
        STEP_SECTION,
    ),
    Mistake(
        N_(
            "the dC carried from the step after is missing: C_t reaches the loss along the cell (dC) and "
            "through H_t, and gradients that branch are added."
        ),
        partial(_lstm_backward_with, carried=False),
        BRANCH_SECTION,
    ),
    Mistake(
        N_(
            "the gradient through H_t is missing from the cell's: C_t reaches the loss through H_t = O_t ⊙ "
            "tanh(C_t) as well as along the cell (dC), and gradients that branch are added."
        ),
        partial(_lstm_backward_with, through_H=False),
        BRANCH_SECTION,
    ),
    Mistake(
        N_(
            "the forget gate's gradient uses the new cell C_t: F_t multiplies the old cell, so the cell's "
            "gradient reaches F_t times C_prev (C_(t-1))."
        ),
        partial(_lstm_backward_with, forget_reads="C"),
        EQUATIONS_SECTION,
    ),
    Mistake(
        N_(
            "the output gate's gradient uses C_t: O_t multiplies tanh(C_t), so dH reaches O_t times "
            "tanh(C_t)."
        ),
        partial(_lstm_backward_with, output_reads="C"),
        EQUATIONS_SECTION,
    ),
    Mistake(
        N_(
            "the input gate and the candidate each take their own value: in I_t ⊙ G_t the gradient reaching "
            "I_t is the cell's times G_t, and the one reaching G_t is the cell's times I_t."
        ),
        partial(_lstm_backward_with, partners=False),
        EQUATIONS_SECTION,
    ),
    Mistake(
        N_(
            "the sigmoid's slope is written as σ itself: it is σ(1 - σ), from each gate's own value, "
            "I(1 - I), F(1 - F) and O(1 - O)."
        ),
        partial(_lstm_backward_with, gate_slope="s"),
        SLOPE_SECTION,
    ),
    *(
        Mistake(GATE_AS_SLOPE, partial(_lstm_backward_with, gate_slope="s", slope_of=gate), SLOPE_SECTION,
                (("name", gate.upper()),))
        for gate in "ifo"
    ),
    Mistake(
        N_("the gates' slope is tanh's, 1 - σ²: I, F and O are sigmoids, whose slope is σ(1 - σ)."),
        partial(_lstm_backward_with, gate_slope="1 - s^2"),
        SLOPE_SECTION,
    ),
    Mistake(
        N_("the candidate's slope is a sigmoid's, G(1 - G): G_t is a tanh, whose slope is 1 - G_t²."),
        partial(_lstm_backward_with, candidate_slope="G(1 - G)"),
        EQUATIONS_SECTION,
    ),
    Mistake(
        N_(
            "dC_prev misses the forget gate: C_(t-1) enters C_t only as F_t ⊙ C_(t-1), so it gets the "
            "cell's gradient scaled by F_t."
        ),
        partial(_lstm_backward_with, back="no forget"),
        ADDITIVE_SECTION,
    ),
    Mistake(
        N_(
            "dC_prev passes back only the dC carried from the step after: the cell's whole gradient, dC "
            "plus what comes through H_t, goes back scaled by F_t."
        ),
        partial(_lstm_backward_with, back="carried only"),
        ADDITIVE_SECTION,
    ),
    Mistake(
        N_(
            "db is summed over the wrong axis: b is added to every row of the batch, so its gradient sums dA "
            "over the batch (axis 0), one entry per column."
        ),
        partial(_lstm_backward_with, db="sum over axis 1"),
        STEP_SECTION,
    ),
    Mistake(
        N_("db is averaged over the batch: b is added to every row, so its gradient is the sum of dA's "
           "rows."),
        partial(_lstm_backward_with, db="mean"),
        STEP_SECTION,
    ),
    *(
        Mistake(TRANSPOSED_GRADIENT, partial(_lstm_backward_with, transposed=(name,)), STEP_SECTION,
                (("name", name), ("inputs", inputs)))
        for name, inputs in (("W_x", "X"), ("W_h", "H_prev"))
    ),
    *factor_slips(STEP_SECTION, frozenset({("f", "C"), ("o", "C")})),
    Mistake(
        N_("dH_prev has dH added, a path this step does not have: H_prev reaches the step only through "
           "the gates' products with W_h."),
        partial(_lstm_backward_with, identity=True),
        STEP_SECTION,
    ),
)
