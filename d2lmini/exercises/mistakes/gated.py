"""Notebook 09's typical mistakes: the GRU and the LSTM step with one weight matrix per gate.

Each `_..._with` function is the step written with its flags' mistakes (defaults: none);
`GRU_CELL` and `LSTM_CELL` list the mistakes in the order they are tried.
"""

from functools import partial

import torch

from d2lmini.exercises.coding import Mistake
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


def _affine(X, H, p, gate, transpose=(), bias=True):
    W_h = p[f"W_h{gate}"].T if gate in transpose else p[f"W_h{gate}"]
    return (
        X @ p[f"W_x{gate}"] + H @ W_h + (p[f"b_{gate}"] if bias and f"b_{gate}" not in bias_off(bias) else 0)
    )


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
):
    """H' of a GRU step with the flags' mistakes (Chung's update gate, d2l's reset before the product...)."""
    p = params
    r, z = ("z", "r") if swap_gates else ("r", "z")
    R = (torch.tanh if tanh_gate == "r" else gate)(_affine(X, H, p, r, transpose, bias))
    R = 1 - R if reset_kept else R
    Z = (torch.tanh if tanh_gate == "z" else gate)(_affine(X, H, p, z, transpose, bias))
    W_hn = p["W_hn"].T if "n" in transpose else p["W_hn"]
    b_n = 0 if bias is False or "b_n" in bias_off(bias) else p["b_n"]
    b_hn_term = 0 if bias is False else p["b_hn"]
    hidden = (R * H) @ W_hn if reset_first else H @ W_hn
    if b_hn == "missing":
        b_hn_term = 0
    if b_hn == "outside" or reset_first:
        inner = X @ p["W_xn"] + b_n + b_hn_term + (hidden if reset_first or not reset else R * hidden)
    else:
        inner = X @ p["W_xn"] + b_n + (R * (hidden + b_hn_term) if reset else hidden + b_hn_term)
    N = candidate(inner)
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
):
    """(H', C') of an LSTM step with the flags' mistakes (gates in another order, (C, H) swapped, ...)."""
    p = params
    I, F, G, O = (_affine(X, H, p, g, transpose, bias) for g in order)
    swap = {"i": torch.tanh, "f": torch.tanh, "o": torch.tanh, "g": torch.sigmoid}
    I, F, O = (
        (swap["i"] if one_gate == "i" else gate)(I),
        (swap["f"] if one_gate == "f" else gate)(F),
        (swap["o"] if one_gate == "o" else gate)(O),
    )
    G = (swap["g"] if one_gate == "g" else cell)(G)
    kept = {"F": F * C, "none": C, "1 - F": (1 - F) * C}[forget]
    written = {True: I * G, False: G, "1 - F": (1 - F) * G}[input_gate]
    C_new = kept + written
    read = C_new if new_cell else C
    if output == "inside":
        H_new = torch.tanh(O * read)
    else:
        H_new = O * {"tanh": torch.tanh, "none": lambda c: c, "sigmoid": torch.sigmoid}[squash](read)
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
)
