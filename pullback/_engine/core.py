"""Tracked values, nesting levels and the dispatch of NumPy calls. A call that meets
tracked values goes to its record in the rule table (registry.py), which records the node
(records.py); core knows neither the record kinds nor the backward pass.

A ``Tracked`` value is both a value and a node of the recorded graph. Every gradient
computation runs at its own *level* (an integer, larger for inner computations); a value
tracked at level ``k`` holds in ``.value`` whatever the level below saw, which may itself
be tracked at a lower level. When a NumPy function meets tracked arguments, the highest
live level among them records one node (``apply``, then the call's record); the rule runs
on the values one level down, so the lower levels record the rule's own computation: that
is how derivatives nest.
"""

import functools
import itertools
import threading
from typing import Any

import numpy as np

from ..tree import kind_of
from .binding import bind_positional, positional_out
from .guard import hold, level_holds, read_only
from .interception import activate, deactivate
from .methods import (
    NO_LEVEL,
    ArrayMethods,
    Escaped,
    deferring,
    escapes,
    in_order,
    reflected,
    shape_of,
)
from .methods import is_complex as is_complex  # (extend.py and the rules take it from here)
from .refusals import (
    no_rule,
    refuse_cast,
    refuse_conversion,
    refuse_in_place,
    refuse_no_grad_write,
    refuse_scalar,
)
from .registry import (
    NoRuleError,
    astype,
    body_of,
    getitem,
    is_primitive,
    name_of,
    nondiff,
    primitive_bodies,
    reads_lists_as_arrays,
    rules,
    ufunc_methods,
)

# ---------------------------------------------------------------------------- levels

_level_ids = itertools.count(1)
_seq = itertools.count()
# Levels whose computation is still running, with their kind. Level 0 is the Tracker
# level of ``param`` values made outside any transform: it never ends. A pb.jit trace's
# boxes (_jit/trace.py: ``traced``) are at no live level, and never stripped (``plain``
# keeps them); their level numbers, below NO_LEVEL, are the trace's.
live_levels = {0: "tracker"}
watching: set[int] = set()  # the threads with a watch set (debug/watch.py): records read this


class _ThreadState(threading.local):
    no_grad = slow = 0  # slow: nonzero when the hot paths must take apply (no_grad, a watch)
    in_gradient = 0  # inside pb.gradient's loss: transforms keep the Tracker level (strip)
    live = live_levels  # (for methods.Escaped, which sits below and cannot import it)

    def __init__(self):
        self.frames, self.watch = [], None  # watch: what record shows debug/watch.py of each node


state = _ThreadState()


class Frame:
    """One gradient computation: a fresh level, live while the ``with`` block runs."""

    __slots__ = ("level", "tracker_level", "outer_no_grad")

    def __enter__(self):
        activate()  # NumPy's stand-ins in place while it runs (interception.py)
        self.level, self.tracker_level = next(_level_ids), None
        live_levels[self.level] = "functional"
        state.frames.append(self)
        self.outer_no_grad, state.no_grad = state.no_grad, 0  # (computed inside no_grad too)
        return self

    def __exit__(self, *exc):
        state.no_grad = self.outer_no_grad
        state.frames.remove(self)
        live_levels.pop(self.level, None)
        if self.tracker_level is not None:
            live_levels.pop(self.tracker_level, None)
            escapes.pop(self.tracker_level, None)
        deactivate()
        return False


def tracker_level():
    """The level of a ``param`` made now: 0 at top level, else one owned by the innermost
    transform, so that its graph is a separate computation inside that transform."""
    frames = state.frames
    if not frames:
        return 0
    frame = frames[-1]
    if frame.tracker_level is None:
        frame.tracker_level = next(_level_ids)
        live_levels[frame.tracker_level] = "tracker"
    return frame.tracker_level


# ---------------------------------------------------------------------------- looking through boxes

def plain(x):
    """The plain value under every box (but a pb.jit trace's)."""
    while isinstance(x, Tracked) and not x.traced:
        x = x.value
    return x


def box_at(x, level):
    """The box of ``x`` at ``level``, looking through boxes of higher levels; None when
    ``x`` does not depend on that level."""
    while isinstance(x, Tracked) and x.level > level:
        x = x.value
    return x if isinstance(x, Tracked) and x.level == level else None


def map_boxes(x, open_box):
    """``x`` with ``open_box`` applied to every tracked value in it, looking into lists and
    tuples (np.block's and np.stack's arguments)."""
    if isinstance(x, Tracked):
        return open_box(x)
    if type(x) is list or type(x) is tuple:
        return type(x)(map_boxes(b, open_box) for b in x)
    return x


def live_box(x):
    while isinstance(x, Tracked) and x.level not in live_levels and not x.traced:
        x = x.value
    return x


def drop_finished(x):
    """``x`` without the boxes of finished computations, looking into lists and tuples."""
    return map_boxes(x, live_box)


def top_level(items):
    """The highest live level among tracked values in ``items`` (looking into nested lists
    and tuples, as np.block's arguments are), and whether any has a finished level."""
    top, finished = NO_LEVEL, False
    stack = [items]
    while stack:
        for a in stack.pop():
            if isinstance(a, Tracked):
                lvl = a.level
                if lvl not in live_levels:
                    finished = True
                elif lvl > top:
                    top = lvl
            elif type(a) is list or type(a) is tuple:
                stack.append(a)
    return top, finished


class writes:  # x[i] = v, x += v, out=x and where=, from rules/numpy/writes.py (_wiring.py)
    write: Any = None
    into_out: Any = None
    where: Any = None  # a ufunc's where=
    view: Any = None  # told of each node whose value is a NumPy view, for a later write
    seen: bool = False  # one was recorded (note_write): the backward pass orders versions


def note_write():
    """Note that a write was recorded: from now on the backward pass orders a value's
    versions (backward.py)."""
    writes.seen = True


# ---------------------------------------------------------------------------- dispatch

def apply(func, args, kwargs):
    """Call ``func`` on arguments some of which are tracked (a NumPy function's override, a
    ``primitive``'s wrapper): its record (its table entry,
    records.py) records the node, at the highest live level among them."""
    if state.no_grad:
        return _call_plain(func, args, kwargs)
    if len(args) > 2:  # np.clip(a, lo, hi, out): out by keyword
        args, kwargs = positional_out(func, args, kwargs)
    rule = rules.get(func, NO_RULE)
    if kwargs:
        if "out" in kwargs:  # out=None dropped; out=y written into y, or refused
            return writes.into_out(apply, func, args, kwargs)
        if _tracked_keyword(kwargs):
            if not rule.binds:  # a composite's impl takes the keywords as they are
                return rule.record(func, args, kwargs, NO_LEVEL)
            if func not in nondiff:  # (np.savez(f, W=W): a nondiff's keywords stay)
                args, kwargs = bind_positional(func, args, kwargs, Tracked)
    top, args = _level(func, args)
    if top == NO_LEVEL:
        return _call_plain(func, args, kwargs)
    return rule.record(func, args, kwargs, top)


def _tracked_keyword(kwargs):
    """Whether a keyword is tracked (or a tuple of them: np.histogram's range=(lo, hi));
    the rules read such a keyword at its position."""
    return any(isinstance(v, Tracked) or type(v) in _LISTS and top_level(v)[0] != NO_LEVEL
               for v in kwargs.values())


def _level(func, args):
    """The highest live level among ``args``, and ``args`` as the rule gets them: lists of
    tracked values read as arrays where NumPy reads them so, values escaped from finished
    computations as constants. The flat case (x @ W, np.sum(x)) is written out; nested
    lists and tuples (np.block, np.stack) take the general walk."""
    top, finished, nested = NO_LEVEL, False, False
    for a in args:
        if isinstance(a, Tracked):
            lvl = a.level
            if lvl not in live_levels:
                finished = True
            elif lvl > top:
                top = lvl
        elif type(a) is list or type(a) is tuple:
            nested = True
    if nested:
        top, finished = top_level(args)
        if reads_lists_as_arrays(func):  # lists holding tracked values become arrays (all
            args = tuple(np.array(a) if type(a) in (list, tuple) and (  # a ufunc's, as NumPy)
                top_level(a)[0] != NO_LEVEL or isinstance(func, np.ufunc)) else a for a in args)
    if finished:  # values escaped from finished computations are constants
        args = drop_finished(args)
        top = top_level(args)[0]
    return top, args


class _NoRule:
    """The record of a function with no rule: a nondifferentiable one's call is plain,
    any other is refused."""

    elementwise = gufunc_axes = False
    binds = True

    def record(self, func, args, kwargs, level):
        if func in nondiff:
            return _call_plain(func, args, kwargs)
        raise refuse_in_place(func) if func in IN_PLACE else no_rule(func)


NO_RULE = _NoRule()


def primitive(fn):
    """Make ``fn`` opaque to pullback: its body runs on plain values, and the rule
    registered with ``@pb.rrule(fn)`` gives its derivative.

    >>> @pb.primitive
    ... def softplus(x):
    ...     return np.logaddexp(0.0, x)
    >>> softplus(0.0)  # on plain values, the body; pb.nobacksies shows a rule for it
    np.float64(0.6931471805599453)
    """
    if not callable(fn):
        raise TypeError(f"pullback: pb.primitive decorates a function, got {kind_of(fn)}")

    @functools.wraps(fn)
    def primitive_wrapper(*args, **kwargs):
        top, finished = top_level((args, tuple(kwargs.values())))
        if top != NO_LEVEL or finished:
            return apply(primitive_wrapper, args, kwargs)
        return fn(*args, **kwargs)

    primitive_bodies[primitive_wrapper] = fn
    return primitive_wrapper


def _unary(func, a):
    """``apply`` for one tracked argument and no keywords (``np.sin(x)``, ``-x``): the hot
    path of a table row, which needs no level search (bench/NOTES.md)."""
    row = rules.get(func, NO_RULE)
    if not row.elementwise or a.level not in live_levels or state.slow:
        return apply(func, (a,), {})
    node = Tracked(row.call(a.value), a.level, (a,), row)
    if a.rule is None and a.level not in level_holds:  # an input's value: read-only while
        hold(node, (a,), row)                            # the node needs it (guard.py)
    return node


def _binary(func, a, b):
    """``apply`` for two arguments and no keywords (``x * y``, ``x + 1.0``): the hot path of
    a table row, with the level search written out."""
    row = rules.get(func, NO_RULE)
    if state.slow:
        return apply(func, (a, b), {})
    la = (a.level if isinstance(a, Tracked) else a.at(state) if a.__class__ is Escaped
          else NO_LEVEL)
    lb = (b.level if isinstance(b, Tracked) else b.at(state) if b.__class__ is Escaped
          else NO_LEVEL)
    if (la != NO_LEVEL and la not in live_levels) or (lb != NO_LEVEL and lb not in live_levels):
        return apply(func, (a, b), {})  # drops finished levels
    if not row.elementwise:  # a product's row (x @ W), or a general rule: its record
        if row is NO_RULE or a.__class__ in _LISTS or b.__class__ in _LISTS:
            return apply(func, (a, b), {})
        return row.record(func, (a, b), {}, la if la > lb else lb)
    # a plain array or an input's value stays read-only while the node needs it (guard.py;
    # a transform's inputs are held by its level already)
    call = row.call
    if la > lb:
        node = Tracked(call(a.value, b), la, (a, b), row)
        if isinstance(b, np.ndarray) or a.rule is None and la not in level_holds:
            hold(node, (a, b), row)
    elif lb > la:
        node = Tracked(call(a, b.value), lb, (a, b), row)
        if isinstance(a, np.ndarray) or b.rule is None and lb not in level_holds:
            hold(node, (a, b), row)
    else:
        node = Tracked(call(a.value, b.value), la, (a, b), row)
        if (a.rule is None or b.rule is None) and la not in level_holds:
            hold(node, (a, b), row)
    return node


_LISTS = frozenset({list, tuple})


def _call_plain(func, args, kwargs):
    open_box = _no_grad_box if state.no_grad else plain
    args = [map_boxes(a, open_box) for a in args]
    kwargs = {k: map_boxes(v, open_box) for k, v in kwargs.items()}
    if is_primitive(func):  # pb.jit records a primitive as one call
        return run_primitive(body_of(func), args, kwargs)
    if func is getitem:
        return args[0][args[1]]
    try:
        return func(*args, **kwargs)
    except ValueError as error:  # (NumPy's "assignment destination is read-only")
        if open_box is _no_grad_box and "read-only" in str(error):
            raise refuse_no_grad_write(func) from error
        raise


run_primitive = lambda body, args, kwargs: body(*args, **kwargs)  # pb.jit's (_wiring.py)
_no_grad_box = lambda x: read_only(plain(x), x.rule is not None)  # noqa: E731 (guard.py)
IN_PLACE = frozenset(f for f in (
    np.put, np.place, np.putmask, np.copyto, np.put_along_axis, np.fill_diagonal)
    if f is not None)


def _ufunc_call(ufunc, inputs, kwargs):
    if "where" in kwargs:  # np.divide(a, b, out=np.zeros_like(a), where=b != 0)
        return writes.where(_ufunc_call, ufunc, inputs, kwargs)
    if "out" in kwargs:
        return writes.into_out(_ufunc_call, ufunc, inputs, kwargs)
    # axes=: a gufunc's composite (np.vecdot) or product's rule (np.matmul) takes it
    if kwargs and not (ufunc.signature and rules.get(ufunc, NO_RULE).gufunc_axes):
        raise TypeError(
            f"pullback: {name_of(ufunc)} on a tracked value does not support the keyword(s) "
            f"{sorted(kwargs)}; apply the operation without them (cast with .astype, select "
            "with np.where" + (", move the core axes with np.moveaxis)" if ufunc.signature
                               else ")")
        )
    return apply(ufunc, inputs, kwargs)


def _ufunc_method(ufunc, method, inputs, kwargs):
    """``ufunc.reduce(x)`` and the other ufunc methods on tracked values: ``outer`` for
    every ufunc with a rule, the rest (``np.add.at`` too) from the registry's table."""
    if ufunc in nondiff:
        return getattr(ufunc, method)(*[map_boxes(a, plain) for a in inputs],
                                      **{k: map_boxes(v, plain) for k, v in kwargs.items()})
    if method == "at" and (ufunc, method) not in ufunc_methods:  # (np.add.at: in_place.py)
        raise TypeError(
            f"pullback: np.{ufunc.__name__}.at(a, indices, ...) updates a in place, which "
            "cannot record a gradient. Write it out of place: for np.add.at, "
            "a + pb.index_add(b, indices, a.shape) (repeated indices add up), or "
            "np.where / np.concatenate to assemble the result."
        )
    if "out" in kwargs:
        return writes.into_out(lambda f, a, k: _ufunc_method(f, method, a, k), ufunc, inputs,
                               kwargs)
    if method == "outer" and ufunc.nin == 2:
        a, b = inputs
        # the outer product is the ufunc on broadcast operands, which has the ufunc's rule
        return ufunc(np.reshape(a, shape_of(a) + (1,) * len(shape_of(b))), b, **kwargs)
    impl = ufunc_methods.get((ufunc, method))
    if impl is None:
        raise NoRuleError(
            f"pullback: no derivative rule for np.{ufunc.__name__}.{method} on a tracked "
            "value; write it with the plain functions (np.sum, np.cumsum, np.outer, ...)"
        )
    return impl(*inputs, **kwargs)


# ---------------------------------------------------------------------------- tracked values

def _operators(func):
    """A binary operator method of ``Tracked`` and its reflected form: the hot path of
    ``func``'s table row (or, for @, of its rule)."""
    def operator(self, other):
        if deferring[other.__class__] and (got := reflected(func, other, self)) is not None:
            return got  # NumPy's arrays leave the operator to other (x @ A: A.__rmatmul__(x))
        return _binary(func, self, other)

    def reflected_operator(self, other):  # (1j * np.float64(x) would be Python's complex)
        return _binary(func, np.complex128(other) if other.__class__ is complex else other,
                       self)

    return operator, reflected_operator


def _unary_operator(func):  # -x, +x, abs(x): the hot path of the row
    return lambda self: _unary(func, self)


def _comparison(func):  # not differentiable: a plain boolean result
    return lambda self, other: func(plain(self), plain(other))


class Tracked(ArrayMethods):
    """A value recorded by a gradient computation; NumPy functions accept it as an array.

    ``value`` is the plain value (or, under nested derivatives, a value tracked one level
    down); ``args`` and ``rule`` say how it was computed (None for an input). A write
    (``x[i] = v``, ``x += v``) records an update that the object itself becomes
    (writes.py).

    >>> pb.grad(lambda x: (print(type(x).__name__), np.sum(x))[1])(np.ones(2))
    Tracked
    array([1., 1.])
    """

    __slots__ = ("value", "level", "seq", "args", "rule", "hold", "__weakref__")
    backward: Any  # the Tracker face: backward() and .grad (tracker/backprop.py, _wiring.py)
    grad: Any
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
        if method != "__call__":
            return _ufunc_method(ufunc, method, inputs, kwargs)
        if kwargs:
            return _ufunc_call(ufunc, inputs, kwargs)
        if len(inputs) == 1:
            return _unary(ufunc, inputs[0])
        if len(inputs) == 2:
            return _binary(ufunc, inputs[0], inputs[1])
        return apply(ufunc, inputs, {})

    def __array_function__(self, func, types, args, kwargs):
        return apply(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        v = live_box(self)
        if not isinstance(v, Tracked):  # escaped from a finished computation: a constant
            return np.asarray(v, dtype=dtype) if copy is None else np.array(v, dtype, copy=copy)
        if dtype is not None and np.dtype(dtype).kind in "biu":  # np.int64(x): a constant
            return np.asarray(plain(self)).astype(dtype)
        refuse_conversion(self.shape, self.dtype)

    def __float__(self):
        v = live_box(self)
        return float(v) if not isinstance(v, Tracked) else refuse_scalar("float", self)

    def __int__(self):
        return refuse_scalar("int", self)

    __complex__ = lambda self: refuse_scalar("complex")

    def __bool__(self):
        return bool(plain(self))

    __format__ = lambda self, spec: format(plain(self), spec)

    def __copy__(self):  # NumPy's: a new array, so a write into it stays there; on the graph
        return np.copy(self)

    __deepcopy__: Any = lambda self, memo: np.copy(self)

    def __repr__(self):
        return f"Tracked({plain(self)!r}, level={self.level})"

    def __getitem__(self, index):
        if any(isinstance(i, Tracked) and not i.traced  # pb.jit traces indices too
               for i in (index if type(index) is tuple else (index,))):
            raise TypeError(
                "pullback: an index must be a plain integer, slice or array, not a tracked "
                "value; build indices from plain values (np.argmax(x) is plain already)"
            )
        return apply(getitem, (self, index), {})

    def __setitem__(self, index, value):
        writes.write(self, index, value)

    def astype(self, dtype, **kwargs):
        refuse_cast(self.dtype, dtype, kwargs.get("casting", "unsafe"))  # (NumPy's rule)
        order = in_order(self, kwargs.get("order", "K"))  # True, or the order to copy to
        if kwargs.get("copy", True) is False and np.dtype(dtype) == self.dtype and order is True:
            return self  # NumPy's: the array itself, which a write then goes into
        out = apply(astype, (self, dtype), {})  # in self's layout: another order copies
        return out if order is True else np.copy(out, order=order)

    # -- operators: each the table row of its ufunc (reflected: swapped; in-place: writes.py)
    __add__, __radd__ = _operators(np.add)
    __sub__, __rsub__ = _operators(np.subtract)
    __mul__, __rmul__ = _operators(np.multiply)
    __truediv__, __rtruediv__ = _operators(np.true_divide)
    __floordiv__, __rfloordiv__ = _operators(np.floor_divide)
    __mod__, __rmod__ = _operators(np.remainder)
    __pow__, __rpow__ = _operators(np.power)
    __matmul__, __rmatmul__ = _operators(np.matmul)
    __divmod__, __rdivmod__ = _operators(np.divmod)

    __neg__, __pos__, __abs__ = map(_unary_operator, (np.negative, np.positive, np.absolute))

    # comparisons are not differentiable: plain boolean results
    __lt__, __le__, __gt__ = map(_comparison, (np.less, np.less_equal, np.greater))
    __ge__, __eq__, __ne__ = map(_comparison, (np.greater_equal, np.equal, np.not_equal))
