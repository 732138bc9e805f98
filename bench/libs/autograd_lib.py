"""HIPS autograd: the workloads as written, on autograd.numpy."""

import functools

import autograd
import autograd.numpy as anp
import numpy as np

from .. import workloads as W


def _list(r):
    return [np.asarray(a) for a in (r if isinstance(r, (tuple, list)) else [r])]


def build(workload, data, lib="autograd"):
    d = data
    if workload == "scalar_chain":
        g = autograd.grad(functools.partial(W.scalar_chain, np=anp))
        return (lambda: g(d["x"])), _list
    if workload in W.MLP_LOSSES:
        g = autograd.grad(functools.partial(W.MLP_LOSSES[workload], np=anp))
        return (lambda: g(d["params"], d["x"], d["Y"])), _list
    if workload in W.RNN_WORKLOADS:
        g = autograd.grad(functools.partial(W.rnn_loss, np=anp))
        return (lambda: g(d["weights"], d["xs"], d["h0"])), _list
    if workload == "hessian":
        h = autograd.hessian(functools.partial(W.hess_fn, np=anp))
        return (lambda: h(d["x"], d["A"])), _list
    if workload == "jacobian_ew":
        j = autograd.jacobian(functools.partial(W.ew_map, np=anp))
        return (lambda: j(d["x"])), _list
    if workload == "jacobian_mlp":
        j = autograd.jacobian(lambda x: W.mlp_predict(d["params"], x, np=anp))
        return (lambda: j(d["x"])), _list
    if workload == "training_loop":
        return (lambda: train(d)), _list
    raise KeyError(workload)


def train(d):
    params = list(d["params"])
    x, Y = d["x"], d["Y"]
    g = autograd.grad(functools.partial(W.mlp_loss, np=anp))
    for _ in range(W.TRAIN_STEPS):
        grads = g(params, x, Y)
        params = [p - W.TRAIN_LR * gp for p, gp in zip(params, grads)]
    return params


def graph_bytes(x):
    return autograd.make_vjp(functools.partial(W.scalar_chain, np=anp))(x)
