"""Hand-written NumPy: each workload's forward pass with its backward pass written out by
hand. Plain, careful NumPy (no graph, no dispatch): the limit for an AD tool on NumPy."""

import numpy as np

from .. import workloads as W


def _list(r):
    return [np.asarray(a) for a in (r if isinstance(r, (tuple, list)) else [r])]


def build(workload, data, lib="numpy"):
    d = data
    if workload == "scalar_chain":
        return (lambda: scalar_chain_grad(d["x"])), _list
    if workload in W.MLP_LOSSES:
        return (lambda: mlp_grad(d["params"], d["x"], d["Y"])), _list
    if workload in W.RNN_WORKLOADS:
        return (lambda: rnn_grad(d["weights"], d["xs"], d["h0"])), _list
    if workload == "hessian":
        return (lambda: hessian(d["x"], d["A"])), _list
    if workload == "jacobian_ew":
        return (lambda: ew_jacobian(d["x"])), _list
    if workload == "jacobian_mlp":
        return (lambda: mlp_jacobian(d["params"], d["x"])), _list
    if workload == "training_loop":
        return (lambda: train(d)), _list
    raise KeyError(workload)


def scalar_chain_grad(x):
    g = 1.0
    for _ in range(W.CHAIN_STEPS):
        g *= np.cos(x) * 1.0001
        x = np.sin(x) * 1.0001 + 0.1
    return g


def mlp_grad(params, x, Y):
    W1, b1, W2, b2, W3, b3 = params
    h1 = np.tanh(x @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    logits = h2 @ W3 + b3
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    # d/dlogits of mean(lse - <Y, logits>), for rows of Y that sum to one
    dl = (p * Y.sum(axis=1, keepdims=True) - Y) / x.shape[0]
    gW3, gb3 = h2.T @ dl, dl.sum(axis=0)
    dz2 = dl @ W3.T
    dz2 *= 1.0 - h2 * h2
    gW2, gb2 = h1.T @ dz2, dz2.sum(axis=0)
    dz1 = dz2 @ W2.T
    dz1 *= 1.0 - h1 * h1
    gW1, gb1 = x.T @ dz1, dz1.sum(axis=0)
    return gW1, gb1, gW2, gb2, gW3, gb3


def rnn_grad(weights, xs, h0):
    Wx, Wh, b = weights
    hs = [h0]
    for t in range(W.RNN_STEPS):
        hs.append(np.tanh(xs[t] @ Wx + hs[-1] @ Wh + b))
    gWx, gWh, gb = np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)
    dh = 2.0 * hs[-1]
    for t in range(W.RNN_STEPS - 1, -1, -1):
        h = hs[t + 1]
        dz = dh * (1.0 - h * h)
        gWx += xs[t].T @ dz
        gWh += hs[t].T @ dz
        gb += dz.sum(axis=0)
        dh = dz @ Wh.T
    return gWx, gWh, gb


def hessian(x, A):
    # f = s**2, s = sum(tanh(A x)); grad = 2 s A^T (1 - t^2)
    t = np.tanh(A @ x)
    d1 = 1.0 - t * t
    u = A.T @ d1
    s = t.sum()
    return 2.0 * np.outer(u, u) + 2.0 * s * (A.T * (-2.0 * t * d1)) @ A


def ew_jacobian(x):
    # d/dx [sin(x) exp(-x^2/2) + tanh(x)]
    e = np.exp(-0.5 * x * x)
    t = np.tanh(x)
    return np.diag((np.cos(x) - x * np.sin(x)) * e + 1.0 - t * t)


def mlp_jacobian(params, x):
    W1, b1, W2, b2, W3, b3 = params
    h1 = np.tanh(x @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    J = W1.T * (1.0 - h1 * h1)[:, None]
    J = (W2.T * (1.0 - h2 * h2)[:, None]) @ J
    return W3.T @ J


def train(d):
    params = [p.copy() for p in d["params"]]
    x, Y = d["x"], d["Y"]
    for _ in range(W.TRAIN_STEPS):
        for p, g in zip(params, mlp_grad(params, x, Y)):
            p -= W.TRAIN_LR * g
    return params
