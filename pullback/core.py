"""The engine: tracked values and nesting levels. The dispatch of NumPy calls is in
dispatch.py, the rule registry in registry.py, the backward pass in backward.py, the array
methods in methods.py.

A ``Tracked`` value is both a value and a node of the recorded graph. Every gradient
computation runs at its own *level* (an integer, larger for inner computations); a value
tracked at level ``k`` holds in ``.value`` whatever the level below saw, which may itself
be tracked at a lower level. When a NumPy function meets tracked arguments, the highest
live level among them records one node; the rule then runs on the values one level down,
so the lower levels record the rule's own computation (that is how derivatives nest).

The state of a backward pass (cotangents, the order of visits) lives in the pass, never
on the nodes, so a pass that raises halfway leaves the graph as it was.
"""

import itertools
import threading

import numpy as np

from .methods import ArrayMethods

__all__ = [
    "Tracked", "NoRuleError", "LossError", "NestedDifferentiationError",
    "rrule", "primitive", "nondifferentiable", "elementwise", "no_grad",
]


class NoRuleError(NotImplementedError):
    """A function met a tracked value and no derivative rule is registered for it.

    >>> pb.grad(lambda x: np.sum(np.histogram(x)[0]))(x)   # NoRuleError: ... np.histogram
    """


class LossError(ValueError):
    """A loss is NaN or infinite (Tracker's losscheck; ``losscheck=False`` turns it off).

    >>> pb.grad(lambda x: np.sum(np.log(x)))(np.array([-1.0]))   # LossError: ... nan
    """


class NestedDifferentiationError(RuntimeError):
    """A rule marked ``nobacksies`` was differentiated a second time.

    >>> pb.grad(pb.grad(softplus))(1.0)   # with softplus's rule marked pb.nobacksies
    """


# ---------------------------------------------------------------------------- levels

_level_ids = itertools.count(1)
_seq = itertools.count()
# Levels whose computation is still running, with their kind. Level 0 is the Tracker
# level of ``param`` values made outside any transform: it never ends.
_live = {0: "tracker"}


class _ThreadState(threading.local):
    no_grad = 0

    def __init__(self):
        self.frames = []


_state = _ThreadState()
class Frame:
    """One gradient computation: a fresh level, live while the ``with`` block runs."""

    __slots__ = ("level", "tracker_level", "outer_no_grad")

    def __enter__(self):
        self.level = next(_level_ids)
        self.tracker_level = None
        _live[self.level] = "functional"
        _state.frames.append(self)
        # a gradient asked for explicitly is computed even inside a no_grad block
        self.outer_no_grad = _state.no_grad
        _state.no_grad = 0
        return self

    def __exit__(self, *exc):
        _state.no_grad = self.outer_no_grad
        _state.frames.remove(self)
        _live.pop(self.level, None)
        if self.tracker_level is not None:
            _live.pop(self.tracker_level, None)
        return False


def tracker_level():
    """The level of a ``param`` made now: 0 at top level, else one owned by the innermost
    transform, so that its graph is a separate computation inside that transform."""
    frames = _state.frames
    if not frames:
        return 0
    frame = frames[-1]
    if frame.tracker_level is None:
        frame.tracker_level = next(_level_ids)
        _live[frame.tracker_level] = "tracker"
    return frame.tracker_level


def plain(x):
    """The plain value under every box."""
    while isinstance(x, Tracked):
        x = x.value
    return x


def shape_of(x):
    """The shape of a possibly tracked value (without np.shape's Python layer for arrays,
    NumPy scalars and tracked values, which all have ``.shape``)."""
    shape = getattr(x, "shape", None)
    return np.shape(x) if shape is None else shape


# ---------------------------------------------------------------------------- tracked values

class Tracked(ArrayMethods):
    """A value recorded by a gradient computation; NumPy functions accept it as an array.

    ``value`` is the plain value (or, under nested derivatives, a value tracked one level
    down). Tracked values are immutable; operations make new ones.

    >>> pb.grad(lambda x: (print(type(x).__name__), np.sum(x))[1])(np.ones(2))  # Tracked
    """

    __slots__ = ("value", "level", "seq", "args", "rule")
    __array_priority__ = 1000.0
    __hash__ = object.__hash__

    def __init__(self, value, level, args=None, rule=None):
        self.value = value
        self.level = level
        self.seq = next(_seq)
        self.args = args
        self.rule = rule

    # -- NumPy's dispatch protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__":
            if not kwargs:
                n = len(inputs)
                if n == 1:
                    return _unary(ufunc, inputs[0])
                if n == 2:
                    return _binary(ufunc, inputs[0], inputs[1])
            else:
                kwargs = _ufunc_kwargs(ufunc, kwargs)
            return apply(ufunc, inputs, kwargs)
        return _ufunc_method(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return apply(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "pullback: a tracked value cannot become a plain NumPy array here "
            f"(shape {self.shape}, dtype {self.dtype}): that would drop its gradient. "
            "np.asarray/np.array on it, or storing it into a plain array (a[i] = x), loses "
            "the derivative. Build arrays from tracked parts with np.stack or "
            "np.concatenate, or take x.value (x.item()) to leave the graph on purpose."
        )

    def _refuse_scalar(self, kind):
        raise TypeError(
            f"pullback: {kind}() of a tracked value would drop its gradient (NumPy also "
            "calls it to store a value into a plain array, a[i] = x). Use x.item() to leave "
            "the graph on purpose, or np.stack/np.concatenate to build arrays of tracked parts."
        )

    def __float__(self):
        self._refuse_scalar("float")

    def __int__(self):
        self._refuse_scalar("int")

    def __complex__(self):
        self._refuse_scalar("complex")

    def __bool__(self):
        return bool(plain(self))

    def __format__(self, spec):
        return format(plain(self), spec)

    def item(self, *args):
        """The plain Python scalar (leaves the graph, as ``ndarray.item`` does)."""
        return plain(self).item(*args)

    def tolist(self):
        """The plain nested list (leaves the graph)."""
        return np.asarray(plain(self)).tolist()

    def __repr__(self):
        return f"Tracked({plain(self)!r}, level={self.level})"

    def __getitem__(self, index):
        if isinstance(index, Tracked) or type(index) is tuple and any(
                isinstance(i, Tracked) for i in index):
            raise TypeError(
                "pullback: an index must be a plain integer, slice or array, not a tracked "
                "value; build indices from plain values (np.argmax(x) is plain already)"
            )
        return apply(getitem, (self, index), {})

    def __setitem__(self, index, value):
        raise TypeError(
            "pullback: tracked values are immutable, so x[index] = v is not recorded. "
            "Write the update functionally: np.where(mask, v, x) for a mask, or "
            "np.concatenate/np.stack to assemble pieces."
        )

    # -- methods
    def astype(self, dtype, **kwargs):
        return apply(astype, (self, dtype), {})

    # -- operators (reflected forms swap; in-place forms make new values)
    def __add__(self, other):
        return _binary(np.add, self, other)

    def __radd__(self, other):
        return _binary(np.add, other, self)

    def __sub__(self, other):
        return _binary(np.subtract, self, other)

    def __rsub__(self, other):
        return _binary(np.subtract, other, self)

    def __mul__(self, other):
        return _binary(np.multiply, self, other)

    def __rmul__(self, other):
        return _binary(np.multiply, other, self)

    def __truediv__(self, other):
        return _binary(np.true_divide, self, other)

    def __rtruediv__(self, other):
        return _binary(np.true_divide, other, self)

    def __floordiv__(self, other):
        return _binary(np.floor_divide, self, other)

    def __rfloordiv__(self, other):
        return _binary(np.floor_divide, other, self)

    def __mod__(self, other):
        return _binary(np.remainder, self, other)

    def __rmod__(self, other):
        return _binary(np.remainder, other, self)

    def __pow__(self, other):
        return _binary(np.power, self, other)

    def __rpow__(self, other):
        return _binary(np.power, other, self)

    def __matmul__(self, other):
        return apply(np.matmul, (self, other), {})

    def __rmatmul__(self, other):
        return apply(np.matmul, (other, self), {})

    __iadd__ = __add__
    __isub__ = __sub__
    __imul__ = __mul__
    __itruediv__ = __truediv__
    __ifloordiv__ = __floordiv__
    __imod__ = __mod__
    __ipow__ = __pow__
    __imatmul__ = __matmul__

    def __neg__(self):
        return _unary(np.negative, self)

    def __pos__(self):
        return _unary(np.positive, self)

    def __abs__(self):
        return _unary(np.absolute, self)

    def __lt__(self, other):
        return np.less(plain(self), plain(other))

    def __le__(self, other):
        return np.less_equal(plain(self), plain(other))

    def __gt__(self, other):
        return np.greater(plain(self), plain(other))

    def __ge__(self, other):
        return np.greater_equal(plain(self), plain(other))

    def __eq__(self, other):
        return np.equal(plain(self), plain(other))

    def __ne__(self, other):
        return np.not_equal(plain(self), plain(other))


def getitem(x, index):
    """``x[index]`` as a function, so that indexing has a rule like any other."""
    return x[index]


def astype(x, dtype):
    """``x.astype(dtype)`` as a function, so that casting has a rule."""
    return x.astype(dtype)


# Dispatch, the registry and the backward pass use the names above; they are imported last
# so that the methods above find them, and ``from pullback.core import rrule, ...`` works.
from .backward import FREED, backward_pass  # noqa: E402,F401
from .dispatch import (  # noqa: E402,F401
    _IN_PLACE,
    _binary,
    _scan,
    _ufunc_kwargs,
    _ufunc_method,
    _unary,
    apply,
    no_grad,
    ufunc_method,
)
from .registry import (  # noqa: E402,F401
    MINUS_ONE,
    ONE,
    Elementwise,
    NotImplementedCotangent,
    Pick,
    _name,
    _nondiff,
    _rules,
    elementwise,
    nondifferentiable,
    not_implemented,
    primitive,
    registered_nondifferentiable,
    registered_rules,
    rrule,
)
