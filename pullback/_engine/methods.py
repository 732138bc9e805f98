"""The ndarray attributes and methods people call on arrays, for tracked values: each is
the NumPy function of the same name, so it goes through the same rules."""

import math

import numpy as np

from .refusals import came_back, line_of_caller, refuse_subclass

# the levels whose tracked values gave plain numbers away, with how (x.item(), x.tolist()):
# a transform whose output then has no derivative says so (backward.Linearized)
escapes: dict[int, str] = {}
# the level of no box: a constant's, and what core.top_level finds where no live level is
# (a gradient computation's levels are 0 and up; a pb.jit trace is no level, its boxes
# say so: ``traced``)
NO_LEVEL = -1


class Escaped(float):
    """``x.item()`` of a value a transform differentiates: a Python float that remembers
    the levels it left and the line that took it out, so that the engine refuses it when
    it comes back into the computation of such a level (``t[0] + v``), where its gradient
    would be lost without a word (``Escaped.at``). Python arithmetic on it keeps it one;
    it pickles, prints and compares as the float it is."""

    __slots__ = ("levels", "where")

    def at(self, state):
        """The level this number is at in a recorded operation (NO_LEVEL: a constant), after
        refusing it while a transform it left is running (``state``: core.state). Inside
        pb.gradient's loss it is a constant, as PyTorch's ``.item()``: the Tracker face's."""
        if not state.in_gradient and any(
                state.live.get(level) == "functional" for level in self.levels):
            came_back(self.where)
        return NO_LEVEL

    def __reduce__(self):
        return float, (float(self),)


def _escaped_operator(name):
    op = getattr(float, name)

    def escaped_operator(self, *other):
        out = op(self, *other)
        if out.__class__ is not float:  # (NotImplemented: a tracked value's operator next)
            return out
        v = Escaped(out)
        v.levels, v.where = self.levels, self.where
        return v

    return escaped_operator


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
    for _form in (f"__{_name}__", f"__r{_name}__"):
        setattr(Escaped, _form, _escaped_operator(_form))
for _name in ("__neg__", "__pos__", "__abs__"):
    setattr(Escaped, _name, _escaped_operator(_name))


def _escape(x, out, how):
    """``out``, a plain number or nested list that ``how`` took out of the tracked ``x``,
    as ``Escaped`` floats when a transform (a level above 0) differentiates ``x``."""
    levels = []
    while isinstance(x, ArrayMethods) and not x.traced:  # (a pb.jit trace's box stays)
        escapes[x.level] = how  # (level 0 too: pb.gradient reads and clears it)
        if x.level != 0:  # (0: the Tracker level of top-level params)
            levels.append(x.level)
        x = x.value
    if not levels:
        return out
    where = f"{how} at {line_of_caller()}"

    def mark(v):
        if type(v) is list:
            return [mark(e) for e in v]
        if type(v) is not float:
            return v
        e = Escaped(v)
        e.levels, e.where = tuple(levels), where
        return e

    return mark(out)


def shape_of(x):
    """The shape of a possibly tracked value (without np.shape's Python layer for arrays,
    NumPy scalars and tracked values, which all have ``.shape``)."""
    shape = getattr(x, "shape", None)
    return np.shape(x) if shape is None else shape


def is_complex(v):
    """Whether ``v`` (an array, a NumPy or Python scalar, a tracked value) is complex."""
    dtype = getattr(v, "dtype", None)
    if dtype is None:  # a Python number, or a list of them (x * [1j, 2.0]: NumPy's array)
        return isinstance(v, complex) or type(v) in (list, tuple) and np.iscomplexobj(v)
    return dtype.kind == "c"


def is_inexact(v):
    """Whether ``v`` is floating-point or complex: whether it can carry a gradient."""
    dtype = getattr(v, "dtype", None)
    return isinstance(v, (float, complex)) if dtype is None else dtype.kind in "fc"


def owner(a):
    """The object that owns ``a``'s memory: NumPy's base, followed through the objects that
    are not arrays (np.lib.stride_tricks.as_strided's views have one between them and the
    array they view); ``a`` itself when it owns its memory."""
    while (base := getattr(a, "base", None)) is not None:
        a = base
    return a


def in_order(x, order):
    """Whether ``x``'s memory is laid out in NumPy's ``order`` (True; 'K' always is), else
    that order as 'C' or 'F' ('A': Fortran for a Fortran-contiguous array, else C)."""
    if order == "K" or order is None:
        return True
    flags = getattr(memory(x), "flags", None)  # (another library's array has none: its own)
    if flags is None:
        return True
    if order == "A":
        order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
    return True if flags[order + "_CONTIGUOUS"] else order


def _is_array_class(x):
    return isinstance(x, type) and issubclass(x, np.ndarray)


def memory(x):
    """The array under every box, a pb.jit trace's too: where a tracked value's data lies
    (its strides and flags, the views a write goes through)."""
    while isinstance(x, ArrayMethods):
        x = x.value
    return x


def _no_shape_assignment(self, shape):
    raise TypeError(
        f"pullback: x.shape = {shape!r} reshapes a tracked value in place; write "
        "x = x.reshape(shape)"
    )


def _set_real(self, v):  # y.real = v: a write into y, as NumPy's (its real part, or y itself)
    v = np.real(v) if is_complex(v) else v
    self[...] = v + 1j * np.imag(self) if is_complex(self) else v


def _set_imag(self, v):
    if not is_complex(self):
        raise TypeError("pullback: y.imag = v of a real array (NumPy's error: it has no "
                        "imaginary part to set); make it complex first, y = y.astype(complex)")
    self[...] = np.real(self) + 1j * (np.real(v) if is_complex(v) else v)


def _set_flat(self, v):  # y.flat = v: v's elements in turn over y's, repeated as NumPy's
    v = np.ravel(v)
    n, k = self.size, shape_of(v)[0]
    if n and k:
        self[...] = np.reshape(np.tile(v, -(-n // k))[:n], self.shape)


class FlatIter:
    """``x.flat`` of a tracked value: NumPy's flat iterator (C order), whose elements and
    slices are tracked values; a write into it is a write into ``x``."""

    def __init__(self, x):  # (a 0-d x's flat is the (1,) view of it, which writes go through)
        self.base, self.index = x if x.ndim else np.reshape(x, (1,)), 0

    def _where(self, index):
        shape = self.base.shape
        return np.unravel_index(np.arange(int(np.prod(shape)))[index], shape)

    def __getitem__(self, index):
        return self.base[self._where(index)]

    def __setitem__(self, index, value):
        where = self._where(index)
        if np.ndim(value):  # NumPy's: the values flattened, repeated or cut to the places
            value, places = np.ravel(value), where[0].shape
            if not value.size:
                return
            if not places and value.size != 1:
                raise ValueError(f"pullback: x.flat[{index!r}] = v writes one element, "
                                 f"and v has {value.size} (NumPy's error too)")
            value = np.reshape(value[np.arange(math.prod(places)) % value.size], places)
        self.base[where] = value

    def __len__(self):
        return self.base.size

    def __iter__(self):
        return self

    def __next__(self):
        if self.index >= self.base.size:
            raise StopIteration
        self.index += 1
        return self.base[np.unravel_index(self.index - 1, self.base.shape)]

    @property
    def coords(self):  # (np.ndenumerate reads it before each element, and past the last)
        return np.unravel_index(min(self.index, self.base.size - 1), self.base.shape)


class _Deferring(dict):
    """Class -> whether NumPy's arrays leave a binary operator to an operand of that class,
    so that its reflected method runs (NumPy's binop override): a class that sets
    ``__array_ufunc__`` to None (SciPy's ``LinearOperator``), or one without
    ``__array_ufunc__`` whose ``__array_priority__`` is above an array's (SciPy's sparse
    matrices and arrays). A tracked value's operators do what its plain value's would."""

    def __missing__(self, cls):
        ufunc = getattr(cls, "__array_ufunc__", _Deferring)  # (_Deferring: absent)
        found = ufunc is None or ufunc is _Deferring and not issubclass(
            cls, (np.ndarray, np.generic, ArrayMethods)) and getattr(
            cls, "__array_priority__", 0.0) > 0.0
        self[cls] = found
        return found


deferring = _Deferring()
_REFLECTED = {np.add: "__radd__", np.subtract: "__rsub__", np.multiply: "__rmul__",
              np.true_divide: "__rtruediv__", np.floor_divide: "__rfloordiv__",
              np.remainder: "__rmod__", np.power: "__rpow__", np.matmul: "__rmatmul__",
              np.divmod: "__rdivmod__"}


def reflected(func, other, x):
    """``other``'s reflected operator of ``func`` (a ufunc) on ``x``: ``A.__rmatmul__(x)``
    for ``x @ A``; None where ``other`` has none or declines a tracked value (scipy.sparse's
    ``x + A`` takes NumPy arrays only), and the operator is then computed as for any other
    operand."""
    method = getattr(other, _REFLECTED[func], None)
    got = NotImplemented if method is None else method(x)
    return None if got is NotImplemented else got


class ArrayMethods:
    """Mixed into ``Tracked``: ``x.sum()``, ``x.T``, ``x.reshape(...)`` and the rest."""

    __slots__ = ()
    traced = False  # a pb.jit trace's box (_jit/trace.py's Traced): looked through by nothing

    shape = property(lambda self: self.value.shape, _no_shape_assignment)
    strides = property(lambda self: memory(self).strides)
    flags = property(lambda self: memory(self).flags)  # (of the value: read-only if held)
    base = None  # a tracked value is never a view of a plain array a write could go into
    device = "cpu"
    flat = property(FlatIter, _set_flat)
    ndim = property(lambda self: self.value.ndim)
    dtype = property(lambda self: self.value.dtype)
    size = property(lambda self: self.value.size)
    T = property(lambda self: np.transpose(self))
    mT = property(lambda self: np.swapaxes(self, -1, -2))
    real = property(lambda self: np.real(self), _set_real)
    imag = property(lambda self: np.imag(self), _set_imag)

    def item(self, *args):
        """The plain Python scalar (leaves the graph, as ``ndarray.item`` does; coming back
        into the computation, it is refused: ``Escaped``)."""
        return _escape(self, self._leave().item(*args), "x.item()")

    def tolist(self):
        """The plain nested list (leaves the graph, as ``item``)."""
        return _escape(self, np.asarray(self._leave()).tolist(), "x.tolist()")

    def _leave(self, how=None):
        """The plain value, noting at each of its levels that ``how`` took it out."""
        v = self
        while isinstance(v, ArrayMethods) and not v.traced:  # (a pb.jit trace's box stays)
            if how is not None:  # (level 0 too: pb.gradient reads and clears it)
                escapes[v.level] = how
            v = v.value
        return v

    def view(self, dtype=None, type=None):
        """The value itself (a tracked value is never written through); a view as another
        dtype, an np.matrix or a masked array is refused."""
        if _is_array_class(dtype):  # x.view(np.ndarray): the type, given first
            dtype, type = None, dtype
        if type is not None and type is not np.ndarray:
            refuse_subclass(None, type)
        if dtype is not None and np.dtype(dtype) != self.dtype:
            parts = self.dtype.kind == "c" and np.dtype(dtype).itemsize * 2 == self.itemsize
            raise TypeError(
                f"pullback: x.view({np.dtype(dtype)}) reinterprets the bytes of a tracked "
                f"value of dtype {self.dtype}, which has no derivative. " + (
                    "For the real and imaginary parts interleaved, as the view holds them, "
                    "write np.stack([x.real, x.imag], axis=-1) (reshape it to fold the last "
                    "axis in)" if parts else "Convert the values with x.astype(dtype)")
                + ", or take the view of a constant (pb.stop_gradient(x)).")
        return self

    @property
    def __array_interface__(self):  # (an AttributeError: hasattr and NumPy read it as absent)
        raise AttributeError(
            "pullback: a tracked value has no __array_interface__: code that reads an "
            "array's memory itself would drop its gradient. Call it on plain values "
            "(pb.stop_gradient(x)), or write it with NumPy functions"
        )

    def to_dask_array(self):  # dask.array's functions ask it before holding an argument,
        raise TypeError(  # and tokenize what they hold (da.from_array, da.map_blocks)
            "pullback: a dask.array function (da.sum, da.dot, da.concatenate, ...) got a "
            "tracked value: Dask would hold it as a constant, and its gradient would be lost. "
            "Call NumPy's function instead (np.sum(x)): on a tracked Dask array it builds "
            "the same Dask graph and keeps the gradient."
        )

    __dask_tokenize__ = to_dask_array

    def __array_namespace__(self, api_version=None):
        # NumPy's, as an ndarray's (SciPy asks it whether a write into x may go in place)
        return np

    def __reduce_ex__(self, protocol):
        raise TypeError(
            "pullback: a tracked value cannot be pickled: the copy would be a plain array "
            "without its gradient. Pickle plain values (x.value outside the differentiated "
            "function), or pb.stop_gradient(x) where no gradient should flow."
        )

    def __round__(self, ndigits=None):
        # round(x) of a 0-d value: piecewise constant, a plain number as NumPy gives it
        v = self._leave()
        return round(v) if ndigits is None else round(v, ndigits)

    def __trunc__(self):  # math.trunc, math.floor, math.ceil: piecewise constant too
        return math.trunc(self._leave())

    def __floor__(self):
        return math.floor(self._leave())

    def __ceil__(self):
        return math.ceil(self._leave())

    def is_integer(self):  # a NumPy scalar's: a plain bool
        return self._leave().is_integer()

    def as_integer_ratio(self):  # what the statistics module computes with
        raise TypeError(
            "pullback: the statistics module computes with exact fractions of a tracked "
            "value's numbers, which would drop its gradient; use NumPy's functions (np.mean, "
            "np.median, np.var, np.std)"
        )

    def __contains__(self, item):  # NumPy's: (x == item).any(), a plain bool
        return bool((self == item).any())

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("pullback: iteration over a 0-d tracked value")
        return (self[i] for i in range(len(self.value)))

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
        return np.argmax(self, *args, **kwargs)

    def argmin(self, *args, **kwargs):
        return np.argmin(self, *args, **kwargs)

    def argsort(self, *args, **kwargs):
        return np.argsort(self, *args, **kwargs)

    def nonzero(self):
        return np.nonzero(self)

    def any(self, *args, **kwargs):
        return np.any(self, *args, **kwargs)

    def all(self, *args, **kwargs):
        return np.all(self, *args, **kwargs)

    def reshape(self, *shape, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return np.reshape(self, shape, **kwargs)

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = axes[0]  # NumPy's: one argument, None or any sequence (a range too)
        return np.transpose(self, axes or None)

    def swapaxes(self, axis1, axis2):
        return np.swapaxes(self, axis1, axis2)

    def dot(self, b):
        return np.dot(self, b)

    def ravel(self, order="C"):
        return np.ravel(self, order=order)

    def flatten(self, order="C"):  # a copy, as NumPy's: a write into it stays there
        return np.copy(np.ravel(self, order=order))

    def squeeze(self, axis=None):
        return np.squeeze(self, axis=axis)

    def copy(self, order="C"):  # ndarray.copy's order is 'C' (np.copy's is 'K')
        return np.copy(self, order=order)

    def clip(self, min=None, max=None, out=None, **kwargs):  # (NumPy's positional out)
        return np.clip(self, min, max, out=out, **kwargs)

    def conj(self):  # of a real array, NumPy's method gives the array itself
        return np.conjugate(self) if self.dtype.kind == "c" else self

    conjugate = conj

    def round(self, decimals=0, out=None):
        return np.round(self, decimals, out=out)

    def repeat(self, repeats, axis=None):
        return np.repeat(self, repeats, axis=axis)

    def trace(self, *args, **kwargs):
        return np.trace(self, *args, **kwargs)

    def diagonal(self, *args, **kwargs):
        return np.diagonal(self, *args, **kwargs)

    def take(self, indices, axis=None, out=None, mode="raise"):
        return np.take(self, indices, axis=axis, out=out, mode=mode)

    def compress(self, condition, axis=None, out=None):
        return np.compress(condition, self, axis=axis, out=out)

    def choose(self, choices, out=None, mode="raise"):
        return np.choose(self, choices, out=out, mode=mode)

    def searchsorted(self, v, side="left", sorter=None):
        return np.searchsorted(self, v, side=side, sorter=sorter)

    def argpartition(self, *args, **kwargs):
        return np.argpartition(self, *args, **kwargs)

    # in place, as ndarray's: each a recorded write of the whole array (writes.py)
    def sort(self, axis=-1, kind=None, order=None):
        self[...] = np.sort(self, axis=axis, kind=kind, order=order)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        self[...] = np.partition(self, kth, axis=axis, kind=kind, order=order)

    def fill(self, value):
        self[...] = value

    def put(self, indices, values, mode="raise"):
        np.put(self, indices, values, mode=mode)

    def resize(self, *new_shape, refcheck=True):
        raise TypeError(
            "pullback: x.resize(new_shape) changes a tracked array's shape in place, which "
            "cannot be recorded. Build the new array instead: NumPy's method pads with zeros, "
            "np.pad(np.ravel(x), (0, n - x.size)).reshape(new_shape) for a larger n, or "
            "np.ravel(x)[:n].reshape(new_shape) for a smaller one (np.resize(x, new_shape) "
            "repeats the data, where the method pads)")

    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)


def _no_method(name):
    """An ndarray method that has no rule on a tracked value: a message naming the fix
    (a ``__getattr__`` would make every attribute of a tracked value slower to read)."""
    fix = (f"write np.{name}(x)" if callable(getattr(np, name, None)) else
           "call it on plain values (outside the differentiated function, or "
           "pb.stop_gradient(x) where no gradient should flow)")

    def no_method(self, *args, **kwargs):
        raise AttributeError(f"pullback: a tracked value has no method {name} (it has no "
                             f"derivative rule): {fix}")

    no_method.__name__ = no_method.__qualname__ = name
    return no_method


for _name in dir(np.ndarray):
    if not _name.startswith("_") and not hasattr(ArrayMethods, _name) and callable(
            getattr(np.ndarray, _name)):
        setattr(ArrayMethods, _name, _no_method(_name))

