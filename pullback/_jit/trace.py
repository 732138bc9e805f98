"""``pb.jit``: run a function once per input structure with its arrays traced, and replay
what it did as generated NumPy source.

The trace boxes every array argument as a ``Traced`` value at a level below 0 (core.py:
such levels are never live and never stripped). Every NumPy call that meets a traced value
and no live tracked value lands here and is recorded as one node: the function, its
arguments (constants or other nodes) and its keywords. A call that meets live tracked
values as well (the forward pass inside ``pb.grad``) is dispatched by the engine as usual,
and the rule's own NumPy calls on the values below, traced ones, are recorded: so
``jit(value_and_grad(f))`` records forward and backward pass as one straight-line program.
Every Python decision on a traced value (``bool``, ``float``, ``int``, ``round``,
``.item()``, ``np.asarray``) is a guard of the program, checked on every replay, and so is
the shape of a result that values set (``x[x > 0]``, ``np.repeat`` by counts computed from
``x``, ``np.reshape(x, (n, -1))`` with a traced ``n``: ``_value_shaped``), and so is every
Python read of a value (``hash``, ``repr``, ``bytes``, a string NumPy makes of it). What the
function reaches other than as arguments, closures' and globals' arrays is constant in the
program, compared with what the trace saw on every call (``_Watched``: arrays by their bits,
numbers and strings by value, other objects by identity, containers by their keys): what
the trace can have read (``_reading``: the attributes named in the code that ran, the
state of the functions that ran), not all that the function reaches. What
a program cannot replay runs eagerly, with a warning (``_Untraceable``), and randomness is
refused: a jitted call is never silently other than the eager one (docs/guide/jit.md).
"""

from __future__ import annotations

import builtins
import collections
import collections.abc
import contextlib
import functools
import itertools
import keyword
import linecache
import math
import numbers
import operator
import os
import random
import sys
import threading
import types
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .._engine.backend import is_foreign
from .._engine.core import IN_PLACE, Tracked, apply, map_boxes, memory, plain, top_level
from .._engine.interception import activate, deactivate, stand_in
from .._engine.lazy import is_lazy
from .._engine.registry import getitem
from ..tree import tree_flatten, tree_unflatten
from .passes import (
    _BY_ALL,
    _BY_FIRST,
    FREE_SIZE,
    _astype,
    _eye_product,
    _finite_number,
    _leaves,
    _original,
    _same_bits,
    drop_copies,
    reuse_dead,
    simplify,
)

__all__ = ["jit", "Jitted"]

MAX_TRACES = 8  # per jitted function; past it, calls that need a new trace run eagerly

_trace_ids = itertools.count(1)
_traces: dict[int, _Trace] = {}  # the traces running now, by level


class _Retrace:
    """What a program returns when one of its guards fails: trace that path again."""

    def __repr__(self):
        return "RETRACE"


RETRACE = _Retrace()


class _Trace:
    """One run of a function with its arrays traced: the nodes and guards in order."""

    def __init__(self):
        self.level = -1 - next(_trace_ids)  # -1 means "not tracked" in core._binary
        self.events: list[Any] = []  # Traced nodes, and guards (box, kind, expected)
        # the nodes computed under another np.errstate than the trace's (a rule's, where an
        # infinite derivative is expected): their lines run under it too
        self.errors, self.errstate = np.geterr(), {}
        self.token = _errstate_token()
        # the writeable arrays the recorded calls took as constants, with their bits then
        # (a write into one later in the trace, which the program would not see: eager)
        self.constants: dict[int, tuple[np.ndarray, Any] | None] = {}
        # the arrays handed out as they are (``__array__``: NumPy's np.asarray(x) is x
        # itself), with their bits then: a write through one, restored, makes the call eager
        self.handed: dict[int, tuple[np.ndarray, Any]] = {}


def _has_live(args, kwargs):
    return top_level((args, tuple(kwargs.values())))[0] >= 0


def _trace_of(box):
    trace = _traces.get(box.level)
    if trace is None:
        raise RuntimeError(
            "pullback: a value traced by pb.jit was used after its trace ended (it was "
            "stored outside the function, in a global or an attribute); return it instead"
        )
    return trace


_SCALARS = (np.ndarray, np.generic, bool, int, float, complex)


_WRITE_ADVICE = ("Write the update out of place (np.where, np.concatenate, a new array "
                 "returned) to jit it.")


class _Untraceable(Exception):
    """Raised inside a trace that met what a program cannot replay (a write into an array
    in place): that call runs eagerly instead, and so do later calls of its structure.
    ``advice`` says what to change to jit it."""

    def __init__(self, why, advice=_WRITE_ADVICE):
        rule = _rule_frame(sys._getframe(1))
        if rule is not None:  # a step of pullback's own, not one the function wrote
            where = rule.f_code.co_filename.rpartition(f"{_PACKAGE}{os.sep}")[2]
            why = (f"{why}, in {rule.f_code.co_name}, a step of pullback's derivative rules "
                   f"(pullback/{where}:{rule.f_lineno}), not of the function")
            advice = "pullback's rule has no program form yet; the function needs no change."
        super().__init__(why)
        self.advice = advice


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY = os.path.dirname(np.__file__)
# pullback's modules that pass a call on (the dispatch, NumPy's wrapped names, the trace)
_PASSING = frozenset({__name__, "pullback._engine.core", "pullback._engine.construct",
                      "pullback._engine.registry", "pullback._engine.interception"})


def _rule_frame(frame):
    """The frame of a rule of pullback's (rules/) that made the call a trace met, looking
    through NumPy's frames and those of pullback's dispatch; None for any other code."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module in _PASSING or frame.f_code.co_filename.startswith(_NUMPY):
            frame = frame.f_back
            continue
        return frame if module.startswith("pullback.rules.") else None
    return None


class _Rescanned(Exception):
    """Raised by a trace whose scan found other captured arrays than the last one (a
    global assigned after ``pb.jit(f)``): the call computes its key again."""


def _out_given(func, args, kwargs):
    """Whether a call writes into an ``out`` array, given as a keyword or positionally
    (``np.cumsum(x, 0, None, buf)``, ``np.add(a, b, buf)``, ``np.add.reduce(x, 0, None,
    buf)``)."""
    if kwargs.get("out") is not None:
        return True
    if isinstance(func, np.ufunc):
        return any(a is not None for a in args[func.nin:])
    owner = getattr(func, "__self__", None)
    if isinstance(owner, np.ufunc):  # a ufunc's method: out is its fourth (reduceat: fifth)
        at = {"reduce": 3, "accumulate": 3, "reduceat": 4}.get(func.__name__)
        return at is not None and len(args) > at and args[at] is not None
    at = _out_position(func)
    return at is not None and len(args) > at and args[at] is not None


@functools.lru_cache(maxsize=None)
def _out_position(func):
    """The position of a NumPy function's ``out`` parameter, or None."""
    import inspect
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    for i, p in enumerate(params):
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            return None
        if p.name == "out":
            return i
    return None


def _record(box, func, args, kwargs):
    """Call ``func`` on the values under the traced boxes and record the call."""
    trace = _trace_of(box)
    if getattr(func, "__name__", None) == "at" or func in IN_PLACE or _out_given(
            func, args, kwargs):
        raise _Untraceable(f"{getattr(func, '__name__', func)} writes into an array in place")
    args = tuple(map_boxes(a, plain) for a in args)  # finished boxes are constants
    kwargs = {k: map_boxes(v, plain) for k, v in kwargs.items()}
    for c in _leaves_of((args, kwargs)):  # a constant the function may write into later
        if type(c) is np.ndarray and c.flags.writeable and id(c) not in trace.constants:
            trace.constants[id(c)] = (c, _snapshot(c))
    out = func(*[map_boxes(a, memory) for a in args],
               **{k: map_boxes(v, memory) for k, v in kwargs.items()})
    start = len(trace.events)
    result = _wrap(trace, out, (func, args, kwargs), args)
    if len(trace.events) > start and (errors := np.geterr()) != trace.errors:
        trace.errstate[id(trace.events[start])] = {  # (relative to the trace's global
            k: v for k, v in errors.items() if v != trace.errors[k]}  # state: a guard)
    shaped = _value_shaped(func, args, kwargs)
    if shaped:  # a shape (or a dtype) read from values (x[x > 0], np.repeat): a guard
        for box in tree_flatten(result)[0]:
            if isinstance(box, Traced) and isinstance(box.value, (np.ndarray, np.generic)):
                trace.events.append((box, "shape", box.value.shape))
                if shaped is _DTYPE:
                    trace.events.append((box, "dtype", box.value.dtype))
    return result


def _originals(*names):
    """NumPy's functions of these dotted names (those this NumPy has)."""
    found = []
    for name in names:
        f: Any = np
        for part in name.split("."):
            f = getattr(f, part, None)
        if f is not None:
            found.append(_original(f))
    return frozenset(found)


# functions whose result's shape depends on the values of their arguments, not only on
# their shapes (the data's: np.unique; the counts': np.repeat, np.bincount)
_VALUE_SHAPED = _originals(
    "nonzero", "flatnonzero", "argwhere", "unique", "unique_values", "unique_counts",
    "unique_inverse", "unique_all", "extract", "compress", "trim_zeros", "setdiff1d",
    "intersect1d", "union1d", "setxor1d", "repeat", "bincount", "histogram",
    "histogram_bin_edges", "histogram2d", "histogramdd", "delete", "insert", "pad", "resize",
    "tile", "polydiv", "linalg.lstsq", "polynomial.polyutils.trimseq",
    "polynomial.polyutils.trimcoef", "polynomial.polynomial.polytrim")
# and those whose result's dtype does too (np.roots is complex for complex roots alone)
_VALUE_TYPED = _originals(
    "roots", "poly", "real_if_close", "linalg.eig", "linalg.eigvals", "emath.sqrt",
    "emath.log", "emath.log2", "emath.log10", "emath.logn", "emath.power", "emath.arccos",
    "emath.arcsin", "emath.arctanh", "polynomial.polynomial.polyroots",
    "polynomial.chebyshev.chebroots", "polynomial.legendre.legroots",
    "polynomial.hermite.hermroots", "polynomial.hermite_e.hermeroots",
    "polynomial.laguerre.lagroots")
_DTYPE = "dtype"  # what _value_shaped says of those
# whose result's shape follows from the shapes of all their arguments, whatever the values
# of integer and boolean ones (indices, conditions: the data of a gather or a selection)
_SHAPE_FROM_SHAPES = _originals(
    "take", "take_along_axis", "choose", "select", "searchsorted", "digitize", "isin",
    "in1d", "sort", "argsort", "partition", "argpartition", "lexsort", "concatenate", "stack",
    "hstack", "vstack", "dstack", "column_stack", "einsum", "dot", "vdot", "outer", "inner",
    "tensordot", "kron", "broadcast_arrays", "clip", "unravel_index", "ravel_multi_index",
    "copyto", "putmask", "place", "interp", "piecewise", "count_nonzero", "argmax",
    "argmin", "cumsum", "cumprod") | _BY_ALL


def _value_shaped(func, args, kwargs):
    """Whether a node's result's shape may depend on values (``_DTYPE``: its dtype too),
    for a guard of its shape: a function of ``_VALUE_SHAPED``, an index computed from
    traced values, or an integer or boolean traced value (a count, a width, an axis) that
    NumPy reads as a shape (``np.reshape(x, (n, -1))``, ``np.diag(x, k)``)."""
    if func is getitem:  # an index that is itself traced: a mask, or computed indices
        index = args[1] if type(args[1]) is tuple else (args[1],)
        return any(isinstance(i, Traced) for i in index)  # (a constant mask keeps its count)
    if isinstance(func, np.ufunc) or isinstance(getattr(func, "__self__", None), np.ufunc):
        return False  # (broadcasting, and a reduce's axes: of the shapes)
    func = _original(func)
    if func is _original(np.where):
        return len(args) == 1
    if func in _VALUE_TYPED:
        return _DTYPE
    if func in _VALUE_SHAPED:
        return True
    if func in _SHAPE_FROM_SHAPES or func is _astype:
        return False
    operands = args[1:] if func in _BY_FIRST else args  # (the rest: constants)
    return any(_counts(b) for b in _leaves((operands, kwargs), []))


def _counts(box):
    """Whether a traced value is of integers or booleans (what may be a count or a shape)."""
    value = box.value
    kind = value.dtype.kind if isinstance(value, (np.ndarray, np.generic)) else (
        "b" if isinstance(value, bool) else "i" if isinstance(value, int) else "f")
    return kind in "biu"


def _wrap(trace, out, node, args):
    if isinstance(out, np.ndarray) and (type(out) is not np.ndarray or out.dtype.kind == "O"):
        raise _Untraceable(
            f"{type(out).__name__} of dtype {out.dtype}: a subclass of np.ndarray or an "
            "object array", "Pass plain arrays of numbers to jit it.")
    if isinstance(out, _SCALARS):
        # always a node, even where the result is an operand's own object: whether NumPy
        # hands back its input can depend on the values (np.True_ | np.False_ is np.True_,
        # a singleton; np.real_if_close), so only the replayed call says what it is
        box = Traced(out, trace.level, node)
        trace.events.append(box)
        return box
    if isinstance(out, (tuple, list)):  # several outputs: a hub and one item per output
        hub = Traced(out, trace.level, node)
        trace.events.append(hub)
        items = [_wrap(trace, o, (getitem, (hub, i), {}), ()) for i, o in enumerate(out)]
        return type(out)(*items) if hasattr(type(out), "_fields") else type(out)(items)
    if isinstance(out, (str, bytes, np.dtype)) and any(
            isinstance(b, Traced) for b in _leaves_of(node[1:])):
        # made from traced values (np.array2string, np.min_scalar_type): a guard
        box = Traced(out, trace.level, node)
        trace.events.append(box)
        trace.events.append((box, "is", out))
    return out  # None, or a dtype or string made without traced values


def _leaves_of(x):
    """The leaves of a call's arguments (in lists, tuples, dicts and slices)."""
    stack, found = [x], []
    while stack:
        v = stack.pop()
        t = type(v)
        if t is tuple or t is list:
            stack.extend(v)
        elif t is dict:
            stack.extend(v.values())
        elif t is slice:
            stack.extend((v.start, v.stop, v.step))
        else:
            found.append(v)
    return found


# functions whose result depends only on shapes and dtypes, which key the cache: NumPy's
# own (the dispatch hands those over, not the stand-ins put in NumPy's namespace: construct.py)
_STATIC = frozenset(getattr(f, "_pb_original", f) for f in (
    np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj))
# (not np.min_scalar_type, whose answer for a scalar depends on its value)


def _view(x, *args, **kwargs):
    return x.view(*args, **kwargs)


def run_primitive(body, args, kwargs):
    """A ``pb.primitive``'s body on traced values: one recorded call (core's hook, set in
    _wiring.py)."""
    for x in tree_flatten((list(args), kwargs))[0]:
        if isinstance(x, Traced):
            return _record(x, body, args, kwargs)
    return body(*args, **kwargs)



def _traced_in(index):
    if isinstance(index, Traced):
        return index.level in _traces
    if type(index) is tuple or type(index) is list:
        return any(_traced_in(i) for i in index)
    if type(index) is slice:
        return _traced_in((index.start, index.stop, index.step))
    return False


def checking_indices(write):
    """``write`` (``x[index] = v`` on a tracked ``x``, core's hook: _wiring.py) refusing,
    during a trace, an index computed from traced values: the write's index is a constant of
    the recorded update, so such a call (``y[y > 2] = 0``) cannot be recorded, and runs
    eagerly, as a write into a traced array does."""

    def write_with_constant_index(x, index, v):
        if _traced_in(index):
            raise _Untraceable("x[index] = v with an index computed from traced values")
        return write(x, index, v)

    return write_with_constant_index


def _guard(box, kind, value):
    _trace_of(box).events.append((box, kind, value))
    return value


class Traced(Tracked):
    """A value traced by ``pb.jit``: NumPy calls on it are recorded, Python decisions on it
    become guards of the recorded program."""

    __slots__ = ()

    def __init__(self, value, level=None, args=None, rule=None):
        if level is None:  # type(x[0])(v): NumPy's scalar type, eagerly (statistics.mean)
            raise _Untraceable("type(x)(v) makes a value of the traced value's type",
                               "Write np.float64(v) to jit it.")
        Tracked.__init__(self, value, level, args, rule)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if _has_live(inputs, kwargs):
            return Tracked.__array_ufunc__(self, ufunc, method, *inputs, **kwargs)
        func = ufunc if method == "__call__" else getattr(ufunc, method)
        return _record(self, func, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if _has_live(args, kwargs):
            return apply(func, args, kwargs)
        if func in _STATIC:
            return func(*[map_boxes(a, memory) for a in args], **kwargs)
        return _record(self, func, args, kwargs)

    def __getitem__(self, index):
        return _record(self, getitem, (self, index), {})

    def __setitem__(self, index, value):
        raise _Untraceable("x[index] = v writes into a traced array in place")

    def _in_place(operator):  # y += v: a traced array is written into eagerly, as y[...] = v
        def in_place_operator(self, other):
            if isinstance(self.value, (np.generic, numbers.Number)):  # a scalar: rebound
                return operator(self, other)
            raise _Untraceable("an in-place operator writes into a traced array")

        return in_place_operator

    __iadd__, __isub__ = _in_place(Tracked.__add__), _in_place(Tracked.__sub__)
    __imul__, __itruediv__ = _in_place(Tracked.__mul__), _in_place(Tracked.__truediv__)
    __ifloordiv__, __imod__ = _in_place(Tracked.__floordiv__), _in_place(Tracked.__mod__)
    __ipow__, __imatmul__ = _in_place(Tracked.__pow__), _in_place(Tracked.__matmul__)
    del _in_place

    def astype(self, dtype, **kwargs):
        return _record(self, _astype, (self, dtype), kwargs)

    # the boolean and integer operators (tracked values carry no such results)
    __and__ = lambda self, other: np.bitwise_and(self, other)  # noqa: E731
    __rand__ = lambda self, other: np.bitwise_and(other, self)  # noqa: E731
    __or__ = lambda self, other: np.bitwise_or(self, other)  # noqa: E731
    __ror__ = lambda self, other: np.bitwise_or(other, self)  # noqa: E731
    __xor__ = lambda self, other: np.bitwise_xor(self, other)  # noqa: E731
    __rxor__ = lambda self, other: np.bitwise_xor(other, self)  # noqa: E731
    __invert__ = lambda self: np.invert(self)  # noqa: E731

    # Python decisions: each is a guard of the program
    def __bool__(self):
        return _guard(self, "bool", bool(self.value))

    def __float__(self):
        return _guard(self, "float", float(self.value))

    def __int__(self):
        return _guard(self, "int", int(self.value))

    def __index__(self):
        return _guard(self, "index", operator.index(self.value))

    def __complex__(self):
        return _guard(self, "complex", complex(self.value))

    def __round__(self, ndigits=None):  # (NumPy's scalars round; an array raises, as eagerly)
        value = round(self.value) if ndigits is None else round(self.value, ndigits)
        return _guard(self, ("round", ndigits), value)

    def item(self, *args):
        return _guard(self, ("item", args), np.asarray(self.value).item(*args))

    def tolist(self):
        return _guard(self, "tolist", np.asarray(self.value).tolist())

    def __array__(self, dtype=None, copy=None):
        value = self.value
        if copy is not True and type(value) is np.ndarray and (
                dtype is None or np.dtype(dtype) == value.dtype):
            # NumPy's answer, x itself: a write through it is seen when the trace ends
            _trace_of(self).handed.setdefault(id(value), (value, _snapshot(value)))
        else:
            value = np.array(value, dtype=dtype)
        _guard(self, ("array", value.dtype), value.copy())
        return value

    flags = property(lambda self: np.asarray(self.value).flags)

    def __format__(self, spec):  # f"{loss:.3f}": a string made from the value, a guard
        return _guard(self, ("format", spec), format(self.value, spec))

    def __str__(self):
        return self.__format__("")

    def __repr__(self):  # repr(x), f"{x!r}": a string made from the value, a guard
        if self.level not in _traces:  # (a box seen after its trace, in a message)
            return f"Traced({self.value!r})"
        return _guard(self, "repr", repr(self.value))

    def __hash__(self):  # set(y), {label: ...}, Counter: by the value, as NumPy's scalars
        return _guard(self, "hash", hash(self.value))  # (an array: NumPy's TypeError)

    def _call(name):  # math.trunc(x[0]), x[1].is_integer(): a number read from the value
        def read(self):
            return _guard(self, ("call", name), _HELPERS[name](self.value))

        return read

    __trunc__, __floor__, __ceil__ = (
        _call("_trunc"), _call("_floor"), _call("_ceil"))  # type: ignore[arg-type]
    is_integer, as_integer_ratio = (
        _call("_is_integer"), _call("_integer_ratio"))  # type: ignore[arg-type]
    del _call

    def __reduce_ex__(self, protocol):  # pickle.dumps(x): NumPy's bytes, eagerly
        raise _Untraceable("pickle reads a traced array outside NumPy's functions",
                           "Pickle the arrays outside the jitted function to jit it.")

    def __bytes__(self):
        return _guard(self, "bytes", bytes(self.value))

    def tobytes(self, order="C"):  # (a cache key made of the bytes)
        return _guard(self, ("method", "tobytes", (order,)), np.asarray(self.value).tobytes(
            order))

    def view(self, *args, **kwargs):  # x.view(np.int64): the bits, recorded (eager's own)
        return _record(self, _view, (self, *args), kwargs)

    def __getattr__(self, name):  # x.ctypes, x.dumps(): what no recorded call replays
        if name.startswith("__") or hasattr(type(self), name) or not (
                hasattr(np.ndarray, name) or hasattr(np.generic, name)):
            return Tracked.__getattr__(self, name)  # (a property's own error: x.dtype)
        raise _Untraceable(f"x.{name} reads a traced array outside NumPy's functions",
                           f"Call x.{name} outside the jitted function to jit it.")


def _unrecorded(name):
    def unrecorded(self, *args, **kwargs):
        raise _Untraceable(f"x.{name}() reads a traced array outside NumPy's functions",
                           f"Call x.{name}() outside the jitted function to jit it.")

    unrecorded.__name__ = unrecorded.__qualname__ = name
    return unrecorded


# the ndarray methods a tracked value refuses, having no rule (methods.py's no_method):
# on a traced value in a plain pb.jit they work eagerly, as on the array
for _name in dir(Tracked):
    _method = getattr(Tracked, _name, None)
    if isinstance(_method, types.FunctionType) and _method.__code__.co_name == "no_method" and (
            _name not in Traced.__dict__):
        setattr(Traced, _name, _unrecorded(_name))
del _name, _method


# ---------------------------------------------------------------------------- the program

_OPERATORS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/",
              np.power: "**", np.matmul: "@", np.floor_divide: "//", np.remainder: "%",
              np.bitwise_and: "&", np.bitwise_or: "|", np.bitwise_xor: "^",
              np.greater: ">", np.less: "<", np.greater_equal: ">=", np.less_equal: "<=",
              np.equal: "==", np.not_equal: "!="}
_UNARY = {np.negative: "-", np.positive: "+", np.invert: "~"}


_REDUCE = {_original(f): name for f, name in (
    (np.sum, "np.add.reduce"), (np.max, "np.maximum.reduce"), (np.amax, "np.maximum.reduce"),
    (np.min, "np.minimum.reduce"), (np.amin, "np.minimum.reduce"),
    (np.all, "np.logical_and.reduce"), (np.any, "np.logical_or.reduce"))}
_MODULES = (("np", np), ("np.linalg", np.linalg), ("np.fft", np.fft))


def _func_name(func):
    name = getattr(func, "__name__", None)
    owner = getattr(func, "__self__", None)
    if isinstance(owner, np.ufunc) and getattr(np, owner.__name__, None) is owner:
        return f"np.{owner.__name__}.{name}"
    for prefix, module in _MODULES:
        if name and _original(getattr(module, name, None)) is func:
            return f"{prefix}.{name}"
    return None


def _short(func):
    name = getattr(func, "__name__", None) or type(func).__name__
    owner = getattr(func, "__self__", None)
    if isinstance(owner, np.ufunc):
        name = f"{owner.__name__}_{name}"
    name = {"getitem": "item", "_astype": "astype"}.get(name, name)
    name = "".join(c if c.isalnum() else "_" for c in name).strip("_").lower() or "t"
    return name


def _literal(x):
    """Source for a small constant, or None when it is to be a named parameter."""
    t = type(x)
    if x is None or x is Ellipsis or t is bool or t is str:
        return "..." if x is Ellipsis else repr(x)
    if t is int or t is float and np.isfinite(x):
        return f"({x!r})" if x < 0 or t is float and np.signbit(x) else repr(x)
    return None


class _Source:
    """The program's text: names of nodes, parameters for constants."""

    def __init__(self):
        self.names: dict[int, str] = {}     # id(box) -> name
        self.used = {"np", "RETRACE", "math", "operator"}
        self.consts: dict[int, str] = {}    # id(constant) -> parameter name
        self.namespace: dict[str, Any] = {"np": np, "RETRACE": RETRACE}
        self.keep: list[Any] = []           # the constants, alive as long as the program
        self.counter = itertools.count(1)

    def fresh(self, base):
        base = base if base.isidentifier() and not keyword.iskeyword(base) else f"_{base}"
        name, k = base, 1
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def const(self, x, base="c"):
        name = self.consts.get(id(x))
        if name is None:
            if isinstance(x, np.dtype):
                base = x.name
            elif isinstance(x, type):
                base = x.__name__
            name = self.fresh(base)
            self.consts[id(x)] = name
            self.namespace[name] = x
            self.keep.append(x)
        return name

    def expr(self, x):
        if isinstance(x, Traced):
            return self.names[id(x)]
        if type(x) is list or type(x) is tuple:
            inner = ", ".join(self.expr(a) for a in x)
            if type(x) is list:
                return f"[{inner}]"
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if type(x) is slice:
            return f"slice({self.expr(x.start)}, {self.expr(x.stop)}, {self.expr(x.step)})"
        text = _literal(x)
        return self.const(x) if text is None else text

    def index(self, index):
        parts = index if type(index) is tuple else (index,)
        out = []
        for p in parts:
            if type(p) is slice and all(_literal(e) is not None or isinstance(e, Traced)
                                        for e in (p.start, p.stop, p.step) if e is not None):
                text = ":".join("" if e is None else self.expr(e)
                                for e in (p.start, p.stop, p.step))
                out.append(text[:-1] if p.step is None else text)
            else:
                out.append(self.expr(p))
        if type(index) is tuple:
            return "()" if not out else out[0] + "," if len(out) == 1 else ", ".join(out)
        return out[0]

    def call(self, func, args, kwargs):
        if func is getitem:
            return f"{self.expr(args[0])}[{self.index(args[1])}]"
        if func is _finite_number:  # a guard's test of a float: Python's, without a ufunc
            return f"math.isfinite({self.expr(args[0])})"
        if func is _eye_product:  # the identity basis of a Jacobian, multiplied in
            x, eye, left = (self.expr(a) for a in args)
            product = f"{eye} @ {x}" if args[2] else f"{x} @ {eye}"
            return f"np.add({x}, 0.0, order='C') if np.isfinite({x}).all() else {product}"
        if func is _astype:
            kw = "".join(f", {k}={self.expr(v)}" for k, v in kwargs.items())
            return f"{self.expr(args[0])}.astype({self.expr(args[1])}{kw})"
        operands = [a for a in args if isinstance(a, Traced)]
        arrays = any(isinstance(a.value, (np.ndarray, np.generic)) for a in operands)
        if not kwargs and arrays and len(args) == 2 and func in _OPERATORS:
            return f"{self.expr(args[0])} {_OPERATORS[func]} {self.expr(args[1])}"
        if not kwargs and arrays and len(args) == 1 and func in _UNARY:
            return f"{_UNARY[func]}{self.expr(args[0])}"
        fast = self.fast(func, args, kwargs)
        if fast is not None:
            return fast
        name = _func_name(func)
        if name is None:
            name = self.const(func, _short(func))
        parts = [self.expr(a) for a in args] + [f"{k}={self.expr(v)}" for k, v in kwargs.items()]
        return f"{name}({', '.join(parts)})"

    def fast(self, func, args, kwargs):
        """The same call through a cheaper door, for an ndarray first argument: the
        ufunc's reduce for np.sum and np.max (no Python layer), ``.T`` for a 2-d
        swapaxes, the ``.reshape`` method."""
        first = args[0] if args else None
        value = first.value if isinstance(first, Traced) else None
        if (func is _original(np.reshape) and isinstance(value, (np.ndarray, np.generic))
                and len(args) == 2 and set(kwargs) <= {"order"}):
            kw = "".join(f", {k}={self.expr(v)}" for k, v in kwargs.items())
            return f"{self.expr(first)}.reshape({self.expr(args[1])}{kw})"
        if type(value) is not np.ndarray or value.ndim == 0:
            return None
        a = self.expr(first)
        if func in _REDUCE and len(args) <= 2 and set(kwargs) <= {"axis", "keepdims", "dtype"}:
            kw = {"axis": None, **kwargs}  # the reduce's own default axis is 0
            if len(args) == 2:
                kw["axis"] = args[1]
            if kw.get("dtype", None) is None:
                kw.pop("dtype", None)
            if func is not _original(np.sum) and "dtype" in kw:
                return None
            parts = "".join(f", {k}={self.expr(v)}" for k, v in kw.items())
            return f"{_REDUCE[func]}({a}{parts})"
        if (func is _original(np.mean) and len(args) == 1
                and set(kwargs) <= {"axis", "keepdims", "dtype"}
                and kwargs.get("dtype") is None and value.dtype in (np.float64, np.float32)):
            # np.mean's own steps for these dtypes: the sum, divided by the count
            axis = kwargs.get("axis")
            axes = range(value.ndim) if axis is None else (
                axis if isinstance(axis, tuple) else (axis,))
            count = int(np.prod([value.shape[i] for i in axes]))
            keep = f", keepdims={self.expr(kwargs['keepdims'])}" if "keepdims" in kwargs else ""
            return f"np.add.reduce({a}, axis={self.expr(axis)}{keep}) / {count}"
        if (func is _original(np.swapaxes) and value.ndim == 2 and not kwargs and len(args) == 3
                and {args[1], args[2]} in ({0, 1}, {-1, -2}, {0, -1}, {-2, 1})
                and args[1] != args[2]) or (func is _original(np.transpose) and len(args) == 1
                                            and kwargs.get("axes") is None):
            return f"{a}.T"
        return None

    def output(self, x, out_def):
        """The return expression: the output's pytree as literals around the leaves."""
        leaves = iter(x)

        def build(spec):
            if spec is None:
                leaf = next(leaves)
                if isinstance(leaf, Traced):
                    name = self.names[id(leaf)]
                    value = leaf.value
                    ro = isinstance(value, np.ndarray) and not value.flags.writeable
                    return f"{name}.copy()" if ro else name
                if isinstance(leaf, np.ndarray):  # a constant: a fresh copy per call
                    return f"{self.const(leaf)}.copy()"
                return self.expr(leaf)
            kind, children, keys = spec
            parts = [build(c) for c in children]
            if kind is OrderedDict:
                items = ", ".join(f"({k!r}, {p})" for k, p in zip(keys, parts))
                return f"{self.const(kind)}([{items}])"
            if kind is dict:
                return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(keys, parts)) + "}"
            if kind is list:
                return f"[{', '.join(parts)}]"
            if kind is tuple:
                return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
            return f"{self.const(kind)}({', '.join(parts)})"

        return build(out_def)


def _key_of(node, names_of):
    func, args, kwargs = node

    def k(x):
        if isinstance(x, Traced):
            return ("n", names_of(x))
        if type(x) is list or type(x) is tuple:
            return (type(x), tuple(k(a) for a in x))
        if type(x) is slice:
            return ("s", k(x.start), k(x.stop), k(x.step))
        if type(x) in (bool, int, float, complex, str) or x is None:
            return ("v", type(x), repr(x))
        return ("c", id(x))

    return (id(func), k(args), tuple((n, k(v)) for n, v in kwargs.items()))


def _emit(fname, trace, params, outs, out_def):
    """``(source, program, constants)`` for a finished trace: CSE, dead code dropped."""
    # share repeated subexpressions: each box maps to the first box of its computation
    same: dict[int, Traced] = {}
    seen: dict[Any, Traced] = {}
    for e in trace.events:
        if isinstance(e, Traced):
            key = _key_of(e.args, lambda b: id(same.get(id(b), b)))
            first = seen.setdefault(key, e)
            if first is not e:
                same[id(e)] = first

    def shared(x):
        return same.get(id(x), x) if isinstance(x, Traced) else x

    # then nodes that equal another node or a constant, or a cheaper call (_jit_passes)
    subst, nodes = simplify(trace.events, shared, outs, params)

    def rep(x):
        x = shared(x)
        while isinstance(x, Traced) and id(x) in subst:
            x = shared(subst[id(x)])
        return x

    def node_of(box):
        return nodes.get(id(box), box.args)

    def deps(node):
        found = []
        stack = [node[1], tuple(node[2].values())]
        while stack:
            for a in stack.pop():
                if isinstance(a, Traced):
                    a = rep(a)
                    if isinstance(a, Traced):
                        found.append(a)
                elif type(a) in (list, tuple):
                    stack.append(a)
                elif type(a) is slice:
                    stack.append((a.start, a.stop, a.step))
        return found

    def live():
        """The nodes an output or a guard needs, in order (what is left is dropped)."""
        needed: set[int] = set()
        stack = [rep(o) for o in outs if isinstance(o, Traced)]
        stack += [rep(e[0]) for e in trace.events if not isinstance(e, Traced)]
        while stack:
            b = stack.pop()
            if not isinstance(b, Traced) or id(b) in needed:
                continue
            needed.add(id(b))
            if b.args is not None:
                stack.extend(deps(node_of(b)))
        return [e for e in trace.events if isinstance(e, Traced) and id(e) in needed
                and rep(e) is e and e.args is not None]

    subst.update(drop_copies(live(), rep, node_of, outs))
    boxes = live()
    needed = {id(b) for b in boxes}
    guarded = {id(rep(e[0])) for e in trace.events if not isinstance(e, Traced)}
    reuse = reuse_dead(boxes, rep, node_of, outs, guarded)

    src = _Source()
    for name, box in params:
        src.names[id(box)] = name
        src.used.add(name)
    outs = [rep(o) if isinstance(o, Traced) else o for o in outs]
    # big arrays are let go after their last use, for the allocator to hand out again
    last: dict[int, int] = {}
    for i, e in enumerate(trace.events):
        if not isinstance(e, Traced):
            last[id(rep(e[0]))] = i
        elif id(e) in needed:
            for a in deps(node_of(e)):
                last[id(a)] = i
    kept = {id(o) for o in outs} | {id(b) for _, b in params}
    drop_after: dict[int, list[Traced]] = {}
    for b in boxes:
        if (id(b) not in kept and type(b.value) is np.ndarray
                and b.value.size >= FREE_SIZE and id(b) in last):
            drop_after.setdefault(last[id(b)], []).append(b)
    lines, block = [], ""  # block: the np.errstate of the lines above, if any
    for i, e in enumerate(trace.events):
        if not isinstance(e, Traced):
            box, kind, expected = e
            box = rep(box)
            if isinstance(box, Traced):  # a guard on a constant holds
                lines.extend(_guard_lines(src, src.names[id(box)], kind, expected))
                block = ""
        elif id(e) in needed:
            # consecutive lines under one np.errstate share its block
            state = ", ".join(f"{k}={v!r}" for k, v in trace.errstate.get(id(e), {}).items())
            if state and state != block:
                lines.append(f"with np.errstate({state}):")
            block = state
            lines.append(("    " if state else "") + _line(src, e, node_of(e), rep, reuse))
        if i in drop_after:
            lines.append(("    " if block else "")
                         + f"del {', '.join(src.names[id(b)] for b in drop_after[i])}")

    ret = src.output(outs, out_def)
    defaults = [n for n in src.namespace if n not in ("np", "RETRACE")]
    head = ", ".join([n for n, _ in params] + ([f"*, {', '.join(f'{n}={n}' for n in defaults)}"]
                                               if defaults else []))
    notes = [f"# {n}: {_describe(src.namespace[n])}" for n in defaults]
    body = "\n".join(f"    {line}" for line in notes + lines + [f"return {ret}"])
    source = f"def {fname}({head}):\n{body}\n"
    filename = f"<pb.jit {fname} #{-trace.level}>"
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = dict(src.namespace)
    namespace.update(_HELPERS)
    exec(code, namespace)
    return source, namespace[fname], src.keep


def _line(src, e, node, rep, reuse):
    """The line that computes node ``e``."""
    func, args, kwargs = node
    args = _mapped(args, rep)
    kwargs = {k: _mapped(v, rep) for k, v in kwargs.items()}
    if id(e) in reuse:  # into an operand that dies here
        kwargs = {"out": reuse[id(e)]}
    text = src.call(func, args, kwargs)
    named = e.args[0] if func in (_finite_number, _eye_product) else func
    name = src.fresh(f"{_short(named)}_{next(src.counter)}")
    src.names[id(e)] = name
    return f"{name} = {text}"


def _describe(x):
    """A constant parameter, in a comment of the program."""
    if isinstance(x, np.ndarray):
        if x.size <= 4:
            return " ".join(repr(x).split())
        return f"a {x.dtype} array of shape {x.shape}"
    if isinstance(x, np.generic):
        return repr(x)
    # (on one line: a scipy.sparse matrix's repr has several)
    return getattr(x, "__qualname__", None) or " ".join(repr(x).split())


def _mapped(x, rep):
    if isinstance(x, Traced):
        return rep(x)
    if type(x) is list or type(x) is tuple:
        return type(x)(_mapped(a, rep) for a in x)
    if type(x) is slice:
        return slice(_mapped(x.start, rep), _mapped(x.stop, rep), _mapped(x.step, rep))
    return x


def _same_array(x, expected, dtype):
    x = np.asarray(x, dtype=dtype)
    return _same_bits(x, expected)  # (-0.0 is not 0.0 to the library it escaped to)


def _number_key(x):
    """``x``, or for a float zero or NaN (and a complex number with such a part) what tells
    0.0 from -0.0 and matches every NaN of a sign, as ``==`` does neither: the cache key of
    a static number, and what a guard compares."""
    if isinstance(x, (complex, np.complexfloating)):
        return (_number_key(x.real), _number_key(x.imag))
    if isinstance(x, (float, np.floating)) and not (x and x == x):
        return ("nan" if x != x else 0.0, math.copysign(1.0, x))
    return x


def _same(a, b):
    """A guard's test where ``!=`` is not exact: ``a`` is ``b``, the value seen at the trace."""
    if type(a) is list:
        return type(b) is list and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and _number_key(a) == _number_key(b)


def _exact(expected):
    """Whether ``value != expected`` is an exact guard: an integer, a string, or a float
    other than a zero (equal to -0.0) and NaN (equal to nothing)."""
    if isinstance(expected, (int, np.integer, str)):
        return True
    return isinstance(expected, (float, np.floating)) and bool(expected) and expected == expected


_HELPERS: dict[str, Any] = {"_same_array": _same_array, "_same": _same}


def _guard_lines(src, name, kind, expected):
    if kind == "bool":
        test = f"not {name}" if expected else name
    elif kind == "shape":
        test = f"{name}.shape != {expected!r}"
    elif kind == "dtype":
        test = f"{name}.dtype != {src.const(expected)}"
    elif isinstance(kind, tuple) and kind[0] == "array":
        test = f"not _same_array({name}, {src.const(expected, 'seen')}, {src.const(kind[1])})"
    else:
        if isinstance(kind, tuple) and kind[0] == "format":
            value = f"format({name}, {kind[1]!r})"
        elif isinstance(kind, tuple) and kind[0] == "round":
            digits = "" if kind[1] is None else f", {kind[1]!r}"
            value = f"round({name}{digits})"
        elif isinstance(kind, tuple) and kind[0] == "call":
            value = f"{kind[1]}({name})"
        elif kind == "is":  # a string or a dtype made from traced values
            value = name
        elif isinstance(kind, tuple) and kind[0] == "method":
            value = f"np.asarray({name}).{kind[1]}({', '.join(repr(a) for a in kind[2])})"
        elif isinstance(kind, tuple):  # item(*args)
            value = f"np.asarray({name}).item({', '.join(repr(a) for a in kind[1])})"
        elif kind == "tolist":
            value = f"np.asarray({name}).tolist()"
        else:
            value = f"{'operator.index' if kind == 'index' else kind}({name})"
        literal = _literal(expected)
        exp = literal if literal is not None else src.const(expected, "seen")
        test = f"{value} != {exp}" if _exact(expected) else f"not _same({value}, {exp})"
    return [f"if {test}:", "    return RETRACE"]


_HELPERS["operator"] = operator
_HELPERS.update(_trunc=math.trunc, _floor=math.floor, _ceil=math.ceil,
                _is_integer=lambda v: v.is_integer(),
                _integer_ratio=lambda v: v.as_integer_ratio())
_HELPERS["math"] = math


# ---------------------------------------------------------------------------- jit

def _signature(x, sig, inputs):
    """Append to ``sig`` a hashable description of ``x``'s pytree structure with the
    shapes and dtypes of its arrays and the values of its other leaves, and to ``inputs``
    its arrays, in tree.py's order of leaves. Returns whether a leaf is tracked (a call
    inside a trace or a transform). The hot path of every call: arrays in tuples and lists
    are handled inline."""
    t = type(x)
    if t is tuple or t is list:
        sig.append(t)
        sig.append(len(x))
        tracked = False
        for c in x:
            if type(c) is np.ndarray:
                sig.append(c.shape)
                sig.append(c.dtype)
                sig.append(c.strides)  # (the memory layout: ravel(order="A"), x.flags)
                inputs.append(c)
            else:
                tracked = _signature(c, sig, inputs) or tracked
        return tracked
    if t is np.ndarray:
        sig.append(x.shape)
        sig.append(x.dtype)
        sig.append(x.strides)
        inputs.append(x)
        return False
    if t is dict or t is OrderedDict or issubclass(t, tuple) and hasattr(t, "_fields"):
        sig.append(t)
        mapping = t is dict or t is OrderedDict
        sig.append(tuple(x) if mapping else len(x))
        tracked = False
        for c in (x.values() if mapping else x):
            tracked = _signature(c, sig, inputs) or tracked
        return tracked
    sig.append(_leaf_key(x))  # one entry, never a shape: its first item is not an int
    if isinstance(x, _TRACED):
        inputs.append(x)
    return isinstance(x, Tracked)


# the leaves traced: arrays, and NumPy's float and complex scalars; the others (NumPy's
# integers and bools too, as Python's: indices, counts, flags) are static
_TRACED = (np.ndarray, np.inexact)


def _leaf_key(x):
    if isinstance(x, np.ndarray):
        return ((x.shape, x.dtype, x.strides),)
    if isinstance(x, np.inexact):
        return (x.dtype,)
    t = type(x)
    if t is float and not (x and x == x) or t is complex:  # 0.0 and -0.0 are ==, and a
        return (t, _number_key(x))  # NaN is equal to nothing
    if isinstance(x, _BY_VALUE) or t.__eq__ is object.__eq__:
        return (t, x)  # a static value: part of the key (it must be hashable)
    # another object: by identity, as its arrays and numbers are constants of the program
    # found from it (two objects that compare equal may hold other arrays)
    return (t, _BY_ID, id(x), x)  # (x: an unhashable one is refused, as before)


_BY_ID = "by id"


class _Program:
    __slots__ = ("source", "run", "keep", "watched", "errors", "token")

    def __init__(self, source, run, keep, watched=(), errors=None, token=None):
        self.source, self.run, self.keep, self.watched = source, run, keep, watched
        # the global np.errstate of the trace (its lines under a rule's np.errstate hold
        # what differs from it): a replay runs under the same one
        self.errors, self.token = errors, token

    def other_errstate(self):
        """Whether the global np.errstate now is another than the trace's."""
        token = _errstate_token()
        if token is self.token:
            return False
        if np.geterr() != self.errors:
            return True
        self.token = token  # (the same state again, in another np.errstate block)
        return False


try:  # (NumPy's own: one object per np.errstate block, a fast test of the usual case)
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
        _extobj_contextvar as _errstate_var,
    )

    _errstate_token = _errstate_var.get
except ImportError:  # pragma: no cover
    def _errstate_token():
        return None


_EAGER = _Program("", None, None)  # a structure that runs eagerly


class _Captured:
    """An array the function reads from a closure cell or a module global: read at call
    time at its place (``steps`` from ``root``), and traced like an argument."""

    __slots__ = ("name", "root", "steps")

    def __init__(self, name, root, steps):
        self.name, self.root, self.steps = name, root, steps

    def get(self):
        try:
            return _follow(self.root, self.steps)
        except (LookupError, AttributeError, TypeError, ValueError):  # (an empty cell)
            return None

    def set(self, value):
        _assign(self.root, self.steps, value)


def _follow(x, steps):
    for attribute, key in steps:
        x = getattr(x, key) if attribute else x[key]
    return x


def _assign(root, steps, value):
    """Put ``value`` at ``steps`` from ``root``."""
    *head, (attribute, key) = steps
    parent = _follow(root, head)
    if attribute:
        setattr(parent, key, value)
    else:
        parent[key] = value


def _global_names(code, found):
    found.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _global_names(c, found)
    return found


def _is_random(v):
    """Whether ``v`` draws random numbers: Python's generator, or NumPy's (numpy.random, which
    NumPy imports when first asked for, is looked at only once a program has imported it:
    no NumPy generator exists before)."""
    if isinstance(v, random.Random):
        return True
    numpy_random = sys.modules.get("numpy.random")
    return numpy_random is not None and isinstance(v, (
        numpy_random.Generator, numpy_random.RandomState, numpy_random.BitGenerator))
# the modules whose globals are no user's state (pullback's own, NumPy's, SciPy's)
_LIBRARIES = frozenset({"pullback", "numpy", "scipy"})


def _scan(f):
    """The arrays ``f`` reads through closures and globals (and through the functions it
    reaches that way: ``_Captured``), the random generators it reaches that way, and the
    places where it may reach other arrays (a container or an object in a closure, a global
    or another module's global, a bound method's object, a partial's arguments, default
    arguments): ``(label, root, steps)`` for ``_reach``."""
    arrays: dict[tuple[int, tuple], _Captured] = {}
    generators: list[Any] = []
    roots: list[tuple[Any, ...]] = []  # (label, root, steps, rebindable, the code it is of)
    seen: set[int] = set()
    complete = [True]

    def visit(fn, depth, label="f"):
        if id(fn) in seen:
            return
        if depth > _SCAN_DEPTH:
            complete[0] = False  # (a call chain deeper than this: a warning)
            return
        seen.add(id(fn))
        if isinstance(fn, functools.partial):
            roots.append((label, fn, (), True, None))
            visit(fn.func, depth + 1)
            return
        if isinstance(fn, types.MethodType):
            roots.append(("self", fn.__self__, (), True, None))
            visit(fn.__func__, depth + 1)
            methods(type(fn.__self__), depth + 1)
            return
        if isinstance(fn, Jitted):
            visit(fn._f, depth + 1)
            return
        if not isinstance(fn, types.FunctionType):
            call = next((c.__dict__["__call__"] for c in type(fn).__mro__
                         if "__call__" in c.__dict__), None)
            if isinstance(call, types.FunctionType):  # an object called as a function
                roots.append((label, fn, (), True, None))
                visit(call, depth + 1)
                methods(type(fn), depth + 1)
            return
        scope = fn.__globals__
        if _others(scope.get("__name__")):  # (NumPy's, SciPy's: no user state)
            return
        library = str(scope.get("__name__", "")).partition(".")[0] in _LIBRARIES
        code = fn.__code__  # (what the roots below matter for: a call that runs it)
        if not library:
            roots.extend((f"{fn.__name__}.{name}", fn, ((True, name),), True, code)
                         for name in ("__defaults__", "__kwdefaults__"))
        values = []
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                values.append((name, cell.cell_contents, cell, ((True, "cell_contents"),)))
            except ValueError:
                continue
        names = sorted(_global_names(fn.__code__, set()))
        values += [(name, scope[name], scope, ((False, name),)) for name in names
                   if name in scope]
        for name, v, root, steps in values:
            if isinstance(v, np.ndarray):
                arrays.setdefault((id(root), steps), _Captured(name, root, steps))
                continue
            if not library:
                roots.append((name, root, steps, True, code))
            elif root is not scope and not (callable(v) or isinstance(v, str)):
                roots.append((name, root, steps, False, code))  # (pullback's own closure: its
                # cells are never rebound, and its functions are visited)
            if isinstance(v, types.ModuleType) and not _library(
                    v.__name__):  # config.W: a constant, as an attribute
                roots.extend((f"{name}.{n}", v.__dict__, ((False, n),), True, code)
                             for n in names if n in v.__dict__ and not callable(v.__dict__[n]))
                for n in names:  # helpers.f(x): the globals that f reads too
                    if isinstance(v.__dict__.get(n), types.FunctionType):
                        visit(v.__dict__[n], depth + 1, f"{name}.{n}")
            if _is_random(v):
                generators.append(v)
            elif callable(v) and not isinstance(v, (type, np.ufunc)):
                visit(v, depth + 1, name)

    def methods(cls, depth):
        """The methods and properties of a class's object (``self.forward``, called from
        the method jitted)."""
        for c in cls.__mro__:
            if _library(c.__module__):
                continue
            for v in list(c.__dict__.values()):
                if isinstance(v, property):
                    v = v.fget
                elif isinstance(v, (staticmethod, classmethod)):
                    v = v.__func__
                if isinstance(v, types.FunctionType):
                    visit(v, depth)

    visit(f, 0)
    return list(arrays.values()), generators, roots, seen, complete[0]


class _Watched:
    """An array the function reaches other than as an argument, a closure's or a global's
    value (through an attribute, a container, a default argument): a constant of the
    program, and NumPy work done on it alone was done at the trace. Its bytes at the trace
    are kept, and a call that finds it changed in place, or another array in its place,
    traces again."""

    __slots__ = ("label", "root", "steps", "array", "shape", "data", "first")

    def __init__(self, label, root, steps, array, data, first=True):
        self.label, self.root, self.steps, self.array, self.data = (
            label, root, steps, array, data)
        self.shape = array.shape
        self.first = first  # (an array reached again: its bits are compared at the first)

    def current(self):
        return _follow(self.root, self.steps)

    def changed(self):
        try:
            x = self.current()
        except (LookupError, AttributeError, TypeError, ValueError):
            return True
        if x is not self.array or x.shape != self.shape:
            return True
        return self.first and _bits_changed(x, self.data)

    def restore(self):
        """Put back what the trace found here: the function changed it, and runs eagerly."""
        try:
            a = self.array
            if self.current() is a:
                data = self.data
                saved = np.frombuffer(data, a.dtype) if type(data) is bytes else data.view(
                    a.dtype)
                np.copyto(a, saved.reshape(a.shape))
                return
            _assign(self.root, self.steps, self.array)  # (another array was put there)
        except (LookupError, AttributeError, TypeError, ValueError):
            pass  # (a read-only array, an immutable container: left as the trace left it)


class _WatchedNumber(_Watched):
    """A Python or NumPy number the function reaches the same ways (``self.training``, a
    global ``N``, a closure's ``scale``): a constant of the program too, so a call that
    finds another number there (or the same one of another type) traces again."""

    __slots__ = ()

    def __init__(self, label, root, steps, number):
        super().__init__(label, root, steps, np.empty(0), None)
        self.array = number

    def changed(self):
        try:
            x = self.current()
        except (LookupError, AttributeError, TypeError, ValueError):
            return True
        n = self.array
        return x is not n and (type(x) is not type(n) or _number_key(x) != _number_key(n))

    def restore(self):
        try:
            _assign(self.root, self.steps, self.array)
        except (LookupError, AttributeError, TypeError, ValueError):
            pass  # (an immutable container: left as the trace left it)


_NUMBERS = (bool, int, float, complex, np.number, np.bool_)

# what _reach does not look into: values that hold no arrays, or whose arrays are reached
# another way (a module's by the names the functions use, a class's through its instances)
_OPAQUE = (str, bytes, int, float, complex, type(None), type, types.ModuleType, np.generic,
           np.dtype, np.ufunc, range, slice, types.BuiltinFunctionType, types.CodeType)
_BY_VALUE = (*_OPAQUE, frozenset)  # the static arguments keyed by value
_SCAN_DEPTH = 100  # functions calling functions, through globals and closures
_REACH_DEPTH = 6  # containers and attributes below a root
_REACH_VALUES = 20000  # containers and objects looked into, per trace


_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _snapshot(x):
    """The bits of array ``x``: its bytes, or past 128 KiB (where an elementwise comparison
    is the faster one) a copy viewed as unsigned integers."""
    bits = _BITS.get(x.dtype.itemsize)
    if bits is None or x.nbytes < 1 << 17 or x.dtype.fields is not None:
        return x.tobytes()
    return x.view(bits).copy()


def _bits_changed(x, data):
    """Whether array ``x`` no longer holds the bits ``_snapshot`` took."""
    if type(data) is bytes:
        return x.tobytes() != data
    return not (x.view(data.dtype) == data).all()  # (its bits, as unsigned integers)


class _WatchedObject(_Watched):
    """Any other value the function reaches through an attribute, a container, a closure
    or a global (a string ``self.mode``, ``None``, a function ``self.act``, a list): a
    call that finds another object there (a string of other characters) traces again."""

    __slots__ = ()

    def __init__(self, label, root, steps, value):
        super().__init__(label, root, steps, np.empty(0), None)
        self.array = value

    def changed(self):
        try:
            x = self.current()
        except (LookupError, AttributeError, TypeError, ValueError):
            return True
        v = self.array
        if x is v:
            return False
        return type(x) is not type(v) or not isinstance(v, (str, bytes)) or x != v

    restore = _WatchedNumber.restore


class _WatchedItems(_Watched):
    """What a container or an object holds, beyond its values (watched one by one): its
    length, keys or attribute names, so ``layers.append(W)``, ``cfg["scale"] = 10`` and
    ``o.scale = 5`` (read as ``getattr(o, "scale", 1.0)``) trace again; a set's or a
    frozenset's elements."""

    __slots__ = ()

    def __init__(self, label, x):
        super().__init__(label, None, (), np.empty(0), None)
        self.array, self.data = x, _items(x)

    def changed(self):
        x, saved = self.array, self.data
        if isinstance(x, (set, frozenset)):
            return x != saved
        if isinstance(x, (list, tuple, collections.deque)):
            return len(x) != len(saved)
        # (a dict's own keys: a subclass may iterate otherwise, as scipy.sparse's dok_matrix)
        now = dict.keys(x) if isinstance(x, dict) else x.__dict__ if isinstance(x, type) else (
            getattr(x, "__dict__", None) or {})
        return len(now) != len(saved) or any(map(operator.ne, now, saved))  # (the keys)

    def restore(self):
        x, saved = self.array, self.data
        with contextlib.suppress(LookupError, AttributeError, TypeError, ValueError):
            if isinstance(x, (list, collections.deque)):
                x.clear()
                x.extend(saved)
            elif isinstance(x, (dict, set)):
                x.clear()
                x.update(saved)
            elif isinstance(x, type):
                for n in [n for n in x.__dict__ if n not in saved]:
                    delattr(x, n)
                for n, v in saved.items():
                    if x.__dict__.get(n, _MISSING) is not v:
                        setattr(x, n, v)
            elif isinstance(getattr(x, "__dict__", None), dict):
                x.__dict__.clear()
                x.__dict__.update(saved)


_MISSING = object()


def _items(x):
    """A shallow copy of what ``x`` holds, by key (a set: itself)."""
    if isinstance(x, (list, tuple, collections.deque)):
        return dict(enumerate(x))
    if isinstance(x, (set, frozenset)):
        return frozenset(x)
    if isinstance(x, dict):
        return dict(x)
    if isinstance(x, type):
        return dict(x.__dict__)
    return dict(getattr(x, "__dict__", None) or {})


# the modules whose classes and functions hold no user state
def _library(module):
    top = str(module or "").partition(".")[0]
    return top in _LIBRARIES or top in sys.stdlib_module_names or top == "builtins"


def _others(module):
    """Whether a function of this module holds no user state (its caches may change):
    NumPy's, SciPy's, the standard library's; pullback's own hold the user's functions."""
    return _library(module) and str(module or "").partition(".")[0] != "pullback"


def _reach(roots, visited, read=None):
    """``(watched, generators, complete)``: what is reachable from ``roots`` (arrays as
    ``_Watched``, numbers as ``_WatchedNumber``, every other value by identity and every
    container by its keys), the random generators, and whether the walk saw everything.
    Functions in ``visited`` were scanned already (their closures' arrays are traced);
    other functions reached (an argument, a method, a property, another module's) are
    looked into: closures, defaults and the globals they read. An iterator (a batch
    iterator ``next(batches)``) is state the function changes: its call runs eagerly.
    With ``read`` (what ran in the trace: ``_reading``), an object's attributes and its
    class's are followed only where their names are among those its code can read (a
    class's special methods always), and a function only where it ran: what the function
    can have read, not all that an object it reaches holds. An array reached twice is
    compared once (``first``)."""
    watched: list[_Watched] = []
    generators: list[Any] = []
    seen: set[int] = set()
    data: dict[int, Any] = {}
    complete = True
    budget = [_REACH_VALUES]

    def walk(x, label, root, steps, depth, rebindable=True):
        nonlocal complete
        if isinstance(x, np.ndarray) and x.dtype.kind != "O":
            first = id(x) not in data
            if first:
                data[id(x)] = _snapshot(x)
            watched.append(_Watched(label, root, steps, x, data[id(x)], first))
            return
        if isinstance(x, _NUMBERS) and steps:
            watched.append(_WatchedNumber(label, root, steps, x))
            return
        if isinstance(x, Traced):
            return  # (an input, captured)
        if steps and rebindable and not isinstance(x, types.ModuleType):
            watched.append(_WatchedObject(label, root, steps, x))
        if isinstance(x, type) and _library(x.__module__) or isinstance(x, (
                _OPAQUE, Jitted)) and not isinstance(x, type) or id(x) in seen:
            return
        budget[0] -= 1
        if budget[0] < 0 or depth > _REACH_DEPTH:
            complete = False
            return
        seen.add(id(x))
        if _is_random(x):
            generators.append(x)
            return
        if isinstance(x, collections.abc.Iterator):
            raise _Untraceable(
                f"it reaches {label}, an iterator, whose next items the program would not "
                "read", "Pass the items it takes (the batch) as arguments to jit it.")
        items: Any
        if isinstance(x, Tracked):  # (a param: its value, and the .grad backward() adds to)
            items = [(True, n) for n in ("value", "grad") if n == "value" or hasattr(x, n)]
        elif isinstance(x, np.ndarray):  # of objects: each element, by identity
            items = [(False, np.unravel_index(i, x.shape)) for i in range(x.size)]
        elif isinstance(x, (list, tuple, collections.deque)):
            if not isinstance(x, tuple):
                watched.append(_WatchedItems(label, x))
            items = [(False, i) for i in range(len(x))]
        elif isinstance(x, dict):
            watched.append(_WatchedItems(label, x))
            items = [(False, k) for k in x]
        elif isinstance(x, (set, frozenset)):
            watched.append(_WatchedItems(label, x))
            return
        elif isinstance(x, types.FunctionType):
            if id(x) in visited or _others(x.__globals__.get("__name__")) or (
                    read is not None and x.__code__ not in read.codes):
                return  # (scanned, a library's, or one that did not run)
            cells = zip(x.__code__.co_freevars, x.__closure__ or ())
            for name, cell in cells:
                walk_at(cell, ((True, "cell_contents"),), name, cell, (), depth, False)
            for name in ("__defaults__", "__kwdefaults__"):
                walk_at(x, ((True, name),), f"{x.__name__}.{name}", x, (), depth, False,
                        False)
            scope = x.__globals__
            if not _library(scope.get("__name__")):  # the globals it reads
                for name in sorted(_global_names(x.__code__, set())):
                    if name in scope and not isinstance(scope[name], types.ModuleType):
                        walk_at(scope, ((False, name),), name, scope, (), depth + 1, False)
            return
        elif isinstance(x, functools.partial):
            items = [(True, "args"), (True, "keywords"), (True, "func")]
        elif isinstance(x, types.MethodType):
            items = [(True, "__self__"), (True, "__func__")]
        elif isinstance(x, property):
            items = [(True, "fget"), (True, "fset"), (True, "fdel")]
        elif isinstance(x, (staticmethod, classmethod)):
            items = [(True, "__func__")]
        elif isinstance(x, type):  # a class reached directly (K.W) or an instance's
            watched.append(_WatchedItems(label, x))
            for n in list(x.__dict__):
                if n not in ("__dict__", "__weakref__", "__doc__", "__module__") and (
                        read is None or n in read.names or n[:2] == "__" == n[-2:]):
                    walk_at(x, ((True, "__dict__"), (False, n)), label, root, steps,
                            depth + 1)
            return
        else:
            names = list(getattr(x, "__dict__", None) or ())
            if isinstance(getattr(x, "__dict__", None), dict):
                watched.append(_WatchedItems(label, x))
            for cls in type(x).__mro__:
                slots = cls.__dict__.get("__slots__", ())
                names += [slots] if isinstance(slots, str) else [
                    n for n in slots if n not in ("__dict__", "__weakref__")]
                if not _library(cls.__module__):  # its methods, properties, attributes
                    walk(cls, cls.__name__, cls, (), depth + 1)
            items = [(True, n) for n in names if read is None or n in read.names]
        fixed = isinstance(x, (tuple, types.MethodType, functools.partial, property,
                              staticmethod, classmethod))  # (what cannot be rebound)
        for step in items:
            walk_at(x, (step,), label, root, steps, depth + 1, rebindable=not fixed)

    def walk_at(x, path, label, root, steps, depth, named=True, rebindable=True):
        """Walk the value at ``path`` from ``x`` (a label of its own unless ``named``)."""
        try:
            value = x
            for attribute, key in path:
                value = getattr(value, key) if attribute else value[key]
        except (LookupError, AttributeError, TypeError, ValueError):
            return
        for attribute, key in path if named else ():
            if attribute and key == "__dict__":
                continue
            label = f"{label}.{key}" if attribute else f"{label}[{key!r}]"
        walk(value, label, root, steps + path, depth, rebindable)

    for label, root, steps, rebindable, code in roots:
        if read is not None and code is not None and code not in read.codes:
            continue  # (the state of a function that did not run)
        walk_at(root, steps, label, root, (), 0, False, rebindable and (steps[-1][1] not in (
            "__defaults__", "__kwdefaults__") if steps else True))  # (rebound rarely)
    found = watched[:]  # (walk and walk_at hold each other, and these: emptied, a walk
    watched.clear(), data.clear(), seen.clear()  # not kept is freed at once, not by the
    return found, generators, complete  # collector, which an eager call then pays for)


def _random_state(generators):
    """What a draw changes: NumPy's global state, Python's ``random`` module's, that of the
    generators reached, and the count of fresh seeds drawn (``np.random.default_rng()``
    made inside the function)."""
    legacy = np.random.get_state(legacy=False)
    states = [legacy["state"]["pos"], legacy["state"]["key"].tobytes(), legacy["has_gauss"],
              random.getstate(), _entropy[0]]
    for g in generators:
        if isinstance(g, random.Random):
            states.append(g.getstate())
            continue
        bits = g.bit_generator if isinstance(g, np.random.Generator) else getattr(
            g, "_bit_generator", g)
        states.append(repr(bits.state))
    return states


# what makes the attributes a function reads unknowable from the names in its code
_DYNAMIC = frozenset({"__dict__", "vars", "__getattribute__", "dir"})


class _Reading:
    """The attribute names the code run inside ``_reading`` can read: ``names``, or None
    where they cannot be known."""

    def __init__(self):
        self.codes: dict[types.CodeType, str] = {}
        self.asked: set[Any] = set()
        self.names: set[str] | None = None
        self.compiled = False  # (a call into another library's compiled code)


_active: list[_Reading] = []  # the traces reading now, in any thread
_builtins: list[Any] = []  # builtins' getattr and hasattr while they are wrapped
_active_lock = threading.Lock()


def _asking_getattr(obj, name, *default):  # builtins.getattr while a trace reads
    if type(name) is str:  # (another type: getattr's own TypeError)
        for reading in tuple(_active):
            reading.asked.add(name)
    return _builtins[0](obj, name, *default)


def _asking_hasattr(obj, name):
    if type(name) is str:
        for reading in tuple(_active):
            reading.asked.add(name)
    return _builtins[1](obj, name)


def _ask(reading, start):
    """Add ``reading`` to the traces told of the names given to getattr and hasattr
    (``start``), or take it off; the first puts the wrappers in builtins, the last puts
    builtins' own back."""
    with _active_lock:
        if start:
            if not _active:  # (stand-ins: equal to builtins' own, with their docs)
                _builtins[:] = [builtins.getattr, builtins.hasattr]
                builtins.getattr, builtins.hasattr = (stand_in(_builtins[0], _asking_getattr),
                                                      stand_in(_builtins[1], _asking_hasattr))
            _active.append(reading)
            return
        _active.remove(reading)
        if not _active:
            builtins.getattr, builtins.hasattr = _builtins
            _builtins.clear()


@contextlib.contextmanager
def _reading():
    """For the length of one trace, the names of the attributes its code can read: those
    in the code of every function that runs (its names and string constants, as
    ``getattr(self, "offset", 0)`` has it) and those given to ``getattr`` and ``hasattr``
    (made at run time). The functions that run are seen by ``sys.setprofile``, which calls
    on to a profile function set before; where one set in C (cProfile) is there, or the
    user's code reads ``__dict__`` or ``vars()``, or calls another library's compiled
    functions (Cython's), the names are None: anything."""
    reading = _Reading()
    previous = sys.getprofile()
    if previous is not None and not callable(previous):
        yield reading
        return
    codes = reading.codes

    def profile(frame, event, arg):
        if event == "call":
            codes[frame.f_code] = frame.f_globals.get("__name__", "")
        elif event == "c_call" and not reading.compiled:  # another library's compiled
            module = getattr(arg, "__module__", None)  # function (Cython's), whose
            reading.compiled = type(module) is str and not _library(module)  # reads no
            # code object shows (a builtin method has no module)
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(profile)
    _ask(reading, True)
    try:
        yield reading
    finally:
        _ask(reading, False)
        sys.setprofile(previous)
    if reading.compiled:
        return  # (names: None)
    names = set(reading.asked)
    for code, module in codes.items():
        if not _library(module) and not _DYNAMIC.isdisjoint(code.co_names):
            return  # (names: None)
        names.update(code.co_names)
        for c in code.co_consts:  # (operator.attrgetter("link.inverse"): each part)
            if type(c) is str:
                names.update(c.split(".") if "." in c else (c,))
    reading.names = names


_entropy = [0]  # the fresh seeds drawn in traces (NumPy's SeedSequence() without entropy)
_raising = [0]  # the warnings filters set to "error" in traces


@contextlib.contextmanager
def _counting():
    """For the length of one trace, count the fresh seeds NumPy draws (a generator the
    function makes from fresh entropy, ``np.random.default_rng()``, draws one) and the
    warnings filters set to raise (a function that sets one to catch a RuntimeWarning takes
    another path where a replay would warn): NumPy's ``randbits`` and ``warnings``'
    ``_add_filter`` are wrapped, and put back after."""
    from numpy.random import bit_generator
    draw, add = getattr(bit_generator, "randbits", None), getattr(warnings, "_add_filter", None)

    def randbits(k):
        _entropy[0] += 1
        return draw(k)

    def _add_filter(*item, append):
        if item and item[0] == "error":
            _raising[0] += 1
        return add(*item, append=append)

    try:
        if draw is not None:
            bit_generator.randbits = randbits
        if add is not None:
            warnings._add_filter = _add_filter
        yield
    finally:
        if draw is not None:
            bit_generator.randbits = draw
        if add is not None:
            warnings._add_filter = add


def _names(f, args, kwargs):
    """A parameter name per argument position and keyword, from ``f``'s signature."""
    try:
        import inspect
        params = list(inspect.signature(f).parameters.values())
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                       p.POSITIONAL_OR_KEYWORD)]
        star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "arg")
    except (TypeError, ValueError):
        names, star = [], "arg"
    pos = [names[i] if i < len(names) else f"{star}{i}" for i in range(len(args))]
    return pos + list(kwargs)


def _takes_nothing(f):
    """Whether ``f`` can be called without arguments (or its signature is unknown)."""
    import inspect
    try:
        inspect.signature(f).bind()
    except TypeError:
        return False
    except ValueError:  # (no signature to read)
        pass
    return True


class Jitted:
    """A function replayed from generated NumPy source; made by ``pb.jit``. ``traces``
    counts the traces it has run.

    >>> step = pb.jit(np.tanh)
    >>> step(np.zeros(2)), step(np.ones(2)).round(3), step.traces
    (array([0., 0.]), array([0.762, 0.762]), 1)
    """

    def __init__(self, f: Callable[..., Any]) -> None:
        if not callable(f):
            raise TypeError(f"pullback: pb.jit takes the function to compile first (got "
                            f"{type(f).__name__})")
        functools.update_wrapper(self, f)
        self._f = f
        name = "".join(c if c.isalnum() else "_" for c in getattr(f, "__name__", "f"))
        name = name.strip("_") or "f"
        self._fname = f"_{name}" if keyword.iskeyword(name) or name[0].isdigit() else name
        self._programs: dict[Any, list[_Program]] = {}
        self._bound: dict[int, tuple[Any, Jitted]] = {}  # (a method's, by object)
        self._captured, self._generators, self._roots, self._scanned, _ = _scan(f)
        self.traces = 0
        self._warned = self._warned_reach = False
        self._changed = ""  # the last array seen changed between calls (for the warning)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(args, kwargs)[0]

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """``@pb.jit`` on a method: ``m.loss`` is ``pb.jit`` of the bound method, one per
        object (kept while the object lives)."""
        if obj is None:
            return self
        bound = self._bound.get(id(obj))
        if bound is not None and bound[0]() is obj:
            return bound[1]
        jitted = Jitted(types.MethodType(self._f, obj))
        key = id(obj)
        ref: Any
        try:
            ref = weakref.ref(obj, lambda _, key=key: self._bound.pop(key, None))  # type: ignore[misc]
        except TypeError:  # (an object without weak references: kept)
            ref = (lambda obj=obj: obj)
        self._bound[key] = (ref, jitted)
        return jitted

    def source(self, *args: Any, **kwargs: Any) -> str:
        """The generated Python source that these arguments run (tracing it if needed).

        >>> step = pb.jit(lambda x: np.sum(np.sin(x) * 2.0))
        >>> print(step.source(np.ones(3)))
        def _lambda(x):
            sin_1 = np.sin(x)
            multiply_2 = np.multiply(sin_1, 2.0, out=sin_1)
            sum_3 = np.add.reduce(multiply_2, axis=None)
            return sum_3
        <BLANKLINE>
        """
        if not args and not kwargs and not _takes_nothing(self._f):
            raise TypeError(
                f"pullback: {self._fname}.source(*args, **kwargs) shows the program that a "
                f"call with these arguments runs, and was given none: pass the arguments "
                f"you call it with, as step.source(x) for step(x)")
        program = self._run(args, kwargs)[1]
        if program is None:
            raise RuntimeError(
                f"pullback: {self._fname} ran eagerly for these arguments (past "
                f"{MAX_TRACES} traces, or with tracked arguments), so there is no source"
            )
        return program.source

    def _run(self, args, kwargs):
        sig: list[Any] = []
        inputs: list[Any] = []
        tracked = _signature(args, sig, inputs)
        if kwargs:
            tracked = _signature(kwargs, sig, inputs) or tracked
        if self._captured:
            captured = [c.get() for c in self._captured]
            sig.append(tuple(_leaf_key(x) for x in captured))
            inputs += [x for x in captured if isinstance(x, np.ndarray)]
        if len(inputs) > 1 and len(set(map(id, inputs))) < len(inputs):
            # the same array twice (f(x, x)): one traced value in the program, as x is x
            first: dict[int, int] = {}
            sig.append((_BY_ID, tuple(first.setdefault(id(a), i) for i, a in enumerate(
                inputs))))
        try:
            key = tuple(sig)
            hash(key)
        except TypeError:
            other = next((type(x) for x in tree_flatten((args, kwargs))[0]
                          if is_foreign(x) or is_lazy(x)), None)
            if other is not None:
                raise TypeError(
                    f"pullback: pb.jit({self._fname}) got a {other.__module__}."
                    f"{other.__name__}: pb.jit records NumPy programs. Call the function "
                    "without pb.jit on such arrays (the transforms build that library's "
                    "own graph), or pass NumPy arrays"
                ) from None
            raise TypeError(
                f"pullback: pb.jit({self._fname}) got an argument that is neither an array "
                "nor hashable; pass arrays, numbers, strings and pytrees of them"
            ) from None
        if tracked:  # inside a trace or a transform
            return self._f(*args, **kwargs), None
        programs = self._programs.get(key)
        if programs is not None:
            i = 0
            while i < len(programs):
                program = programs[i]
                if program is _EAGER:
                    return self._f(*args, **kwargs), None
                if program.watched and self._stale(program.watched):
                    del programs[i]  # its constants are not the arrays' values any more
                    continue
                if program.other_errstate():
                    i += 1
                    continue
                try:
                    out = program.run(*inputs)
                except Exception:  # a path the trace did not take (the except branch of
                    return self._f(*args, **kwargs), None  # an np.linalg.solve): eager's
                if out is not RETRACE:
                    return out, program
                i += 1
        if self.traces >= MAX_TRACES:
            if not self._warned:
                self._warned = True
                changed = (f", or {self._changed}, an array or a number it reads through an "
                           "attribute, a container, a closure or a global, changed since the "
                           "trace (pass it as an argument)") if self._changed else ""
                warnings.warn(
                    f"pullback: pb.jit({self._fname}) traced {MAX_TRACES} times (new shapes, "
                    f"or Python decisions on values that keep changing{changed}); further "
                    "new cases run eagerly. Make such values static (Python numbers) or keep "
                    "the decision in NumPy (np.where).", RuntimeWarning, stacklevel=3)
            return self._f(*args, **kwargs), None
        self.traces += 1
        try:
            program = self._trace(args, kwargs)
        except _Rescanned:
            self.traces -= 1
            return self._run(args, kwargs)
        except _Untraceable as why:
            warnings.warn(
                f"pullback: pb.jit({self._fname}) cannot record this call ({why}); calls "
                f"with these shapes run eagerly. {why.advice}", RuntimeWarning,
                stacklevel=3)
            self._programs[key] = [_EAGER]
            return self._f(*args, **kwargs), None
        # the first result is the program's too: the same fresh arrays as every replay
        try:
            out = program.run(*inputs)
        except Exception:
            out = RETRACE
        if out is RETRACE:  # not replayable even on the arguments it was traced on
            warnings.warn(
                f"pullback: pb.jit({self._fname}) recorded a program that does not replay "
                "its own arguments (a decision on state other than them, or a library that "
                "reads arrays outside NumPy's protocols); calls with these shapes run "
                "eagerly", RuntimeWarning, stacklevel=3)
            self._programs[key] = [_EAGER]
            return self._f(*args, **kwargs), None
        self._programs.setdefault(key, []).append(program)
        return out, program

    def _stale(self, watched):
        for w in watched:
            if w.changed():
                self._changed = w.label
                return True
        return False

    def _trace(self, args, kwargs):
        trace = _Trace()
        rescan = _scan(self._f)  # (globals defined after pb.jit(f), cells filled since)
        again = [(id(c.root), c.steps) for c in rescan[0]] != [
            (id(c.root), c.steps) for c in self._captured]
        self._captured, self._generators, self._roots, self._scanned, seen_all = rescan
        if again:  # other captured arrays: the key and the inputs change
            self._programs.clear()
            raise _Rescanned
        flat, treedef = tree_flatten((args, kwargs))
        names = _names(self._f, args, kwargs)
        slots = _leaf_names(names, args, kwargs)
        params, boxed, roots = [], [], list(self._roots)
        boxes: dict[int, Traced] = {}  # the same array twice: one box (the key says so)
        for x, name in zip(flat, slots):
            if isinstance(x, _TRACED):
                box = boxes.setdefault(id(x), Traced(x, trace.level))
                params.append((name, box))
                boxed.append(box)
            else:
                boxed.append(x)
                if not isinstance(x, _OPAQUE):  # an object: its arrays are constants
                    roots.append((name, x, (), True, None))
        targs, tkwargs = tree_unflatten(treedef, boxed)
        swapped: list[tuple[_Captured, Any, Traced]] = []
        watched: list[_Watched] = []
        _traces[trace.level] = trace
        activate()  # NumPy's stand-ins in place while the trace runs
        try:
            for c in self._captured:
                v = c.get()
                if isinstance(v, np.ndarray):
                    box = boxes.setdefault(id(v), Traced(v, trace.level))
                    params.append((c.name, box))
                    c.set(box)
                    swapped.append((c, v, box))
            watched, generators, complete = _reach(roots, self._scanned)
            for w in watched:  # (a write into one of these is seen by _restore)
                if type(w) is _Watched:
                    trace.constants[id(w.array)] = None
            generators += self._generators
            before = _random_state(generators)
            raising = _raising[0]
            with _counting(), _reading() as read:
                out = self._f(*targs, **tkwargs)
        except _Untraceable:
            _restore(watched)
            _restore_handed(trace)
            raise
        finally:
            rebound = ""
            for c, v, box in reversed(swapped):
                if c.get() is not box:
                    rebound = c.name
                with contextlib.suppress(LookupError, AttributeError, TypeError, ValueError):
                    c.set(v)
            del _traces[trace.level]
            deactivate()
        if _restore_handed(trace):
            _restore(watched)
            raise _Untraceable(
                "it writes through np.asarray(x) or x.__array__() of a traced array, which "
                "is x's own memory, as in NumPy", "Write the update out of place "
                "(v = x + 1.0 for v = np.asarray(x); v += 1.0) to jit it.")
        if _random_state(generators) != before:
            _restore(watched)
            raise TypeError(
                f"pullback: {self._fname} draws random numbers (np.random, Python's random, "
                "a Generator it reaches or is passed, or one it makes from fresh entropy "
                "with np.random.default_rng()), which pb.jit would replay as the same draw "
                "on every call. Draw them outside and pass them as arguments: "
                "pb.jit(f)(x, noise) with noise = rng.normal(...)"
            )
        changed = _restore(watched)
        if changed or rebound:
            raise _Untraceable(
                f"it changes {changed or rebound}, a value it reads from outside its "
                "arguments", "Pass what changes as an argument and return its new value "
                "to jit it.")
        if _raising[0] != raising:
            raise _Untraceable(
                "it sets a warnings filter to raise, so a NumPy warning takes another path",
                "Catch the condition with NumPy (np.isfinite, np.errstate) to jit it.")
        if _written(trace):
            raise _Untraceable(
                "it writes into an array after a NumPy call took it (the program would "
                "replay the call on the array's last values)", "Make a new array for "
                "each use (np.zeros(3) inside the loop, or w = w * 3) to jit it.")
        if read.names is not None:  # watched from now on: what the code can have read
            watched, _, complete = _reach(roots, self._scanned, read)
        if not (complete and seen_all) and not self._warned_reach:
            self._warned_reach = True
            warnings.warn(
                f"pullback: pb.jit({self._fname}) reaches more containers, attributes and "
                f"functions than it looks into ({_REACH_VALUES} values, {_REACH_DEPTH} deep; "
                f"calls {_SCAN_DEPTH} deep), so a change to the state beyond them between "
                "calls is not seen; pass the arrays that change as arguments",
                RuntimeWarning, stacklevel=3)
        outs, out_def = tree_flatten(out)
        for o in outs:
            if isinstance(o, Tracked) and not isinstance(o, Traced):
                raise TypeError(
                    f"pullback: pb.jit({self._fname}) returned a tracked value (of pb.param "
                    "or of a transform around pb.jit); jit functions of plain arrays, such as "
                    "pb.grad(f) or pb.gradient(...) of a closure, that return plain results"
                )
            if not isinstance(o, (Traced, *_SCALARS, str, type(None))):
                raise TypeError(
                    f"pullback: pb.jit({self._fname}) returned a {type(o).__name__}; return "
                    "arrays, numbers and tuples, lists and dicts of them"
                )
        name = self._fname
        used = {n for n, _ in params}
        while name in used:
            name = f"_{name}"
        source, run, keep = _emit(name, trace, _unique(params), outs, out_def)
        return _Program(source, run, keep, tuple(watched), trace.errors, trace.token)


def _written(trace):
    """Whether a constant of the trace's calls was written into after a call took it; the
    trace lets go of them (what only the trace holds is private: _jit_passes)."""
    written = any(_bits_changed(*c) for c in trace.constants.values() if c is not None)
    trace.constants.clear()
    return written


def _restore_handed(trace):
    """Whether an array ``__array__`` handed out as it is was written through during the
    trace; each is put back as it was (the call runs eagerly, and writes it once)."""
    changed = [(a, data) for a, data in trace.handed.values() if _bits_changed(a, data)]
    trace.handed.clear()
    for a, data in changed:
        with contextlib.suppress(ValueError):  # (one made read-only since: left)
            saved = np.frombuffer(data, a.dtype) if type(data) is bytes else data.view(
                a.dtype)
            np.copyto(a, saved.reshape(a.shape))
    return bool(changed)


def _restore(watched):
    """The label of the first of ``watched`` that the trace changed, after putting each
    back as it was (the call runs eagerly), or ""."""
    changed = [w for w in watched if w.changed()]
    for w in changed:
        w.restore()
    return changed[0].label if changed else ""


def _unique(params):
    used: set[str] = set()
    out = []
    for name, box in params:
        base = name if name.isidentifier() and not keyword.iskeyword(name) else f"_{name}"
        if base in ("np", "RETRACE", "operator", "math", "_same", "_same_array"):
            base = f"{base}_"
        n, k = base, 1
        while n in used:
            k += 1
            n = f"{base}_{k}"
        used.add(n)
        out.append((n, box))
    return out


def _leaf_names(names, args, kwargs):
    """A name for every leaf of ``(args, kwargs)``: the parameter's, numbered in pytrees."""
    out = []
    for name, value in zip(names, list(args) + list(kwargs.values())):
        flat, _ = tree_flatten(value)
        if len(flat) == 1 and not isinstance(value, (tuple, list, dict)):
            out.append(name)
        else:
            out.extend(f"{name}_{i}" for i in range(len(flat)))
    return out


def jit(f: Callable[..., Any]) -> Jitted:
    """``f`` recorded once per input structure and replayed as generated NumPy code.

    The first call with a new structure (pytree structure, shapes and dtypes of the array
    arguments, values of the other arguments) runs ``f`` with its arrays traced and
    compiles what it did into Python source; later calls run that source. ``f`` may be any
    transform: ``pb.jit(pb.value_and_grad(loss))`` records the forward and backward pass
    as one program. Python decisions on traced values (``if np.sum(x) > 0``, ``float(x)``,
    ``.item()``) become guards: a failed guard traces the new path (up to ``MAX_TRACES``
    traces, then further cases run eagerly with a warning). ``step.source(*args)`` shows
    the program.

    >>> step = pb.jit(pb.value_and_grad(lambda x: np.sum(x ** 2)))
    >>> step(np.array([1.0, 2.0]))
    (np.float64(5.0), array([2., 4.]))
    >>> step(np.array([3.0, 0.5]))
    (np.float64(9.25), array([6., 1.]))
    """
    return Jitted(f)
