"""The engine: tracked values, nesting levels and the dispatch of NumPy calls. The rule
registry is in registry.py, the backward pass in backward.py, the array methods in
methods.py.

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
# no_grad blocks open in any thread: while there are none, the hot path skips the
# (slower) per-thread lookup
_no_grad_blocks = 0
_no_grad_lock = threading.Lock()


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


class no_grad:
    """Record nothing inside: every result is a plain value (per thread).

    >>> with pb.no_grad():
    ...     y = np.sin(w)          # y is a plain ndarray even if w is tracked
    """

    def __enter__(self):
        global _no_grad_blocks
        with _no_grad_lock:
            _no_grad_blocks += 1
        _state.no_grad += 1
        return self

    def __exit__(self, *exc):
        global _no_grad_blocks
        _state.no_grad -= 1
        with _no_grad_lock:
            _no_grad_blocks -= 1
        return False

    def __call__(self, fn):
        def no_grad_wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)

        no_grad_wrapper.__name__ = getattr(fn, "__name__", "no_grad_wrapper")
        no_grad_wrapper.__doc__ = getattr(fn, "__doc__", None)
        return no_grad_wrapper


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


# ---------------------------------------------------------------------------- dispatch

def apply(func, args, kwargs):
    """Call ``func`` on arguments some of which are tracked; record one node."""
    rule = _rules.get(func)
    if kwargs or rule is None or rule.__class__ is Elementwise or (
            _no_grad_blocks and _state.no_grad):
        return _apply(rule, func, args, kwargs)
    # the hot path of a general rule on flat arguments (x @ W, np.sum(x))
    top = -1
    for a in args:
        if isinstance(a, Tracked):
            lvl = a.level
            if lvl not in _live:
                return _apply(rule, func, args, kwargs)
            if lvl > top:
                top = lvl
        elif type(a) is list or type(a) is tuple:
            return _apply(rule, func, args, kwargs)
    if top < 0:
        return _apply(rule, func, args, kwargs)
    out, pullback = rule(*[a.value if isinstance(a, Tracked) and a.level == top else a
                           for a in args])
    return _record(out, pullback, top, args)


def _unary(func, a):
    """The hot path for a one-argument table row (``np.sin(x)``, ``-x``)."""
    row = _rules.get(func)
    if row.__class__ is not Elementwise or a.level not in _live or (
            _no_grad_blocks and _state.no_grad):
        return _apply(row, func, (a,), {})
    return Tracked(row.call(a.value), a.level, (a,), row)


def _binary(func, a, b):
    """The hot path for a two-argument table row (``x * y``, ``np.add(x, 1.0)``)."""
    row = _rules.get(func)
    if row.__class__ is not Elementwise or _no_grad_blocks and _state.no_grad:
        return _apply(row, func, (a, b), {})
    la = a.level if isinstance(a, Tracked) else -1
    lb = b.level if isinstance(b, Tracked) else -1
    if (la >= 0 and la not in _live) or (lb >= 0 and lb not in _live):
        return _apply(row, func, (a, b), {})  # drops finished levels
    call = row.call
    if la > lb:
        return Tracked(call(a.value, b), la, (a, b), row)
    if lb > la:
        return Tracked(call(a, b.value), lb, (a, b), row)
    return Tracked(call(a.value, b.value), la, (a, b), row)


def _apply(rule, func, args, kwargs):
    if _no_grad_blocks and _state.no_grad:
        return _call_plain(func, args, kwargs)
    top, dead = _scan(args)
    if kwargs:
        if "out" in kwargs:
            kwargs = _without_out(func, kwargs)
        for a in kwargs.values():
            if isinstance(a, Tracked):
                args, kwargs = _bind_positional(func, args, kwargs)
                return apply(func, args, kwargs)
    if dead:
        args = tuple(_drop_dead(a) for a in args)
        return apply(func, args, kwargs)
    if top < 0:
        return _call_plain(func, args, kwargs)
    if rule is None:
        if func in _nondiff:
            return _call_plain(func, args, kwargs)
        if func in _IN_PLACE:
            raise TypeError(
                f"pullback: {_name(func)} writes into an array in place, which cannot record "
                "a gradient. Build the result out of place instead: np.where(mask, v, a), "
                "np.concatenate/np.stack, or a + index_add(v, index, a.shape)."
            )
        raise NoRuleError(
            f"pullback: no derivative rule for {_name(func)}, called on a tracked value. "
            f"Register one with @pb.rrule({_name(func)}), or call it on plain values "
            "(x.value) if no gradient should flow through it."
        )
    # unbox the top level; lower levels stay boxed and record the rule's own work
    vals = [_unbox(a, top) for a in args]
    if rule.__class__ is Elementwise:
        out = func(*vals, **kwargs)
        if not _inexact(out):
            return out
        return Tracked(out, top, args, rule)
    out, pullback = rule(*vals, **kwargs)
    return _record(out, pullback, top, args)


def _record(out, pullback, top, args):
    if isinstance(out, (tuple, list)):  # several outputs (namedtuples too)
        return _record_multi(out, pullback, top, args)
    if not _inexact(out):
        return out
    return Tracked(out, top, args, pullback)


def _without_out(func, kwargs):
    if kwargs["out"] is not None:
        raise TypeError(
            f"pullback: {_name(func)}(..., out=...) writes into an existing array, which "
            "cannot record a gradient (this includes a += t for a plain array a and a "
            "tracked t). Write it out of place: a = a + t, or drop out= and use the result."
        )
    return {k: v for k, v in kwargs.items() if k != "out"}


_IN_PLACE = frozenset(f for f in (
    np.put, np.place, np.putmask, np.copyto, np.put_along_axis, np.fill_diagonal)
    if f is not None)


def _scan(items):
    """The highest live level among tracked values in ``items`` (looking into nested lists
    and tuples, as np.block's arguments are), and whether any has a finished level."""
    top, dead = -1, False
    stack = [items]
    while stack:
        for a in stack.pop():
            if isinstance(a, Tracked):
                lvl = a.level
                if lvl not in _live:
                    dead = True
                elif lvl > top:
                    top = lvl
            elif type(a) is list or type(a) is tuple:
                stack.append(a)
    return top, dead


def _unbox(a, top):
    if isinstance(a, Tracked):
        return a.value if a.level == top else a
    if type(a) is list or type(a) is tuple:
        return type(a)(_unbox(b, top) for b in a)
    return a


def _inexact(out):
    dtype = getattr(out, "dtype", None)
    if dtype is None:
        return isinstance(out, (float, complex))
    return dtype.kind in "fc"


def _record_multi(out, pullback, top, args):
    hub = Tracked(tuple(out), top, args, pullback)
    children = [Tracked(o, top, hub, Pick(i)) if _inexact(o) else o for i, o in enumerate(out)]
    if hasattr(type(out), "_fields"):
        return type(out)(*children)
    return type(out)(children)


def _drop_dead(a):
    if isinstance(a, Tracked):
        while isinstance(a, Tracked) and a.level not in _live:
            a = a.value
        return a
    if type(a) is list or type(a) is tuple:
        return type(a)(_drop_dead(b) for b in a)
    return a


def _call_plain(func, args, kwargs):
    args = [_plain_arg(a) for a in args]
    kwargs = {k: _plain_arg(v) for k, v in kwargs.items()}
    if getattr(func, "_pb_primitive", False):
        return func._pb_body(*args, **kwargs)
    if func is getitem:
        return args[0][args[1]]
    return func(*args, **kwargs)


def _plain_arg(a):
    if isinstance(a, Tracked):
        return plain(a)
    if type(a) is list or type(a) is tuple:
        return type(a)(_plain_arg(b) for b in a)
    return a


def _bind_positional(func, args, kwargs):
    """Move tracked keyword arguments into positional places using ``func``'s signature."""
    import inspect

    target = getattr(func, "_pb_body", None) or getattr(func, "_implementation", func)
    try:
        sig = inspect.signature(target)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        name = next(k for k, v in kwargs.items() if isinstance(v, Tracked))
        raise TypeError(
            f"pullback: pass the tracked argument {name!r} of {_name(func)} positionally"
        ) from None
    pos, kw = [], {}
    for p in sig.parameters.values():
        if p.name not in bound.arguments:
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and _later_bound(
                    sig, bound, p):
                pos.append(p.default)
            continue
        v = bound.arguments[p.name]
        if p.kind == p.VAR_POSITIONAL:
            pos.extend(v)
        elif p.kind == p.VAR_KEYWORD:
            kw.update(v)
        elif p.kind == p.KEYWORD_ONLY:
            if isinstance(v, Tracked):
                raise TypeError(
                    f"pullback: {_name(func)} takes the tracked argument {p.name!r} only "
                    "by keyword, which its rule cannot differentiate"
                )
            kw[p.name] = v
        else:
            pos.append(v)
    stuck = [k for k, v in kw.items() if isinstance(v, Tracked)]
    if stuck:
        raise TypeError(
            f"pullback: {_name(func)} takes the tracked argument {stuck[0]!r} only by "
            "keyword, which its rule cannot differentiate; pass it positionally"
        )
    return tuple(pos), kw


def _later_bound(sig, bound, param):
    names = list(sig.parameters)
    later = names[names.index(param.name) + 1:]
    return any(n in bound.arguments and sig.parameters[n].kind in (
        param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD, param.VAR_POSITIONAL)
        for n in later)


def _ufunc_kwargs(ufunc, kwargs):
    if "out" in kwargs:
        kwargs = _without_out(ufunc, kwargs)
    if kwargs:
        raise TypeError(
            f"pullback: np.{ufunc.__name__} on a tracked value does not support the "
            f"keyword(s) {sorted(kwargs)}; apply the operation without them (cast with "
            ".astype, select with np.where)"
        )
    return kwargs


_UFUNC_METHODS = {}  # (ufunc, method) -> function implementing it with rules


def _ufunc_method(ufunc, method, inputs, kwargs):
    impl = _UFUNC_METHODS.get((ufunc, method))
    if impl is None:
        if ufunc in _nondiff:
            return getattr(ufunc, method)(*[_plain_arg(a) for a in inputs],
                                          **{k: _plain_arg(v) for k, v in kwargs.items()})
        raise NoRuleError(
            f"pullback: no derivative rule for np.{ufunc.__name__}.{method} on a tracked "
            "value; write it with the plain functions (np.sum, np.cumsum, np.outer, ...)"
        )
    if "out" in kwargs:
        kwargs = _without_out(ufunc, kwargs)
    return impl(*inputs, **kwargs)


def ufunc_method(ufunc, method):
    """Declare how ``ufunc.method`` (``reduce``, ``accumulate``, ``outer`` ...) is computed
    on tracked values, in terms of functions that have rules."""

    def register(impl):
        _UFUNC_METHODS[(ufunc, method)] = impl
        return impl

    return register


# The registry and the backward pass use the names above; they are imported last so that
# ``from pullback.core import rrule, backward_pass, ...`` keeps working.
from .backward import FREED, backward_pass  # noqa: E402,F401
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
