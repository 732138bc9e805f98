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
back), the engine records out= into a tracked array, and the other ufunc keywords
(dtype=, ...) are refused with a TypeError; np.linalg.vecdot(x1, x2, axis=k) is the
vector product along another axis. np.matmul's rule (linalg.py) is not a composite: its
axes= is refused by the engine, with the advice to move the axes with np.moveaxis.

Convention (the unique_* functions, as np.unique in rules/sorting.py): each unique value
is a gather of the element where it first occurs, so its cotangent goes to that element
alone; NaNs are each a value of their own (equal_nan=False), matched to NaN elements of
the same form in turn. The indices, inverse indices and counts are NumPy's: plain
integer arrays.
"""

import numpy as np

from ...extend import astype, composite, linear, plain, shape_of
from .._util import as_array, conj_if_complex


def _register(module, name, impl, form=composite):
    func = getattr(module, name, None)
    if func is not None:
        form(func, impl)



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
    # the gufunc's axis= counts in each operand's own axes: so does moveaxis
    if axis != -1:
        x1, x2 = np.moveaxis(x1, axis, -1), np.moveaxis(x2, axis, -1)
    return _vecdot(x1, x2, "np.linalg.vecdot")


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


def _gufunc_keywords(name, impl, nin=2):
    """``impl`` of a generalized ufunc, taking the gufunc's ``axes=``, ``axis=`` and
    ``keepdims=``: each operand's core axes moved last with ``np.moveaxis``, ``impl`` on
    them, and the output's core axes moved back (or the contracted axis kept as size 1).
    The other ufunc keywords (dtype=, casting= ...) are refused."""

    def gufunc_impl(*inputs, axes=None, axis=None, keepdims=False, **others):
        if others:
            raise TypeError(
                f"pullback: {name} on a tracked value does not support the keyword(s) "
                f"{sorted(others)}; apply the operation without them (cast with .astype)")
        if axes is None and axis is None and not keepdims:
            return impl(*inputs)
        if axes is None:  # (NumPy refuses both, before dispatch)
            axes = [(-1 if axis is None else axis,)] * nin
        entries = [(a,) if isinstance(a, (int, np.integer)) else tuple(a) for a in axes]
        moved = []
        for x, core in zip(inputs, entries):
            ndim = len(shape_of(x))
            last = list(range(ndim - len(core), ndim))
            moved.append(np.moveaxis(x, [int(a) % max(ndim, 1) for a in core], last))
        out = impl(*moved)
        core = entries[nin] if len(entries) > nin else ()
        ndim = len(shape_of(out))
        if core:
            return np.moveaxis(out, list(range(ndim - len(core), ndim)),
                               [int(a) % ndim for a in core])
        if keepdims:
            return np.expand_dims(out, int(entries[0][0]) % (ndim + 1))
        return out

    gufunc_impl.__name__ = gufunc_impl.__qualname__ = impl.__name__
    return gufunc_impl


_register(np, "vecdot", _gufunc_keywords("np.vecdot", vecdot_impl))
_register(np, "matvec", _gufunc_keywords("np.matvec", matvec_impl))
_register(np, "vecmat", _gufunc_keywords("np.vecmat", vecmat_impl))
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
_register(np, "unstack", unstack_transpose, linear)


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
