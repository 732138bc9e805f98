"""pullback.jit: the workloads of pullback_lib through ``pb.jit``. The first call traces and
compiles (the report's *first call*); the timed calls replay the generated program."""

import functools

import pullback as pb

from .. import workloads as W
from .pullback_lib import _list, train_functional


def build(workload, data, lib="pullback_jit"):
    d = data
    if workload == "scalar_chain":
        g = pb.jit(pb.grad(W.scalar_chain))
        run = lambda: g(d["x"])  # noqa: E731
    elif workload in W.MLP_LOSSES:
        g = pb.jit(pb.grad(W.MLP_LOSSES[workload]))
        run = lambda: g(d["params"], d["x"], d["Y"])  # noqa: E731
    elif workload in W.RNN_WORKLOADS:
        g = pb.jit(pb.grad(W.rnn_loss))
        run = lambda: g(d["weights"], d["xs"], d["h0"])  # noqa: E731
    elif workload == "hessian":
        h = pb.jit(pb.hessian(W.hess_fn))
        run = lambda: h(d["x"], d["A"])  # noqa: E731
    elif workload == "jacobian_ew":
        j = pb.jit(pb.jacobian(W.ew_map))
        run = lambda: j(d["x"])  # noqa: E731
    elif workload == "jacobian_mlp":
        j = pb.jit(pb.jacobian(functools.partial(W.mlp_predict, d["params"])))
        run = lambda: j(d["x"])  # noqa: E731
    elif workload == "training_loop":  # the functional loop with the jitted gradient
        g = pb.jit(pb.grad(W.mlp_loss))
        run = lambda: train_functional(d, g)  # noqa: E731
    else:
        raise KeyError(workload)
    return run, _list  # the first call traces and compiles: the report's "first call"
