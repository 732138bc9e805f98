"""The rule registry: ChainRules-style rrules, elementwise table rows, primitives and the
list of non-differentiable functions. The library's own rules use exactly this API."""

import functools
import operator
import sys

import numpy as np

from .core import NoRuleError, Tracked, astype, getitem, plain
from .dispatch import _scan, apply

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
                if local.__class__ not in _REAL and is_complex(local):
                    local = np.conjugate(local)
                ct = g * local
                if not np.all(np.isfinite(plain(local))):
                    # a zero cotangent gives zero even where the derivative is infinite
                    ct = np.where(plain(g) == 0, 0, ct)
            return ct
        local = d(ans, *vals)
        if local.__class__ not in _REAL and is_complex(local):
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


def is_complex(v):
    """Whether ``v`` (an array, a NumPy or Python scalar, a tracked value) is complex."""
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
    """Declare functions whose outputs are constants (comparisons, rounding, argmax ...):
    on tracked values they return plain results.

    >>> pb.nondifferentiable(np.floor, np.argmax)
    """
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



class Pick:
    """The rule of output ``index`` of a function with several outputs."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index
