"""A param: the tracked leaf ``pb.param`` makes, what may be assigned to its ``.value`` and
``.grad``, and ``pb.update``, which steps it in place."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._engine.backend import is_foreign
from .._engine.core import Tracked, _seq, live_box, live_levels, plain, shape_of, tracker_level
from .._engine.guard import is_held
from .._engine.interception import activate, deactivate
from .._engine.lazy import is_lazy
from .._engine.methods import owner
from .._engine.writes import param_moved
from ..tree import kind_of


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
        # while one lives (_engine/interception.py)
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
        # the views taken before (v = W[0], W.T) read the new one (_engine/writes.py)
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
        return self.value

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
    if isinstance(x, (np.ma.MaskedArray, np.matrix)):  # as make_leaf refuses them (arguments.py)
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


def _a(x: Any) -> str:
    """How a message names what the user passed: None, a tracked value, or its type."""
    return "a tracked value" if isinstance(x, Tracked) else kind_of(x)


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
            # would mix old and new values, so it refuses (backprop.py)
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
    while isinstance(v, Tracked) and not v.traced:  # (a pb.jit trace's box stays)
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
    v = live_box(v)
    if not isinstance(v, Tracked) or v.traced or (
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
