"""Backpropagation through time written by hand, and the loss gradient it starts from (notebook 05).

The forward pass is the scratch RNN of `d2lmini.rnn.rnn_forward`: for steps t = 1..T,

    A_t = X_t W_xh + H_{t-1} W_hh + b_h,    H_t = tanh(A_t),    O_t = H_t W_hq + b_q,

with H_0 the initial state. Python counts from 0, so in code `X[:, i]` is X_{i+1} and
`hiddens[i]` is H_{i+1}; `state` is H_0.

The backward pass walks the unrolled graph from the last step to the first. For one
step, with dH = dL/dH_t (everything that reaches H_t, from its output and from the
next step, added together because the graph branches at H_t):

    dA      = dH * (1 - H_t^2)             (tanh' = 1 - tanh^2, elementwise)
    db_h   += sum over the batch of dA
    dW_hh  += H_{t-1}^T dA
    dW_xh  += X_t^T dA                     (X_t one-hot: add the rows of dA into W_xh's token rows)
    dH_{t-1} = dA W_hh^T  (+ what H_{t-1}'s own output sends back)

`plain_forward` and `plain_backward` are that, written plainly: one step at a time, weight
gradients summed as they come. The rest is the same maths made fast: `hidden_states` uses
tanh(a) = 2 sigmoid(2a) - 1; `hidden_gradients` runs only the dH recursion step by step, in
place in one buffer; `weight_gradients` sums each weight's per-step terms in one matmul; and
`HandWrittenBPTT` wraps `bptt_forward` and `bptt_backward` as one autograd node so that
`d2lmini.rnn.RNNScratch` trains through them. No autograd is used in these passes. This
module needs nothing from `d2lmini.rnn` (which imports it); the checks against autograd and
finite differences, and the spectral-radius experiments, are in `d2lmini.gradcheck`.
"""

import torch
import torch.nn.functional as F

from d2lmini.i18n import _

PARAM_NAMES = ("W_xh", "W_hh", "b_h", "W_hq", "b_q")


@torch.no_grad()
def bptt_forward(X, state, W_xh, W_hh, b_h, W_hq, b_q):
    """Run the RNN forward and keep what the backward pass needs.

    X: token indices (batch, steps); state: (batch, hiddens).
    Returns (outputs, final_state, cache): outputs (steps*batch, vocab) with step-major rows
    exactly like `d2lmini.rnn.rnn_forward`; cache holds X, the initial state, all hidden
    states (steps, batch, hiddens) and the parameters.

    The hidden states are those of `plain_forward` and `rnn_forward`, H_t = tanh(A_t),
    computed through the identity tanh(a) = 2 sigmoid(2a) - 1 because on many CPUs PyTorch's
    sigmoid is cheaper than its tanh (see `hidden_states`; notebook 05 measures it).
    """
    hiddens = hidden_states(X, state, W_xh, W_hh, b_h)
    outputs = torch.addmm(b_q, hiddens.reshape(-1, W_hh.shape[0]), W_hq)
    cache = {"X": X, "state": state, "hiddens": hiddens,
             "W_xh": W_xh, "W_hh": W_hh, "b_h": b_h, "W_hq": W_hq, "b_q": b_q}
    return outputs, hiddens[-1] if len(hiddens) else state, cache


@torch.no_grad()
def hidden_states(X, state, W_xh, W_hh, b_h) -> torch.Tensor:
    """Return the hidden states H_t = tanh(X_t W_xh + H_{t-1} W_hh + b_h), (steps, batch, hiddens).

    The loop carries S_t = (H_t + 1) / 2 instead of H_t. As tanh(a) = 2 sigmoid(2a) - 1,
    S_t = sigmoid(2 A_t), and substituting H_{t-1} = 2 S_{t-1} - 1 into 2 A_t gives

        2 A_t = 2 (X_t W_xh + b_h - 1 W_hh) + S_{t-1} (4 W_hh)

    where 1 W_hh is the row of column sums of W_hh. The first term does not depend on
    S, so it is one row lookup for all steps; each step is then one matmul and one
    sigmoid, as with tanh, and H_t = 2 S_t - 1 is recovered for all steps at once.
    """
    # Each step's constant term becomes S_t in place, then H_t.
    hiddens = F.embedding(X.T, 2 * (W_xh + b_h - W_hh.sum(0)))
    S, W_hh_4 = state * 0.5 + 0.5, 4 * W_hh
    for S_t in hiddens.unbind(0):
        S = S_t.addmm_(S, W_hh_4).sigmoid_()
    return hiddens.mul_(2).sub_(1)


@torch.no_grad()
def hidden_gradients(d_outputs, d_final_state, cache, window: int | None = None,
                     keep_dH: bool = True):
    """Walk the unrolled graph backwards; return (dH, dA, d_state).

    dH[i] = dL/dH_t and dA[i] = dL/dA_t (the pre-activation) for step t = i + 1, both
    (steps, batch, hiddens); d_state = dL/dH_0, the gradient w.r.t. the initial state.
    With `window=k` the recursion is cut every k steps counted from the start, as when the
    state is detached between minibatches of k steps (truncated BPTT); the initial state
    then gets a gradient only from the first window.
    """
    hiddens, W_hh, W_hq = cache["hiddens"], cache["W_hh"], cache["W_hq"]
    steps, batch, num_hiddens = hiddens.shape
    # What each H_t gets from its own output, for all steps at once; it becomes dA in place.
    dA_all = (d_outputs @ W_hq.T).reshape(steps, batch, num_hiddens)
    if d_final_state is not None:
        dA_all[-1] += d_final_state
    dH_all = torch.empty_like(hiddens) if keep_dH else None
    W_hh_T = W_hh.T
    dA_steps, H_steps = dA_all.unbind(0), hiddens.unbind(0)
    for i in reversed(range(steps)):  # step t = i + 1
        dA, H = dA_steps[i], H_steps[i]
        if keep_dH:
            dH_all[i] = dA
        dA.addcmul_(dA * H, H, value=-1)  # dA_t = dH_t * (1 - H_t^2) = dH_t - dH_t H_t H_t, in place
        if i > 0 and (window is None or i % window != 0):
            dA_steps[i - 1].addmm_(dA, W_hh_T)  # dH_{t-1} += dA_t W_hh^T (unless detached)
    d_state = dA_all[0] @ W_hh_T  # dL/dH_0
    return dH_all, dA_all, d_state


@torch.no_grad()
def weight_gradients(d_outputs, dA_all, cache) -> dict[str, torch.Tensor]:
    """Sum the per-step weight gradients over all steps at once; return them by name.

    Each weight is used at every step, so its gradient is a sum over t. Stacking the
    steps as rows turns each sum into one matmul: sum_t H_{t-1}^T dA_t = H_prev^T dA.
    """
    X, state, hiddens, W_xh = cache["X"], cache["state"], cache["hiddens"], cache["W_xh"]
    num_hiddens = hiddens.shape[-1]
    H_all = hiddens.reshape(-1, num_hiddens)  # rows: (t, b) step-major
    dA = dA_all.reshape(-1, num_hiddens)
    # sum_t H_{t-1}^T dA_t: the first step's H_{t-1} is the initial state, the others are
    # hiddens[:-1]; two products instead of copying them into one tensor.
    batch = state.shape[0]
    d_W_hh = torch.addmm(state.T @ dA_all[0], H_all[:-batch].T, dA[batch:])
    # X_t^T dA_t with one-hot X_t adds row b of dA_t into row X[b, t] of the gradient:
    # that is exactly index_add_ over the token indices (equal to one_hot(X)^T dA).
    d_W_xh = torch.zeros_like(W_xh).index_add_(0, X.T.reshape(-1), dA)
    return {
        "W_xh": d_W_xh,
        "W_hh": d_W_hh,
        "b_h": dA.sum(0),
        "W_hq": H_all.T @ d_outputs,
        "b_q": d_outputs.sum(0),
    }


def bptt_backward(d_outputs, d_final_state, cache):
    """Backpropagate through time by hand.

    d_outputs: (steps*batch, vocab) gradient of the loss w.r.t. the outputs (step-major rows);
    d_final_state: (batch, hiddens) or None. Returns a dict with the gradients
    'W_xh', 'W_hh', 'b_h', 'W_hq', 'b_q' and 'state' (w.r.t. the initial state).
    """
    _dH, dA_all, d_state = hidden_gradients(d_outputs, d_final_state, cache, keep_dH=False)
    grads = weight_gradients(d_outputs, dA_all, cache)
    grads["state"] = d_state
    return grads


def check_window(window: int) -> None:
    """Raise ValueError unless the truncation `window` is at least one step."""
    if window < 1:
        raise ValueError(_("the truncation window must be at least 1 step, not {window}").format(
            window=window))


def bptt_backward_truncated(d_outputs, d_final_state, cache, window: int):
    """Like `bptt_backward`, but the gradient flows back at most to the start of its window.

    The sequence is cut into windows of `window` steps (from the start); no gradient
    crosses a window boundary. This equals running autograd with the state detached
    after every `window` steps.
    """
    check_window(window)
    _dH, dA_all, d_state = hidden_gradients(d_outputs, d_final_state, cache, window=window)
    grads = weight_gradients(d_outputs, dA_all, cache)
    grads["state"] = d_state
    return grads


@torch.no_grad()
def step_backward(dH, H_t, H_prev, x_t, W_xh, W_hh) -> dict[str, torch.Tensor]:
    """The backward pass of one RNN step, written as in the notebook.

    dH = dL/dH_t (batch, hiddens); x_t = the step's token indices (batch,).
    Returns 'A' (= dL/dA_t), 'b_h', 'W_hh', 'W_xh' (this step's contributions),
    'H_prev' (= dL/dH_{t-1} through this step) and 'X' (= dL/dX_t for one-hot X_t).
    """
    dA = dH * (1 - H_t**2)
    X_t = F.one_hot(x_t, W_xh.shape[0]).to(W_xh.dtype)
    return {
        "A": dA,
        "b_h": dA.sum(0),
        "W_hh": H_prev.T @ dA,
        "W_xh": X_t.T @ dA,
        "H_prev": dA @ W_hh.T,
        "X": dA @ W_xh.T,
    }


@torch.no_grad()
def plain_forward(X, state, W_xh, W_hh, b_h, W_hq, b_q):
    """Run the RNN forward one step at a time and keep what the backward pass needs.

    X: token indices (batch, steps); state: H_0 (batch, hiddens). Returns (outputs,
    final_state, cache): outputs (steps*batch, vocab) with step-major rows like
    `d2lmini.rnn.rnn_forward`; cache holds X, the initial state, the hidden states
    H_1..H_T stacked (steps, batch, hiddens) and the parameters.
    """
    H, hiddens = state, []
    for i in range(X.shape[1]):  # step t = i + 1
        H = torch.tanh(W_xh[X[:, i]] + H @ W_hh + b_h)
        hiddens.append(H)
    hiddens = torch.stack(hiddens) if hiddens else state.new_zeros(0, *state.shape)
    outputs = hiddens.reshape(-1, W_hh.shape[0]) @ W_hq + b_q
    cache = {"X": X, "state": state, "hiddens": hiddens,
             "W_xh": W_xh, "W_hh": W_hh, "b_h": b_h, "W_hq": W_hq, "b_q": b_q}
    return outputs, H, cache


@torch.no_grad()
def plain_backward(d_outputs, d_final_state, cache):
    """Backpropagate through time one step at a time, from t = T back to t = 1.

    d_outputs: dL/dO (steps*batch, vocab), step-major rows; d_final_state: dL/dH_T from
    outside (batch, hiddens) or None. Returns the gradients 'W_xh', 'W_hh', 'b_h', 'W_hq',
    'b_q' and 'state' (= dL/dH_0), each weight's summed over the steps.
    """
    X, state, hiddens = cache["X"], cache["state"], cache["hiddens"]
    steps, batch, _hiddens = hiddens.shape
    grads = {name: torch.zeros_like(cache[name]) for name in PARAM_NAMES}
    dO = d_outputs.reshape(steps, batch, cache["W_hq"].shape[1])
    dH_next = torch.zeros_like(state) if d_final_state is None else d_final_state
    for i in reversed(range(steps)):  # step t = i + 1: hiddens[i] is H_t
        H_prev = state if i == 0 else hiddens[i - 1]
        grads["W_hq"] += hiddens[i].T @ dO[i]
        grads["b_q"] += dO[i].sum(0)
        dH = dO[i] @ cache["W_hq"].T + dH_next  # the two branches that reach H_t, added
        step = step_backward(dH, hiddens[i], H_prev, X[:, i], cache["W_xh"], cache["W_hh"])
        for name in ("W_xh", "W_hh", "b_h"):
            grads[name] += step[name]
        dH_next = step["H_prev"]
    grads["state"] = dH_next
    return grads


# ---------------------------------------------------------------------------------------
# The loss and its gradient, where the backward pass starts


def sequence_loss_and_grad(outputs, Y) -> tuple[torch.Tensor, torch.Tensor]:
    """Return the mean cross-entropy of step-major `outputs` against `Y` (batch, steps), and dL/doutputs.

    With N rows, dL/dO = (softmax(O) - one_hot(y)) / N: the backward of softmax
    followed by cross-entropy in one line.
    """
    labels = Y.T.reshape(-1)
    loss = F.cross_entropy(outputs, labels)
    d_outputs = torch.softmax(outputs, dim=1)
    d_outputs[torch.arange(len(labels), device=labels.device), labels] -= 1
    return loss, d_outputs / len(labels)


def hand_gradients(X, Y, state, params: dict[str, torch.Tensor], window: int | None = None):
    """Return (loss, gradients) of the mean cross-entropy, computed by the hand-written BPTT."""
    outputs, _state, cache = bptt_forward(X, state, *(params[n] for n in PARAM_NAMES))
    loss, d_outputs = sequence_loss_and_grad(outputs, Y)
    if window is None:
        return float(loss), bptt_backward(d_outputs, None, cache)
    return float(loss), bptt_backward_truncated(d_outputs, None, cache, window)


class HandWrittenBPTT(torch.autograd.Function):
    """The scratch RNN as one autograd node whose backward is `bptt_backward`.

    Autograd records a single node for the whole sequence instead of a few per step;
    the forward and backward passes are `bptt_forward` and `bptt_backward` above (notebook 05).
    Gradients of first order only (no double backward).
    """

    @staticmethod
    def forward(ctx, X, state, W_xh, W_hh, b_h, W_hq, b_q):
        outputs, final_state, cache = bptt_forward(X, state, W_xh, W_hh, b_h, W_hq, b_q)
        # save_for_backward (not a plain attribute) frees the tensors with the graph and
        # raises if a parameter is changed in place before backward runs.
        ctx.cache_names = tuple(cache)
        ctx.save_for_backward(*cache.values())
        ctx.set_materialize_grads(False)  # an unused final state sends None, not zeros
        return outputs, final_state.clone()

    @staticmethod
    def backward(ctx, d_outputs, d_final_state):
        cache = dict(zip(ctx.cache_names, ctx.saved_tensors, strict=True))
        if d_outputs is None:  # only the final state was used
            d_outputs = torch.zeros(cache["hiddens"].shape[0] * cache["hiddens"].shape[1],
                                    cache["W_hq"].shape[1], dtype=cache["W_hq"].dtype,
                                    device=cache["W_hq"].device)
        grads = bptt_backward(d_outputs, d_final_state, cache)
        return (None, grads["state"], grads["W_xh"], grads["W_hh"], grads["b_h"],
                grads["W_hq"], grads["b_q"])


def rnn_forward_bptt(
    X: torch.Tensor, state: torch.Tensor, W_xh, W_hh, b_h, W_hq, b_q
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same outputs as `rnn_forward`; gradients come from the hand-written BPTT, not autograd.

    Returns (outputs (steps * batch, vocab) step-major, final state (batch, hiddens)).
    """
    return HandWrittenBPTT.apply(X, state, W_xh, W_hh, b_h, W_hq, b_q)
