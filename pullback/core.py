"""The engine: tracked values, nesting levels, dispatch of NumPy calls, the backward pass.

A ``Tracked`` value is both a value and a node of the recorded graph. Every gradient
computation runs at its own *level* (an integer, larger for inner computations); a value
tracked at level ``k`` holds in ``.value`` whatever the level below saw, which may itself
be tracked at a lower level. When a NumPy function meets tracked arguments, the highest
live level among them records one node; the rule then runs on the values one level down,
so the lower levels record the rule's own computation (that is how derivatives nest).

The state of a backward pass (cotangents, the order of visits) lives in the pass, never
on the nodes, so a pass that raises halfway leaves the graph as it was.
"""

import heapq
import itertools
import operator
import sys
import threading

import numpy as np

__all__ = [
    "Tracked", "NoRuleError", "LossError", "NestedDifferentiationError",
    "rrule", "primitive", "nondifferentiable", "elementwise", "no_grad",
]


class NoRuleError(NotImplementedError):
    """A function met a tracked value and no derivative rule is registered for it."""


class LossError(ValueError):
    """A loss is NaN or infinite (Tracker's losscheck)."""


class NestedDifferentiationError(RuntimeError):
    """A rule marked ``nobacksies`` was differentiated a second time."""


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


def strip(x, level):
    """``x`` with every box of level >= ``level``, of a finished level, or of the top-level
    Tracker level removed: what a transform running at ``level`` hands back to its caller."""
    while isinstance(x, Tracked) and (x.level >= level or x.level == 0 or x.level not in _live):
        x = x.value
    return x


def plain(x):
    """The plain value under every box."""
    while isinstance(x, Tracked):
        x = x.value
    return x


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

FREED = object()  # the rule of a node whose graph a backward pass has released


class Tracked:
    """A value recorded by a gradient computation; NumPy functions accept it as an array.

    ``value`` is the plain value (or, under nested derivatives, a value tracked one level
    down). Tracked values are immutable; operations make new ones.
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

    # -- array attributes
    shape = property(lambda self: self.value.shape)
    ndim = property(lambda self: self.value.ndim)
    dtype = property(lambda self: self.value.dtype)
    size = property(lambda self: self.value.size)
    T = property(lambda self: np.transpose(self))
    mT = property(lambda self: np.swapaxes(self, -1, -2))
    real = property(lambda self: np.real(self))
    imag = property(lambda self: np.imag(self))

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("pullback: iteration over a 0-d tracked value")
        return (self[i] for i in range(len(self.value)))

    def __bool__(self):
        return bool(plain(self))

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
            "Write the update functionally: np.where(mask, v, x) for a mask, "
            "np.concatenate/np.stack to assemble pieces, or pb.scatter-free forms such as "
            "x + np.pad(...)."
        )

    # -- methods people call on arrays
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def max(self, axis=None, out=None, keepdims=False, **kw):
        return np.max(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def min(self, axis=None, out=None, keepdims=False, **kw):
        return np.min(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return np.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def std(self, *args, **kwargs):
        return np.std(self, *args, **kwargs)

    def var(self, *args, **kwargs):
        return np.var(self, *args, **kwargs)

    def cumsum(self, *args, **kwargs):
        return np.cumsum(self, *args, **kwargs)

    def cumprod(self, *args, **kwargs):
        return np.cumprod(self, *args, **kwargs)

    def argmax(self, *args, **kwargs):
        return np.argmax(plain(self), *args, **kwargs)

    def argmin(self, *args, **kwargs):
        return np.argmin(plain(self), *args, **kwargs)

    def argsort(self, *args, **kwargs):
        return np.argsort(plain(self), *args, **kwargs)

    def nonzero(self):
        return np.nonzero(plain(self))

    def any(self, *args, **kwargs):
        return np.any(plain(self), *args, **kwargs)

    def all(self, *args, **kwargs):
        return np.all(plain(self), *args, **kwargs)

    def reshape(self, *shape, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return np.reshape(self, shape, **kwargs)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return np.transpose(self, axes or None)

    def swapaxes(self, axis1, axis2):
        return np.swapaxes(self, axis1, axis2)

    def dot(self, b):
        return np.dot(self, b)

    def astype(self, dtype, **kwargs):
        return apply(astype, (self, dtype), {})

    def ravel(self, order="C"):
        return np.ravel(self, order=order)

    def flatten(self, order="C"):
        return np.ravel(self, order=order)

    def squeeze(self, axis=None):
        return np.squeeze(self, axis=axis)

    def copy(self, order="K"):
        return np.copy(self, order=order)

    def clip(self, min=None, max=None, **kwargs):
        return np.clip(self, min, max, **kwargs)

    def conj(self):
        return np.conjugate(self)

    conjugate = conj

    def round(self, decimals=0):
        return np.round(self, decimals)

    def repeat(self, repeats, axis=None):
        return np.repeat(self, repeats, axis=axis)

    def trace(self, *args, **kwargs):
        return np.trace(self, *args, **kwargs)

    def diagonal(self, *args, **kwargs):
        return np.diagonal(self, *args, **kwargs)

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


# ---------------------------------------------------------------------------- registry

_rules = {}        # function -> rrule, or an Elementwise row
_origin = {}       # function -> the module that registered its rule
_nondiff = set()   # functions whose outputs are constants


class Elementwise:
    """A table row: an elementwise function and its local derivative for each argument.

    ``derivs[i](ans, *args)`` gives d ans / d args[i]; the pullback multiplies it into the
    cotangent. ``ONE`` and ``MINUS_ONE`` mark the linear cases. Rows marked ``singular``
    have derivatives that can be infinite: there a zero cotangent still gives zero.
    """

    __slots__ = ("func", "derivs", "singular", "call")

    def __init__(self, func, derivs, singular):
        self.func = func
        self.derivs = derivs
        self.singular = singular
        # the arithmetic ufuncs run through Python's operators: the same result, and for
        # NumPy scalars many times faster than a ufunc call
        self.call = _OPERATOR_FORMS.get(func, func)

    def __repr__(self):
        return f"Elementwise({_name(self.func)})"

    def backward(self, node, g):
        """Pairs (input, cotangent) for the inputs tracked at the node's level."""
        args = node.args
        if len(args) == 1:  # the one argument is the node's input
            a = args[0]
            return ((a, self.cotangent(0, g, node.value, (a.value,))),)
        level = node.level
        if len(args) == 2:  # spelled out: this is the hot path of x * y, x + 1.0, ...
            a, b = args
            ta = isinstance(a, Tracked) and a.level == level
            tb = isinstance(b, Tracked) and b.level == level
            vals = (a.value if ta else a, b.value if tb else b)
            if ta and tb:
                return ((a, self.cotangent(0, g, node.value, vals)),
                        (b, self.cotangent(1, g, node.value, vals)))
            if ta:
                return ((a, self.cotangent(0, g, node.value, vals)),)
            return ((b, self.cotangent(1, g, node.value, vals)),)
        vals = [a.value if isinstance(a, Tracked) and a.level == level else a for a in args]
        return [(a, self.cotangent(i, g, node.value, vals)) for i, a in enumerate(args)
                if isinstance(a, Tracked) and a.level == level]

    def cotangent(self, i, g, ans, vals):
        d = self.derivs[i]
        if d is ONE:
            return g
        if d is MINUS_ONE:
            return -g
        if d is None:
            raise NoRuleError(
                f"pullback: {_name(self.func)} is not differentiable with respect to "
                f"argument {i}"
            )
        if self.singular:  # infinite derivatives are expected here: no warnings
            with np.errstate(divide="ignore", invalid="ignore"):
                local = d(ans, *vals)
                if local.__class__ not in _REAL and _is_complex(local):
                    local = np.conjugate(local)
                ct = g * local
                if not np.all(np.isfinite(plain(local))):
                    # a zero cotangent gives zero even where the derivative is infinite
                    ct = np.where(plain(g) == 0, 0, ct)
            return ct
        local = d(ans, *vals)
        if local.__class__ not in _REAL and _is_complex(local):
            local = np.conjugate(local)
        return g * local


_REAL = frozenset({np.float64, np.float32, float, int})


ONE = object()
MINUS_ONE = object()
_OPERATOR_FORMS = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
    np.true_divide: operator.truediv, np.power: operator.pow, np.negative: operator.neg,
    np.positive: operator.pos,
}


def _is_complex(v):
    if isinstance(v, complex):  # a Python complex, such as the 1j of 1j * x
        return True
    dtype = getattr(v, "dtype", None)
    return dtype is not None and dtype.kind == "c"


def rrule(func, batched=True):
    """Register a reverse rule for ``func`` (decorator).

    The rule takes ``func``'s arguments and returns ``(out, pullback)``; ``pullback(g)``
    returns one cotangent per positional argument (``None`` where there is none; a list
    for an argument that is a list of arrays). Pullbacks compute with NumPy calls, so
    they are differentiable again. A cotangent may carry extra leading batch axes; a rule
    whose pullback cannot handle them says ``batched=False`` and is applied per slice.

    >>> @pb.rrule(np.sinc)
    ... def sinc_rule(x):
    ...     ans = np.sinc(x)
    ...     def sinc_pullback(g):
    ...         return (g * (np.cos(np.pi * x) - ans) / x,)
    ...     return ans, sinc_pullback
    """
    if not (isinstance(func, np.ufunc) or hasattr(func, "_implementation")
            or getattr(func, "_pb_primitive", False) or func in (getitem, astype)):
        raise TypeError(
            f"pullback.rrule: {_name(func)} is neither a NumPy function nor a "
            "pullback.primitive, so calls to it cannot be intercepted; decorate it with "
            "@pb.primitive first and register the rule for the decorated function"
        )

    origin = sys._getframe(1).f_globals.get("__name__", "")

    def register(rule):
        if not batched:
            rule = _per_slice(rule)
        _rules[func] = rule
        _origin[func] = origin
        _nondiff.discard(func)
        return rule

    return register


def _per_slice(rule):
    def unbatched_rule(*args, **kwargs):
        out, pullback = rule(*args, **kwargs)
        out_ndim = np.ndim(plain(out))

        def per_slice_pullback(g):
            nb = np.ndim(plain(g)) - out_ndim
            if nb == 0:
                return pullback(g)
            flat = np.reshape(g, (-1,) + np.shape(plain(g))[nb:])
            # a slice's entries may be thunks: run them here, where they are stacked
            slices = [[c() if callable(c) else c for c in pullback(flat[i])]
                      for i in range(len(flat))]
            batch = np.shape(plain(g))[:nb]
            cts = []
            for parts in zip(*slices):
                if all(p is None for p in parts):
                    cts.append(None)
                else:
                    stacked = np.stack(parts)
                    cts.append(np.reshape(stacked, batch + np.shape(plain(stacked))[1:]))
            return tuple(cts)

        per_slice_pullback.__qualname__ = getattr(pullback, "__qualname__", "pullback")
        return out, per_slice_pullback

    unbatched_rule.__qualname__ = getattr(rule, "__qualname__", "rule")
    return unbatched_rule


def elementwise(func, *derivs, singular=False):
    """Declare an elementwise function by its local derivatives (a table row).

    Each ``deriv(ans, *args)`` returns d ans / d arg; pass ``pb.core.ONE`` or
    ``pb.core.MINUS_ONE`` for the linear cases and ``None`` for an argument with no
    derivative. The engine reduces broadcast cotangents to each input's shape.

    >>> pb.elementwise(np.exp, lambda ans, x: ans)
    """
    _rules[func] = Elementwise(func, derivs, singular)
    _origin[func] = sys._getframe(1).f_globals.get("__name__", "")
    _nondiff.discard(func)


def nondifferentiable(*funcs):
    """Declare functions whose outputs are constants (comparisons, rounding, argmax ...)."""
    for func in funcs:
        _nondiff.add(func)
        _rules.pop(func, None)


def registered_rules(package="pullback"):
    """The functions with a rule registered from modules of ``package`` (every rule for
    ``package=None``)."""
    return [f for f in _rules
            if package is None or _origin.get(f, "").split(".")[0] == package]


def registered_nondifferentiable():
    return set(_nondiff)


def primitive(fn):
    """Make ``fn`` opaque to pullback: its body runs on plain values, and the rule
    registered with ``@pb.rrule(fn)`` gives its derivative.

    >>> @pb.primitive
    ... def softplus(x):
    ...     return np.logaddexp(0.0, x)
    """
    import functools

    @functools.wraps(fn)
    def primitive_wrapper(*args, **kwargs):
        if _has_tracked(args) or _has_tracked(kwargs.values()):
            return apply(primitive_wrapper, args, kwargs)
        return fn(*args, **kwargs)

    primitive_wrapper._pb_primitive = True
    primitive_wrapper._pb_body = fn
    return primitive_wrapper


def _has_tracked(items):
    top, dead = _scan(tuple(items))
    return top >= 0 or dead


def _name(func):
    if isinstance(func, np.ufunc):
        return f"np.{func.__name__}"
    mod = getattr(func, "__module__", "") or ""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    if mod.startswith("numpy"):
        parts = mod.split(".")
        sub = [p for p in parts[1:] if not p.startswith("_") and p not in ("core",)]
        return ".".join(["np", *sub, name])
    if mod.startswith("scipy"):
        parts = [p for p in mod.split(".") if not p.startswith("_")]
        return ".".join([*parts, name])
    if func is getitem:
        return "indexing (x[...])"
    return f"{mod}.{name}" if mod else name


# ---------------------------------------------------------------------------- dispatch

def apply(func, args, kwargs):
    """Call ``func`` on arguments some of which are tracked; record one node."""
    return _apply(_rules.get(func), func, args, kwargs)


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


class NotImplementedCotangent:
    """What a pullback returns for an argument it has no derivative for; it is an error
    only if that argument was tracked (ChainRules' ``@not_implemented``)."""

    __slots__ = ("reason",)

    def __init__(self, reason):
        self.reason = reason


def not_implemented(reason):
    """A cotangent entry saying the rule has no derivative for this argument.

    >>> return ans, lambda g: (g * w, pb.core.not_implemented("the probabilities q"))
    """
    return NotImplementedCotangent(reason)


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


class Pick:
    """The rule of output ``index`` of a function with several outputs."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


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


# ---------------------------------------------------------------------------- backward pass

def backward_pass(roots, seeds, batch_shape=(), retain_graph=True):
    """Send ``seeds`` back from ``roots`` (values tracked at one level) through the graph.

    Returns a dict from each leaf reached to its cotangent. Nodes are visited in reverse
    creation order (a node is created after its inputs), so each node is visited once,
    after every node that uses it; no recursion, and all state is local to this call.
    ``batch_shape`` is the shape of the leading axes every cotangent carries.
    """
    cts = {}
    heap = []
    for root, seed in zip(roots, seeds):
        if root in cts:
            cts[root] = cts[root] + seed
        else:
            cts[root] = seed
            heap.append((-root.seq, root))
    heapq.heapify(heap)
    leaves = {}
    visited = None if retain_graph else []
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        node = pop(heap)[1]
        g = cts.pop(node)
        rule = node.rule
        if rule is None:
            leaves[node] = g
            continue
        cls = rule.__class__
        if cls is Pick:
            hub = node.args
            slots = cts.get(hub)
            if slots is None:
                slots = cts[hub] = [None] * len(hub.value)
                push(heap, (-hub.seq, hub))
            i = rule.index
            slots[i] = g if slots[i] is None else slots[i] + g
            continue
        if rule is FREED:
            raise RuntimeError(
                "pullback: backward() through a graph that an earlier backward() already "
                "freed. Pass retain_graph=True to the first backward() to keep the graph "
                "for another pass, or recompute the loss."
            )
        if visited is not None:
            visited.append(node)
        if cls is Elementwise:
            args = node.args
            if len(args) == 1:
                parent = args[0]
                pairs = ((parent, rule.cotangent(0, g, node.value, (parent.value,))),)
            else:
                pairs = rule.backward(node, g)
        else:
            if type(g) is list:
                g = tuple(_zeros_for(o, batch_shape) if c is None else c
                          for o, c in zip(node.value, g))
            pairs = _match(node, rule(g))
        for parent, ct in pairs:
            if ct is None:
                continue
            c, v = ct.__class__, parent.value
            if batch_shape or c is not v.__class__ or c is not np.float64 and (
                    c is not np.ndarray or ct.shape != v.shape or ct.dtype != v.dtype):
                ct = _project(ct, parent, batch_shape, rule)
            prev = cts.get(parent)
            if prev is None:
                cts[parent] = ct
                push(heap, (-parent.seq, parent))
            else:
                cts[parent] = prev + ct
    if visited is not None:
        for node in visited:
            node.rule = FREED
            node.args = None
    return leaves


def _zeros_for(out, batch_shape):
    v = plain(out)  # may be a Python scalar (cho_factor's ``lower`` flag)
    return np.zeros(batch_shape + np.shape(v), dtype=np.result_type(v))


def _match(node, cts):
    """Pair a general rule's cotangents with its tracked positional arguments."""
    args = node.args
    level = node.level
    # extra trailing entries belong to arguments given by keyword or left at defaults
    if not isinstance(cts, (tuple, list)) or len(cts) < len(args):
        got = len(cts) if isinstance(cts, (tuple, list)) else type(cts).__name__
        raise TypeError(
            f"pullback: {_pullback_name(node.rule)} returned {got} cotangents for "
            f"{len(args)} positional arguments; return a tuple with (at least) one entry "
            "per argument (None for an argument with no gradient)"
        )
    # an entry may be a thunk (a function of no arguments): it is called only for an
    # input that needs its cotangent, so rules can skip work nobody asked for
    pairs = []
    for i, (a, ct) in enumerate(zip(args, cts)):
        if ct.__class__ is NotImplementedCotangent:
            if _scan((a,))[0] == level:  # only an error if the argument was tracked here
                raise NoRuleError(
                    f"pullback: {_pullback_name(node.rule)} has no derivative with "
                    f"respect to argument {i} ({ct.reason}); pass it as a plain value"
                )
        elif isinstance(a, Tracked):
            if a.level == level:
                pairs.append((a, ct() if callable(ct) else ct))
        elif (type(a) is list or type(a) is tuple) and ct is not None:
            _match_nested(a, ct, level, pairs)
    return pairs


def _match_nested(args, cts, level, pairs):
    if callable(cts):
        cts = cts()
    for b, c in zip(args, cts):
        if isinstance(b, Tracked):
            if b.level == level:
                pairs.append((b, c() if callable(c) else c))
        elif (type(b) is list or type(b) is tuple) and c is not None:
            _match_nested(b, c, level, pairs)


def _pullback_name(rule):
    return getattr(rule, "__qualname__", None) or repr(rule)


def _project(ct, parent, batch_shape, rule):
    """Fit a cotangent to its input: sum broadcast axes, keep the batch axes, take the
    real part for a real input, and match the input's floating dtype."""
    v = parent.value
    shape = v.shape
    dtype = v.dtype
    cv = ct
    while isinstance(cv, Tracked):
        cv = cv.value
    cshape = getattr(cv, "shape", None)
    if cshape is None:
        ct = np.asarray(ct)
        cshape = ct.shape
        cv = ct
    if batch_shape:
        target = batch_shape + shape
        if cshape != target:
            ct = _fit(ct, cshape, target, len(batch_shape), rule, parent)
    elif cshape != shape:
        ct = _fit(ct, cshape, shape, 0, rule, parent)
    cdtype = cv.dtype
    if cdtype != dtype:
        if cdtype.kind == "c" and dtype.kind != "c":
            ct = np.real(ct)
            cdtype = np.dtype(cdtype.char.lower())
        if cdtype != dtype and dtype.kind in "fc":
            ct = ct.astype(dtype)
    return ct


def _sum_kept(ct, axes):
    if ct.__class__ is np.ndarray:  # the ufunc method skips np.sum's Python layer
        return np.add.reduce(ct, axis=axes, keepdims=True)
    return np.sum(ct, axis=axes, keepdims=True)


def _fit(ct, cshape, target, nb, rule, parent):
    """Sum away the axes broadcasting added (after the ``nb`` batch axes), then broadcast
    up where the cotangent is smaller than the input."""
    n = len(target)
    lead = len(cshape) - n
    if lead > 0:
        axes = tuple(range(nb, nb + lead)) + tuple(
            i + lead for i in range(nb, n) if target[i] == 1 and cshape[i + lead] != 1)
        kept = [1 if i in axes else s for i, s in enumerate(cshape)]
        ct = np.reshape(_sum_kept(ct, axes), tuple(kept[:nb] + kept[nb + lead:]))
    else:
        axes = tuple(i + lead for i in range(n)
                     if i + lead >= 0 and target[i] == 1 and cshape[i + lead] != 1)
        if axes:
            ct = _sum_kept(ct, axes)
    if np.shape(plain(ct)) != target:
        try:
            ct = np.broadcast_to(ct, target)
        except ValueError:
            raise ValueError(
                f"pullback: {_pullback_name(rule)} returned a cotangent of shape "
                f"{cshape} for an input of shape {target[nb:]}"
                + (f" (with batch axes {target[:nb]})" if nb else "")
            ) from None
    return ct
