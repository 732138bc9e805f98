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
``x``, ``np.reshape(x, (n, -1))`` with a traced ``n``: ``_value_shaped``). Arrays the
function reaches other than as arguments, closures' and globals' values are constants of the
program, compared with their values at the trace on every call (``_Watched``).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import keyword
import linecache
import math
import numbers
import operator
import sys
import types
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ._jit_passes import (
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
from .backend import is_foreign
from .core import Tracked, apply, map_boxes, memory, plain, top_level
from .lazy import is_lazy
from .registry import getitem
from .tree import tree_flatten, tree_unflatten

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


class _Untraceable(Exception):
    """Raised inside a trace that met what a program cannot replay (a write into an array
    in place): that call runs eagerly instead, and so do later calls of its structure."""


def _record(box, func, args, kwargs):
    """Call ``func`` on the values under the traced boxes and record the call."""
    trace = _trace_of(box)
    if kwargs.get("out") is not None or getattr(func, "__name__", None) == "at" or (
            func in core._IN_PLACE):
        raise _Untraceable(f"{getattr(func, '__name__', func)} writes into an array in place")
    args = tuple(map_boxes(a, plain) for a in args)  # finished boxes are constants
    kwargs = {k: map_boxes(v, plain) for k, v in kwargs.items()}
    out = func(*[map_boxes(a, memory) for a in args],
               **{k: map_boxes(v, memory) for k, v in kwargs.items()})
    start = len(trace.events)
    result = _wrap(trace, out, (func, args, kwargs), args)
    if len(trace.events) > start and (errors := np.geterr()) != trace.errors:
        trace.errstate[id(trace.events[start])] = {
            k: v for k, v in errors.items() if v != trace.errors[k]}
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
    if isinstance(out, _SCALARS):
        for a in args:  # the function handed back its input (astype to the same dtype)
            if isinstance(a, Traced) and a.value is out:
                return a
        box = Traced(out, trace.level, node)
        trace.events.append(box)
        return box
    if isinstance(out, (tuple, list)):  # several outputs: a hub and one item per output
        hub = Traced(out, trace.level, node)
        trace.events.append(hub)
        items = [_wrap(trace, o, (getitem, (hub, i), {}), ()) for i, o in enumerate(out)]
        return type(out)(*items) if hasattr(type(out), "_fields") else type(out)(items)
    return out  # None, a dtype, a string: the same on every call of this structure


# functions whose result depends only on shapes and dtypes, which key the cache: NumPy's
# own (the dispatch hands those over, not the wrappers in NumPy's namespace: construct.py)
_STATIC = frozenset(getattr(f, "_pb_original", f) for f in (
    np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj,
    np.min_scalar_type))


def _run_primitive(body, args, kwargs):
    """A ``pb.primitive``'s body on traced values: one recorded call (core's hook)."""
    for x in tree_flatten((list(args), kwargs))[0]:
        if isinstance(x, Traced):
            return _record(x, body, args, kwargs)
    return body(*args, **kwargs)


core: Any = sys.modules[Tracked.__module__]  # core.py, whose hook this is
core.run_primitive = _run_primitive


def _traced_in(index):
    if isinstance(index, Traced):
        return index.level in _traces
    if type(index) is tuple or type(index) is list:
        return any(_traced_in(i) for i in index)
    if type(index) is slice:
        return _traced_in((index.start, index.stop, index.step))
    return False


_write_tracked = core.writes.write  # rules/writes.py's (pullback's __init__ imports it first)


def _write(x, index, v):
    """``x[index] = v`` on a tracked ``x`` (core's hook): the write's index is a constant of
    the recorded update, so one computed from traced values (``y[y > 2] = 0``) cannot be
    recorded, and the call runs eagerly, as a write into a traced array does."""
    if _traced_in(index):
        raise _Untraceable("x[index] = v with an index computed from traced values")
    return _write_tracked(x, index, v)


core.writes.write = _write


def _guard(box, kind, value):
    _trace_of(box).events.append((box, kind, value))
    return value


class Traced(Tracked):
    """A value traced by ``pb.jit``: NumPy calls on it are recorded, Python decisions on it
    become guards of the recorded program."""

    __slots__ = ()

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
        value = np.array(self.value, dtype=dtype)
        _guard(self, ("array", value.dtype), value.copy())
        return value

    flags = property(lambda self: np.asarray(self.value).flags)

    def __format__(self, spec):  # f"{loss:.3f}": a string made from the value, a guard
        return _guard(self, ("format", spec), format(self.value, spec))

    def __str__(self):
        return self.__format__("")

    def __repr__(self):
        return f"Traced({self.value!r})"


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
    return getattr(x, "__qualname__", None) or repr(x)


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
                inputs.append(c)
            else:
                tracked = _signature(c, sig, inputs) or tracked
        return tracked
    if t is np.ndarray:
        sig.append(x.shape)
        sig.append(x.dtype)
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
        return ((x.shape, x.dtype),)
    if isinstance(x, np.inexact):
        return (x.dtype,)
    t = type(x)
    if t is float and not (x and x == x) or t is complex:  # 0.0 and -0.0 are ==, and a
        return (t, _number_key(x))  # NaN is equal to nothing
    return (t, x)  # a static value: part of the key (it must be hashable)


class _Program:
    __slots__ = ("source", "run", "keep", "watched")

    def __init__(self, source, run, keep, watched=()):
        self.source, self.run, self.keep, self.watched = source, run, keep, watched


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


_RANDOM = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)
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
    roots: list[tuple[str, Any, tuple]] = []
    seen: set[int] = set()

    def visit(fn, depth, label="f"):
        if depth > 6 or id(fn) in seen:
            return
        seen.add(id(fn))
        if isinstance(fn, functools.partial):
            roots.append((label, fn, ()))
            visit(fn.func, depth + 1)
            return
        if isinstance(fn, types.MethodType):
            roots.append(("self", fn.__self__, ()))
            visit(fn.__func__, depth + 1)
            return
        if isinstance(fn, Jitted):
            visit(fn._f, depth + 1)
            return
        if not isinstance(fn, types.FunctionType):
            call = next((c.__dict__["__call__"] for c in type(fn).__mro__
                         if "__call__" in c.__dict__), None)
            if isinstance(call, types.FunctionType):  # an object called as a function
                roots.append((label, fn, ()))
                visit(call, depth + 1)
            return
        scope = fn.__globals__
        library = str(scope.get("__name__", "")).partition(".")[0] in _LIBRARIES
        if not library:
            roots.extend((f"{fn.__name__}.{name}", fn, ((True, name),))
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
            if root is not scope or not library:
                roots.append((name, root, steps))
            if isinstance(v, types.ModuleType) and v.__name__.partition(".")[0] not in (
                    _LIBRARIES):  # config.W: a constant, as an attribute
                roots.extend((f"{name}.{n}", v.__dict__, ((False, n),)) for n in names
                             if n in v.__dict__ and not callable(v.__dict__[n]))
            if isinstance(v, _RANDOM):
                generators.append(v)
            elif callable(v) and not isinstance(v, (type, np.ufunc)):
                visit(v, depth + 1, name)

    visit(f, 0)
    return list(arrays.values()), generators, roots, seen


class _Watched:
    """An array the function reaches other than as an argument, a closure's or a global's
    value (through an attribute, a container, a default argument): a constant of the
    program, and NumPy work done on it alone was done at the trace. Its bytes at the trace
    are kept, and a call that finds it changed in place, or another array in its place,
    traces again."""

    __slots__ = ("label", "root", "steps", "array", "shape", "data")

    def __init__(self, label, root, steps, array, data):
        self.label, self.root, self.steps, self.array, self.data = (
            label, root, steps, array, data)
        self.shape = array.shape

    def current(self):
        return _follow(self.root, self.steps)

    def changed(self):
        try:
            x = self.current()
        except (LookupError, AttributeError, TypeError, ValueError):
            return True
        if x is not self.array or x.shape != self.shape:
            return True
        data = self.data
        if type(data) is bytes:
            return x.tobytes() != data
        return not (x.view(data.dtype) == data).all()  # (its bits, as unsigned integers)

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


def _reach(roots, visited):
    """``(watched, generators, complete)``: the arrays reachable from ``roots`` (as
    ``_Watched``), the random generators, and whether the walk saw everything. Functions
    in ``visited`` were scanned already (their closures' arrays are traced)."""
    watched: list[_Watched] = []
    generators: list[Any] = []
    seen: set[int] = set()
    classes: set[int] = set()
    data: dict[int, Any] = {}
    complete = True
    budget = [_REACH_VALUES]

    def walk(x, label, root, steps, depth):
        nonlocal complete
        if isinstance(x, np.ndarray):
            if x.dtype.kind != "O":
                if id(x) not in data:
                    data[id(x)] = _snapshot(x)
                watched.append(_Watched(label, root, steps, x, data[id(x)]))
            return
        if isinstance(x, _NUMBERS) and steps:
            watched.append(_WatchedNumber(label, root, steps, x))
            return
        if isinstance(x, (_OPAQUE, Jitted, Traced)) or id(x) in seen:
            return  # (a traced box: an input, captured)
        budget[0] -= 1
        if budget[0] < 0 or depth > _REACH_DEPTH:
            complete = False
            return
        seen.add(id(x))
        if isinstance(x, _RANDOM):
            generators.append(x)
            return
        items: Any
        if isinstance(x, Tracked):  # (a param: its value, and the .grad backward() adds to)
            items = [(True, n) for n in ("value", "grad") if n == "value" or hasattr(x, n)]
        elif isinstance(x, (list, tuple)):
            items = [(False, i) for i in range(len(x))]
        elif isinstance(x, dict):
            items = [(False, k) for k in x]
        elif isinstance(x, types.FunctionType):
            if id(x) in visited:
                return
            cells = zip(x.__code__.co_freevars, x.__closure__ or ())
            for name, cell in cells:
                walk_at(cell, ((True, "cell_contents"),), name, cell, (), depth, False)
            for name in ("__defaults__", "__kwdefaults__"):
                walk_at(x, ((True, name),), f"{x.__name__}.{name}", x, (), depth, False)
            return
        elif isinstance(x, functools.partial):
            items = [(True, "args"), (True, "keywords"), (True, "func")]
        elif isinstance(x, types.MethodType):
            items = [(True, "__self__"), (True, "__func__")]
        else:
            names = list(getattr(x, "__dict__", None) or ())
            for cls in type(x).__mro__:
                slots = cls.__dict__.get("__slots__", ())
                names += [slots] if isinstance(slots, str) else [
                    n for n in slots if n not in ("__dict__", "__weakref__")]
                if id(cls) not in classes:  # a class's arrays (self.SCALE), once
                    classes.add(id(cls))
                    for n, v in list(cls.__dict__.items()):
                        if isinstance(v, np.ndarray):
                            walk_at(cls, ((True, n),), cls.__name__, cls, (), depth + 1)
            items = [(True, n) for n in names]
        for step in items:
            walk_at(x, (step,), label, root, steps, depth + 1)

    def walk_at(x, path, label, root, steps, depth, named=True):
        """Walk the value at ``path`` from ``x`` (a label of its own unless ``named``)."""
        try:
            value = x
            for attribute, key in path:
                value = getattr(value, key) if attribute else value[key]
        except (LookupError, AttributeError, TypeError, ValueError):
            return
        for attribute, key in path if named else ():
            label = f"{label}.{key}" if attribute else f"{label}[{key!r}]"
        walk(value, label, root, steps + path, depth)

    for label, root, steps in roots:
        walk_at(root, steps, label, root, (), 0, False)
    return watched, generators, complete


def _random_state(generators):
    legacy = np.random.get_state(legacy=False)
    states = [legacy["state"]["pos"], legacy["state"]["key"].tobytes(), legacy["has_gauss"]]
    for g in generators:
        bits = g.bit_generator if isinstance(g, np.random.Generator) else getattr(
            g, "_bit_generator", g)
        states.append(repr(bits.state))
    return states


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
        self._captured, self._generators, self._roots, self._scanned = _scan(f)
        self.traces = 0
        self._warned = self._warned_reach = False
        self._changed = ""  # the last array seen changed between calls (for the warning)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(args, kwargs)[0]

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
                out = program.run(*inputs)
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
        except _Untraceable as why:
            warnings.warn(
                f"pullback: pb.jit({self._fname}) cannot record this call ({why}); calls "
                "with these shapes run eagerly. Write the update out of place (np.where, "
                "np.concatenate, a new array returned) to jit it.", RuntimeWarning,
                stacklevel=3)
            self._programs[key] = [_EAGER]
            return self._f(*args, **kwargs), None
        # the first result is the program's too: the same fresh arrays as every replay
        out = program.run(*inputs)
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
        flat, treedef = tree_flatten((args, kwargs))
        names = _names(self._f, args, kwargs)
        slots = _leaf_names(names, args, kwargs)
        params, boxed, roots = [], [], list(self._roots)
        for x, name in zip(flat, slots):
            if isinstance(x, _TRACED):
                box = Traced(x, trace.level)
                params.append((name, box))
                boxed.append(box)
            else:
                boxed.append(x)
                if not isinstance(x, _OPAQUE):  # an object: its arrays are constants
                    roots.append((name, x, ()))
        targs, tkwargs = tree_unflatten(treedef, boxed)
        swapped: list[tuple[_Captured, Any, Traced]] = []
        watched: list[_Watched] = []
        _traces[trace.level] = trace
        try:
            for c in self._captured:
                v = c.get()
                if isinstance(v, np.ndarray):
                    box = Traced(v, trace.level)
                    params.append((c.name, box))
                    c.set(box)
                    swapped.append((c, v, box))
            watched, generators, complete = _reach(roots, self._scanned)
            generators += self._generators
            before = _random_state(generators)
            out = self._f(*targs, **tkwargs)
        except _Untraceable:
            _restore(watched)
            raise
        finally:
            rebound = ""
            for c, v, box in reversed(swapped):
                if c.get() is not box:
                    rebound = c.name
                with contextlib.suppress(LookupError, AttributeError, TypeError, ValueError):
                    c.set(v)
            del _traces[trace.level]
        if not complete and not self._warned_reach:
            self._warned_reach = True
            warnings.warn(
                f"pullback: pb.jit({self._fname}) reaches more containers and attributes "
                f"than it looks into ({_REACH_VALUES} values, {_REACH_DEPTH} deep), so a "
                "change to the arrays beyond them between calls is not seen; pass the "
                "arrays that change as arguments", RuntimeWarning, stacklevel=4)
        if _random_state(generators) != before:
            raise TypeError(
                f"pullback: {self._fname} draws random numbers (np.random, or a Generator it "
                "reaches or is passed), which pb.jit would replay as the same draw on every "
                "call. Draw them outside and pass them as arguments: pb.jit(f)(x, noise) "
                "with noise = rng.normal(...)"
            )
        changed = _restore(watched)
        if changed or rebound:
            raise _Untraceable(
                f"it changes {changed or rebound}, an array or a number it reads from "
                "outside its arguments")
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
        return _Program(source, run, keep, tuple(watched))


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
