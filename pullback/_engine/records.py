"""The records: what a node's ``rule`` is, each kind with both halves of a derivative.

A record kind records the node of a call (``record(func, args, kwargs, level)``, which
``core.apply`` calls on the call's table entry) and sends the node's cotangent back to its
inputs (``pull(node, g)``, which the backward pass calls): pairs (input, cotangent). The
table entries (``registry.rules``) are ``Elementwise`` rows, ``Bilinear`` products,
``Reduction`` rows, ``General`` rules and ``Composite`` functions; a node holds a row, or
the ``Pullback`` its general rule returned, or ``Pick`` for one output of several, or
``FREED`` once a backward pass has released it. ``record`` (the function) makes every node.
"""

import math
import operator

import numpy as np

from .backend import is_foreign, zeros_like_value
from .core import Tracked, map_boxes, plain, primitive, state, watching, writes
from .guard import hold, level_holds, read_only
from .methods import is_complex, is_inexact, memory, shape_of
from .refusals import (
    fitted_list,
    library_rule,
    no_derivative,
    pullback_name,
    refuse_objects,
    refuse_rule_write,
    refuse_subclass,
)
from .registry import (
    MINUS_ONE,
    ONE,
    NoRuleError,
    NotImplementedCotangent,
    check_rule_result,
    name_of,
    origin,
    rules,
)


class Record:
    """What every record kind answers: debug and the transforms ask these, not the class."""

    __slots__ = ()
    elementwise = False  # a table row of an elementwise function (diagonal Jacobians)
    reads_no_value = False  # no order reads its arguments' values (guard.py)
    binds = True  # tracked keywords are bound to their positions before it records
    gufunc_axes = False  # it takes a gufunc's axes= (np.matmul's, np.vecdot's)
    index = None  # which output of several a Pick node is
    view_of = None  # which argument a node's value is a view of, where not the first
    form = "rule"  # how the coverage page names the kind

    def record(self, func, args, kwargs, level):
        raise TypeError(f"pullback: a {type(self).__name__} records no call")

    def pull(self, node, g):
        raise TypeError(f"pullback: a {type(self).__name__} records no node")

    def name(self):
        """How messages name the operation of a node recorded with it."""
        return name_of(self.func)

    def saved(self):
        """What it keeps for the backward pass besides the node's value and arguments."""
        return None


# ---------------------------------------------------------------------------- table rows

class Elementwise(Record):
    """A table row: an elementwise function and its local derivative for each argument.

    ``derivs[i](ans, *args)`` gives d ans / d args[i], or is ``ONE``, ``MINUS_ONE`` or
    ``None`` (no derivative). Rows marked ``singular`` have derivatives that can be
    infinite: there a zero cotangent still gives zero. ``call`` is how the engine calls
    the function (an operator where one exists). ``reads_no_value``: every derivative is
    ``ONE`` or ``MINUS_ONE`` (add's, subtract's), so no order reads the arguments' values.
    """

    __slots__ = ("func", "derivs", "singular", "call", "reads_no_value")
    elementwise, form = True, "elementwise (a table row)"

    def __init__(self, func, derivs, singular):
        self.func, self.derivs, self.singular = func, derivs, singular
        self.call = _OPERATOR_FORMS.get(func, func)
        self.reads_no_value = all(d is ONE or d is MINUS_ONE for d in derivs)

    def __repr__(self):
        return f"Elementwise({name_of(self.func)})"

    def record(self, func, args, kwargs, level):
        return record(func(*unboxed(args, level), **kwargs), self, level, args, kwargs, func)

    def pull(self, node, g):
        """Pairs (input, cotangent) for the inputs tracked at the node's level; the one-
        and two-argument cases are written out, as they are the hot path."""
        args, ans = node.args, node.value
        if len(args) == 1:  # the one argument is the node's input
            a = args[0]
            return ((a, self.cotangent(0, g, ans, (a.value,))),)
        level = node.level
        if len(args) == 2:
            a, b = args
            ta = isinstance(a, Tracked) and a.level == level
            tb = isinstance(b, Tracked) and b.level == level
            vals = (a.value if ta else a, b.value if tb else b)
            da, db = self.derivs  # ONE (add's, subtract's first): the cotangent as it is
            if ta and tb:
                return ((a, g if da is ONE else self.cotangent(0, g, ans, vals)),
                        (b, g if db is ONE else self.cotangent(1, g, ans, vals)))
            if ta:
                return ((a, g if da is ONE else self.cotangent(0, g, ans, vals)),)
            return ((b, g if db is ONE else self.cotangent(1, g, ans, vals)),)
        vals = [a.value if isinstance(a, Tracked) and a.level == level else a for a in args]
        return [(a, self.cotangent(i, g, ans, vals)) for i, a in enumerate(args)
                if isinstance(a, Tracked) and a.level == level]

    def cotangent(self, i, g, ans, vals):
        """The cotangent of argument ``i``: ``g`` times the conjugate of the local
        derivative (ChainRules' complex convention)."""
        d = self.derivs[i]
        if d is ONE:
            return g
        if d is MINUS_ONE:
            return -g
        if d is None:
            raise NoRuleError(f"pullback: {name_of(self.func)} is not differentiable with "
                              f"respect to argument {i}")
        if self.singular:
            return _singular_cotangent(d, ans, vals, g)
        local = d(ans, *vals)
        if (local.dtype.kind == "c" if local.__class__ is np.ndarray
                else local.__class__ not in _REAL and is_complex(local)):
            local = np.conjugate(local)
        return g * local


_REAL = frozenset({np.float64, np.float32, float, int})
# the arithmetic ufuncs run through Python's operators: the same result, and for NumPy
# scalars many times faster than a ufunc call (bench/NOTES.md)
_OPERATOR_FORMS = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
    np.true_divide: operator.truediv, np.power: operator.pow, np.negative: operator.neg,
    np.positive: operator.pos,
}


def _singular_cotangent(d, ans, vals, g):
    """``g`` times the conjugate of the local derivative ``d``, which can be infinite: zero
    where ``g`` is zero; under a nested derivative a singular row's node itself, so that
    the next order keeps the rule."""
    with np.errstate(divide="ignore", invalid="ignore"):  # infinite derivatives expected
        local = d(ans, *vals)
        local = np.conjugate(local) if is_complex(local) else local
        ct = g * local
        # ct's sum is not finite when an entry is not (another library's array is masked:
        # asking syncs)
        if is_foreign(pc := plain(ct)) or not np.isfinite(np.add.reduce(pc, axis=None)):
            ct = (times_singular(g, local) if isinstance(ct, Tracked)
                  else np.where(plain(g) == 0, 0, ct))
    return ct


@primitive
def times_singular(g, local):
    """``g * local``, but zero where ``g`` is zero even where ``local`` is infinite: a
    singular row's cotangent under a nested derivative, a primitive with a singular row of
    its own (so every order keeps the rule)."""
    return np.where(g == 0, 0, g * local)


origin[times_singular] = __name__  # (its row, written here: register.py sits above)
rules[times_singular] = Elementwise(times_singular, (
    lambda ans, g, local: local, lambda ans, g, local: g), True)


class Bilinear(Record):
    """A table row of a product of two arguments (``a @ b``): when ``fits(a, b)`` holds for
    the values (real matrices), the node is the call itself, and the cotangent of argument
    ``i`` is ``vjps[i](g, a, b)``; other values take ``rule``, the general rule. Unless
    ``batched``, the pullbacks get one slice of a batched cotangent at a time."""

    __slots__ = ("func", "fits", "vjps", "rule", "batched")
    gufunc_axes, form = True, "bilinear"

    def __init__(self, func, fits, vjps, rule, batched):
        self.func, self.fits, self.vjps, self.batched = func, fits, vjps, batched
        self.rule = General(rule, batched)

    def __repr__(self):
        return f"Bilinear({name_of(self.func)})"

    def record(self, func, args, kwargs, level):
        if not kwargs and len(args) == 2:
            a, b = args
            av = a.value if isinstance(a, Tracked) and a.level == level else a
            bv = b.value if isinstance(b, Tracked) and b.level == level else b
            if self.fits(av, bv):  # the call itself: no closure
                node = Tracked(func(av, bv), level, args, self)
                if level not in level_holds or np.ndarray in (a.__class__, b.__class__):
                    hold(node, args, self)
                if watching and state.watch is not None:
                    state.watch(node, args, func)
                return node
        return self.rule.record(func, args, kwargs, level)

    def pull(self, node, g):
        (a, b), level, (vjp_a, vjp_b) = node.args, node.level, self.vjps
        ta = isinstance(a, Tracked) and a.level == level  # (a pb.param too: a subclass)
        tb = isinstance(b, Tracked) and b.level == level
        av, bv = a.value if ta else a, b.value if tb else b
        if not self.batched:  # a user's row takes a batched cotangent one slice at a time
            ca, cb = per_slice(lambda g: (vjp_a(g, av, bv) if ta else None,
                                          vjp_b(g, av, bv) if tb else None), g, node.value)
            return ((a, ca), (b, cb))
        if ta and tb:
            return ((a, vjp_a(g, av, bv)), (b, vjp_b(g, av, bv)))
        return ((a, vjp_a(g, av, bv)),) if ta else ((b, vjp_b(g, av, bv)),)


class Reduction(Record):
    """A table row of a reduction along axes (np.sum, np.mean, np.max, np.min): for the
    calls ``reduce(values, kwargs)`` takes (a real ndarray, ``axis`` and ``keepdims``, and
    nothing else), it returns ``(value, axis, keepdims)``, the node's arguments are the
    array and those two, and the array's cotangent is ``vjp(g, value, array, axis,
    keepdims)``. For any other call it returns None, and ``rule``, the general rule, takes
    the call."""

    __slots__ = ("func", "reduce", "vjp", "rule")
    form = "reduction"

    def __init__(self, func, reduce, vjp, rule):
        self.func, self.reduce, self.vjp, self.rule = func, reduce, vjp, rule

    def __repr__(self):
        return f"Reduction({name_of(self.func)})"

    def record(self, func, args, kwargs, level):
        got = self.reduce(unboxed(args, level), kwargs)
        if got is None:
            return self.rule.record(func, args, kwargs, level)
        return record(got[0], self, level, (args[0], *got[1:]), None, func)

    def pull(self, node, g):
        a, axis, keepdims = node.args
        return ((a, self.vjp(g, node.value, a.value, axis, keepdims)),)


# ---------------------------------------------------------------------------- general rules

class General(Record):
    """A general rule, ``rule(*args) -> (out, pullback)``: its node holds the ``Pullback``.
    ``library``: pullback's own rule (a user's reads the graph's arrays read-only)."""

    __slots__ = ("rule", "batched", "library")

    def __init__(self, rule, batched):
        self.rule, self.batched, self.library = rule, batched, library_rule(rule)

    @property
    def form(self):
        return "rule" if self.batched else "rule (applied per slice)"

    def __repr__(self):
        return f"General({pullback_name(self.rule)})"

    def name(self):
        """The short name of the function it holds (``solve_rule``, ``solve_pullback``)."""
        return pullback_name(self.rule).rsplit(".", 1)[-1]

    def record(self, func, args, kwargs, level):
        vals, rule = unboxed(args, level), self.rule
        if not self.library:  # a user's rule reads the graph's arrays read-only
            vals = [read_only(v, isinstance(a, Tracked)) for v, a in zip(vals, args)]
        try:
            result = rule(*vals, **kwargs)
        except ValueError as error:  # (x -= m in a pb.primitive's body: NumPy's error)
            if "read-only" not in str(error) or self.library:
                raise
            raise refuse_rule_write(rule, error) from error
        if result.__class__ is not tuple or len(result) != 2 or not callable(result[1]):
            check_rule_result(func, rule, result)
        pullback = Pullback(result[1], self.batched, self.library, func)
        return record(result[0], pullback, level, args, kwargs, func)


class Pullback(Record):
    """A node's pullback, ``rule(g) -> cotangents`` (one per positional argument, None for
    no gradient, a thunk for one computed only if needed). Unless ``batched``, it gets one
    slice of a batched cotangent at a time. ``func``: what the node is a call of."""

    __slots__ = ("rule", "batched", "library", "func")

    def __init__(self, rule, batched=True, library=True, func=None):
        self.rule, self.batched, self.library, self.func = rule, batched, library, func

    def __repr__(self):
        return f"Pullback({pullback_name(self.rule)})"

    view_of = property(lambda self: getattr(self.rule, "view_of", None))

    name = General.name  # (the function it holds, as a general rule's)

    def saved(self):
        return self.rule

    def pull(self, node, g):
        if g.__class__ is Slots:  # several outputs: those nothing depended on get zeros
            g = g.filled(node.value)
        if g.__class__ is np.ndarray and not self.library:  # a user's pullback gets its
            g = g.copy()  # own cotangent (g *= 2 would change its siblings' too)
        return match(node, self.rule(g) if self.batched else
                     per_slice(self.rule, g, node.value))


class Composite(Record):
    """A function computed, on tracked values, by ``impl``: a function of functions that
    have rules, so it records no node of its own."""

    __slots__ = ("impl",)
    binds, gufunc_axes, form = False, True, "composite"

    def __init__(self, impl):
        self.impl = impl

    def record(self, func, args, kwargs, level):
        return self.impl(*args, **kwargs)


# ---------------------------------------------------------------------------- several outputs

class Pick(Record):
    """The record of output ``index`` of a call with several outputs: its node's one
    argument is the call's node (the hub), whose cotangent gathers one slot per output."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def name(self):
        return f"[{self.index}]"

    def pull(self, node, g):
        hub = node.args[0]
        return ((hub, Slots(hub.value, self.index, g, node.value)),)


class Slots:
    """A hub's cotangent: one slot per output, None for one nothing depended on yet."""

    __slots__ = ("slots", "batch")

    def __init__(self, outs, i, g, out):
        self.slots = [None] * len(outs)
        self.slots[i] = g
        self.batch = np.shape(plain(g))[:np.ndim(plain(g)) - np.ndim(plain(out))]

    def __add__(self, other):  # the dict of cotangents owns self: gathered in place
        for i, c in enumerate(other.slots):
            if c is not None:
                self.slots[i] = c if self.slots[i] is None else self.slots[i] + c
        return self

    def filled(self, outs):
        return tuple(zeros_for(o, self.batch) if c is None else c
                     for o, c in zip(outs, self.slots))


class _Freed(Record):
    __slots__ = ()

    def name(self):
        return "a released node"

    def pull(self, node, g):
        raise RuntimeError(
            "pullback: backward() through a graph that an earlier backward() already freed. "
            "Pass retain_graph=True to the first backward() to keep it, or recompute the loss.")


FREED = _Freed()  # the record of a node whose graph a backward pass has released


# ---------------------------------------------------------------------------- recording

def unboxed(args, level):
    """The arguments a rule runs on: the values under the boxes of ``level`` (lower levels
    stay boxed and record the rule's own work), looking into lists and tuples."""
    return [(a.value if a.level == level else a) if isinstance(a, Tracked) else
            map_boxes(a, lambda b: b.value if b.level == level else b)
            if a.__class__ is list or a.__class__ is tuple else a for a in args]


def record(out, rule, level, args, kwargs=None, func=None):
    """The one place a node is recorded: ``out`` of ``func`` called on ``args`` at ``level``,
    whose record ``rule`` sends its cotangent back. Integer and boolean results carry no
    gradient and stay plain; several outputs get a hub node and one ``Pick`` node per
    output. The plain arrays among ``args`` and ``kwargs`` stay read-only while the node
    needs them (guard.py)."""
    saved = (*args, *kwargs.values()) if kwargs else args
    if out.__class__ is np.ndarray:  # the common case first
        if out.dtype.kind not in "fc":  # (dtype=object: plain numbers, refused)
            return out if out.dtype.kind != "O" else refuse_objects(func)
        out = Tracked(out, level, args, rule)
        if level not in level_holds or np.ndarray in map(type, saved):  # (a transform's
            hold(out, saved, rule)  # inputs are held by its level already)
        if (v := out.value).base is not None or args and v is getattr(args[0], "value", None):
            writes.view(out)  # a NumPy view, or the argument itself (np.atleast_1d(x))
    elif isinstance(out, (tuple, list)):  # several outputs (namedtuples too)
        hub = Tracked(tuple(out), level, args, rule)
        hold(hub, saved, rule)
        children = [Tracked(_numpy_number(o), level, (hub,), Pick(i)) if is_inexact(o)
                    else o for i, o in enumerate(out)]
        for c in children:  # views (np.split's pieces), arguments (np.atleast_1d(y, x)):
            if isinstance(c, Tracked) and (getattr(m := memory(c), "base", None) is not None
                                           or any(m is memory(a) for a in args)):
                writes.view(c)  # a write goes through to the base
        out = type(out)(*children) if hasattr(type(out), "_fields") else type(out)(children)
    elif is_inexact(out):
        if isinstance(out, np.ndarray) and isinstance(out, (np.matrix, np.ma.MaskedArray)):
            refuse_subclass(func, next((a for a in args if type(a) is type(out)), out))
        out = Tracked(_numpy_number(out), level, args, rule)
        hold(out, saved, rule)
        v = memory(out)  # a view one level down, or the argument's memory itself
        if v.__class__ is np.ndarray and (v.base is not None or args and v is memory(args[0])):
            writes.view(out)
    if watching and state.watch is not None:
        state.watch(out, args, func)
    return out


def _numpy_number(out):
    """A Python float or complex as NumPy's: a tracked value has a dtype, which a rule's
    output recorded again one level up needs (it would read as no gradient)."""
    c = out.__class__
    return np.float64(out) if c is float else np.complex128(out) if c is complex else out


# ---------------------------------------------------------------------------- pulling back

def per_slice(pullback, g, out):
    """Apply a pullback that takes no batch axes to each slice of a batched cotangent (a
    tuple of them for several outputs) and stack the results."""
    several = type(g) is tuple  # a hub's: one cotangent per output, each batched
    g0, out0 = (g[0], out[0]) if several else (g, out)
    nb = np.ndim(plain(g0)) - np.ndim(plain(out0))
    if nb <= 0:
        return pullback(g)
    n = math.prod(batch := np.shape(plain(g0))[:nb])  # (n, not -1: a slice may be empty)
    flats = [np.reshape(c, (n,) + shape_of(c)[nb:]) for c in (g if several else (g,))]
    # a slice's entries may be thunks: run them here, where they are stacked
    slices = [[c() if callable(c) else c for c in pullback(
        tuple(f[i] for f in flats) if several else flats[0][i])]
        for i in range(n)]
    stacks = [None if all(p is None for p in parts) else np.stack(parts)
              for parts in zip(*slices)]
    return tuple(None if s is None else np.reshape(s, batch + shape_of(s)[1:])
                 for s in stacks)


def zeros_for(out, batch_shape=()):
    """Zeros like ``out`` with ``batch_shape`` in front: the cotangent of an unused output."""
    v = plain(out)  # may be a Python scalar (cho_factor's ``lower`` flag)
    return zeros_like_value(v, batch_shape + np.shape(v), np.result_type(v))


def match(node, cts):
    """Pair a general rule's cotangents with its tracked positional arguments. An entry may
    be a thunk (a function of no arguments): it is called only for an input that needs its
    cotangent, so rules can skip work nobody asked for."""
    args, level = node.args, node.level
    # extra trailing entries belong to arguments given by keyword or left at defaults
    if not isinstance(cts, (tuple, list)) or len(cts) < len(args):
        got = len(cts) if isinstance(cts, (tuple, list)) else type(cts).__name__
        raise TypeError(
            f"pullback: {pullback_name(node.rule)} returned {got} cotangents for "
            f"{len(args)} positional arguments (a tracked one given by keyword counts, in its "
            "place); return a tuple with one entry per argument (None for no gradient)"
        )
    pairs, nested = [], []  # nested: (arguments, cotangents) of lists and tuples, walked after
    for i, (a, ct) in enumerate(zip(args, cts)):
        if isinstance(a, Tracked):
            if a.level == level and ct is not None:
                if ct.__class__ is NotImplementedCotangent:
                    no_derivative(node.rule, i, ct)
                pairs.append((a, ct() if callable(ct) else ct))
        elif type(a) is list or type(a) is tuple:
            if ct.__class__ is NotImplementedCotangent:
                if _tracked_at(a, level):
                    no_derivative(node.rule, i, ct)
            elif ct is not None and _tracked_at(a, level):  # (a plain list needs none)
                nested.append((a, fitted_list(a, ct() if callable(ct) else ct, node.rule, i)))
    while nested:
        items, entries = nested.pop()
        for b, c in zip(items, entries):
            if isinstance(b, Tracked):
                if b.level == level and c is not None:
                    pairs.append((b, c() if callable(c) else c))
            elif (type(b) is list or type(b) is tuple) and c is not None:
                nested.append((b, c() if callable(c) else c))
    return pairs


def _tracked_at(a, level):
    """Whether ``a`` or a value in its nested lists is tracked at the (finished) ``level``."""
    if isinstance(a, Tracked):
        return a.level == level
    return (type(a) is list or type(a) is tuple) and any(_tracked_at(b, level) for b in a)
