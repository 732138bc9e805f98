"""MyGrad: the workloads as written, on the mygrad namespace. MyGrad has no Jacobian
transform; the Jacobians are its user's loop of one forward and backward per output."""

import functools

import mygrad as mg
import numpy as np

from .. import workloads as W


def _list(r):
    return [np.array(a) for a in (r if isinstance(r, (tuple, list)) else [r])]


def _grads(f, arrays, *rest):
    ts = [mg.tensor(a) for a in arrays]
    f(ts, *rest, np=mg).backward()
    return [t.grad for t in ts]


def build(workload, data, lib="mygrad"):
    d = data
    if workload == "scalar_chain":
        def run():
            x = mg.tensor(d["x"])
            W.scalar_chain(x, np=mg).backward()
            return x.grad
        return run, _list
    if workload in W.MLP_LOSSES:
        return (lambda: _grads(W.MLP_LOSSES[workload], d["params"], d["x"], d["Y"])), _list
    if workload in W.RNN_WORKLOADS:
        return (lambda: _grads(W.rnn_loss, d["weights"], d["xs"], d["h0"])), _list
    if workload == "jacobian_ew":
        return (lambda: jacobian(functools.partial(W.ew_map, np=mg), d["x"])), _list
    if workload == "jacobian_mlp":
        f = functools.partial(W.mlp_predict, d["params"], np=mg)
        return (lambda: jacobian(f, d["x"])), _list
    if workload == "training_loop":
        return (lambda: train(d)), _list
    raise KeyError(workload)


def jacobian(f, x):
    rows = []
    n = np.shape(f(x))[0]
    for i in range(n):
        t = mg.tensor(x)
        f(t)[i].backward()
        rows.append(t.grad)
    return np.stack(rows)


def train(d):
    params = [mg.tensor(p) for p in d["params"]]
    x, Y = d["x"], d["Y"]
    for _ in range(W.TRAIN_STEPS):
        W.mlp_loss(params, x, Y, np=mg).backward()
        for p in params:
            p.data -= W.TRAIN_LR * p.grad
    return [p.data for p in params]


def graph_bytes(x):
    return W.scalar_chain(mg.tensor(x), np=mg)
