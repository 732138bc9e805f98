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

from ._engine.backend import is_foreign
from ._engine.backward import backward_pass, fname_of, scalar_seed, strip, writeable
from ._engine.core import (
    Tracked,
    _level_ids,
    _seq,
    box_at,
    live_levels,
    plain,
    shape_of,
    state,
    tracker_level,
)
from ._engine.guard import Hold, is_held
from ._engine.interception import activate, deactivate
from ._engine.lazy import after, checked, is_lazy
from ._engine.methods import escapes, owner
from ._engine.registry import LossError
from .debug import graph_loss_error
from .rules.numpy.writes import param_moved
from .tree import kind_of

__all__ = ["param", "Param", "Params", "Grads", "gradient", "update"]


class Param(Tracked):
    """A tracked leaf whose gradients accumulate in ``.grad`` (Tracker's ``param``); made
    by ``pb.param``.

    Made by ``pb.param(x)``, which picks ``level``, the nesting level it is tracked at.
    Its array is ``.value`` (``.data``, ``.detach()`` and ``.numpy()`` give the same array,
    as PyTorch's spellings), its gradient ``.grad``, and ``.name`` the name given to
    ``pb.param`` (or None). A param pickles and deep-copies with its value and its
    gradient.

    >>> W = pb.param(np.ones(2)); np.sum(W * 3.0).backward(); W.grad
    array([3., 3.])
    """

    __slots__ = ("grad", "updated", "name", "counted")
    __module__ = "pullback"

    def __init__(self, value: Any, level: int) -> None:
        if level.__class__ is not int or level not in live_levels:
            raise TypeError(
                f"pullback: Param's level must be a live nesting level (an int), got "
                f"{level!r}; make params with pb.param(x), which picks it")
        Tracked.__init__(self, value, level)
        self.grad = np.zeros_like(plain(value))
        self.name: str | None = None
        self.updated = -1  # when pb.update last gave it a new array (a node's seq number)
        # a live param is a differentiation under way: NumPy's stand-ins are in place
        # while one lives (_interception.py)
        activate()
        object.__setattr__(self, "counted", True)

    def __del__(self) -> None:
        if getattr(self, "counted", False):
            object.__setattr__(self, "counted", False)
            deactivate()

    def __setattr__(self, name: str, v: Any) -> None:
        # a user's W.value = ... or W.grad = ... is checked here, where it is given (the
        # engine's own writes of tracked values go through object.__setattr__)
        if name != "value" and name != "grad" or v is None and name == "grad":
            object.__setattr__(self, name, v)
            return
        try:
            current = plain(self.value)
        except AttributeError:  # (being made: nothing to compare with yet)
            object.__setattr__(self, name, v)
            return
        if isinstance(v, Tracked):
            v = _untracked(v, self, name)
        if not isinstance(v, Tracked):
            v = _checked_array(name, v, current)
        if name == "grad" or v is current:
            object.__setattr__(self, name, v)
            return
        # a new value: a graph recorded before that still reads the old one refuses
        # backward() (its gradient would mix old and new values), as after pb.update, and
        # the views taken before (v = W[0], W.T) read the new one (rules/writes.py)
        if _read_by_a_graph(self):
            object.__setattr__(self, "updated", next(_seq))
        object.__setattr__(self, name, v)
        param_moved(self, current)

    def zero_grad(self) -> None:
        """Reset ``.grad`` to zeros (in place where it is a plain array).

        >>> W = pb.param(np.ones(2)); np.sum(W * 3.0).backward()
        >>> W.zero_grad(); W.grad
        array([0., 0.])
        """
        if type(self.grad) is np.ndarray and self.grad.flags.writeable:
            self.grad[...] = 0
        else:
            object.__setattr__(self, "grad", np.zeros_like(plain(self.value)))

    def __deepcopy__(self, memo: dict) -> Param:
        """A new, independent param holding a copy of the value (as PyTorch's leaves)."""
        return _param_from(np.copy(plain(self)), _grad_copy(self.grad), self.name)

    def __copy__(self) -> Param:
        return self.__deepcopy__({})

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, tuple[Any, ...]]:
        # pickled as its plain value, its gradient and its name: loaded, a new param
        return _param_from, (plain(self), _grad_copy(self.grad), self.name)

    def __repr__(self) -> str:
        named = "" if self.name is None else f", name={self.name!r}"
        return f"param({plain(self)!r}{named})"

    # -- PyTorch's spellings

    @property
    def data(self) -> Any:
        """``.value``, under PyTorch's name: the param's array, without its gradient.
        Assigning to it assigns to ``.value``."""
        return plain(self.value) if self.level < 0 else self.value

    @data.setter
    def data(self, v: Any) -> None:
        self.value = v

    def detach(self) -> Any:
        """The param's array, not tracked (PyTorch's ``W.detach()``; ``.value`` here). To
        use a param as a constant inside a loss, write ``pb.stop_gradient(W)``.

        >>> pb.param(np.ones(2)).detach()
        array([1., 1.])
        """
        return plain(self)

    def numpy(self) -> Any:
        """The param's array, not tracked (PyTorch's ``W.numpy()``; ``.value`` here).

        >>> pb.param([1.0, 2.0]).numpy()
        array([1., 2.])
        """
        return plain(self)

    @property
    def requires_grad(self) -> bool:
        """Always True: a param is tracked. For a constant, use a plain array (``W.value``)
        or ``pb.stop_gradient(W)`` in the loss."""
        return True

    @requires_grad.setter
    def requires_grad(self, flag: Any) -> None:
        if flag is not True:
            raise AttributeError(
                "pullback: a pb.param is always tracked (requires_grad cannot be turned off); "
                "use its plain array W.value where no gradient is wanted, or "
                "pb.stop_gradient(W) inside the loss")


def _grad_copy(g: Any) -> Any:
    """A param's ``.grad`` for a copy or a pickle: a plain array of its own, or None."""
    return None if g is None else np.copy(plain(g))


def _param_from(value: Any, grad: Any, name: str | None) -> Param:
    """A new param holding ``value``, with ``grad`` and ``name`` (pickle's and deepcopy's)."""
    p = param(value, name=name)
    p.grad = grad
    return p


def _checked_array(name: str, v: Any, current: Any) -> Any:
    """``v`` for a param's ``.value`` or ``.grad``: an array of the param's shape and a
    floating-point dtype (a list becomes an array); anything else is refused."""
    if not (isinstance(v, (np.ndarray, np.generic)) or is_foreign(v)):
        if isinstance(v, (list, tuple, int, float, complex)) and not isinstance(v, bool):
            v = np.asarray(v)
    dtype = getattr(v, "dtype", None)
    shape = shape_of(current)
    if dtype is not None and dtype.kind in "fc" and tuple(v.shape) == tuple(shape):
        return v
    got = f"shape {tuple(v.shape)} and dtype {dtype}" if dtype is not None else _a(v)
    error = ValueError if dtype is not None and dtype.kind in "fc" else TypeError
    if name == "value":
        raise error(
            f"pullback: a param's .value must keep its shape {shape} and a floating-point "
            f"dtype; got {got}. Assign an array of that shape (or pb.update(W, step)), or "
            "make a new pb.param for another shape")
    raise error(
        f"pullback: a param's .grad must be a floating-point array of the param's shape "
        f"{shape}, or None; got {got}. Call W.zero_grad() to reset it")


def param(x: ArrayLike | Tracked, name: str | None = None) -> Param:
    """A tracked leaf holding a copy of ``x`` as floating point: use it in plain NumPy
    code, call ``.backward()`` on the loss, and read ``.grad``.

    Args:
        x: the initial value: an array, a list or a number (integers become float64;
            float32 stays float32), or another library's array (CuPy, Dask).
        name: a name for reprs and messages (``Params``, ``Grads``); optional.

    Returns:
        A ``pb.Param``: its array is ``.value``, its gradient ``.grad`` (zeros at first).

    >>> W = pb.param(np.full((3, 2), 0.5), name="W")
    >>> loss = np.sum(np.tanh(np.ones((4, 3)) @ W)); loss.backward(); W.grad.shape
    (3, 2)
    """
    if name is not None and not isinstance(name, str):
        raise TypeError(f"pullback: pb.param's name must be a str, got {_a(name)}")
    value: Tracked | np.ndarray
    if isinstance(x, (np.ma.MaskedArray, np.matrix)):  # as make_leaf refuses them (backward.py)
        raise TypeError(
            "pullback: pb.param of a masked array would ignore its mask (the gradient would "
            "reach the masked entries); pass x.filled(0.0), and multiply by the mask in the "
            "loss (np.where(mask, 0.0, W)) so masked entries get no gradient"
            if isinstance(x, np.ma.MaskedArray) else
            "pullback: pb.param of an np.matrix, whose * is a matrix product; pass "
            "np.asarray(x) (and write @ for the matrix product)")
    level = tracker_level()
    if isinstance(x, Tracked):  # a new leaf: boxes of params and of finished computations
        x = _below(x, level)[0]  # dropped, a transform's kept (a param made from its argument)
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
    p = Param(value, level)
    p.name = name
    return p


def _tracker_boxes(y):
    """The boxes of ``y`` at the live Tracker levels it depends on, innermost first (a loss
    inside pb.grad may depend on params made there and on params made outside)."""
    boxes = []
    while isinstance(y, Tracked) and y.level >= 0:
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
    raise AttributeError(
        "pullback: only values made with pb.param hold .grad; use pb.grad or pb.gradient "
        "for the gradient of an intermediate value"
    )



def _a(x: Any) -> str:
    """How a message names what the user passed: None, a tracked value, or its type."""
    return "a tracked value" if isinstance(x, Tracked) else kind_of(x)


class Params:
    """An ordered set of params, compared by identity (Tracker's ``Params``). Its repr
    shows each param's name (or its position), shape and dtype.

    Args:
        params: an iterable of params (made with ``pb.param``); one given twice is held
            once.

    >>> W, b = pb.param(np.ones((3, 2)), name="W"), pb.param(0.0)
    >>> ps = pb.Params([W, b, W]); ps
    Params(W: (3, 2) float64, #1: () float64)
    """

    __module__ = "pullback"

    def __init__(self, params: Iterable[Param] = ()) -> None:
        self._params: list[Param] = []
        self._ids: set[int] = set()
        if isinstance(params, (Tracked, dict, np.ndarray)) or not isinstance(params, Iterable):
            # (iterating a param or an array would give its rows, a dict its keys)
            raise TypeError(
                f"pullback: Params takes a list of params (values made with pb.param), got "
                f"{_a(params)}: write pb.Params([W]), or pb.Params(d.values()) for a dict"
                + (" (of an array: W = pb.param(x); pb.Params([W]))"
                   if isinstance(params, np.ndarray) else ""))
        for p in params:
            self.add(p)

    def add(self, p: Param) -> None:
        if not isinstance(p, Param):
            raise TypeError(
                f"pullback: Params holds values made with pb.param, got {_a(p)}; make it "
                "with W = pb.param(x) and use W in the loss"
            )
        check_live(p, "pb.Params")
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
        return "Params(" + ", ".join(
            f"{_label(p, i)}: {_shape_dtype(p)}" for i, p in enumerate(self._params)) + ")"


def _label(p: Param, i: int) -> str:
    """How a repr names the param at position ``i``: its name, or ``#i``."""
    return p.name if p.name is not None else f"#{i}"


def _shape_dtype(x: Any) -> str:
    """``(3, 2) float64`` for an array (or a param, or a tracked value); ``None``."""
    if x is None:
        return "None"
    v = plain(x)
    return f"{np.shape(v)} {getattr(v, 'dtype', np.result_type(v))}"


class Grads:
    """Gradients keyed by param (by identity): ``gs[W]``, made by ``pb.gradient``. Its
    repr shows each param's name (or position) and its gradient's shape and dtype.

    Args:
        pairs: ``(param, gradient)`` pairs, one per param.

    >>> W, b = pb.param(np.ones(2)), pb.param(0.5)
    >>> gs = pb.gradient(lambda: np.sum(W * b), pb.Params([W, b]))
    >>> gs[W], gs[b]
    (array([0.5, 0.5]), array(2.))
    >>> gs
    Grads(#0: (2,) float64, #1: () float64)
    """

    __module__ = "pullback"

    def __init__(self, pairs: Iterable[tuple[Param, Any]]) -> None:
        if isinstance(pairs, (Tracked, dict, np.ndarray)) or not isinstance(pairs, Iterable):
            raise TypeError(f"pullback: Grads takes (param, gradient) pairs, got {_a(pairs)}")
        self._grads = {}
        for pair in pairs:
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2
                    and isinstance(pair[0], Param)):
                raise TypeError(
                    "pullback: Grads takes (param, gradient) pairs, one per pb.param; got an "
                    f"entry that is {_a(pair)}")
            self._grads[id(pair[0])] = (pair[0], pair[1])

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
        return "Grads(" + ", ".join(f"{_label(p, i)}: {_shape_dtype(g)}" for i, (p, g) in
                                    enumerate(self._grads.values())) + ")"

    def _no_arithmetic(self, *other: Any) -> Any:
        raise TypeError(
            "pullback: Grads has no arithmetic (gs + gs, 2 * gs); combine the gradients per "
            "param: pb.Grads((p, gs1[p] + gs2[p]) for p in gs1), or accumulate in .grad with "
            "loss.backward() over the micro-batches")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_arithmetic
    __truediv__ = __neg__ = _no_arithmetic


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
            stand = Tracked(value, p.level, (p,), _param_pullback)
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
            owner = g
            while getattr(owner, "base", None) is not None:  # (a view: its memory's owner)
                owner = owner.base
            if id(owner) in seen:  # shared with another param's: a copy of its own
                g = np.copy(g)
            seen.add(id(owner))
        pairs.append((p, g if check is None else after(g, check)))
    return Grads(pairs)


def update(x: Param, delta: ArrayLike | Tracked) -> Param:
    """Add ``delta`` into the param ``x`` in place and reset its ``.grad`` (Tracker's
    ``update!``). Returns ``x``. While a graph recorded before still needs the old value
    (the guard keeps it read-only), ``x`` gets a new array and that graph keeps the old
    one, so its backward pass is still the gradient of the values it computed with; views
    of ``x`` taken before (``W[0]``, ``W.T``) read the new values.

    Inside a transform (``pb.grad`` of a training loop), a param made there from the
    transform's argument keeps its dependence on it through the update, so the loop is
    differentiated; a param made outside refuses a step that depends on the argument.

    >>> W = pb.param(np.array([1.0, 2.0])); np.sum(W ** 2).backward()
    >>> pb.update(W, -0.25 * W.grad).value
    array([0.5, 1. ])
    """
    if not isinstance(x, Param):
        raise TypeError(f"pullback: update needs a pb.param, got {type(x).__name__}")
    check_live(x, "pb.update")
    d = _step_of(delta, x)
    value = _below(x.value, x.level)[0]  # (plain, or tracked by a transform it was made in)
    pv = plain(value)
    if not is_foreign(plain(d)) and np.asarray(plain(d)).dtype.kind not in "biufc":
        raise TypeError(f"pullback: update needs a numeric step, got {type(d).__name__}")
    if is_lazy(d) and not is_lazy(pv):  # a Dask step (a gradient of lazy data) for a
        d = np.asarray(d)  # NumPy param: computed here, where the param changes
    shape = np.shape(pv)
    dtype = getattr(pv, "dtype", None)
    if dtype is not None and dtype.kind != "c" and np.iscomplexobj(plain(d)):
        raise TypeError(
            f"pullback: update of a real param (dtype {dtype}, shape {shape}) with a complex "
            "step; its imaginary part would be dropped or turn the param complex. Pass a "
            "real step (np.real(step)), or make the param complex"
        )
    dshape = np.shape(plain(d))
    try:
        fits = dshape == shape or np.broadcast_shapes(dshape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"pullback: update of a param of shape {shape} with a step of shape {dshape}; "
            "pass a step of the param's shape (or one that broadcasts to it)"
        )
    tracked = isinstance(value, Tracked) or isinstance(d, Tracked)
    if (value is x.value and type(value) is np.ndarray and value.ndim and not tracked
            and not is_held(value)):
        value += d
    else:
        if _read_by_a_graph(x):
            # a graph recorded before holds the old value (guard.py): its backward pass
            # would mix old and new values, so it refuses (tracker backward)
            object.__setattr__(x, "updated", next(_seq))
        new = value + d  # (tracked where the step or the value is: the update is recorded)
        if type(new) is not np.ndarray and type(pv) is np.ndarray and not isinstance(
                new, Tracked):  # as the in-place add: a 0-d array stays one
            new = np.asarray(new)
        if dtype is not None and getattr(plain(new), "dtype", dtype) != dtype:
            new = new.astype(dtype)  # a float32 param stays float32
        object.__setattr__(x, "value", new)
        param_moved(x, pv)
    x.zero_grad()
    return x


def _read_by_a_graph(x: Param) -> bool:
    """Whether a graph recorded now may read the value of ``x`` (an array the guard holds;
    a value it cannot hold, tracked or another library's, counts as read)."""
    value = x.value
    return type(value) is not np.ndarray or is_held(owner(value))


def _below(v: Any, level: int) -> tuple[Any, bool]:
    """``v`` as a number for a param at ``level``: without its boxes at Tracker levels (of
    params), at finished levels, and at ``level`` and above; a box of a transform below
    ``level`` (one the param was made in) is kept. Also whether a box of a live transform
    above ``level`` (one that started after the param was made) was dropped."""
    above = False
    while isinstance(v, Tracked) and v.level >= 0:  # (a pb.jit trace's box stays)
        if live_levels.get(v.level) == "functional" and v.level != level:
            if v.level < level:
                break
            above = True
        v = v.value
    return v, above


def _step_of(delta: Any, x: Param) -> Any:
    """``delta`` as a step of ``x`` (``_below``); a step that depends on a transform that
    started after ``x`` was made is refused: ``x`` outlives it."""
    d, above = _below(delta, x.level)
    if above:
        raise TypeError(
            "pullback: pb.update (or an optimizer's step) got a step that depends on the "
            "argument of pb.grad (or of another transform running now) for a param of "
            f"shape {shape_of(plain(x))} made outside that transform: the param would keep "
            "a value of a computation that ends, and the update would not be "
            "differentiated. Make the param inside the differentiated function "
            "(W = pb.param(w0)), or write the step functionally (w_new = w + step); "
            "pb.stop_gradient(step) updates with its value alone")
    return d


def _untracked(v: Any, p: Param, name: str) -> Any:
    """A tracked ``v`` given as ``p.value`` or ``p.grad``: its plain value when it escaped
    a finished computation; kept when it depends on a transform ``p`` was made in (a
    param made inside pb.grad from its argument); else refused (another param, a value
    computed from params)."""
    while isinstance(v, Tracked) and v.level >= 0 and v.level not in live_levels:
        v = v.value
    if not isinstance(v, Tracked) or v.level < 0 or (
            live_levels.get(v.level) == "functional" and v.level < p.level
            and not isinstance(v, Param)):
        return v
    got = "a pb.param" if isinstance(v, Param) else "a tracked value computed from params"
    if name == "value":
        raise TypeError(
            f"pullback: a param's .value is a plain array; got {got}, which would tie the "
            "two together. Assign a copy of its value, W.value = np.copy(pb.stop_gradient("
            "v)), or make a new param: pb.param(v)")
    raise TypeError(
        f"pullback: a param's .grad is a plain array, never a tracked value; got {got} (it "
        "would keep the graph alive and record every step that reads it). Assign its "
        "value, W.grad = np.copy(pb.stop_gradient(g))")


def check_live(p: Param, fname: str) -> None:
    """Refuse a param whose level has ended: one made while a transform ran (a layer built
    on its first call, inside pb.grad), which is a constant once the transform returns."""
    if p.level not in live_levels:
        raise RuntimeError(
            f"pullback: {fname} got a pb.param of shape {shape_of(plain(p))} that was made "
            "while pb.grad (or another transform) ran, and that computation has returned: "
            "the param belonged to it and is a constant now, so its gradient would be zero "
            "and loss.backward() would not reach it. Make params outside transforms (build "
            "a lazily built layer before calling pb.grad through it), or make a new param "
            "from its value: W = pb.param(W)")
