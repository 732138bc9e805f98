"""The trace of ``pb.jit``: a function's array arguments boxed as ``Traced`` values (a box
of its own kind: ``traced``, at the trace's level number, below every gradient
computation's), and every NumPy call that meets one (and no live tracked value) recorded,
directly, as one node: the function, its arguments (constants or other nodes) and its
keywords. Every Python decision on a traced value (``bool``, ``float``, ``.item()``,
``hash``, a string made of it) and every shape that values set (``x[x > 0]``) is a guard
of the program. What a program cannot replay raises ``_Untraceable``: that call runs
eagerly, with a warning."""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import numbers
import operator
import os
import sys
import types
from typing import Any

import numpy as np

from .._engine.core import IN_PLACE, Tracked, apply, map_boxes, plain, top_level
from .._engine.interception import original_of
from .._engine.methods import NO_LEVEL, deferring, memory
from .._engine.registry import getitem
from ..tree import tree_flatten
from .bits import _snapshot
from .program import _BY_ALL, _BY_FIRST, _astype, _leaves

_trace_ids = itertools.count(1)
_traces: dict[int, _Trace] = {}  # the traces running now, by level


class _Retrace:
    """What a program returns when one of its guards fails: trace that path again."""

    def __repr__(self):
        return "RETRACE"


RETRACE = _Retrace()


def _is_integer(v):
    return v.is_integer()


def _integer_ratio(v):
    return v.as_integer_ratio()


# the numbers Python reads from a value (math.trunc(x), x.is_integer()): each a guard, that
# the program computes by the same name (emit.py)
READERS: dict[str, Any] = {"_trunc": math.trunc, "_floor": math.floor, "_ceil": math.ceil,
                           "_is_integer": _is_integer, "_integer_ratio": _integer_ratio}


try:  # (NumPy's own: one object per np.errstate block, a fast test of the usual case)
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
        _extobj_contextvar as _errstate_var,
    )

    _errstate_token = _errstate_var.get
except ImportError:  # pragma: no cover
    def _errstate_token():
        return None


class _Trace:
    """One run of a function with its arrays traced: the nodes and guards in order."""

    def __init__(self):
        self.level = NO_LEVEL - next(_trace_ids)  # (below every gradient computation's)
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
    return top_level((args, tuple(kwargs.values())))[0] != NO_LEVEL


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
# pullback's modules that pass a call on (the dispatch, NumPy's wrapped names; and the
# jit's own, pullback._jit.*)
_PASSING = frozenset({"pullback._engine.core", "pullback._engine.construct",
                      "pullback._engine.registry", "pullback._engine.interception"})


def _rule_frame(frame):
    """The frame of a rule of pullback's (rules/) that made the call a trace met, looking
    through NumPy's frames and those of pullback's dispatch; None for any other code."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module in _PASSING or module.startswith(f"{__package__}.") or (
                frame.f_code.co_filename.startswith(_NUMPY)):
            frame = frame.f_back
            continue
        return frame if module.startswith("pullback.rules.") else None
    return None


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
            found.append(original_of(f))
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
    func = original_of(func)
    if func is original_of(np.where):
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
_STATIC = frozenset(original_of(f) for f in (
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


def _engine_takes(other):
    """Whether the other operand of a traced value's operator is for the engine: a gradient
    computation's box (whose level records first), a list, or a value NumPy defers to."""
    return (isinstance(other, Tracked) and not other.traced or type(other) in (list, tuple)
            or deferring[other.__class__])


def _operators(func, engine_operator, engine_reflected):
    """A binary operator of a traced value and its reflected form: the call recorded on the
    trace directly, or the engine's operator where ``_engine_takes`` the other operand."""

    def traced_operator(self, other):
        if _engine_takes(other):
            return engine_operator(self, other)
        return _record(self, func, (self, other), {})

    def traced_reflected(self, other):  # (1j * x: NumPy's complex, as the engine's)
        if _engine_takes(other):
            return engine_reflected(self, other)
        other = np.complex128(other) if other.__class__ is complex else other
        return _record(self, func, (other, self), {})

    return traced_operator, traced_reflected


class Traced(Tracked):
    """A value traced by ``pb.jit``: NumPy calls on it are recorded, Python decisions on it
    become guards of the recorded program. Its operators record on the trace directly; a
    NumPy function reaches it through NumPy's protocols, a gradient computation's box
    first where one takes part (it records at its level, and its rule's calls on the
    values come here)."""

    __slots__ = ()
    traced = True

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

    __add__, __radd__ = _operators(np.add, Tracked.__add__, Tracked.__radd__)
    __sub__, __rsub__ = _operators(np.subtract, Tracked.__sub__, Tracked.__rsub__)
    __mul__, __rmul__ = _operators(np.multiply, Tracked.__mul__, Tracked.__rmul__)
    __truediv__, __rtruediv__ = _operators(np.true_divide, Tracked.__truediv__,
                                           Tracked.__rtruediv__)
    __floordiv__, __rfloordiv__ = _operators(np.floor_divide, Tracked.__floordiv__,
                                             Tracked.__rfloordiv__)
    __mod__, __rmod__ = _operators(np.remainder, Tracked.__mod__, Tracked.__rmod__)
    __pow__, __rpow__ = _operators(np.power, Tracked.__pow__, Tracked.__rpow__)
    __matmul__, __rmatmul__ = _operators(np.matmul, Tracked.__matmul__, Tracked.__rmatmul__)
    __divmod__, __rdivmod__ = _operators(np.divmod, Tracked.__divmod__, Tracked.__rdivmod__)
    __neg__ = lambda self: _record(self, np.negative, (self,), {})  # noqa: E731
    __pos__ = lambda self: _record(self, np.positive, (self,), {})  # noqa: E731
    __abs__ = lambda self: _record(self, np.absolute, (self,), {})  # noqa: E731

    __iadd__, __isub__ = _in_place(__add__), _in_place(__sub__)
    __imul__, __itruediv__ = _in_place(__mul__), _in_place(__truediv__)
    __ifloordiv__, __imod__ = _in_place(__floordiv__), _in_place(__mod__)
    __ipow__, __imatmul__ = _in_place(__pow__), _in_place(__matmul__)
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
            return _guard(self, ("call", name), READERS[name](self.value))

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
