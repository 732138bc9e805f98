"""NumPy 2's array-API functions: the generalized ufuncs vecdot, matvec and vecmat; the
numpy.linalg spellings vecdot, outer, tensordot, cross, diagonal, trace and
matrix_transpose; np.matrix_transpose, np.astype, np.unstack; and unique_all,
unique_counts, unique_inverse and unique_values. NumPy 1.26 has none of them: each is
registered only where this NumPy has it.

All but unstack are composites of functions that have rules, so they are differentiable
to every order; unstack is linear (its transpose stacks the cotangents).

vecdot and vecmat conjugate their first argument, as NumPy does: vecdot(x1, x2) is
sum(conj(x1) * x2) over the last axis. vecdot, matvec and vecmat are ufuncs: on tracked
values they take the gufunc's axis=, axes= and keepdims= (the core axes moved last and
back; NumPy checks the spelling first, so that one it refuses raises its error, pullback's
sentence first), the engine records out= into a tracked array, and the other ufunc
keywords (dtype=, ...) are refused with a TypeError; np.linalg.vecdot(x1, x2, axis=k) is
the vector product along another axis. np.matmul's rule (linalg.py) takes axes= the same
way (``core_axes``), in its rule rather than as a composite.

Convention (the unique_* functions, as np.unique in rules/sorting.py): each unique value
is a gather of the element where it first occurs, so its cotangent goes to that element
alone; NaNs are each a value of their own (equal_nan=False), matched to NaN elements of
the same form in turn. The indices, inverse indices and counts are NumPy's: plain
integer arrays.
"""

import operator

import numpy as np

from ...extend import astype, composite, linear, plain, shape_of
from .._util import as_array, conj_if_complex


def _register(module, name, impl):
    func = getattr(module, name, None)
    if func is not None:
        composite(func, impl)



def _check_core(name, signature, x1, x2, ndim1, ndim2, axis1, axis2):
    """NumPy's checks of a gufunc's core dimensions, naming ``name``: each operand has at
    least its core axes, and the contracted axes ``axis1`` and ``axis2`` agree."""
    for k, (x, need) in enumerate(((x1, ndim1), (x2, ndim2))):
        if len(shape_of(x)) < need:
            raise ValueError(
                f"{name}: input operand {k} has {len(shape_of(x))} dimension(s), fewer than "
                f"the {need} its core dimensions need (gufunc signature {signature})")
    n1, n2 = shape_of(x1)[axis1], shape_of(x2)[axis2]
    if n1 != n2:
        raise ValueError(
            f"{name}: the contracted core dimension is {n1} in the first operand and {n2} "
            f"in the second (gufunc signature {signature}); they must be equal")


# ---------------------------------------------------------------------------- products
# each a matmul of vectors made matrices: matmul broadcasts the leading axes as the gufunc
# does, and its rule is differentiable again

def _vecdot(x1, x2, name="np.vecdot"):
    x1, x2 = as_array(x1), as_array(x2)
    _check_core(name, "(n),(n)->()", x1, x2, 1, 1, -1, -1)
    product = np.matmul(np.expand_dims(conj_if_complex(x1), -2), np.expand_dims(x2, -1))
    # the 0-d case indexed without Ellipsis: a NumPy scalar, as the ufunc returns
    return product[(Ellipsis, 0, 0) if len(shape_of(product)) > 2 else (0, 0)]


def vecdot_impl(x1, x2):
    return _vecdot(x1, x2)


def linalg_vecdot_impl(x1, x2, /, *, axis=-1):
    # the gufunc vecdot's axis=, which counts in each operand's own axes
    if type(axis) is int and axis == -1:
        return _vecdot(x1, x2, "np.linalg.vecdot")
    return _with_core_axes(np.vecdot, "np.linalg.vecdot", linalg_vecdot_impl, (
        as_array(x1), as_array(x2)), {"axis": axis})


def matvec_impl(x1, x2):
    x1, x2 = as_array(x1), as_array(x2)
    _check_core("np.matvec", "(m,n),(n)->(m)", x1, x2, 2, 1, -1, -1)
    return np.matmul(x1, np.expand_dims(x2, -1))[..., 0]


def vecmat_impl(x1, x2):
    x1, x2 = as_array(x1), as_array(x2)
    _check_core("np.vecmat", "(n),(n,m)->(m)", x1, x2, 1, 2, -1, -2)
    return np.matmul(np.expand_dims(conj_if_complex(x1), -2), x2)[..., 0, :]


def linalg_outer_impl(x1, x2, /):
    if len(shape_of(x1)) != 1 or len(shape_of(x2)) != 1:
        raise ValueError(
            "np.linalg.outer: the input arrays must be one-dimensional, but they have "
            f"{len(shape_of(x1))} and {len(shape_of(x2))} dimensions (np.outer flattens "
            "them; np.multiply.outer keeps their axes)")
    return np.outer(x1, x2)


def linalg_tensordot_impl(x1, x2, /, *, axes=2):
    return np.tensordot(x1, x2, axes)


def linalg_cross_impl(x1, x2, /, *, axis=-1):
    n1, n2 = shape_of(x1)[axis], shape_of(x2)[axis]
    if n1 != 3 or n2 != 3:
        raise ValueError(
            "np.linalg.cross: both input arrays must be (arrays of) 3-dimensional vectors "
            f"along axis {axis}, but they are {n1} and {n2} dimensional (np.cross takes "
            "2-vectors)")
    return np.cross(x1, x2, axis=axis)


# ---------------------------------------------------------------------------- gufunc keywords

_CORE_KEYWORDS = frozenset({"axes", "axis", "keepdims"})


def _core_dims(signature, ndims):
    """The number of core axes of each input and of the output of a generalized ufunc of
    ``signature`` on inputs of ``ndims`` axes: a flexible dimension (matmul's ``n?``) is
    left out where its input has fewer axes than the signature names."""
    ins, out = signature.replace(" ", "").split("->")
    counts, missing = [], set()
    for part, ndim in zip(ins[1:-1].split("),("), ndims):
        dims = [d for d in part.split(",") if d]
        if ndim < len(dims):
            missing.update(d for d in dims if d.endswith("?"))
            dims = [d for d in dims if not d.endswith("?")]
        counts.append(len(dims))
    return counts, len([d for d in out[1:-1].split(",") if d and d not in missing])


def core_axes(ufunc, name, inputs, keywords):
    """Where the core axes of ``ufunc(*inputs, **keywords)`` lie, ``keywords`` being NumPy's
    ``axes=``, ``axis=`` and ``keepdims=`` (the others are refused): one tuple of axes per
    input and one for the output (each counted from 0, in the order of the signature's
    core dimensions), and keepdims. NumPy checks the keywords first, on arrays of ones with
    the inputs' numbers of axes: a spelling NumPy refuses raises NumPy's error, pullback's
    sentence first."""
    others = sorted(set(keywords) - _CORE_KEYWORDS)
    if others:
        raise TypeError(
            f"pullback: {name} on a tracked value does not support the keyword(s) {others}; "
            "apply the operation without them (cast with .astype)")
    ndims = [len(shape_of(x)) for x in inputs]
    try:
        out_ndim = np.ndim(ufunc(*[np.ones((1,) * n) for n in ndims], **keywords))
    except (TypeError, ValueError) as error:  # (NumPy's AxisError is a ValueError)
        raise type(error)(
            f"pullback: {name}(..., {', '.join(f'{k}={v!r}' for k, v in keywords.items())}) "
            f"on a tracked value: NumPy refuses these keywords for operands of "
            f"{', '.join(map(str, ndims))} axes ({type(error).__name__}: {error})") from error
    counts, out_count = _core_dims(ufunc.signature, ndims)
    keepdims = bool(keywords.get("keepdims", False))
    counts.append(counts[0] if keepdims else out_count)  # (kept: the inputs' core axes)
    if "axes" in keywords:  # (the output's entry may be left out: its last axes)
        entries = list(keywords["axes"]) + [None] * (len(counts) - len(keywords["axes"]))
    elif "axis" in keywords:
        entries = [(keywords["axis"],) if count else () for count in counts]
    else:
        entries = [None] * len(counts)
    found = []
    for entry, count, ndim in zip(entries, counts, ndims + [out_ndim]):
        entry = range(-count, 0) if entry is None else entry if isinstance(
            entry, tuple) else (entry,)
        found.append(tuple(operator.index(a) % ndim for a in entry))
    return found[:-1], found[-1], keepdims


def last(k):
    """The last ``k`` axes, counted from the end."""
    return tuple(range(-k, 0))


def moved(x, source, destination):
    """``np.moveaxis(x, source, destination)``, ``x`` itself where nothing moves."""
    ndim = len(shape_of(x))
    if [a % ndim for a in source] == [a % ndim for a in destination]:
        return x
    return np.moveaxis(x, source, destination)


def _gufunc_keywords(ufunc, name, impl):
    """``impl`` of the generalized ufunc ``ufunc``, taking its ``axes=``, ``axis=`` and
    ``keepdims=``: each operand's core axes moved last, ``impl`` on them, and the output's
    core axes moved back (or the contracted axes kept as size 1)."""

    def gufunc_impl(*inputs, **keywords):
        if not keywords:
            return impl(*inputs)
        return _with_core_axes(ufunc, name, impl, inputs, keywords)

    gufunc_impl.__name__ = gufunc_impl.__qualname__ = impl.__name__
    return gufunc_impl


def _with_core_axes(ufunc, name, impl, inputs, keywords):
    entries, out_axes, keepdims = core_axes(ufunc, name, inputs, keywords)
    out = impl(*[moved(x, axes, last(len(axes))) for x, axes in zip(inputs, entries)])
    if keepdims:
        return np.expand_dims(out, out_axes)
    return moved(out, last(len(out_axes)), out_axes)


for _name, _impl in (("vecdot", vecdot_impl), ("matvec", matvec_impl),
                     ("vecmat", vecmat_impl)):
    _register(np, _name, _gufunc_keywords(getattr(np, _name, None), f"np.{_name}", _impl))
_register(np.linalg, "vecdot", linalg_vecdot_impl)
_register(np.linalg, "outer", linalg_outer_impl)
_register(np.linalg, "tensordot", linalg_tensordot_impl)
_register(np.linalg, "cross", linalg_cross_impl)


# ---------------------------------------------------------------------------- the last two axes

def linalg_diagonal_impl(x, /, *, offset=0):
    return np.diagonal(x, offset, -2, -1)


def linalg_trace_impl(x, /, *, offset=0, dtype=None):
    return np.trace(x, offset, -2, -1, dtype=dtype)


def _matrix_transpose(name):
    def matrix_transpose_impl(x, /):
        if len(shape_of(x)) < 2:
            raise ValueError(
                f"{name}: the input array must be at least 2-dimensional, but it is "
                f"{len(shape_of(x))}-dimensional (a vector's transpose is itself)")
        return np.swapaxes(x, -1, -2)

    return matrix_transpose_impl


_register(np.linalg, "diagonal", linalg_diagonal_impl)
_register(np.linalg, "trace", linalg_trace_impl)
_register(np, "matrix_transpose", _matrix_transpose("np.matrix_transpose"))
_register(np.linalg, "matrix_transpose", _matrix_transpose("np.linalg.matrix_transpose"))


# ---------------------------------------------------------------------------- astype, unstack

def astype_impl(x, dtype, /, *, copy=True, device=None):
    """``x.astype(dtype)``: to an integer or boolean dtype a constant, as for the method;
    ``copy=False`` to x's own dtype returns ``x`` itself, as NumPy does."""
    if device is not None and device != "cpu":
        raise ValueError(
            f"np.astype: device={device!r} is not understood; only 'cpu' is allowed for "
            "NumPy arrays")
    if not copy and np.dtype(dtype) == x.dtype:
        return x
    return astype(x, dtype)


def unstack_transpose(gs, ans, x, *, axis=0):
    ndim = len(shape_of(x))
    return np.stack(gs, axis=int(axis) % ndim - ndim)  # (counted from the end: batch axes)


_register(np, "astype", astype_impl)
if hasattr(np, "unstack"):
    linear(np.unstack, unstack_transpose, batched=True)


# ---------------------------------------------------------------------------- unique_*

def _first_occurrences(flat, values):
    """The position in ``flat`` of the first element equal to each of ``values`` (NumPy's
    unique values of ``flat``, in NumPy's order: unique_values need not sort them). The
    NaNs, each a value of its own, are matched to NaN elements of the same form (which
    parts are NaN, and the other part), in turn."""
    ordered, first = np.unique(flat, return_index=True, equal_nan=False)
    # the values that are numbers lie among the sorted ones, NaNs sort last
    where = np.minimum(np.searchsorted(ordered, values), max(len(first) - 1, 0))
    index = first[where]
    nan = np.isnan(values)
    if np.any(nan):
        inputs = np.flatnonzero(np.isnan(flat))
        by_form = np.argsort(_nan_order(values[nan]))  # the k-th NaN value's rank
        matched = inputs[_nan_order(flat[inputs])][by_form]
        index = np.where(nan, matched[np.cumsum(nan) - 1], index)
    return index


def _nan_order(v):
    """The stable order of the NaNs ``v`` by their form."""
    keys = []
    for part in ((v.real, v.imag) if v.dtype.kind == "c" else (v,)):
        missing = np.isnan(part)
        keys += [missing, np.where(missing, 0, part)]
    return np.lexsort(keys[::-1])  # (lexsort's first key is its last)


def _unique_impl(func):
    """``func`` (a unique_* function) on a tracked ``x``: NumPy's own result on the plain
    values, with the values gathered from ``x`` at their first occurrences."""

    def unique_impl(x, /):
        found = func(plain(x))
        values = found if hasattr(found, "shape") else found.values
        index = getattr(found, "indices", None)
        if index is None:
            index = _first_occurrences(np.ravel(plain(x)), values)
        gathered = np.ravel(x)[index]
        return gathered if hasattr(found, "shape") else found._replace(values=gathered)

    unique_impl.__name__ = unique_impl.__qualname__ = f"{func.__name__}_impl"
    return unique_impl


for _name in ("unique_all", "unique_counts", "unique_inverse", "unique_values"):
    if hasattr(np, _name):
        _register(np, _name, _unique_impl(getattr(np, _name)))
