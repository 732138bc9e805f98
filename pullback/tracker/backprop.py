"""The backward passes of the Tracker face: ``loss.backward()``, which adds into the
``.grad`` of the params it reaches, and ``pb.gradient``, which returns them as ``Grads``.

A thin layer on the same engine as ``grad``: both run its backward pass.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._engine.arguments import fname_of, scalar_seed
from .._engine.backend import is_foreign
from .._engine.backward import backward_pass
from .._engine.core import Tracked, _level_ids, box_at, live_levels, plain, shape_of, state
from .._engine.guard import Hold
from .._engine.lazy import after, checked, is_lazy
from .._engine.methods import escapes, owner
from .._engine.records import Pullback
from .._engine.registry import LossError
from .._engine.vjp import strip, writeable
from ..debug.anomaly import graph_loss_error
from .containers import Grads, Params
from .leaf import Param, _a, _below


def _tracker_boxes(y):
    """The boxes of ``y`` at the live Tracker levels it depends on, innermost first (a loss
    inside pb.grad may depend on params made there and on params made outside)."""
    boxes = []
    while isinstance(y, Tracked) and not y.traced:
        if live_levels.get(y.level) == "tracker":
            boxes.append(y)
        y = y.value
    return boxes


# .grad accumulation is a read-modify-write: one lock makes concurrent backward() calls
# into shared params add up exactly (the backward passes themselves run in parallel)
_grad_lock = threading.Lock()


def _levels_of(y):
    while isinstance(y, Tracked):
        yield y.level
        y = y.value


def _accumulate(p, ct):
    ct = _below(ct, p.level)[0]  # (a gradient is a number: never tracked by params)
    with _grad_lock:
        grad, plain_ct = p.grad, type(ct) is np.ndarray or isinstance(ct, np.generic)
        if (type(grad) is np.ndarray and plain_ct and grad.shape == np.shape(ct)
                and grad.flags.writeable):  # (a 0-d param's: a 0-d array, as pb.grad's)
            p.grad += ct
        elif grad is None:  # W.grad = None: zero (PyTorch's set_to_none), and an array of
            object.__setattr__(p, "grad", np.array(ct) if plain_ct else ct)  # its own
        else:  # (tracked by a transform the param was made in: the engine's, so let in)
            object.__setattr__(p, "grad", p.grad + ct)


def backward(self: Tracked, cotangent: ArrayLike | Tracked | None = None,
             retain_graph: bool = False, losscheck: bool = True) -> None:
    """Send the gradient of this value back to every ``param`` it depends on, adding into
    their ``.grad`` (Tracker's ``back!``). A non-scalar value needs an explicit
    ``cotangent``. The graph is freed unless ``retain_graph=True``.

    >>> W = pb.param(np.array([1.0, 2.0]))
    >>> loss = np.sum(W ** 2); loss.backward(); W.grad
    array([2., 4.])
    """
    nodes = _tracker_boxes(self)
    if cotangent is None:
        v = plain(self)
        if np.prod(shape_of(v)) != 1:  # (np.size would compute a Dask array)
            raise TypeError(
                f"pullback: backward() of a value of shape {np.shape(v)} needs a cotangent "
                "of that shape, e.g. y.backward(np.ones_like(y.value)); or reduce it to a "
                "scalar loss first"
            )
        try:
            seed = scalar_seed(self, "backward()", losscheck)
        except LossError as error:  # the first operation that made a NaN or infinity
            raise graph_loss_error(error, self) from None
    else:
        seed = cotangent if isinstance(cotangent, Tracked) or is_foreign(cotangent) else (
            np.asarray(cotangent))
        if getattr(plain(seed), "dtype", np.dtype(float)).kind not in "biufc":
            raise TypeError(
                f"pullback: backward() got {_a(cotangent)} as its cotangent (dtype "
                f"{plain(seed).dtype}); pass a float array of the value's shape "
                f"{np.shape(plain(self))}, e.g. y.backward(np.ones_like(y.value))"
            )
        if np.shape(plain(seed)) != np.shape(plain(self)):
            raise ValueError(
                f"pullback: backward() got a cotangent of shape {np.shape(plain(seed))} "
                f"for a value of shape {np.shape(plain(self))}"
            )
        if np.iscomplexobj(plain(seed)) and not np.iscomplexobj(plain(self)):
            raise TypeError(
                "pullback: backward() got a complex cotangent for a real value: its "
                "imaginary part would be dropped. Pass a real cotangent (np.real(ct))."
            )
    if not nodes:
        finished = isinstance(self, Tracked) and any(
            lvl not in live_levels for lvl in _levels_of(self))
        raise RuntimeError(
            "pullback: backward() of a value that depends on no pb.param at a live level: "
            + ("it escaped a finished pb.grad/pb.vjp, where it is a constant now. "
               if finished else "it was made by pb.grad/pb.vjp's arguments, not params. ")
            + "Call backward() on a loss computed from pb.param values, or use pb.grad."
        )
    found = []  # every level's pass before any .grad changes (one may refuse)
    for node in nodes:  # (a cotangent tracked by params is a number here, as in PyTorch)
        leaves = backward_pass([node], [_below(seed, node.level)[0]], (), retain_graph)
        _check_not_updated(leaves, node)
        found.append(leaves)
    check = _lazy_check(self, "backward()", losscheck and cotangent is None)
    for leaves in found:
        for leaf, ct in leaves.items():
            if isinstance(leaf, Param):
                _accumulate(leaf, ct if check is None else after(ct, check))


def _lazy_check(loss: Any, fname: str, losscheck: bool) -> Any:
    """The checked loss, for a lazy (Dask) loss under ``losscheck``: its gradients wait for
    the check when computed, as value_and_grad's do (lazy.py); else None."""
    v = plain(loss)
    return checked(v, fname) if losscheck and is_lazy(v) else None


def _check_not_updated(leaves, root):
    for leaf in leaves:
        if isinstance(leaf, Param) and leaf.updated > root.seq:
            raise RuntimeError(
                "pullback: backward() through a graph recorded before pb.update (or a "
                "write inside pb.no_grad()) changed the param it used (shape "
                f"{np.shape(plain(leaf.value))}); its gradient would mix old and new values. "
                "Call backward() before the update, or compute the loss again."
            )


def grad_of_nonparam(self: Tracked) -> Any:
    """``.grad`` of a tracked value that is not a param: refused."""
    raise AttributeError(
        "pullback: only values made with pb.param hold .grad; use pb.grad or pb.gradient "
        "for the gradient of an intermediate value"
    )


def gradient(fn: Callable[[], Any], params: Params | Iterable[Param],
             losscheck: bool = True) -> Grads:
    """Out-of-place gradients of the scalar ``fn()`` with respect to ``params``, as a
    ``Grads``; the params' ``.grad`` is left alone (Tracker's ``gradient``). It computes
    even inside ``no_grad``, and nests as ``grad`` does: called inside another transform
    (``grad``, ``jacobian``, an outer ``gradient``), its result depends on that
    transform's inputs and on the params.

    Args:
        fn: a function of no arguments returning the scalar loss, computed from params.
        params: the params to differentiate with respect to: a ``pb.Params`` or an
            iterable of ``pb.param`` values.
        losscheck: a NaN or infinite loss raises ``pb.LossError`` (naming the operation
            that made it); ``False`` differentiates it anyway.

    Returns:
        A ``pb.Grads``: ``gs[W]`` is the gradient for ``W``, a plain array of its shape.

    >>> W = pb.param(np.array([1.0, -1.0]))
    >>> gs = pb.gradient(lambda: np.sum(W ** 2), pb.Params([W])); gs[W]
    array([ 2., -2.])
    """
    if not callable(fn):
        raise TypeError(
            "pullback: pb.gradient takes a function of no arguments first, which computes "
            f"the loss (got {_a(fn)}): wrap the loss, pb.gradient(lambda: np.sum(W ** 2), "
            "ps)")
    if params is None or isinstance(params, (Tracked, dict, np.ndarray)) or not isinstance(
            params, Iterable):
        raise TypeError(
            "pullback: pb.gradient's params must be a pb.Params or a list of pb.param "
            f"values, got {_a(params)}: write pb.gradient(fn, pb.Params([W]))")
    params = params if isinstance(params, Params) else Params(params)
    fname = fname_of(fn)
    if state.in_gradient or state.frames:  # inside another transform: a level of its own
        return _nested_gradient(fn, fname, params, losscheck)
    levels = sorted({p.level for p in params}, reverse=True)
    for level in levels:
        escapes.pop(level, None)
    y = _loss_of(fn, fname)
    escaped = [how for level in levels if (how := escapes.pop(level, None)) is not None]
    seed = _seed_of(y, fname, losscheck)
    leaves: dict[Any, Any] = {}
    nodes = [node for level in levels if (node := box_at(y, level)) is not None]
    if not nodes and escaped:
        raise _escaped_error(fname, escaped[0])
    for node in nodes:
        found = backward_pass([node], [seed], (), True)
        _check_not_updated(found, node)
        leaves.update(found)
    return _grads_of(params, leaves, y, fname, losscheck)


def _escaped_error(fname, how):
    return ValueError(
        f"pullback: the loss of {fname} does not depend on the params through tracked "
        f"operations, so pb.gradient would give zeros; {how} took a plain number out of the "
        "graph on the way. Keep that computation in NumPy operations on the tracked value "
        "(W[i] rather than W[i].item()); if the gradient is meant to be zero, use "
        "pb.stop_gradient(W) instead.")


def _loss_of(fn, fname):
    """``fn()``, recorded even inside ``no_grad`` (a gradient asked for explicitly is
    computed, as the transforms do: core.Frame)."""
    outer_no_grad, state.no_grad = state.no_grad, 0
    state.in_gradient += 1  # a gradient taken inside fn keeps its dependence on the params
    try:  # (a gradient penalty: pb.grad of a closure over them)
        y = fn()
    except TypeError as error:
        if error.__traceback__ is not None and error.__traceback__.tb_next is None:
            # raised by the call itself, not inside fn: fn takes arguments
            raise TypeError(
                f"pullback: pb.gradient calls its function with no arguments, and {fname} "
                f"refused that ({error}); close over the params instead: "
                "pb.gradient(lambda: loss(W, b), ps)") from None
        raise
    finally:
        state.in_gradient -= 1
        state.no_grad = outer_no_grad
    if y is None or isinstance(y, (str, bytes, tuple, list, dict)):
        raise TypeError(
            f"pullback: the function given to pb.gradient ({fname}) returned "
            + ("None (is a return statement missing?)" if y is None else _a(y))
            + "; it must return the scalar loss itself, e.g. lambda: np.sum(W ** 2)")
    return y


def _seed_of(y, fname, losscheck):
    try:
        return scalar_seed(y, fname, losscheck)
    except LossError as error:
        raise graph_loss_error(error, y) from None


def _param_pullback(g):
    """The pullback of a param's stand-in at its own level (_nested_gradient): the
    identity."""
    return (g,)


_PARAM_PULLBACK = Pullback(_param_pullback)


def _nested_gradient(fn, fname, params, losscheck):
    """pb.gradient inside another transform (pb.grad, pb.jacobian, an outer pb.gradient):
    while ``fn`` runs and its backward pass is taken, each param is tracked at a fresh
    level above every live one (as pb.grad boxes its argument), its ``.value`` a stand-in
    at the param's own level that leads back to it. So the rules' cotangents are computed
    on tracked values, and the gradient keeps its dependence on the outer transform's
    inputs and on the params (it used to see them as constants: a zero outer derivative).
    The params are themselves again when it returns. (They are changed in place for that
    time: another thread computing with the same params meanwhile would see them so.)"""
    level = next(_level_ids)
    saved = []  # (param, its level, its value, its stand-in)
    live_levels[level] = "functional"
    try:
        for p in params:
            value = p.value
            stand = Tracked(value, p.level, (p,), _PARAM_PULLBACK)
            if type(value) is np.ndarray:  # read-only while a graph through it lives
                stand.hold = Hold([value], "a pb.param's value, read inside pb.gradient")
            saved.append((p, p.level, value, stand))
            object.__setattr__(p, "value", stand)
            p.level = level
        try:
            y = _loss_of(fn, fname)
        finally:
            live_levels.pop(level, None)
            escaped = escapes.pop(level, None)
        seed = _seed_of(y, fname, losscheck)
        node = box_at(y, level)
        if node is None and escaped is not None:
            raise _escaped_error(fname, escaped)
        leaves = {} if node is None else backward_pass([node], [seed], (), True)
        if node is not None:
            _check_not_updated(leaves, node)
    finally:
        for p, own, value, stand in saved:
            p.level = own
            if p.value is stand:  # (a step inside no_grad in fn gave it a new array: kept)
                object.__setattr__(p, "value", value)
    return _grads_of(params, leaves, y, fname, losscheck)


def _grads_of(params, leaves, y, fname, losscheck):
    """The Grads of ``params`` from the cotangents of the leaves a backward pass reached:
    each param's an array of its own (two params may share one cotangent: W + b), zeros
    where nothing reached it."""
    pairs, check, seen = [], _lazy_check(y, fname, losscheck), set()
    for p in params:
        ct = leaves.get(p)
        if ct is None:
            g = np.zeros_like(plain(p.value))
        else:
            g = writeable(strip(ct))
            memory = owner(g)  # (a view: its memory's owner)
            if id(memory) in seen:  # shared with another param's: a copy of its own
                g = np.copy(g)
            seen.add(id(memory))
        pairs.append((p, g if check is None else after(g, check)))
    return Grads(pairs)
