# ruff: noqa: E501 - lines of students' code, kept as they would write them
"""Wrong answers to the coding exercises of notebooks 01-09, written apart from the catalogue of mistakes.

Written as students would write them, without reading `d2lmini.exercises.mistakes`: for each exercise
a student's working answer (`BASES`, checked to be right) and the slips that students make in it
(`SLIPS`: a piece of the working answer and what a student wrote instead), plus answers written
another way (`OTHERS`). Each gives a function through `wrong_answers()`: (exercise id, label, function).
`tests/test_exercises_held_apart.py` runs them all; `tools/mistake_rates.py` prints the rates.
"""

import types

BASES = {
    "01:all_states": '''
def all_states(tokens, W_xh, W_hh, b_h):
    batch, steps = tokens.shape
    H = torch.zeros(batch, W_hh.shape[0], dtype=W_xh.dtype, device=W_xh.device)
    out = []
    for t in range(steps):
        x = torch.nn.functional.one_hot(tokens[:, t], W_xh.shape[0]).to(W_xh.dtype)
        H = torch.tanh(x @ W_xh + H @ W_hh + b_h)
        out.append(H)
    return torch.stack(out, dim=0)
''',
    "02:fused_step": '''
def fused_step(X, H, W_xh, W_hh, b_h):
    XH = torch.cat([X, H], dim=1)
    W = torch.cat([W_xh, W_hh], dim=0)
    return torch.tanh(XH @ W + b_h)
''',
    "03:lookup": '''
def lookup(W, X):
    return W[X]
''',
    "03:one_hot": '''
def one_hot(X, vocab_size):
    out = torch.zeros(*X.shape, vocab_size, device=X.device)
    out.scatter_(-1, X.unsqueeze(-1), 1.0)
    return out
''',
    "03:sequential_batches": '''
def batches_with_tail(indices, batch_size, num_steps, offset):
    n = (len(indices) - offset - 1) // batch_size
    Xs = indices[offset:offset + n * batch_size].reshape(batch_size, n)
    Ys = indices[offset + 1:offset + 1 + n * batch_size].reshape(batch_size, n)
    i = 0
    while i < n:
        yield Xs[:, i:i + num_steps], Ys[:, i:i + num_steps]
        i += num_steps
''',
    "04:train_loop": '''
def train_loop(model, batches, optimizer):
    state = None
    total, count = 0.0, 0
    for X, Y in batches:
        if state is None:
            state = model.begin_state(X.shape[0])
        else:
            state = state.detach()
        out, state = model(X, state)
        loss = torch.nn.functional.cross_entropy(out, Y.T.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        count += 1
    return total / count
''',
    "05:masked_loss_and_grad": '''
def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    mask = torch.arange(steps, device=Y.device)[None, :] < lengths[:, None]
    mask = mask.T.reshape(-1).to(outputs.dtype)
    y = Y.T.reshape(-1)
    logp = outputs.log_softmax(dim=1)
    nll = -logp[torch.arange(len(y)), y]
    n = mask.sum()
    loss = (nll * mask).sum() / n
    grad = logp.exp()
    grad[torch.arange(len(y)), y] -= 1
    grad = grad * mask[:, None] / n
    return loss, grad
''',
    "05:leaky_bptt": '''
def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    T, B, n = hiddens.shape
    dO = (d_outputs @ W_hq.T).reshape(T, B, n)
    dW_xh = torch.zeros_like(W_xh); dW_hh = torch.zeros_like(W_hh); db_h = torch.zeros_like(b_h)
    carry = torch.zeros_like(state)
    for t in range(T - 1, -1, -1):
        prev = state if t == 0 else hiddens[t - 1]
        A = W_xh[X[:, t]] + prev @ W_hh + b_h
        dH = dO[t] + carry
        dA = dH * alpha * (A > 0).to(A.dtype)
        dW_xh.index_add_(0, X[:, t], dA)
        dW_hh += prev.T @ dA
        db_h += dA.sum(dim=0)
        carry = dH * (1 - alpha) + dA @ W_hh.T
    return dW_xh, dW_hh, db_h, carry
''',
    "06:clip_function": '''
def my_clip(grads, theta):
    total = 0.0
    for g in grads:
        total = total + (g ** 2).sum()
    norm = total ** 0.5
    factor = min(1.0, theta / (float(norm) + 1e-12))
    return [g * factor for g in grads]
''',
    "07:perplexity_function": '''
def perplexity(logits, targets):
    m = logits.max(dim=1, keepdim=True).values
    lse = m.squeeze(1) + (logits - m).exp().sum(dim=1).log()
    picked = logits[torch.arange(len(targets)), targets]
    ce = (lse - picked).mean()
    return math.exp(ce.item())
''',
    "07:kn_bigram": '''
def kn_bigram(text, context, char, discount=0.75):
    bigrams = {}
    for a, b in zip(text, text[1:]):
        bigrams[(a, b)] = bigrams.get((a, b), 0) + 1
    types_total = len(bigrams)
    cont = len([1 for (a, b) in bigrams if b == char]) / types_total
    c_total = sum(n for (a, b), n in bigrams.items() if a == context)
    if c_total == 0:
        return cont
    followers = len([1 for (a, b) in bigrams if a == context])
    seen = max(bigrams.get((context, char), 0) - discount, 0) / c_total
    lam = discount * followers / c_total
    return seen + lam * cont
''',
    "08:minibatches": '''
def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    X = indices[:L * batch_size].view(batch_size, L)
    Y = indices[1:L * batch_size + 1].view(batch_size, L)
    for k in range(L // num_steps):
        s = k * num_steps
        yield X[:, s:s + num_steps], Y[:, s:s + num_steps]
''',
    "08:forward": '''
def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    H = state
    Hs = []
    for t in range(X.shape[1]):
        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)
        Hs.append(H)
    hiddens = torch.stack(Hs)
    outputs = torch.cat(Hs, dim=0) @ W_hq + b_q
    return outputs, hiddens
''',
    "08:loss_and_grad": '''
def loss_and_grad(outputs, Y):
    y = Y.T.reshape(-1)
    z = outputs - outputs.max(dim=1, keepdim=True).values
    logp = z - z.exp().sum(dim=1, keepdim=True).log()
    idx = torch.arange(len(y), device=outputs.device)
    loss = -logp[idx, y].mean()
    g = logp.exp()
    g[idx, y] = g[idx, y] - 1
    return loss, g / len(y)
''',
    "08:backward": '''
def backward(X, state, hiddens, d_outputs, d_final, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    T, B, n = hiddens.shape
    flat = hiddens.reshape(T * B, n)
    dW_hq = flat.T @ d_outputs
    db_q = d_outputs.sum(dim=0)
    dH_out = (d_outputs @ W_hq.T).reshape(T, B, n)
    dW_xh = torch.zeros_like(W_xh); dW_hh = torch.zeros_like(W_hh); db_h = torch.zeros_like(b_h)
    dh = d_final
    for t in reversed(range(T)):
        da = (dH_out[t] + dh) * (1 - hiddens[t] ** 2)
        prev = hiddens[t - 1] if t > 0 else state
        dW_hh = dW_hh + prev.T @ da
        dW_xh = dW_xh.index_add(0, X[:, t], da)
        db_h = db_h + da.sum(0)
        dh = da @ W_hh.T
    return [dW_xh, dW_hh, db_h, dW_hq, db_q], dh
''',
    "08:clip": '''
def clip(grads, theta):
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads)).item()
    if norm > theta:
        return [g * (theta / norm) for g in grads], norm
    return [g.clone() for g in grads], norm
''',
    "08:sgd": '''
def sgd(params, grads, lr):
    new = []
    for p, g in zip(params, grads):
        new.append(p - lr * g)
    return new
''',
    "08:perplexity": '''
def perplexity(logits, targets):
    logp = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    nll = -logp[torch.arange(len(targets), device=logits.device), targets]
    return math.exp(nll.mean().item())
''',
    "09:gru_cell": '''
def gru_cell(X, H, params):
    p = params
    r = torch.sigmoid(X @ p["W_xr"] + H @ p["W_hr"] + p["b_r"])
    z = torch.sigmoid(X @ p["W_xz"] + H @ p["W_hz"] + p["b_z"])
    n = torch.tanh(X @ p["W_xn"] + p["b_n"] + r * (H @ p["W_hn"] + p["b_hn"]))
    return z * H + (1 - z) * n
''',
    "09:lstm_cell": '''
def lstm_cell(X, H, C, params):
    p = params
    i = torch.sigmoid(X @ p["W_xi"] + H @ p["W_hi"] + p["b_i"])
    f = torch.sigmoid(X @ p["W_xf"] + H @ p["W_hf"] + p["b_f"])
    g = torch.tanh(X @ p["W_xg"] + H @ p["W_hg"] + p["b_g"])
    o = torch.sigmoid(X @ p["W_xo"] + H @ p["W_ho"] + p["b_o"])
    C_new = f * C + i * g
    H_new = o * torch.tanh(C_new)
    return H_new, C_new
''',
    "09:lstm_step_backward": '''
def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    h = C.shape[1]
    i, f, g, o = gates[:, :h], gates[:, h:2 * h], gates[:, 2 * h:3 * h], gates[:, 3 * h:]
    tc = torch.tanh(C)
    do = dH * tc
    dc = dC + dH * o * (1 - tc ** 2)
    di = dc * g
    df = dc * C_prev
    dg = dc * i
    da_i = di * i * (1 - i)
    da_f = df * f * (1 - f)
    da_g = dg * (1 - g ** 2)
    da_o = do * o * (1 - o)
    da = torch.cat([da_i, da_f, da_g, da_o], dim=1)
    dX = da @ W_x.T
    dH_prev = da @ W_h.T
    dC_prev = dc * f
    dW_x = X.T @ da
    dW_h = H_prev.T @ da
    db = da.sum(dim=0)
    return dX, dH_prev, dC_prev, dW_x, dW_h, db
''',
}

# (exercise, what the working answer says, what a student wrote instead)
SLIPS = [
    # --- 01: every hidden state ---
    ("01:all_states", "torch.tanh(x @ W_xh", "torch.sigmoid(x @ W_xh"),
    ("01:all_states", "torch.tanh(x @ W_xh", "torch.relu(x @ W_xh"),
    ("01:all_states", "H = torch.tanh(x @ W_xh + H @ W_hh + b_h)", "H = x @ W_xh + H @ W_hh + b_h"),
    ("01:all_states", " + b_h)", ")"),
    ("01:all_states", " + b_h)", " + b_h + b_h)"),
    ("01:all_states", "H = torch.tanh(x @ W_xh + H @ W_hh + b_h)", "H = torch.tanh(x @ W_xh + H @ W_hh) + b_h"),
    ("01:all_states", "H @ W_hh", "H @ W_hh.T"),
    ("01:all_states", "H @ W_hh", "W_hh @ H.T.T"),
    ("01:all_states", "H = torch.tanh(x @ W_xh + H @ W_hh + b_h)\n        out.append(H)",
     "H_new = torch.tanh(x @ W_xh + H @ W_hh + b_h)\n        out.append(H_new)"),
    ("01:all_states", "H = torch.tanh(x @ W_xh + H @ W_hh + b_h)\n        out.append(H)",
     "out.append(H)\n        H = torch.tanh(x @ W_xh + H @ W_hh + b_h)"),
    ("01:all_states", "torch.stack(out, dim=0)", "torch.stack(out, dim=1)"),
    ("01:all_states", "torch.stack(out, dim=0)", "torch.cat(out, dim=0)"),
    ("01:all_states", "tokens[:, t]", "tokens[:, steps - 1 - t]"),
    ("01:all_states", "H = torch.zeros(batch, W_hh.shape[0], dtype=W_xh.dtype, device=W_xh.device)",
     "H = torch.ones(batch, W_hh.shape[0], dtype=W_xh.dtype, device=W_xh.device)"),
    ("01:all_states", "H = torch.tanh(x @ W_xh + H @ W_hh + b_h)",
     "H = torch.tanh(x @ W_xh + torch.zeros_like(H) @ W_hh + b_h)"),
    ("01:all_states", "H = torch.tanh(x @ W_xh + H @ W_hh + b_h)", "H = torch.tanh(x @ W_xh - H @ W_hh + b_h)"),
    ("01:all_states", "H = torch.tanh(x @ W_xh + H @ W_hh + b_h)", "H = torch.tanh(x @ W_xh + H @ W_hh - b_h)"),
    ("01:all_states", "return torch.stack(out, dim=0)", "return torch.stack(out[1:] + [H], dim=0)"),
    ("01:all_states", "H = torch.tanh(x @ W_xh + H @ W_hh + b_h)",
     "H = torch.tanh(x @ W_xh + H @ W_hh + b_h) * 0.5 + H * 0.5"),
    ("01:all_states", "H = torch.tanh(x @ W_xh + H @ W_hh + b_h)", "H = torch.tanh(x @ W_xh + b_h)"),
    ("01:all_states", "H = torch.tanh(x @ W_xh + H @ W_hh + b_h)", "H = torch.tanh(H @ W_hh + b_h) + x @ W_xh"),
    # --- 02: the fused step ---
    ("02:fused_step", "torch.tanh(XH @ W + b_h)", "torch.sigmoid(XH @ W + b_h)"),
    ("02:fused_step", "torch.tanh(XH @ W + b_h)", "torch.relu(XH @ W + b_h)"),
    ("02:fused_step", "torch.tanh(XH @ W + b_h)", "XH @ W + b_h"),
    ("02:fused_step", "torch.tanh(XH @ W + b_h)", "torch.tanh(XH @ W)"),
    ("02:fused_step", "torch.tanh(XH @ W + b_h)", "torch.tanh(XH @ W) + b_h"),
    ("02:fused_step", "torch.tanh(XH @ W + b_h)", "torch.tanh(XH @ W + 2 * b_h)"),
    ("02:fused_step", "W = torch.cat([W_xh, W_hh], dim=0)", "W = torch.cat([W_xh, W_hh.T], dim=0)"),
    ("02:fused_step", "XH = torch.cat([X, H], dim=1)", "XH = torch.cat([X, torch.zeros_like(H)], dim=1)"),
    ("02:fused_step", "torch.tanh(XH @ W + b_h)", "torch.tanh(XH @ W - b_h)"),
    ("02:fused_step", "torch.tanh(XH @ W + b_h)", "torch.tanh(XH @ W + b_h) * 2 - 1"),
    ("02:fused_step", "torch.tanh(XH @ W + b_h)", "torch.tanh(XH @ W + b_h.mean())"),
    ("02:fused_step", "XH = torch.cat([X, H], dim=1)", "XH = torch.cat([X, -H], dim=1)"),
    # --- 03: lookup, one-hot, minibatches with their tail ---
    ("03:lookup", "return W[X]", "return W[X - 1]"),
    ("03:lookup", "return W[X]", "return W[X.flatten()]"),
    ("03:lookup", "return W[X]", "return W[X].T"),
    ("03:lookup", "return W[X]", "return W[X.unique()]"),
    ("03:lookup", "return W[X]", "return W[X.sort().values]"),
    ("03:lookup", "return W[X]", "return W[X].sum(dim=0)"),
    ("03:lookup", "return W[X]", "return W[X] * 1.0 / W.shape[0]"),
    ("03:lookup", "return W[X]", "return W[X.reshape(-1)].reshape(len(X.reshape(-1)), -1)"),
    ("03:lookup", "return W[X]", "return W.T[:, X].T if X.dim() == 1 else W[X.T].transpose(0, 1).transpose(0, 1).flip(0)"),
    ("03:one_hot", "out.scatter_(-1, X.unsqueeze(-1), 1.0)", "out.scatter_(-1, X.unsqueeze(-1) - 1, 1.0)"),
    ("03:one_hot", "torch.zeros(*X.shape, vocab_size, device=X.device)",
     "torch.zeros(*X.shape, int(X.max()) + 1, device=X.device)"),
    ("03:one_hot", "torch.zeros(*X.shape, vocab_size, device=X.device)",
     "torch.zeros(*X.shape, vocab_size + 1, device=X.device)"),
    ("03:one_hot", "torch.zeros(*X.shape, vocab_size, device=X.device)",
     "torch.zeros(*X.shape, vocab_size, dtype=torch.long, device=X.device)"),
    ("03:one_hot", "torch.zeros(*X.shape, vocab_size, device=X.device)",
     "torch.zeros(*X.shape, vocab_size, dtype=torch.float64, device=X.device)"),
    ("03:one_hot", "return out", "return out.reshape(-1, vocab_size)"),
    ("03:one_hot", "return out", "return out.movedim(-1, 0)"),
    ("03:one_hot", "return out", "return 1 - out"),
    ("03:one_hot", "return out", "return out.bool()"),
    ("03:one_hot", "return out", "return out.int()"),
    ("03:one_hot", "out.scatter_(-1, X.unsqueeze(-1), 1.0)", "out.scatter_(-1, X.unsqueeze(-1), 1.0)\n    out[..., 0] = 0"),
    ("03:one_hot", "return out", "return out / vocab_size"),
    ("03:sequential_batches", "n = (len(indices) - offset - 1) // batch_size",
     "n = (len(indices) - 1) // batch_size\n    offset = 0"),
    ("03:sequential_batches", "while i < n:", "while i + num_steps <= n:"),
    ("03:sequential_batches", "Ys = indices[offset + 1:offset + 1 + n * batch_size]",
     "Ys = indices[offset:offset + n * batch_size]"),
    ("03:sequential_batches", "Ys = indices[offset + 1:offset + 1 + n * batch_size]",
     "Ys = indices[offset + 2:offset + 2 + n * batch_size]"),
    ("03:sequential_batches", "i += num_steps", "i += 1"),
    ("03:sequential_batches", "Xs = indices[offset:offset + n * batch_size].reshape(batch_size, n)",
     "Xs = indices[offset:offset + n * batch_size].reshape(n, batch_size).T"),
    ("03:sequential_batches", "Xs = indices[offset:offset + n * batch_size].reshape(batch_size, n)\n"
     "    Ys = indices[offset + 1:offset + 1 + n * batch_size].reshape(batch_size, n)",
     "Xs = indices[offset:offset + n * batch_size].reshape(n, batch_size).T\n"
     "    Ys = indices[offset + 1:offset + 1 + n * batch_size].reshape(n, batch_size).T"),
    ("03:sequential_batches", "while i < n:", "while i < n - 1:"),
    ("03:sequential_batches", "yield Xs[:, i:i + num_steps], Ys[:, i:i + num_steps]",
     "yield Ys[:, i:i + num_steps], Xs[:, i:i + num_steps]"),
    ("03:sequential_batches", "yield Xs[:, i:i + num_steps], Ys[:, i:i + num_steps]",
     "yield Xs[:, i:i + num_steps].T, Ys[:, i:i + num_steps].T"),
    ("03:sequential_batches", "i = 0", "i = offset"),
    ("03:sequential_batches", "n = (len(indices) - offset - 1) // batch_size",
     "n = (len(indices) - offset - 1) // batch_size // num_steps * num_steps"),
    # --- 04: the training loop ---
    ("04:train_loop", "            state = state.detach()", "            state = model.begin_state(X.shape[0])"),
    ("04:train_loop", "        optimizer.zero_grad()\n", ""),
    ("04:train_loop", "Y.T.reshape(-1)", "Y.reshape(-1)"),
    ("04:train_loop", "return total / count", "return loss.item()"),
    ("04:train_loop", "return total / count", "return total"),
    ("04:train_loop", "            state = state.detach()", "            pass"),
    ("04:train_loop", "return total / count", "return total / len(Y)"),
    ("04:train_loop", "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()",
     "        loss.backward()\n        optimizer.zero_grad()\n        optimizer.step()"),
    ("04:train_loop", "        total += loss.item()", "        total += loss.item() * X.shape[0]"),
    ("04:train_loop", "loss = torch.nn.functional.cross_entropy(out, Y.T.reshape(-1))",
     "loss = torch.nn.functional.cross_entropy(out, Y.T.reshape(-1), reduction='sum')"),
    ("04:train_loop", "        if state is None:", "        if True:"),
    ("04:train_loop", "        optimizer.step()\n", "        optimizer.step()\n        optimizer.step()\n"),
    # --- 05: the masked loss ---
    ("05:masked_loss_and_grad", "    loss = (nll * mask).sum() / n", "    loss = nll.mean()"),
    ("05:masked_loss_and_grad", "grad = grad * mask[:, None] / n", "grad = grad / len(y)"),
    ("05:masked_loss_and_grad", "    loss = (nll * mask).sum() / n", "    loss = (nll * mask).sum() / len(y)"),
    ("05:masked_loss_and_grad", "grad = grad * mask[:, None] / n", "grad = grad * mask[:, None] / len(y)"),
    ("05:masked_loss_and_grad", "grad = grad * mask[:, None] / n", "grad = grad / n"),
    ("05:masked_loss_and_grad", "mask = mask.T.reshape(-1)", "mask = mask.reshape(-1)"),
    ("05:masked_loss_and_grad", "y = Y.T.reshape(-1)", "y = Y.reshape(-1)"),
    ("05:masked_loss_and_grad", "[None, :] < lengths[:, None]", "[None, :] <= lengths[:, None]"),
    ("05:masked_loss_and_grad", "    loss = (nll * mask).sum() / n", "    loss = (nll * mask).sum()"),
    ("05:masked_loss_and_grad", "grad = grad * mask[:, None] / n", "grad = grad * mask[:, None]"),
    ("05:masked_loss_and_grad", "/ n\n    grad = logp.exp()", "/ batch\n    grad = logp.exp()"),
    ("05:masked_loss_and_grad", "    loss = (nll * mask).sum() / n", "    loss = (nll * mask).sum() / batch"),
    ("05:masked_loss_and_grad", "nll = -logp", "nll = logp"),
    ("05:masked_loss_and_grad", "    loss = (nll * mask).sum() / n", "    loss = (nll * mask).sum() / n / math.log(2)"),
    ("05:masked_loss_and_grad", "    grad[torch.arange(len(y)), y] -= 1\n", ""),
    ("05:masked_loss_and_grad", "logp = outputs.log_softmax(dim=1)", "logp = outputs.log_softmax(dim=0)"),
    ("05:masked_loss_and_grad", "grad[torch.arange(len(y)), y] -= 1", "grad[torch.arange(len(y)), y] += 1"),
    ("05:masked_loss_and_grad", "grad = grad * mask[:, None] / n", "grad = -grad * mask[:, None] / n"),
    ("05:masked_loss_and_grad", "return loss, grad", "return loss, grad.T.T * n / n / batch * batch / steps"),
    ("05:masked_loss_and_grad", "mask = torch.arange(steps, device=Y.device)[None, :] < lengths[:, None]",
     "mask = torch.arange(steps, device=Y.device)[None, :] < lengths[:, None] - 1"),
    ("05:masked_loss_and_grad", "    loss = (nll * mask).sum() / n", "    loss = (nll * mask).mean()"),
    # --- 05: the leaky ReLU RNN's BPTT ---
    ("05:leaky_bptt", "(A > 0)", "(hiddens[t] > 0)"),
    ("05:leaky_bptt", " * (A > 0).to(A.dtype)", ""),
    ("05:leaky_bptt", "(A > 0).to(A.dtype)", "(1 - hiddens[t] ** 2)"),
    ("05:leaky_bptt", "carry = dH * (1 - alpha) + dA @ W_hh.T", "carry = dA @ W_hh.T"),
    ("05:leaky_bptt", "dA = dH * alpha * (A > 0)", "dA = dH * (A > 0)"),
    ("05:leaky_bptt", "carry = dH * (1 - alpha) + dA @ W_hh.T", "carry = dH * (1 - alpha) + dA @ W_hh"),
    ("05:leaky_bptt", "dH = dO[t] + carry", "dH = dO[t]"),
    ("05:leaky_bptt", "for t in range(T - 1, -1, -1):", "for t in range(T):"),
    ("05:leaky_bptt", "dW_hh += prev.T @ dA", "dW_hh += hiddens[t].T @ dA"),
    ("05:leaky_bptt", "carry = dH * (1 - alpha) + dA @ W_hh.T", "carry = dH * alpha + dA @ W_hh.T"),
    ("05:leaky_bptt", "carry = dH * (1 - alpha) + dA @ W_hh.T", "carry = dO[t] * (1 - alpha) + dA @ W_hh.T"),
    ("05:leaky_bptt", "dW_hh += prev.T @ dA", "dW_hh += dA.T @ prev"),
    ("05:leaky_bptt", "db_h += dA.sum(dim=0)", "db_h += dA.mean(dim=0)"),
    ("05:leaky_bptt", "dW_xh.index_add_(0, X[:, t], dA)", "dW_xh.index_add_(0, X[:, t], dH)"),
    ("05:leaky_bptt", "return dW_xh, dW_hh, db_h, carry", "return dW_xh, dW_hh, db_h, dH"),
    ("05:leaky_bptt", "prev = state if t == 0 else hiddens[t - 1]", "prev = hiddens[t - 1]"),
    ("05:leaky_bptt", "dA = dH * alpha * (A > 0).to(A.dtype)", "dA = dH * alpha * (A > 0).to(A.dtype) * (1 - alpha)"),
    # --- 06: clipping by the joint norm ---
    ("06:clip_function", "return [g * factor for g in grads]", "return [g.clamp(-theta, theta) for g in grads]"),
    ("06:clip_function", "norm = total ** 0.5", "norm = total"),
    ("06:clip_function", "factor = min(1.0, theta / (float(norm) + 1e-12))", "factor = theta / (float(norm) + 1e-12)"),
    ("06:clip_function", "factor = min(1.0, theta / (float(norm) + 1e-12))", "factor = max(1.0, theta / (float(norm) + 1e-12))"),
    ("06:clip_function", "factor = min(1.0, theta / (float(norm) + 1e-12))", "factor = min(1.0, float(norm) / theta)"),
    ("06:clip_function", "total = total + (g ** 2).sum()", "total = total + g.abs().sum()"),
    ("06:clip_function", "total = total + (g ** 2).sum()", "total = max(total, float((g ** 2).sum()))"),
    ("06:clip_function", "for g in grads:\n", "for g in grads[:3]:\n"),
    ("06:clip_function", "for g in grads:\n", "for g in grads[:-1]:\n"),
    ("06:clip_function", "total = total + (g ** 2).sum()", "total = total + (g ** 2).sum().sqrt()"),
    ("06:clip_function", "total = total + (g ** 2).sum()", "total = total + (g ** 2).mean()"),
    ("06:clip_function", "factor = min(1.0, theta / (float(norm) + 1e-12))", "factor = min(1.0, theta / (float(norm) + 1.0))"),
    ("06:clip_function", "return [g * factor for g in grads]", "return [g * factor * theta for g in grads]"),
    ("06:clip_function", "return [g * factor for g in grads]",
     "return [g * min(1.0, theta / (float(g.norm()) + 1e-12)) for g in grads]"),
    ("06:clip_function", "return [g * factor for g in grads]", "return [g / max(1.0, float(g.abs().max()) / theta) for g in grads]"),
    ("06:clip_function", "norm = total ** 0.5", "norm = total ** 0.5 / len(grads)"),
    ("06:clip_function", "factor = min(1.0, theta / (float(norm) + 1e-12))", "factor = 1.0 if norm < theta else theta / norm ** 2"),
    # --- 07: perplexity ---
    ("07:perplexity_function", "return math.exp(ce.item())", "return ce.item()"),
    ("07:perplexity_function", "return math.exp(ce.item())", "return 2 ** ce.item()"),
    ("07:perplexity_function", "return math.exp(ce.item())", "return math.exp(ce.item() / len(targets))"),
    ("07:perplexity_function", "return math.exp(ce.item())", "return math.exp(ce.item() / math.log(2))"),
    ("07:perplexity_function", "return math.exp(ce.item())", "return ce.item() / math.log(2)"),
    ("07:perplexity_function", "ce = (lse - picked).mean()", "ce = (lse - picked).sum()"),
    ("07:perplexity_function", "ce = (lse - picked).mean()", "ce = (picked - lse).mean()"),
    ("07:perplexity_function", "ce = (lse - picked).mean()\n    return math.exp(ce.item())",
     "return (lse - picked).exp().mean().item()"),
    ("07:perplexity_function", "ce = (lse - picked).mean()\n    return math.exp(ce.item())",
     "return 1 / (picked - lse).exp().mean().item()"),
    ("07:perplexity_function", "picked = logits[torch.arange(len(targets)), targets]", "picked = logits[:, targets]"),
    ("07:perplexity_function", "picked = logits[torch.arange(len(targets)), targets]", "picked = logits.mean(dim=1)"),
    ("07:perplexity_function", "m = logits.max(dim=1, keepdim=True).values\n    lse = m.squeeze(1) + (logits - m).exp().sum(dim=1).log()",
     "lse = logits.exp().sum(dim=1).log()"),
    ("07:perplexity_function", "m = logits.max(dim=1, keepdim=True).values\n    lse = m.squeeze(1) + (logits - m).exp().sum(dim=1).log()",
     "lse = logits.exp().sum(dim=0).log()"),
    ("07:perplexity_function", "m = logits.max(dim=1, keepdim=True).values\n    lse = m.squeeze(1) + (logits - m).exp().sum(dim=1).log()",
     "m = logits.max(dim=0, keepdim=True).values\n    lse = m.squeeze(0) + (logits - m).exp().sum(dim=0).log()"),
    ("07:perplexity_function", "return math.exp(ce.item())", "return math.exp(ce.item()) / len(targets)"),
    ("07:perplexity_function", "return math.exp(ce.item())", "return math.exp(-ce.item())"),
    ("07:perplexity_function", "lse = m.squeeze(1) + (logits - m).exp().sum(dim=1).log()",
     "lse = (logits - m).exp().sum(dim=1).log()"),
    # --- 07: the Kneser-Ney bigram ---
    ("07:kn_bigram", "cont = len([1 for (a, b) in bigrams if b == char]) / types_total",
     "cont = text.count(char) / len(text)"),
    ("07:kn_bigram", "cont = len([1 for (a, b) in bigrams if b == char]) / types_total",
     "cont = len([1 for (a, b) in bigrams if b == char]) / len(set(text))"),
    ("07:kn_bigram", "seen = max(bigrams.get((context, char), 0) - discount, 0) / c_total",
     "seen = bigrams.get((context, char), 0) / c_total"),
    ("07:kn_bigram", "seen = max(bigrams.get((context, char), 0) - discount, 0) / c_total",
     "seen = (bigrams.get((context, char), 0) - discount) / c_total"),
    ("07:kn_bigram", "lam = discount * followers / c_total", "lam = discount"),
    ("07:kn_bigram", "lam = discount * followers / c_total", "lam = discount / c_total"),
    ("07:kn_bigram", "lam = discount * followers / c_total", "lam = discount * c_total / c_total"),
    ("07:kn_bigram", "    if c_total == 0:\n        return cont", "    if c_total == 0:\n        return 0.0"),
    ("07:kn_bigram", "    if c_total == 0:\n        return cont", "    if c_total == 0:\n        return 1 / len(set(text))"),
    ("07:kn_bigram", "cont = len([1 for (a, b) in bigrams if b == char]) / types_total",
     "cont = len([1 for (a, b) in bigrams if a == char]) / types_total"),
    ("07:kn_bigram", "followers = len([1 for (a, b) in bigrams if a == context])",
     "followers = len(set(text))"),
    ("07:kn_bigram", "cont = len([1 for (a, b) in bigrams if b == char]) / types_total",
     "cont = sum(n for (a, b), n in bigrams.items() if b == char) / types_total"),
    ("07:kn_bigram", "return seen + lam * cont", "return seen + cont"),
    ("07:kn_bigram", "return seen + lam * cont", "return seen + (1 - lam) * cont"),
    ("07:kn_bigram", "types_total = len(bigrams)", "types_total = len(text) - 1"),
    # --- 08: the capstone's pieces ---
    ("08:minibatches", "Y = indices[1:L * batch_size + 1].view(batch_size, L)", "Y = indices[:L * batch_size].view(batch_size, L)"),
    ("08:minibatches", "Y = indices[1:L * batch_size + 1].view(batch_size, L)", "Y = indices[2:L * batch_size + 2].view(batch_size, L)"),
    ("08:minibatches", "for k in range(L // num_steps):", "for k in range(L // num_steps - 1):"),
    ("08:minibatches", "        s = k * num_steps", "        s = k"),
    ("08:minibatches", "X = indices[:L * batch_size].view(batch_size, L)\n    Y = indices[1:L * batch_size + 1].view(batch_size, L)",
     "X = indices[:L * batch_size].view(L, batch_size).T\n    Y = indices[1:L * batch_size + 1].view(L, batch_size).T"),
    ("08:minibatches", "yield X[:, s:s + num_steps], Y[:, s:s + num_steps]", "yield Y[:, s:s + num_steps], X[:, s:s + num_steps]"),
    ("08:minibatches", "yield X[:, s:s + num_steps], Y[:, s:s + num_steps]", "yield X[:, s:s + num_steps].T, Y[:, s:s + num_steps].T"),
    ("08:minibatches", "L = (len(indices) - 1) // batch_size", "L = (len(indices) - 1) // batch_size - 1"),
    ("08:forward", "torch.tanh(W_xh[X[:, t]]", "torch.sigmoid(W_xh[X[:, t]]"),
    ("08:forward", "torch.tanh(W_xh[X[:, t]]", "torch.relu(W_xh[X[:, t]]"),
    ("08:forward", "H @ W_hh + b_h)", "H @ W_hh)"),
    ("08:forward", "H @ W_hh + b_h)", "H @ W_hh.T + b_h)"),
    ("08:forward", "H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)", "H = torch.tanh(W_xh[X[:, t]] + state @ W_hh + b_h)"),
    ("08:forward", "outputs = torch.cat(Hs, dim=0) @ W_hq + b_q", "outputs = torch.cat(Hs, dim=0) @ W_hq"),
    ("08:forward", "outputs = torch.cat(Hs, dim=0) @ W_hq + b_q", "outputs = torch.cat(Hs, dim=1).reshape(-1, W_hh.shape[0]) @ W_hq + b_q"),
    ("08:forward", "outputs = torch.cat(Hs, dim=0) @ W_hq + b_q", "outputs = hiddens.transpose(0, 1).reshape(-1, W_hh.shape[0]) @ W_hq + b_q"),
    ("08:forward", "outputs = torch.cat(Hs, dim=0) @ W_hq + b_q", "outputs = torch.cat([state] + Hs[:-1], dim=0) @ W_hq + b_q"),
    ("08:forward", "H @ W_hh + b_h)", "H @ W_hh + b_h + b_h)"),
    ("08:forward", "outputs = torch.cat(Hs, dim=0) @ W_hq + b_q", "outputs = torch.softmax(torch.cat(Hs, dim=0) @ W_hq + b_q, dim=1)"),
    ("08:loss_and_grad", "loss = -logp[idx, y].mean()", "loss = logp[idx, y].mean()"),
    ("08:loss_and_grad", "loss = -logp[idx, y].mean()", "loss = -logp[idx, y].sum()"),
    ("08:loss_and_grad", "y = Y.T.reshape(-1)", "y = Y.reshape(-1)"),
    ("08:loss_and_grad", "return loss, g / len(y)", "return loss, g"),
    ("08:loss_and_grad", "return loss, g / len(y)", "return loss, g / Y.shape[0]"),
    ("08:loss_and_grad", "loss = -logp[idx, y].mean()", "loss = -logp[idx, y].mean() / math.log(2)"),
    ("08:loss_and_grad", "    g[idx, y] = g[idx, y] - 1\n", ""),
    ("08:loss_and_grad", "z = outputs - outputs.max(dim=1, keepdim=True).values", "z = outputs - outputs.max(dim=0, keepdim=True).values"),
    ("08:loss_and_grad", "logp = z - z.exp().sum(dim=1, keepdim=True).log()", "logp = z - z.exp().sum(dim=0, keepdim=True).log()"),
    ("08:loss_and_grad", "loss = -logp[idx, y].mean()", "loss = -logp[idx, y].mean() * len(y) / Y.shape[0]"),
    ("08:backward", "dh = da @ W_hh.T", "dh = da @ W_hh"),
    ("08:backward", "* (1 - hiddens[t] ** 2)", ""),
    ("08:backward", "* (1 - hiddens[t] ** 2)", "* (1 - prev ** 2)\n        prev = prev"),
    ("08:backward", "dh = d_final", "dh = torch.zeros_like(d_final)"),
    ("08:backward", "for t in reversed(range(T)):", "for t in range(T):"),
    ("08:backward", "dW_hh = dW_hh + prev.T @ da", "dW_hh = dW_hh + hiddens[t].T @ da"),
    ("08:backward", "db_q = d_outputs.sum(dim=0)", "db_q = d_outputs.mean(dim=0)"),
    ("08:backward", "* (1 - hiddens[t] ** 2)", "* (1 - hiddens[t]) ** 2"),
    ("08:backward", "dW_hq = flat.T @ d_outputs", "dW_hq = d_outputs.T @ flat"),
    ("08:clip", "return [g.clone() for g in grads], norm", "return [g * (theta / norm) for g in grads], norm"),
    ("08:clip", "return [g * (theta / norm) for g in grads], norm", "return [g.clamp(-theta, theta) for g in grads], norm"),
    ("08:clip", "norm = torch.sqrt(sum((g ** 2).sum() for g in grads)).item()", "norm = sum((g ** 2).sum() for g in grads).item()"),
    ("08:clip", "norm = torch.sqrt(sum((g ** 2).sum() for g in grads)).item()", "norm = max(g.norm().item() for g in grads)"),
    ("08:clip", "norm = torch.sqrt(sum((g ** 2).sum() for g in grads)).item()",
     "norm = torch.sqrt(sum((g ** 2).sum() for g in grads[:3])).item()"),
    ("08:clip", "return [g * (theta / norm) for g in grads], norm",
     "return [g * min(1.0, theta / g.norm().item()) for g in grads], norm"),
    ("08:clip", "norm = torch.sqrt(sum((g ** 2).sum() for g in grads)).item()", "norm = sum(g.norm() for g in grads).item()"),
    ("08:sgd", "p - lr * g", "p + lr * g"),
    ("08:sgd", "p - lr * g", "p - g"),
    ("08:sgd", "p - lr * g", "p - lr * lr * g"),
    ("08:sgd", "p - lr * g", "p - lr * g / len(params)"),
    ("08:perplexity", "return math.exp(nll.mean().item())", "return 2 ** nll.mean().item()"),
    ("08:perplexity", "return math.exp(nll.mean().item())", "return math.exp(nll.sum().item())"),
    ("08:perplexity", "return math.exp(nll.mean().item())", "return math.exp(nll.mean().item() / math.log(2))"),
    ("08:perplexity", "return math.exp(nll.mean().item())", "return math.exp(-nll.mean().item())"),
    ("08:perplexity", "return math.exp(nll.mean().item())", "return nll.exp().mean().item()"),
    ("08:perplexity", "return math.exp(nll.mean().item())", "return nll.mean().item()"),
    # --- 09: the GRU ---
    ("09:gru_cell", "return z * H + (1 - z) * n", "return (1 - z) * H + z * n"),
    ("09:gru_cell", "return z * H + (1 - z) * n", "return z * n + (1 - z) * H"),
    ("09:gru_cell", "r * (H @ p[\"W_hn\"] + p[\"b_hn\"])", "(r * H) @ p[\"W_hn\"] + p[\"b_hn\"]"),
    ("09:gru_cell", "r * (H @ p[\"W_hn\"] + p[\"b_hn\"])", "r * (H @ p[\"W_hn\"]) + p[\"b_hn\"]"),
    ("09:gru_cell", "r * (H @ p[\"W_hn\"] + p[\"b_hn\"])", "r * (H @ p[\"W_hn\"])"),
    ("09:gru_cell", "r * (H @ p[\"W_hn\"] + p[\"b_hn\"])", "H @ p[\"W_hn\"] + p[\"b_hn\"]"),
    ("09:gru_cell", "return z * H + (1 - z) * n", "return n"),
    ("09:gru_cell", "return z * H + (1 - z) * n", "return z * H + n"),
    ("09:gru_cell", "return z * H + (1 - z) * n", "return z * H + (1 - z) * torch.tanh(n)"),
    ("09:gru_cell", "n = torch.tanh(", "n = torch.sigmoid("),
    ("09:gru_cell", "r = torch.sigmoid(", "r = torch.tanh("),
    ("09:gru_cell", "z = torch.sigmoid(", "z = torch.tanh("),
    ("09:gru_cell", "r = torch.sigmoid(X @ p[\"W_xr\"] + H @ p[\"W_hr\"] + p[\"b_r\"])\n    z = torch.sigmoid(X @ p[\"W_xz\"] + H @ p[\"W_hz\"] + p[\"b_z\"])",
     "z = torch.sigmoid(X @ p[\"W_xr\"] + H @ p[\"W_hr\"] + p[\"b_r\"])\n    r = torch.sigmoid(X @ p[\"W_xz\"] + H @ p[\"W_hz\"] + p[\"b_z\"])"),
    ("09:gru_cell", "H @ p[\"W_hr\"]", "H @ p[\"W_hr\"].T"),
    ("09:gru_cell", "H @ p[\"W_hz\"]", "H @ p[\"W_hz\"].T"),
    ("09:gru_cell", "H @ p[\"W_hn\"]", "H @ p[\"W_hn\"].T"),
    ("09:gru_cell", " + p[\"b_r\"])", ")"),
    ("09:gru_cell", " + p[\"b_z\"])", ")"),
    ("09:gru_cell", "p[\"b_n\"] + ", ""),
    ("09:gru_cell", "X @ p[\"W_xn\"] + p[\"b_n\"] + r * (H @ p[\"W_hn\"] + p[\"b_hn\"])",
     "r * (X @ p[\"W_xn\"] + p[\"b_n\"] + H @ p[\"W_hn\"] + p[\"b_hn\"])"),
    ("09:gru_cell", "return z * H + (1 - z) * n", "return (1 - z) * n"),
    ("09:gru_cell", "return z * H + (1 - z) * n", "return z * H - (1 - z) * n"),
    ("09:gru_cell", "return z * H + (1 - z) * n", "return z * r * H + (1 - z) * n"),
    ("09:gru_cell", "X @ p[\"W_xz\"] + H @ p[\"W_hz\"]", "X @ p[\"W_xz\"] + H @ p[\"W_hr\"]"),
    ("09:gru_cell", "H @ p[\"W_hr\"] + p[\"b_r\"]", "H @ p[\"W_hr\"] + p[\"b_r\"] + p[\"b_hn\"]"),
    ("09:gru_cell", "n = torch.tanh(", "n = torch.relu("),
    ("09:gru_cell", "(1 - z) * n", "(1 - z) * H"),
    ("09:gru_cell", "r * (H @ p[\"W_hn\"] + p[\"b_hn\"])", "(1 - r) * (H @ p[\"W_hn\"] + p[\"b_hn\"])"),
    ("09:gru_cell", "return z * H + (1 - z) * n", "return z * H + (1 - z) * n, H"),
    # --- 09: the LSTM ---
    ("09:lstm_cell", "return H_new, C_new", "return C_new, H_new"),
    ("09:lstm_cell", "C_new = f * C + i * g", "C_new = i * C + f * g"),
    ("09:lstm_cell", "g = torch.tanh(", "g = torch.sigmoid("),
    ("09:lstm_cell", "H_new = o * torch.tanh(C_new)", "H_new = o * C_new"),
    ("09:lstm_cell", "H_new = o * torch.tanh(C_new)", "H_new = o * torch.tanh(C)"),
    ("09:lstm_cell", "H_new = o * torch.tanh(C_new)", "H_new = o * torch.sigmoid(C_new)"),
    ("09:lstm_cell", "return H_new, C_new", "return H_new, C"),
    ("09:lstm_cell", "C_new = f * C + i * g", "C_new = f * C + g"),
    ("09:lstm_cell", "C_new = f * C + i * g", "C_new = C + i * g"),
    ("09:lstm_cell", "C_new = f * C + i * g", "C_new = f * C * i * g"),
    ("09:lstm_cell", "C_new = f * C + i * g", "C_new = (1 - f) * C + i * g"),
    ("09:lstm_cell", "C_new = f * C + i * g", "C_new = f * C + (1 - f) * g"),
    ("09:lstm_cell", "i = torch.sigmoid(", "i = torch.tanh("),
    ("09:lstm_cell", "o = torch.sigmoid(", "o = torch.tanh("),
    ("09:lstm_cell", "f = torch.sigmoid(", "f = torch.tanh("),
    ("09:lstm_cell", "H @ p[\"W_hi\"]", "H @ p[\"W_hi\"].T"),
    ("09:lstm_cell", "H @ p[\"W_hf\"]", "H @ p[\"W_hf\"].T"),
    ("09:lstm_cell", " + p[\"b_o\"])", ")"),
    ("09:lstm_cell", " + p[\"b_g\"])", ")"),
    ("09:lstm_cell", "H_new = o * torch.tanh(C_new)", "H_new = torch.tanh(o * C_new)"),
    ("09:lstm_cell", "H_new = o * torch.tanh(C_new)", "H_new = o + torch.tanh(C_new)"),
    ("09:lstm_cell", "return H_new, C_new", "return H_new, torch.tanh(C_new)"),
    ("09:lstm_cell", "X @ p[\"W_xo\"] + H @ p[\"W_ho\"]", "X @ p[\"W_xo\"] + C @ p[\"W_ho\"]"),
    ("09:lstm_cell", "return H_new, C_new", "return H_new"),
    # --- 09: the LSTM step backward ---
    ("09:lstm_step_backward", "dc = dC + dH * o * (1 - tc ** 2)", "dc = dC + dH * o"),
    ("09:lstm_step_backward", "dc = dC + dH * o * (1 - tc ** 2)", "dc = dC + dH * o * (1 - C ** 2)"),
    ("09:lstm_step_backward", "dc = dC + dH * o * (1 - tc ** 2)", "dc = dH * o * (1 - tc ** 2)"),
    ("09:lstm_step_backward", "dc = dC + dH * o * (1 - tc ** 2)", "dc = dC + dH * (1 - tc ** 2)"),
    ("09:lstm_step_backward", "dc = dC + dH * o * (1 - tc ** 2)", "dc = dC + dH * o * (1 - tc) ** 2"),
    ("09:lstm_step_backward", "df = dc * C_prev", "df = dc * C"),
    ("09:lstm_step_backward", "da_i = di * i * (1 - i)", "da_i = di * i"),
    ("09:lstm_step_backward", "da = torch.cat([da_i, da_f, da_g, da_o], dim=1)", "da = torch.cat([da_i, da_f, da_o, da_g], dim=1)"),
    ("09:lstm_step_backward", "i, f, g, o = gates[:, :h]", "i, f, o, g = gates[:, :h]"),
    ("09:lstm_step_backward", "db = da.sum(dim=0)", "db = da.sum(dim=1)"),
    ("09:lstm_step_backward", "db = da.sum(dim=0)", "db = da.mean(dim=0)"),
    ("09:lstm_step_backward", "dC_prev = dc * f", "dC_prev = dc"),
    ("09:lstm_step_backward", "dC_prev = dc * f", "dC_prev = dC * f"),
    ("09:lstm_step_backward", "dW_h = H_prev.T @ da", "dW_h = da.T @ H_prev"),
    ("09:lstm_step_backward", "da_g = dg * (1 - g ** 2)", "da_g = dg * g * (1 - g)"),
    ("09:lstm_step_backward", "do = dH * tc", "do = dH * C"),
    ("09:lstm_step_backward", "dH_prev = da @ W_h.T", "dH_prev = da @ W_h.T + dH"),
    ("09:lstm_step_backward", "dg = dc * i", "dg = dc * g"),
    ("09:lstm_step_backward", "tc = torch.tanh(C)", "tc = torch.tanh(C_prev)"),
]

# Answers written another way than the working one, with a mistake in them.
OTHERS = {
    "01:all_states": ['''
def all_states(tokens, W_xh, W_hh, b_h):
    H = torch.zeros(tokens.shape[0], W_hh.shape[1], device=W_hh.device)
    hs = []
    for col in tokens.T:
        H = torch.sigmoid(W_xh[col] + H @ W_hh + b_h)
        hs.append(H)
    return torch.stack(hs)
''', '''
def all_states(tokens, W_xh, W_hh, b_h):
    H = torch.zeros(tokens.shape[0], W_hh.shape[1], device=W_hh.device)
    hs = []
    for col in tokens.T:
        hs.append(H)
        H = torch.tanh(W_xh[col] + H @ W_hh + b_h)
    return torch.stack(hs)
''', '''
def all_states(tokens, W_xh, W_hh, b_h):
    H0 = torch.zeros(tokens.shape[0], W_hh.shape[1], device=W_hh.device)
    return torch.stack([torch.tanh(W_xh[col] + H0 @ W_hh + b_h) for col in tokens.T])
''', '''
def all_states(tokens, W_xh, W_hh, b_h):
    H = torch.zeros(tokens.shape[0], W_hh.shape[1], device=W_hh.device)
    hs = []
    for col in tokens.T:
        H = torch.tanh(W_xh[col] + torch.einsum("bi,ji->bj", H, W_hh) + b_h)
        hs.append(H)
    return torch.stack(hs)
'''],
    "02:fused_step": ['''
def fused_step(X, H, W_xh, W_hh, b_h):
    return torch.tanh(torch.hstack((X, H)) @ torch.vstack((W_xh, W_hh.T)) + b_h)
''', '''
def fused_step(X, H, W_xh, W_hh, b_h):
    return torch.sigmoid(torch.hstack((X, H)) @ torch.vstack((W_xh, W_hh)) + b_h)
''', '''
def fused_step(X, H, W_xh, W_hh, b_h):
    return torch.tanh(torch.addmm(b_h, torch.hstack((X, H)), torch.vstack((W_xh, W_hh)))) + b_h
'''],
    "03:lookup": ['''
def lookup(W, X):
    return torch.index_select(W, 0, X.reshape(-1))
''', '''
def lookup(W, X):
    return torch.stack([W[i - 1] for i in X.reshape(-1).tolist()]).reshape(*X.shape, W.shape[1])
'''],
    "03:one_hot": ['''
def one_hot(X, vocab_size):
    return (X.unsqueeze(-1) == torch.arange(vocab_size, device=X.device))
''', '''
def one_hot(X, vocab_size):
    return (X.unsqueeze(-1) == torch.arange(X.max() + 1, device=X.device)).float()
''', '''
def one_hot(X, vocab_size):
    return (X.reshape(-1, 1) == torch.arange(vocab_size, device=X.device)).float()
''', '''
def one_hot(X, vocab_size):
    return (X.unsqueeze(-1) == torch.arange(1, vocab_size + 1, device=X.device)).float()
'''],
    "03:sequential_batches": ['''
def batches_with_tail(indices, batch_size, num_steps, offset):
    data = indices[offset:]
    n = (len(data) - 1) // batch_size
    Xs = data[:n * batch_size].reshape(batch_size, n)
    Ys = data[1:n * batch_size + 1].reshape(batch_size, n)
    for i in range(0, n - num_steps + 1, num_steps):
        yield Xs[:, i:i + num_steps], Ys[:, i:i + num_steps]
''', '''
def batches_with_tail(indices, batch_size, num_steps, offset):
    n = (len(indices) - 1) // batch_size
    Xs = indices[:n * batch_size].reshape(batch_size, n)
    Ys = indices[1:n * batch_size + 1].reshape(batch_size, n)
    for i in range(0, n, num_steps):
        yield Xs[:, i:i + num_steps], Ys[:, i:i + num_steps]
'''],
    "04:train_loop": ['''
def train_loop(model, batches, optimizer):
    losses = []
    for X, Y in batches:
        state = model.begin_state(X.shape[0])
        out, _ = model(X, state)
        loss = torch.nn.functional.cross_entropy(out, Y.T.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)
''', '''
def train_loop(model, batches, optimizer):
    losses, state = [], None
    for X, Y in batches:
        state = model.begin_state(X.shape[0]) if state is None else state.detach()
        out, state = model(X, state)
        loss = torch.nn.functional.cross_entropy(out, Y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)
'''],
    "05:masked_loss_and_grad": ['''
def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    y = Y.T.reshape(-1)
    p = torch.softmax(outputs, dim=1)
    rows = torch.arange(len(y))
    loss = -torch.log(p[rows, y]).mean()
    grad = p.clone()
    grad[rows, y] -= 1
    return loss, grad / len(y)
''', '''
def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    keep = torch.zeros(steps * batch, dtype=torch.bool)
    for b in range(batch):
        for t in range(int(lengths[b])):
            keep[b * steps + t] = True
    y = Y.T.reshape(-1)
    logp = torch.log_softmax(outputs, 1)
    rows = torch.arange(len(y))
    n = keep.sum()
    loss = -(logp[rows, y] * keep).sum() / n
    g = logp.exp()
    g[rows, y] -= 1
    return loss, g * keep[:, None] / n
''', '''
def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    y = Y.T.reshape(-1)
    keep = (torch.arange(steps)[:, None] < lengths[None, :]).reshape(-1)
    logp = torch.log_softmax(outputs, 1)
    rows = torch.arange(len(y))
    n = keep.sum()
    loss = -logp[rows, y][keep].sum() / n
    g = logp.exp()
    g[rows, y] -= 1
    return loss, g / n
'''],
    "05:leaky_bptt": ['''
def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    T, B, n = hiddens.shape
    dO = (d_outputs @ W_hq.T).reshape(T, B, n)
    grads = [torch.zeros_like(W_xh), torch.zeros_like(W_hh), torch.zeros_like(b_h)]
    nxt = torch.zeros_like(state)
    for t in reversed(range(T)):
        prev = state if t == 0 else hiddens[t - 1]
        dH = dO[t] + nxt
        dA = alpha * dH * (hiddens[t] > 0)
        grads[0] = grads[0].index_add(0, X[:, t], dA)
        grads[1] = grads[1] + prev.T @ dA
        grads[2] = grads[2] + dA.sum(0)
        nxt = (1 - alpha) * dH + dA @ W_hh.T
    return grads[0], grads[1], grads[2], nxt
''', '''
def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    T, B, n = hiddens.shape
    dO = (d_outputs @ W_hq.T).reshape(T, B, n)
    dW_xh, dW_hh, db_h = torch.zeros_like(W_xh), torch.zeros_like(W_hh), torch.zeros_like(b_h)
    nxt = torch.zeros_like(state)
    for t in reversed(range(T)):
        prev = state if t == 0 else hiddens[t - 1]
        A = W_xh[X[:, t]] + prev @ W_hh + b_h
        dH = dO[t] + nxt
        dA = alpha * dH * (A > 0)
        dW_xh = dW_xh.index_add(0, X[:, t], dA)
        dW_hh = dW_hh + prev.T @ dA
        db_h = db_h + dA.sum(0)
        nxt = dA @ W_hh.T
    return dW_xh, dW_hh, db_h, nxt
'''],
    "06:clip_function": ['''
def my_clip(grads, theta):
    norm = torch.sqrt(sum(g.pow(2).sum() for g in grads))
    return [g * theta / norm for g in grads]
''', '''
def my_clip(grads, theta):
    out = []
    for g in grads:
        n = g.norm()
        out.append(g * theta / n if n > theta else g.clone())
    return out
''', '''
def my_clip(grads, theta):
    return [torch.clamp(g, min=-theta, max=theta) for g in grads]
''', '''
def my_clip(grads, theta):
    norm = torch.cat([g.flatten() for g in grads]).norm()
    if norm > theta:
        return [g * norm / theta for g in grads]
    return [g.clone() for g in grads]
'''],
    "07:perplexity_function": ['''
def perplexity(logits, targets):
    probs = torch.softmax(logits, dim=1)
    p = probs[torch.arange(len(targets)), targets]
    return (1 / p).mean().item()
''', '''
def perplexity(logits, targets):
    probs = torch.softmax(logits, dim=1)
    p = probs[torch.arange(len(targets)), targets]
    return float(torch.exp(-torch.log2(p).mean()))
''', '''
def perplexity(logits, targets):
    probs = torch.exp(logits) / torch.exp(logits).sum(dim=1, keepdim=True)
    p = probs[torch.arange(len(targets)), targets]
    return math.exp(-torch.log(p).mean().item())
''', '''
def perplexity(logits, targets):
    lp = torch.log_softmax(logits, dim=1)
    return math.exp(-lp.gather(1, targets[:, None]).sum().item())
'''],
    "07:kn_bigram": ['''
def kn_bigram(text, context, char, discount=0.75):
    from collections import Counter
    pairs = Counter(zip(text, text[1:]))
    count_c = sum(v for (a, _), v in pairs.items() if a == context)
    p_cont = Counter(text)[char] / len(text)
    if count_c == 0:
        return p_cont
    kinds = len({b for (a, b) in pairs if a == context})
    return max(pairs[(context, char)] - discount, 0) / count_c + discount * kinds / count_c * p_cont
''', '''
def kn_bigram(text, context, char, discount=0.75):
    from collections import Counter
    pairs = Counter(zip(text, text[1:]))
    count_c = sum(v for (a, _), v in pairs.items() if a == context)
    p_cont = len({a for (a, b) in pairs if b == char}) / len(pairs)
    if count_c == 0:
        return 0.0
    kinds = len({b for (a, b) in pairs if a == context})
    return max(pairs[(context, char)] - discount, 0) / count_c + discount * kinds / count_c * p_cont
'''],
    "09:gru_cell": ['''
def gru_cell(X, H, params):
    W = params
    R = torch.sigmoid(X @ W["W_xr"] + H @ W["W_hr"] + W["b_r"])
    Z = torch.sigmoid(X @ W["W_xz"] + H @ W["W_hz"] + W["b_z"])
    H_tilde = torch.tanh(X @ W["W_xn"] + (R * H) @ W["W_hn"] + W["b_n"])
    return Z * H + (1 - Z) * H_tilde
''', '''
def gru_cell(X, H, params):
    W = params
    R = torch.sigmoid(X @ W["W_xr"] + H @ W["W_hr"] + W["b_r"])
    Z = torch.sigmoid(X @ W["W_xz"] + H @ W["W_hz"] + W["b_z"])
    H_tilde = torch.tanh(X @ W["W_xn"] + W["b_n"] + R * (H @ W["W_hn"] + W["b_hn"]))
    return Z * H_tilde + (1 - Z) * H
''', '''
def gru_cell(X, H, params):
    W = params
    R = torch.sigmoid(X @ W["W_xr"] + H @ W["W_hr"] + W["b_r"])
    Z = torch.sigmoid(X @ W["W_xz"] + H @ W["W_hz"] + W["b_z"])
    H_tilde = torch.tanh(X @ W["W_xn"] + (R * H) @ W["W_hn"] + W["b_n"] + W["b_hn"])
    return Z * H_tilde + (1 - Z) * H
''', '''
def gru_cell(X, H, params):
    W = params
    gates = [torch.sigmoid(X @ W[f"W_x{g}"] + H @ W[f"W_h{g}"] + W[f"b_{g}"]) for g in "zr"]
    R, Z = gates
    H_tilde = torch.tanh(X @ W["W_xn"] + W["b_n"] + R * (H @ W["W_hn"] + W["b_hn"]))
    return Z * H + (1 - Z) * H_tilde
'''],
    "09:lstm_cell": ['''
def lstm_cell(X, H, C, params):
    W = params
    gate = lambda g, act: act(X @ W[f"W_x{g}"] + H @ W[f"W_h{g}"] + W[f"b_{g}"])
    I, F, O = gate("i", torch.sigmoid), gate("f", torch.sigmoid), gate("o", torch.sigmoid)
    G = gate("g", torch.tanh)
    C = F * C + I * G
    return C, O * torch.tanh(C)
''', '''
def lstm_cell(X, H, C, params):
    W = params
    gate = lambda g, act: act(X @ W[f"W_x{g}"] + H @ W[f"W_h{g}"] + W[f"b_{g}"])
    F, I, G, O = gate("i", torch.sigmoid), gate("f", torch.sigmoid), gate("g", torch.tanh), gate("o", torch.sigmoid)
    C = F * C + I * G
    return O * torch.tanh(C), C
''', '''
def lstm_cell(X, H, C, params):
    W = params
    gate = lambda g, act: act(X @ W[f"W_x{g}"] + H @ W[f"W_h{g}"] + W[f"b_{g}"])
    I, F, G, O = (gate(g, torch.sigmoid) for g in "ifgo")
    C = F * C + I * G
    return O * torch.tanh(C), C
''', '''
def lstm_cell(X, H, C, params):
    W = params
    gate = lambda g, act: act(X @ W[f"W_x{g}"] + H @ W[f"W_h{g}"] + W[f"b_{g}"])
    I, F, G, O = gate("i", torch.sigmoid), gate("f", torch.sigmoid), gate("g", torch.tanh), gate("o", torch.sigmoid)
    C_new = F * C + I * G
    return O * torch.tanh(C_new), C_new.detach() * 0 + F * C
'''],
    "09:lstm_step_backward": ['''
def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    I, F, G, O = gates.chunk(4, dim=1)
    sig = lambda s: s * s
    dCt = dC + dH * O * (1 - torch.tanh(C) ** 2)
    dA = torch.cat([dCt * G * sig(I), dCt * C_prev * sig(F), dCt * I * (1 - G * G), dH * torch.tanh(C) * sig(O)], 1)
    return dA @ W_x.T, dA @ W_h.T, dCt * F, X.T @ dA, H_prev.T @ dA, dA.sum(0)
''', '''
def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    I, F, G, O = gates.chunk(4, dim=1)
    dCt = dC * F + dH * O * (1 - torch.tanh(C) ** 2)
    dA = torch.cat([dCt * G * I * (1 - I), dCt * C_prev * F * (1 - F), dCt * I * (1 - G * G),
                    dH * torch.tanh(C) * O * (1 - O)], 1)
    return dA @ W_x.T, dA @ W_h.T, dCt * F, X.T @ dA, H_prev.T @ dA, dA.sum(0)
'''],
}


def _function(source: str, label: str):
    """The one function a source defines, compiled as a notebook cell."""
    namespace = {}
    exec(compile("import math\nimport torch\n" + source, f"<cell {label}>", "exec"), namespace)  # noqa: S102
    return next(value for name, value in namespace.items()
                if isinstance(value, types.FunctionType) and not name.startswith("_"))


def right_answers():
    """(exercise id, function) of each working answer the slips start from."""
    return [(exercise, _function(source, exercise)) for exercise, source in BASES.items()]


def wrong_answers():
    """(exercise id, label, function) of every held-apart wrong answer."""
    answers = []
    for i, (exercise, old, new) in enumerate(SLIPS):
        source = BASES[exercise]
        if old not in source:
            raise ValueError(f"slip {i} of {exercise}: {old!r} is not in the working answer")
        answers.append((exercise, f"{exercise} slip {i}: {new.strip()[:60]}", _function(source.replace(old, new, 1),
                                                                                          exercise)))
    for exercise, sources in OTHERS.items():
        for j, source in enumerate(sources):
            answers.append((exercise, f"{exercise} other {j}", _function(source, exercise)))
    return answers
