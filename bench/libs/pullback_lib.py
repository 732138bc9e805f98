"""pullback: the workloads as written, through pb.grad / pb.jacobian / pb.hessian, and the
training loop through the Tracker API (param, backward, update)."""

import functools

import numpy as np

import pullback as pb

from .. import workloads as W


def _list(r):
    return [np.asarray(a) for a in (r if isinstance(r, (tuple, list)) else [r])]


def build(workload, data, lib="pullback"):
    d = data
    if workload == "scalar_chain":
        g = pb.grad(W.scalar_chain)
        return (lambda: g(d["x"])), _list
    if workload in W.MLP_LOSSES:
        g = pb.grad(W.MLP_LOSSES[workload])
        return (lambda: g(d["params"], d["x"], d["Y"])), _list
    if workload in W.RNN_WORKLOADS:
        g = pb.grad(W.rnn_loss)
        return (lambda: g(d["weights"], d["xs"], d["h0"])), _list
    if workload == "hessian":
        h = pb.hessian(W.hess_fn)
        return (lambda: h(d["x"], d["A"])), _list
    if workload == "jacobian_ew":
        j = pb.jacobian(W.ew_map)
        return (lambda: j(d["x"])), _list
    if workload == "jacobian_mlp":
        j = pb.jacobian(functools.partial(W.mlp_predict, d["params"]))
        return (lambda: j(d["x"])), _list
    if workload == "training_loop" and lib == "pullback":
        return (lambda: train_tracker(d)), _list
    if workload == "training_loop" and lib == "pullback_fn":
        return (lambda: train_functional(d)), _list
    raise KeyError(workload)


def train_tracker(d):
    params = [pb.param(p) for p in d["params"]]
    x, Y = d["x"], d["Y"]
    for _ in range(W.TRAIN_STEPS):
        loss = W.mlp_loss(params, x, Y)
        loss.backward()
        for p in params:
            pb.update(p, -W.TRAIN_LR * p.grad)
    return [p.value for p in params]


def train_functional(d, g=None):
    """Plain SGD with ``pb.grad`` of the loss (or ``g``, a gradient of it: pb.jit's)."""
    params = list(d["params"])
    x, Y = d["x"], d["Y"]
    g = g or pb.grad(W.mlp_loss)
    for _ in range(W.TRAIN_STEPS):
        grads = g(params, x, Y)
        params = [p - W.TRAIN_LR * gp for p, gp in zip(params, grads)]
    return params


def graph_bytes(x):
    """The forward pass of scalar_chain with its graph kept alive (for the memory per
    recorded operation); returns what holds the graph."""
    return pb.vjp(W.scalar_chain, x)
