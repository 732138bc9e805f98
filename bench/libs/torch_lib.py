"""PyTorch eager on the CPU: the workloads as written, on a NumPy-style shim over torch
(torch names its reduction arguments ``dim``/``keepdim``). Jacobians and the Hessian use
torch.func (vmap over the backward pass), PyTorch's fastest eager route."""

import functools

import numpy as np
import torch

from .. import workloads as W

torch.set_num_threads(1)
torch.set_num_interop_threads(1)


class TorchNP:
    """The few NumPy names the workloads use, on torch."""

    sin, cos, tanh, exp, log = torch.sin, torch.cos, torch.tanh, torch.exp, torch.log

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        return torch.sum(x) if axis is None else torch.sum(x, dim=axis, keepdim=keepdims)

    @staticmethod
    def max(x, axis=None, keepdims=False):
        return torch.amax(x) if axis is None else torch.amax(x, dim=axis, keepdim=keepdims)

    @staticmethod
    def mean(x):
        return torch.mean(x)


tnp = TorchNP()


def T(a, grad=False):
    return torch.tensor(np.asarray(a), dtype=torch.float64, requires_grad=grad)


def _list(r):
    r = r if isinstance(r, (tuple, list)) else [r]
    return [a.detach().numpy().copy() for a in r]


def _grad_fn(f):
    def g(params, *rest):
        return torch.autograd.grad(f(params, *rest, np=tnp), params)
    return g


def build(workload, data, lib="torch"):
    d = data
    if workload == "scalar_chain":
        def run():
            x = T(d["x"], True)
            return torch.autograd.grad(W.scalar_chain(x, np=tnp), x)
        return run, _list
    if workload in W.MLP_LOSSES:
        params, x, Y = [T(p, True) for p in d["params"]], T(d["x"]), T(d["Y"])
        g = _grad_fn(W.MLP_LOSSES[workload])
        return (lambda: g(params, x, Y)), _list
    if workload in W.RNN_WORKLOADS:
        xs = [T(a) for a in d["xs"]] if isinstance(d["xs"], list) else T(d["xs"])
        ws, h0 = [T(w, True) for w in d["weights"]], T(d["h0"])
        g = _grad_fn(W.rnn_loss)
        return (lambda: g(ws, xs, h0)), _list
    if workload == "hessian":
        h = torch.func.hessian(functools.partial(W.hess_fn, np=tnp))
        x, A = T(d["x"]), T(d["A"])
        return (lambda: h(x, A)), _list
    if workload == "jacobian_ew":
        j = torch.func.jacrev(functools.partial(W.ew_map, np=tnp))
        x = T(d["x"])
        return (lambda: j(x)), _list
    if workload == "jacobian_mlp":
        params = [T(p) for p in d["params"]]
        j = torch.func.jacrev(lambda x: W.mlp_predict(params, x, np=tnp))
        x = T(d["x"])
        return (lambda: j(x)), _list
    if workload == "training_loop":
        return (lambda: train(d)), _list
    raise KeyError(workload)


def train(d):
    params = [T(p, True) for p in d["params"]]
    x, Y = T(d["x"]), T(d["Y"])
    for _ in range(W.TRAIN_STEPS):
        W.mlp_loss(params, x, Y, np=tnp).backward()
        with torch.no_grad():
            for p in params:
                p -= W.TRAIN_LR * p.grad
                p.grad = None
    return params


def graph_bytes(x, steps=W.CHAIN_STEPS):
    return W.scalar_chain(T(x, True), np=tnp, steps=steps)
