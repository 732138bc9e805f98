"""The checks every optimizer makes: its hyperparameters, the params and gradients it is
given (a float array of the param's shape), and the structure of a pytree's leaves."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np

from .._engine.core import plain
from ..tracker.leaf import Param
from ..tree import kind_of, labels_of


def _number(value, name, low=0.0, high=math.inf, high_open=False):
    """``value`` as a float, checked to lie in ``[low, high]`` (``[low, high)`` when
    ``high_open``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"pullback: {name} must be a real number, got {value!r}")
    value = float(value)
    if not (low <= value and (value < high if high_open else value <= high)):
        bracket = ")" if high_open else "]"
        raise ValueError(f"pullback: {name} must lie in [{low}, {high}{bracket}, got {value}")
    return value


def _dtype_of(v):
    """The dtype of the plain value ``v`` (an array, a NumPy or Python number), or None for
    anything else (None, a str, a generator)."""
    dtype = getattr(v, "dtype", None)
    if isinstance(dtype, np.dtype):
        return dtype
    if isinstance(v, numbers.Number):
        return np.result_type(v)
    return None


def _real_float(x, what):
    """The dtype of the param ``x``, checked to be a real floating-point one."""
    if isinstance(x, Param):
        raise TypeError(
            f"pullback: {what} is a pb.param; init and update work on plain arrays (and "
            "return new ones): for pb.param values call loss.backward(), then opt.step([W])"
        )
    v = plain(x)
    dtype = _dtype_of(v)
    if dtype is None:
        raise TypeError(
            f"pullback: an optimizer updates real floating-point arrays; {what} is {kind_of(v)}. "
            "Pass an array, or a pytree (dict, list, tuple) of arrays"
        )
    if dtype.kind != "f":
        raise TypeError(
            f"pullback: an optimizer updates real floating-point values; {what} has dtype "
            f"{dtype}. Make it float (np.asarray(x, dtype=float))"
        )
    return dtype


def _gradient(g, x, what, gwhat):
    """``g``, the gradient ``gwhat`` of the param ``x`` (named ``what``), checked against
    it and cast to its dtype."""
    if g is None:
        raise ValueError(f"pullback: no gradient for {what}: {gwhat} is None; give one for "
                         "every param (zeros for one that does not move)")
    if isinstance(g, Param):
        raise TypeError(
            f"pullback: {gwhat} is a pb.param, not a gradient; pass its .grad (or the "
            "gradient from pb.grad) as a plain array"
        )
    dtype = _real_float(x, what)
    shape = np.shape(plain(x))
    gdtype = _dtype_of(plain(g))
    if gdtype is not None and gdtype.kind == "c":
        raise TypeError(
            f"pullback: {gwhat} is complex but {what} is real (dtype {dtype}): its imaginary "
            "part would be dropped. Pass a real gradient (np.real(g))"
        )
    if gdtype is None or gdtype.kind not in "iuf":
        got = kind_of(plain(g)) if gdtype is None else f"an array of dtype {gdtype}"
        raise TypeError(
            f"pullback: {gwhat} is {got}; pass a float array of the param's shape {shape}"
        )
    gshape = np.shape(plain(g))
    if gshape != shape:
        raise ValueError(f"pullback: {gwhat} has shape {gshape}, but {what} has shape {shape}")
    if type(g) is np.ndarray and g.dtype != dtype:
        g = g.astype(dtype)
    elif isinstance(g, numbers.Number):
        g = dtype.type(g)
    return g


def _leaf_paths(treedef, path=""):
    """The path of each leaf of ``treedef``, in order, as ``leaves_by`` writes them:
    ``"['W']"``, ``"[0]"``; ``""`` for a tree that is one leaf."""
    if treedef is None:
        return [path]
    _, children, _ = treedef
    return [leaf for label, child in zip(labels_of(treedef), children)
            for leaf in _leaf_paths(child, path + label)]


def _is(description):
    """``has keys [...]`` / ``has 2 items``, but ``is a list``: a description in a sentence."""
    return f"is {description}" if description.startswith("a") else f"has {description}"


def _param_list(ps, fname):
    """The distinct params of ``ps`` (a param listed twice moves once), checked."""
    call = "step([W])" if fname == "step()" else "pb.optim.update(opt, [W], gs)"
    if isinstance(ps, Param):
        raise TypeError(f"pullback: {fname} takes a list or a pb.Params of params, got one "
                        f"param: {call}")
    if isinstance(ps, dict):
        if ps and all(isinstance(p, Param) for p in ps.values()):
            raise TypeError(f"pullback: {fname} takes a list or a pb.Params of params, got a "
                            "dict: pass list(d.values())")
        raise TypeError(
            f"pullback: {fname} takes a list or a pb.Params of pb.param values, got a dict; "
            "for a dict of arrays use params, state = opt.update(params, grads, state)"
        )
    if not isinstance(ps, Iterable) or isinstance(ps, (str, bytes)):
        raise TypeError(f"pullback: {fname} takes a list or a pb.Params of params, got "
                        f"{kind_of(ps)}: {call}")
    params = list({id(p): p for p in ps}.values())
    for p in params:
        if not isinstance(p, Param):
            raise TypeError(
                f"pullback: {fname} updates values made with pb.param, got "
                f"{type(p).__name__}; use opt.update(params, grads, state) for arrays"
            )
    return params
