"""Arrays built from tracked parts: ``np.array``, ``np.asarray``, ``np.asanyarray`` and
``np.ascontiguousarray`` of a tracked value or of a (nested) list holding some,
``np.full`` and ``np.full_like`` with a tracked fill value, ``np.arange`` with a tracked
start or step, and every NumPy function with a rule given such a list
(``np.sum([1.0, a * a])``). ``np.isscalar`` answers for a tracked value as for the plain
value it holds.

NumPy converts these in C (``np.array`` never dispatches, and a function's dispatcher
looks only at its direct arguments), so pullback registers a stand-in for each of those
NumPy entry points (``_engine/interception.py``), in NumPy's namespaces while a differentiation
runs. A stand-in calls NumPy's own function at once; only when that raises TypeError (a
tracked value met C's conversion) does it look for tracked values in the arguments, stack
the lists holding them (``np.stack``, so the result is tracked), and call the function
again.
"""

import functools
import importlib
import re
from typing import Any

import numpy as np

# where np.r_ and np.c_ live: numpy.lib._index_tricks_impl in NumPy 2, index_tricks before
try:
    _index_tricks = importlib.import_module("numpy.lib._index_tricks_impl")
except ImportError:  # NumPy 1.26
    _index_tricks = importlib.import_module("numpy.lib.index_tricks")

from .core import Tracked, apply, drop_finished, map_boxes, plain
from .interception import (
    BindingStandIn,
    StandIn,
    stand_in,
    swap_attribute,
    swap_code,
    swap_module_function,
)
from .methods import memory
from .refusals import forget_refusals, refuse_pandas
from .registry import NoRuleError

_NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
_np_array, _np_asarray = np.array, np.asarray
_np_asanyarray, _np_ascontiguousarray = np.asanyarray, np.ascontiguousarray
_np_stack = np.stack  # NumPy's: a stack that fails is not retried (no recursion)
_NO_VALUE = np._NoValue  # np.vectorize's pyfunc before the decorator form's second call


def holds_tracked(obj: Any) -> bool:
    """Whether ``obj`` is tracked or a (nested) list or tuple holding a tracked value."""
    if isinstance(obj, Tracked):
        return True
    if type(obj) is list or type(obj) is tuple:
        return any(holds_tracked(o) for o in obj)
    return False


def _stacked(obj):
    """``obj`` as one array: a tracked value as it is, a sequence holding one stacked."""
    if (type(obj) is list or type(obj) is tuple) and holds_tracked(obj):
        return _np_stack([_stacked(o) for o in obj])
    return obj


def _as_arrays(a):
    """An argument with its lists of tracked values stacked; a ragged list (a sequence of
    arrays, as np.concatenate takes) has its entries stacked one by one."""
    if not ((type(a) is list or type(a) is tuple) and holds_tracked(a)):
        return a
    try:
        return _stacked(a)
    except ValueError:
        return type(a)(_as_arrays(e) for e in a)


def _tracked_array(obj, dtype=None, copy=True, order="K", ndmin=0, contiguous=False):
    """NumPy's ``np.array(obj, ...)`` for ``obj`` holding tracked values."""
    if copy is False and not _NUMPY2:  # NumPy 1's copy=False: copy only if needed
        copy = None
    elif copy.__class__ is np._CopyMode:  # (SciPy's xp.asarray passes IF_NEEDED)
        copy = {np._CopyMode.ALWAYS: True, np._CopyMode.IF_NEEDED: None}.get(copy, False)
    if dtype is not None and np.dtype(dtype).kind == "O":  # (ragged lists too)
        raise TypeError(
            "pullback: np.array(..., dtype=object) of tracked values makes an object array "
            "(dtype=object) of plain Python numbers, which would drop the gradient; keep a "
            "float dtype (np.array(x)), and to apply a Python function to each element, use "
            "np.vectorize(f)(x)")
    refuse_pandas()  # (pd.Series(x) would convert x again and again)
    fresh = not isinstance(obj, Tracked)
    result = _stacked(obj)
    if fresh and order in ("K", "A"):  # a list's array is C-ordered, as NumPy's
        order = "C"
    if dtype is not None and np.dtype(dtype) != result.dtype:
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        result, fresh = result.astype(dtype), True  # an integer dtype gives a constant
    if not isinstance(result, Tracked):
        return _np_array(result, ndmin=ndmin)
    if copy is False and fresh:
        raise ValueError("Unable to avoid copy while creating an array as requested.")
    if copy and not fresh or (contiguous or order == "C") and not _flags(result, "C") or (
            order == "F" and not _flags(result, "F")):
        result = np.copy(result, order="C" if contiguous else order or "K")
    if result.ndim < ndmin:
        result = np.reshape(result, (1,) * (ndmin - result.ndim) + result.shape)
    return result


def _flags(x, order):
    """Whether ``x``'s memory is in ``order``: its array's own flags (a device array's too,
    never copied to the host; an array of no layout, Dask's, counts as in order)."""
    v = memory(x)
    flags = getattr(v, "flags", None) if not isinstance(v, np.ndarray) else v.flags
    if flags is None:
        return not isinstance(v, (list, tuple)) or _np_asarray(v).flags[order + "_CONTIGUOUS"]
    return flags.c_contiguous if order == "C" else flags.f_contiguous


def _retry(obj, like):
    """The tracked values of ``obj`` that are still live, or None when none is (then
    NumPy's own function answers)."""
    if isinstance(like, Tracked):
        like = None
    obj = drop_finished(obj)
    return obj if holds_tracked(obj) else None


class _NumPyFirst(StandIn):
    """A stand-in that calls NumPy's own function first, and ``retry`` of the same
    arguments only when that raised one of ``errors`` (TypeError: a tracked value met C's
    conversion; NoRuleError: like= a tracked value) and ``held`` finds a tracked value
    among the arguments."""

    __slots__ = ("_pb_errors", "_pb_held")

    def __call__(self, *args, **kwargs):
        try:
            return self._pb_original(*args, **kwargs)
        except self._pb_errors:
            if not self._pb_held(args) and not self._pb_held(tuple(kwargs.values())):
                raise
        forget_refusals()  # the refusal met is handled here: no later error's cause
        return self._pb_call(*args, **kwargs)


class _BindingNumPyFirst(_NumPyFirst, BindingStandIn):
    """``_NumPyFirst`` for a function that binds as a method (NumPy 2's dispatched
    functions do)."""

    __slots__ = ()


def _numpy_first(original, retry, errors=(TypeError, NoRuleError), held=holds_tracked):
    """The stand-in for ``original`` (NumPy's function): NumPy's own call first, and
    ``retry`` only when it raised one of ``errors`` over a tracked value ``held`` finds."""
    kind = _BindingNumPyFirst if hasattr(type(original), "__get__") else _NumPyFirst
    made = stand_in(original, retry, kind)
    object.__setattr__(made, "_pb_errors", errors)
    object.__setattr__(made, "_pb_held", held)
    return made


def _in_lists(values):
    """Whether a list or tuple among ``values`` holds a tracked value: a tracked argument
    itself is dispatched, so a TypeError then came from the call (a rule, a user's function
    it calls), not from NumPy's conversion."""
    return any((type(v) is list or type(v) is tuple) and holds_tracked(v) for v in values)


def _array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    obj = _retry(object, like)
    if obj is None:
        return _np_array(drop_finished(object), dtype, copy=copy, order=order, ndmin=ndmin)
    return _tracked_array(obj, dtype, copy, order, ndmin)


def _asarray(original, a, dtype=None, order=None, *, device=None, copy=None, like=None):
    obj = _retry(a, like)
    if obj is None:
        # copy= only when given: NumPy 1.26's asarray has no such keyword
        kw = {} if copy is None else {"copy": copy}
        return original(drop_finished(a), dtype, order, **kw)
    return _tracked_array(obj, dtype, copy, order or "K")


def _ascontiguousarray(a, dtype=None, *, like=None):
    obj = _retry(a, like)
    if obj is None:
        return _np_ascontiguousarray(drop_finished(a), dtype)
    return _tracked_array(obj, dtype, None, "C", ndmin=1, contiguous=True)


def _asfortranarray(a, dtype=None, *, like=None):
    obj = _retry(a, like)
    if obj is None:
        return _np_asfortranarray(drop_finished(a), dtype)
    return _tracked_array(obj, dtype, None, "F", ndmin=1)


def _require(a, dtype=None, requirements=None, *, like=None):
    obj = _retry(a, like)
    if obj is None:
        return _np_require(drop_finished(a), dtype, requirements)
    wants = {str(r).upper()[:1] for r in ([requirements] if isinstance(requirements, str)
                                          else requirements or ())}
    # a tracked value is never written through, so W, O and A ask for nothing more
    return _tracked_array(obj, dtype, None, "F" if "F" in wants else "C" if "C" in wants
                          else "K")


_np_asfortranarray, _np_require = np.asfortranarray, np.require
_np_full, _np_full_like = np.full, np.full_like


def _full(shape, fill_value, dtype=None, order="C", **kwargs):
    fill = _retry(fill_value, kwargs.get("like"))
    if fill is None:
        return _np_full(shape, drop_finished(fill_value), dtype, order)
    fill = _stacked(fill)
    # np.full_like's rule, on a buffer of the fill value's dtype (NumPy's np.full's)
    buffer = _np_full(shape, 0, fill.dtype if dtype is None else dtype, order)
    return apply(_np_full_like, (buffer, fill), {})


_np_arange = np.arange


def _arange(*args, **kwargs):
    """NumPy's ``np.arange`` with a tracked start, stop or step: its length and dtype from
    the plain values, its values ``start + step * np.arange(n)`` (the stop only sets the
    length, which is piecewise constant: no gradient)."""
    given = dict(zip(("start", "stop", "step"), drop_finished(args)), **drop_finished(kwargs))
    ans = _np_arange(*map_boxes(args, plain), **{k: plain(v) for k, v in kwargs.items()})
    if ans.dtype.kind not in "fc":  # an integer range (dtype=int): a constant
        return ans
    start, step = given.get("start"), given.get("step")
    if given.get("stop") is None:  # np.arange(stop): NumPy's one-argument form
        start = 0
    out = (0 if start is None else start) + (1 if step is None else step) * _np_arange(
        ans.size, dtype=ans.dtype)
    return out if out.dtype == ans.dtype else out.astype(ans.dtype)


_np_isscalar = np.isscalar


def _isscalar_dispatch(func, body, args, kwargs):
    # a tracked x[0] of a 1-d x holds a NumPy scalar: NumPy's answer for that value, so
    # that code branching on np.isscalar (np.poly1d's operators, np.linspace) takes NumPy's
    # branch (its code is swapped: NumPy's own modules imported it by name)
    element = args[0] if args else kwargs.get("element")
    while isinstance(element, Tracked):
        element = element.value
    return body(element)


array = _numpy_first(_np_array, _array)
asarray = _numpy_first(_np_asarray, functools.partial(_asarray, _np_asarray))
asanyarray = _numpy_first(_np_asanyarray, functools.partial(_asarray, _np_asanyarray))
ascontiguousarray = _numpy_first(_np_ascontiguousarray, _ascontiguousarray)
asfortranarray = _numpy_first(_np_asfortranarray, _asfortranarray)
require = _numpy_first(_np_require, _require)
full = _numpy_first(_np_full, _full)  # a tracked fill value met C's conversion
arange = _numpy_first(_np_arange, _arange)  # a tracked start, stop or step met C's


def accepting_lists(func, call=None, held=_in_lists):
    """The stand-in for ``func`` (a NumPy function) taking, wherever it takes an array, a
    list holding tracked values: NumPy's own function first, and only when a tracked value
    stopped it (``held`` finds one where NumPy's dispatch does not look: in a list, by
    default), ``call`` (``func`` itself by default) with those lists stacked."""
    call = func if call is None else call
    return _numpy_first(func, lambda *args, **kwargs: call(
        *[_as_arrays(a) for a in args], **{k: _as_arrays(v) for k, v in kwargs.items()}),
        (TypeError,), held)


# NumPy dispatches np.full_like on its first argument only: a plain one with a tracked fill
# value (np.copyto of it, refused) takes np.full_like's rule here
full_like = accepting_lists(_np_full_like,
                            lambda *args, **kwargs: apply(_np_full_like, args, kwargs),
                            holds_tracked)
# and np.polyint on its polynomial only: a plain one with tracked constants k takes the rule
_np_polyint = np.polyint
polyint = accepting_lists(_np_polyint, lambda *args, **kwargs: apply(_np_polyint, args, kwargs),
                          holds_tracked)


def _broadcast_views(*args, subok=False):
    """Read-only broadcast views of ``args`` (which NumPy's own are to become): what
    np.broadcast_arrays gives when NumPy's call fails on a read-only array, as one the guard
    holds while a graph needs it is (NumPy cannot mark views of it writeable)."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    views = [np.broadcast_to(a, shape, subok=subok) for a in args]
    return tuple(views) if _NUMPY2 else views


def _read_only(values):  # (a view's own flag stays set when its base is made read-only)
    return any(isinstance(a, np.ndarray) and not (a.flags.writeable and (
        a.base is None or getattr(a.base, "flags", a.flags).writeable)) for a in values)


_np_broadcast_arrays = np.broadcast_arrays


def _read_only_retry(*args, **kwargs):
    if _in_lists(args):
        args = tuple(_as_arrays(a) for a in args)
        try:
            return _np_broadcast_arrays(*args, **kwargs)
        except ValueError:
            if not _read_only(args):
                raise
    return _broadcast_views(*args, **kwargs)


# NumPy's own call, then read-only views where it failed on a read-only array
broadcast_arrays = _numpy_first(_np_broadcast_arrays, _read_only_retry, (TypeError, ValueError),
                                lambda values: _in_lists(values) or _read_only(values))


def _vectorize_dispatch(func, body, args, kwargs):
    """NumPy's ``np.vectorize.__call__``, which also takes tracked values: ``pyfunc`` then
    gets their elements (with ``signature=``, their core slices) one at a time, as tracked
    values, so its own operations record the gradient, and the results are stacked (a
    Python loop, as NumPy's own). Without tracked values, NumPy's call. (Its code is
    swapped while a differentiation runs, so a function vectorized before, at import time
    or with ``@np.vectorize``, takes tracked values too.)

    >>> clipped = np.vectorize(lambda t: t * t if t < 1.0 else 2.0 * t - 1.0)
    >>> pb.grad(lambda x: np.sum(clipped(x)))(np.array([0.5, 3.0]))
    array([1., 2.])
    """
    self, args = args[0], args[1:]
    if not (holds_tracked(args) or holds_tracked(tuple(kwargs.values()))) or (
            self.pyfunc is _NO_VALUE):  # (the decorator form's second stage)
        return body(self, *args, **kwargs)
    return _vectorized(self, body, args, kwargs)


def _vectorized(self, body, args, kwargs):
    positions = [i for i in range(len(args)) if i not in self.excluded]
    names = [k for k in kwargs if k not in self.excluded]
    given = [_stacked(args[i]) for i in positions] + [_stacked(kwargs[k]) for k in names]
    cores = ([()] * len(given), None) if self.signature is None else _core_dims(
        self.signature, given)
    loop = np.broadcast_shapes(*(np.shape(a)[:np.ndim(a) - len(dims)]
                                 for a, dims in zip(given, cores[0])))
    if 0 in loop:  # no element gets a gradient: NumPy's call on the plain values
        return body(self, *map_boxes(args, plain),
                    **{k: map_boxes(v, plain) for k, v in kwargs.items()})
    spread = [np.broadcast_to(a, loop + np.shape(a)[np.ndim(a) - len(dims):])
              for a, dims in zip(given, cores[0])]
    results = []
    for index in np.ndindex(*loop):
        call_args, call_kwargs = list(args), dict(kwargs)
        elements = [a[index] for a in spread]
        for i, e in zip(positions, elements):
            call_args[i] = e
        for k, e in zip(names, elements[len(positions):]):
            call_kwargs[k] = e
        results.append(self.pyfunc(*call_args, **call_kwargs))
    several = isinstance(results[0], tuple) if cores[1] is None else len(cores[1]) > 1
    outputs = list(zip(*results)) if several else [results]
    stacked = []
    for k, parts in enumerate(outputs):
        core = np.shape(parts[0])
        if cores[1] is not None and len(core) != len(cores[1][k]):
            raise ValueError(
                f"np.vectorize: output {k} of the function has {len(core)} dimension(s), "
                f"its signature {self.signature!r} says {len(cores[1][k])}")
        out = np.reshape(np.stack(parts), loop + core)
        # NumPy's dtype: otypes, else the first result's (an int first result truncates)
        dtype = np.dtype(self.otypes[k]) if self.otypes else np.result_type(
            map_boxes(parts[0], plain))
        stacked.append(out if out.dtype == dtype else out.astype(dtype))
    return tuple(stacked) if several else stacked[0]


def _core_dims(signature, given):
    """The core dimensions of each argument and output named by a gufunc ``signature``
    (``"(m,n),(n)->(m)"``), checked against the arguments as NumPy checks them."""
    ins, outs = (
        [tuple(filter(None, group.split(","))) for group in re.findall(r"\(([^()]*)\)", side)]
        for side in signature.replace(" ", "").split("->"))
    if len(ins) != len(given):
        raise TypeError(f"wrong number of positional arguments: expected {len(ins)}, got "
                        f"{len(given)}")
    sizes: dict = {}
    for a, dims in zip(given, ins):
        if np.ndim(a) < len(dims):
            raise ValueError(f"{np.ndim(a)}-dimensional argument does not have enough "
                             f"dimensions for all core dimensions {dims}")
        for name, n in zip(dims, np.shape(a)[np.ndim(a) - len(dims):]):
            if sizes.setdefault(name, n) != n:
                raise ValueError(f"inconsistent size for core dimension {name!r}: {n} vs "
                                 f"{sizes[name]}")
    return ins, outs



def register():
    """Register the stand-ins for NumPy's namespaces (``np``, ``np.linalg``, ``np.fft``),
    in place of the functions they wrap while a differentiation runs: the constructors
    above and every function NumPy dispatches (with a list given to one without a rule,
    the stacked call raises pb.NoRuleError naming it)."""
    for name, made in [("array", array), ("asarray", asarray), ("asanyarray", asanyarray),
                       ("ascontiguousarray", ascontiguousarray),
                       ("asfortranarray", asfortranarray), ("require", require),
                       ("full", full), ("arange", arange)]:
        swap_module_function(np, name, made)
    swap_code(_np_isscalar, _isscalar_dispatch)
    swap_code(np.vectorize.__call__, _vectorize_dispatch)
    # one stand-in a function, however many of NumPy's namespaces hold it
    made_for = {_np_full_like: full_like, _np_polyint: polyint,
                _np_broadcast_arrays: broadcast_arrays}
    swap_attribute(_index_tricks, "array", array)  # np.r_ and np.c_
    for module in (np, np.linalg, np.fft):
        for name, func in list(vars(module).items()):
            if hasattr(func, "_implementation") and not name.startswith("_"):
                made = made_for.get(func) or accepting_lists(func)
                made_for[func] = made
                swap_module_function(module, name, made)


register()
