"""The Tracker face: ``param``, ``.backward()``, ``.grad``, ``Params``/``Grads``, ``update``.

A thin layer on the same engine as ``grad``: ``backward()`` runs the same backward pass
and adds the cotangents of the params it reaches into their ``.grad``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .backend import is_foreign
from .backward import backward_pass, scalar_seed, strip, writeable
from .core import Tracked, _seq, box_at, live_levels, plain, shape_of, state, tracker_level
from .debug import graph_loss_error
from .guard import is_held
from .lazy import after, checked, is_lazy
from .registry import LossError

__all__ = ["param", "Param", "Params", "Grads", "gradient", "update"]


class Param(Tracked):
    """A tracked leaf whose gradients accumulate in ``.grad`` (Tracker's ``param``); made
    by ``pb.param``.

    >>> W = pb.param(np.ones(2)); np.sum(W * 3.0).backward(); W.grad
    array([3., 3.])
    """

    __slots__ = ("grad", "updated")

    def __init__(self, value: Any, level: int) -> None:
        Tracked.__init__(self, value, level)
        self.grad = np.zeros_like(plain(value))
        self.updated = -1  # when pb.update last gave it a new array (a node's seq number)

    def zero_grad(self) -> None:
        """Reset ``.grad`` to zeros (in place where it is a plain array).

        >>> W = pb.param(np.ones(2)); np.sum(W * 3.0).backward()
        >>> W.zero_grad(); W.grad
        array([0., 0.])
        """
        if type(self.grad) is np.ndarray and self.grad.flags.writeable:
            self.grad[...] = 0
        else:
            self.grad = np.zeros_like(plain(self.value))

    def __deepcopy__(self, memo: dict) -> Param:
        """A new, independent param holding a copy of the value (as PyTorch's leaves)."""
        p = param(np.copy(plain(self)))
        p.grad = np.copy(self.grad)
        return p

    def __copy__(self) -> Param:
        return self.__deepcopy__({})

    def __repr__(self) -> str:
        return f"param({plain(self)!r})"


def param(x: ArrayLike | Tracked) -> Param:
    """A tracked leaf holding a copy of ``x`` as floating point: use it in plain NumPy
    code, call ``.backward()`` on the loss, and read ``.grad``.

    >>> W = pb.param(np.full((3, 2), 0.5))
    >>> loss = np.sum(np.tanh(np.ones((4, 3)) @ W)); loss.backward(); W.grad.shape
    (3, 2)
    """
    value: Tracked | np.ndarray
    if isinstance(x, Tracked):
        value = x
    elif is_foreign(x):  # another library's array (CuPy, Dask): copied there
        other: Any = x
        # (its own copy method: np.copy would compute a Dask array)
        value = other.copy() if other.dtype.kind in "fc" else other.astype(np.float64)
    else:
        value = np.array(x)
        if value.dtype.kind not in "biufc":
            raise TypeError(
                f"pullback: pb.param needs numbers (an array, a list or a scalar), got "
                f"{type(x).__name__} (dtype {value.dtype}); pass the initial value, e.g. "
                "pb.param(np.zeros(3))"
            )
        if value.dtype.kind not in "fc":
            value = value.astype(np.float64)
    return Param(value, tracker_level())


def _tracker_box(y):
    """The box of ``y`` at the outermost Tracker level it depends on."""
    while isinstance(y, Tracked) and live_levels.get(y.level) != "tracker":
        y = y.value
    return y if isinstance(y, Tracked) else None


# .grad accumulation is a read-modify-write: one lock makes concurrent backward() calls
# into shared params add up exactly (the backward passes themselves run in parallel)
_grad_lock = threading.Lock()


def _levels_of(y):
    while isinstance(y, Tracked):
        yield y.level
        y = y.value


def _accumulate(p, ct):
    with _grad_lock:
        grad = p.grad
        if (type(grad) is np.ndarray and type(ct) is np.ndarray and grad.shape == ct.shape
                and grad.flags.writeable):
            p.grad += ct
        else:
            p.grad = p.grad + ct


def backward(self: Tracked, cotangent: ArrayLike | Tracked | None = None,
             retain_graph: bool = False, losscheck: bool = True) -> None:
    """Send the gradient of this value back to every ``param`` it depends on, adding into
    their ``.grad`` (Tracker's ``back!``). A non-scalar value needs an explicit
    ``cotangent``. The graph is freed unless ``retain_graph=True``.

    >>> W = pb.param(np.array([1.0, 2.0]))
    >>> loss = np.sum(W ** 2); loss.backward(); W.grad
    array([2., 4.])
    """
    node = _tracker_box(self)
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
    if node is None:
        finished = isinstance(self, Tracked) and any(
            lvl not in live_levels for lvl in _levels_of(self))
        raise RuntimeError(
            "pullback: backward() of a value that depends on no pb.param at a live level: "
            + ("it escaped a finished pb.grad/pb.vjp, where it is a constant now. "
               if finished else "it was made by pb.grad/pb.vjp's arguments, not params. ")
            + "Call backward() on a loss computed from pb.param values, or use pb.grad."
        )
    leaves = backward_pass([node], [seed], (), retain_graph)
    _check_not_updated(leaves, node)
    check = _lazy_check(self, "backward()", losscheck and cotangent is None)
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


Tracked.backward = backward


def _grad_of_nonparam(self: Tracked) -> Any:
    raise AttributeError(
        "pullback: only values made with pb.param hold .grad; use pb.grad or pb.gradient "
        "for the gradient of an intermediate value"
    )


Tracked.grad = property(_grad_of_nonparam)


class Params:
    """An ordered set of params, compared by identity (Tracker's ``Params``).

    >>> W, b = pb.param(np.ones(2)), pb.param(0.0)
    >>> ps = pb.Params([W, b, W]); len(ps)
    2
    """

    def __init__(self, params: Iterable[Param] = ()) -> None:
        self._params: list[Param] = []
        self._ids: set[int] = set()
        if isinstance(params, (Tracked, dict)):  # (iterating one would give its rows, or keys)
            raise TypeError(
                f"pullback: Params takes a list of params, got a {type(params).__name__}: "
                "write pb.Params([W]), or pb.Params(d.values()) for a dict")
        for p in params:
            self.add(p)

    def add(self, p: Param) -> None:
        if not isinstance(p, Param):
            raise TypeError(
                f"pullback: Params holds values made with pb.param, got {type(p).__name__}"
            )
        if id(p) not in self._ids:
            self._ids.add(id(p))
            self._params.append(p)

    def __iter__(self) -> Iterator[Param]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __contains__(self, p: object) -> bool:
        return id(p) in self._ids

    def __repr__(self) -> str:
        return f"Params({self._params!r})"


class Grads:
    """Gradients keyed by param (by identity): ``gs[W]``.

    >>> W, b = pb.param(np.ones(2)), pb.param(0.5)
    >>> gs = pb.gradient(lambda: np.sum(W * b), pb.Params([W, b]))
    >>> gs[W], gs[b]
    (array([0.5, 0.5]), array(2.))
    """

    def __init__(self, pairs: Iterable[tuple[Param, Any]]) -> None:
        self._grads = {id(p): (p, g) for p, g in pairs}

    def __getitem__(self, p: Param) -> Any:
        try:
            return self._grads[id(p)][1]
        except KeyError:
            raise KeyError(
                "pullback: this value is not one of the Params the gradient was taken for"
            ) from None

    def __contains__(self, p: object) -> bool:
        return id(p) in self._grads

    def __iter__(self) -> Iterator[Param]:
        return (p for p, _ in self._grads.values())

    def __len__(self) -> int:
        return len(self._grads)

    def items(self) -> list[tuple[Param, Any]]:
        return list(self._grads.values())

    def values(self) -> list[Any]:
        return [g for _, g in self._grads.values()]

    def __repr__(self) -> str:
        return f"Grads({len(self)} params)"


def gradient(fn: Callable[[], Any], params: Params | Iterable[Param],
             losscheck: bool = True) -> Grads:
    """Out-of-place gradients of the scalar ``fn()`` with respect to ``params``, as a
    ``Grads``; the params' ``.grad`` is left alone (Tracker's ``gradient``).

    >>> W = pb.param(np.array([1.0, -1.0]))
    >>> gs = pb.gradient(lambda: np.sum(W ** 2), pb.Params([W])); gs[W]
    array([ 2., -2.])
    """
    params = params if isinstance(params, Params) else Params(params)
    state.in_gradient += 1  # a gradient taken inside fn keeps its dependence on the params
    try:  # (a gradient penalty: pb.grad of a closure over them)
        y = fn()
    finally:
        state.in_gradient -= 1
    try:
        seed = scalar_seed(y, "gradient()", losscheck)
    except LossError as error:
        raise graph_loss_error(error, y) from None
    leaves: dict[Any, Any] = {}
    levels = sorted({p.level for p in params}, reverse=True)
    for level in levels:
        node = box_at(y, level)
        if node is not None:
            found = backward_pass([node], [seed], (), True)
            _check_not_updated(found, node)
            leaves.update(found)
    pairs, check = [], _lazy_check(y, "gradient()", losscheck)
    for p in params:
        ct = leaves.get(p)
        g = np.zeros_like(plain(p.value)) if ct is None else writeable(strip(ct))
        pairs.append((p, g if check is None else after(g, check)))
    return Grads(pairs)


def update(x: Param, delta: ArrayLike | Tracked) -> Param:
    """Add ``delta`` into the param ``x`` in place and reset its ``.grad`` (Tracker's
    ``update!``). Returns ``x``. While a graph recorded before still needs the old value
    (the guard keeps it read-only), ``x`` gets a new array and that graph keeps the old
    one, so its backward pass is still the gradient of the values it computed with.

    >>> W = pb.param(np.array([1.0, 2.0])); np.sum(W ** 2).backward()
    >>> pb.update(W, -0.25 * W.grad).value
    array([0.5, 1. ])
    """
    if not isinstance(x, Param):
        raise TypeError(f"pullback: update needs a pb.param, got {type(x).__name__}")
    d = plain(delta)
    value = plain(x.value)
    if not is_foreign(d) and np.asarray(d).dtype.kind not in "biufc":
        raise TypeError(f"pullback: update needs a numeric step, got {type(d).__name__}")
    if is_lazy(d) and not is_lazy(value):  # a Dask step (a gradient of lazy data) for a
        d = np.asarray(d)  # NumPy param: computed here, where the param changes
    shape = np.shape(value)
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype.kind != "c" and np.iscomplexobj(d):
        raise TypeError(
            f"pullback: update of a real param (dtype {dtype}, shape {shape}) with a complex "
            "step; its imaginary part would be dropped or turn the param complex. Pass a "
            "real step (np.real(step)), or make the param complex"
        )
    try:
        fits = np.shape(d) == shape or np.broadcast_shapes(np.shape(d), shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"pullback: update of a param of shape {np.shape(plain(x.value))} with a step "
            f"of shape {np.shape(d)}; pass a step of the param's shape (or one that "
            "broadcasts to it)"
        )
    if type(x.value) is np.ndarray and x.value.ndim and not is_held(x.value):
        x.value += d
    else:
        if type(x.value) is np.ndarray and is_held(x.value):
            # a graph recorded before holds the old value (guard.py): its backward pass
            # would mix old and new values, so it refuses (tracker backward)
            x.updated = next(_seq)
        new = value + d
        if type(value) is np.ndarray:  # as the in-place add: a 0-d array stays one, and
            new = np.asarray(new, dtype=value.dtype)  # a float32 param stays float32
        elif dtype is not None and getattr(new, "dtype", dtype) != dtype:
            new = new.astype(dtype)
        x.value = new
    x.zero_grad()
    return x
