"""Gradient clipping before the step: ``clip_by_global_norm``, ``clip_by_value``, and
``global_norm``; each takes a pytree of gradients, a ``pb.Grads``, or params (their
``.grad``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._engine.core import plain
from ..tracker.containers import Grads, Params
from ..tracker.leaf import Param
from ..tree import tree_flatten, tree_unflatten
from .checks import _dtype_of, _number, _param_list


def _gradients_of(grads, fname):
    """``(leaves, rebuild)``: the gradients in ``grads`` (a pytree of arrays, a
    ``pb.Grads``, or params, whose ``.grad`` is read) and the function that puts clipped
    ones back in the same form (for params: into their ``.grad``)."""
    if isinstance(grads, Grads):
        pairs = grads.items()
        return [g for _, g in pairs], lambda new: Grads(
            (p, g) for (p, _), g in zip(pairs, new))
    leaves, treedef = tree_flatten(list(grads) if isinstance(grads, Params) else grads)
    if leaves and all(isinstance(x, Param) for x in leaves):  # params: their .grad
        params = _param_list(leaves, fname)

        def into_grads(new):
            for p, g in zip(params, new):
                p.grad = g
            return grads

        return [p.grad for p in params], into_grads
    if any(isinstance(x, Param) for x in leaves):
        raise TypeError(f"pullback: {fname} takes gradients (a pytree of arrays or a "
                        "pb.Grads) or params (whose .grad it clips), not a mix of both")
    return leaves, lambda new: tree_unflatten(treedef, new)


def _norm(leaves):
    """The 2-norm of the gradients ``leaves`` together; one that is None is left out."""
    return np.sqrt(sum((_squared_norm(g) for g in leaves if g is not None), np.float64(0.0)))


def _squared_norm(g):
    return np.sum(np.real(g * np.conj(g))) if np.iscomplexobj(plain(g)) else np.sum(g * g)


def global_norm(grads: Any) -> Any:
    """The 2-norm of all the gradients together, as if concatenated into one vector.

    Args:
        grads: a pytree of arrays, a ``pb.Grads``, or params (their ``.grad``); a
            gradient that is None is left out.

    >>> float(pb.optim.global_norm({"W": np.array([3.0]), "b": np.array([4.0])}))
    5.0
    """
    return _norm(_gradients_of(grads, "global_norm")[0])


def clip_by_global_norm(grads: Any, max_norm: float) -> Any:
    """The gradients scaled by ``min(1, max_norm / global_norm(grads))``: all of them by
    one factor, so the direction stays (``torch.nn.utils.clip_grad_norm_``,
    ``optax.clip_by_global_norm``). Apply it between the gradient and the step.

    Args:
        grads: a pytree of arrays (returned clipped, in the same structure), a
            ``pb.Grads`` (a new ``Grads`` is returned), or params (a ``pb.Params`` or a
            list of ``pb.param``): then each ``.grad`` is replaced by its clipped gradient
            and the params are returned, ready for ``opt.step(ps)``.
        max_norm: the largest global norm let through, a positive float.

    >>> g = pb.optim.clip_by_global_norm({"W": np.array([3.0]), "b": np.array([4.0])}, 1.0)
    >>> g["W"], g["b"]
    (array([0.6]), array([0.8]))
    """
    _number(max_norm, "clip_by_global_norm's max_norm", low=0.0)
    if not max_norm > 0:
        raise ValueError(f"pullback: clip_by_global_norm's max_norm must be positive, got "
                         f"{max_norm!r}")
    leaves, rebuild = _gradients_of(grads, "clip_by_global_norm")
    scale = max_norm / np.maximum(_norm(leaves), max_norm)  # exactly 1 at or below max_norm
    return rebuild([None if g is None else _scaled(g, scale) for g in leaves])


def _scaled(g, scale):
    """``g * scale`` in ``g``'s dtype (float32 gradients stay float32)."""
    out = g * scale
    dtype = _dtype_of(plain(g))
    return out.astype(dtype) if dtype is not None and out.dtype != dtype else out


def clip_by_value(grads: Any, low: float, high: float) -> Any:
    """Every entry of every gradient clipped to ``[low, high]`` (``np.clip``;
    ``torch.nn.utils.clip_grad_value_`` with ``low = -high``).

    Args:
        grads: as ``clip_by_global_norm``'s: a pytree, a ``pb.Grads``, or params (their
            ``.grad`` replaced).
        low: the smallest value let through.
        high: the largest, at least ``low``.

    >>> pb.optim.clip_by_value([np.array([-3.0, 0.5, 2.0])], -1.0, 1.0)
    [array([-1. ,  0.5,  1. ])]
    """
    _number(low, "clip_by_value's low", low=-math.inf)
    _number(high, "clip_by_value's high", low=-math.inf)
    if not low <= high:
        raise ValueError(f"pullback: clip_by_value needs low <= high, got low={low!r}, "
                         f"high={high!r}")
    leaves, rebuild = _gradients_of(grads, "clip_by_value")
    for g in leaves:
        if g is not None and np.iscomplexobj(plain(g)):
            raise TypeError("pullback: clip_by_value of a complex gradient has no order to "
                            "clip by; use clip_by_global_norm")
    return rebuild([None if g is None else np.clip(g, low, high) for g in leaves])
