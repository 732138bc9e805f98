"""JAX eager (``jax``) and compiled (``jax_jit``): the workloads as written, on jax.numpy,
in float64. Results are waited for (block_until_ready) inside the timed call. Under jit
the scalar chain's Python loop is unrolled into 6,000 operations at trace time."""

import functools

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from .. import workloads as W  # noqa: E402


def _list(r):
    r = r if isinstance(r, (tuple, list)) else [r]
    return [np.asarray(a) for a in r]


def _ready(f):
    def run(*args):
        return jax.block_until_ready(f(*args))
    return run


def build(workload, data, lib="jax"):
    wrap = jax.jit if lib == "jax_jit" else (lambda f: f)
    d = jax.tree_util.tree_map(jnp.asarray, data)
    if workload == "scalar_chain":
        g = _ready(wrap(jax.grad(functools.partial(W.scalar_chain, np=jnp))))
        return (lambda: g(d["x"])), _list
    if workload in W.MLP_LOSSES:
        g = _ready(wrap(jax.grad(functools.partial(W.MLP_LOSSES[workload], np=jnp))))
        return (lambda: g(d["params"], d["x"], d["Y"])), _list
    if workload in W.RNN_WORKLOADS:
        g = _ready(wrap(jax.grad(functools.partial(W.rnn_loss, np=jnp))))
        return (lambda: g(d["weights"], d["xs"], d["h0"])), _list
    if workload == "hessian":
        h = _ready(wrap(jax.hessian(functools.partial(W.hess_fn, np=jnp))))
        return (lambda: h(d["x"], d["A"])), _list
    if workload == "jacobian_ew":
        j = _ready(wrap(jax.jacrev(functools.partial(W.ew_map, np=jnp))))
        return (lambda: j(d["x"])), _list
    if workload == "jacobian_mlp":
        j = _ready(wrap(jax.jacrev(lambda x, params: W.mlp_predict(params, x, np=jnp))))
        return (lambda: j(d["x"], d["params"])), _list
    if workload == "training_loop":
        grad = jax.grad(functools.partial(W.mlp_loss, np=jnp))

        def step(params, x, Y):
            return [p - W.TRAIN_LR * g for p, g in zip(params, grad(params, x, Y))]

        step = wrap(step)

        def train():
            params = list(d["params"])
            for _ in range(W.TRAIN_STEPS):
                params = step(params, d["x"], d["Y"])
            return jax.block_until_ready(params)

        return train, _list
    raise KeyError(workload)
