"""Changing shape, transposing, adding and removing axes, rearranging and tiling.

Each function is linear, so it is declared by its transpose: another shape function
applied to the cotangent, with axes counted from the end so that leading batch axes are
left alone. ``fliplr`` and ``flipud`` are ``np.flip``; functions of several arrays keep a
general rule.
"""

import numpy as np

from ..._engine.methods import memory
from ..._engine.writes import base_and_geometry
from ...extend import astype, composite, is_foreign, linear, on_backend, plain, rrule, shape_of
from .._util import batch_shape, normalize_axes
from .indexing import index_add
from .strided import as_strided


def _from_end(axis, ndim):
    """``axis`` counted from the end, which skips a cotangent's leading batch axes."""
    return int(axis) % ndim - ndim


def _transpose_back(g, perm):
    """Undo the axis permutation ``perm`` on ``g``, past its leading batch axes."""
    nb = len(batch_shape(g, len(perm)))
    inverse = np.argsort(perm)
    return np.transpose(g, tuple(range(nb)) + tuple(nb + int(i) for i in inverse))


def _reshape_back(g, shape, out_ndim, order="C"):
    """``g`` reshaped to ``shape`` past its batch axes, reading in ``order`` ('C' or 'F')."""
    batch = batch_shape(g, out_ndim)
    if order == "C":  # no order= given: Dask's reshape takes none
        return np.reshape(g, batch + shape)
    if not batch:
        return np.reshape(g, shape, order=order)
    # Fortran order runs the first axis fastest: keep the batch axes last while reshaping
    nb = len(batch)
    moved = np.moveaxis(g, tuple(range(nb)), tuple(range(-nb, 0)))
    back = np.reshape(moved, shape + batch, order="F")
    return np.moveaxis(back, tuple(range(-nb, 0)), tuple(range(nb)))


def _memory_order(a, order):
    """The order ('C' or 'F') in which ``order='A'`` reads ``a``."""
    if order == "A":
        flags = plain(a).flags
        return "F" if flags.f_contiguous and not flags.c_contiguous else "C"
    return order


def reshaping_transpose(g, ans, a, *args, **kwargs):
    """The transpose of a function that only reshapes (C order): reshape the cotangent back."""
    return _reshape_back(g, shape_of(a), len(shape_of(ans)))


# ---------------------------------------------------------------------------- changing shape

def reshape_transpose(g, ans, a, *args, **kwargs):
    order = _memory_order(a, kwargs.get("order", args[1] if len(args) > 1 else "C"))
    return _reshape_back(g, shape_of(a), len(shape_of(ans)), order)


def ravel_transpose(g, ans, a, order="C"):
    shape = shape_of(a)
    if order != "K":
        return _reshape_back(g, shape, 1, _memory_order(a, order))
    # memory order: the permutation that ravel applies to an index array laid out like a
    index = np.empty_like(plain(a), dtype=np.intp)
    index[...] = on_backend(np.arange(index.size).reshape(shape), index)
    perm = np.ravel(index, order="K")
    if is_foreign(perm):  # another library's array: no branch on its values
        g = g[..., np.argsort(perm)]
    elif not np.all(perm == np.arange(perm.size)):
        g = g[..., np.argsort(perm)]
    return _reshape_back(g, shape, 1)


linear(np.reshape, reshape_transpose, batched=True)
linear(np.ravel, ravel_transpose, batched=True)


# ---------------------------------------------------------------------------- transposing

def transpose_transpose(g, ans, a, axes=None):
    ndim = len(shape_of(a))
    perm = tuple(range(ndim))[::-1] if axes is None else tuple(int(i) % ndim for i in axes)
    return _transpose_back(g, perm)


def swapaxes_transpose(g, ans, a, axis1, axis2):
    ndim = len(shape_of(a))
    return np.swapaxes(g, _from_end(axis1, ndim), _from_end(axis2, ndim))


def moveaxis_transpose(g, ans, a, source, destination):
    ndim = len(shape_of(a))
    s = [_from_end(i, ndim) for i in np.atleast_1d(source)]
    d = [_from_end(i, ndim) for i in np.atleast_1d(destination)]
    return np.moveaxis(g, d, s)


def rollaxis_transpose(g, ans, a, axis, start=0):
    ndim = len(shape_of(a))
    # the permutation rollaxis applies (NumPy's own reading of axis and start)
    axis, start = int(axis) % ndim, int(start) + ndim if start < 0 else int(start)
    perm = [i for i in range(ndim) if i != axis]
    perm.insert(start - 1 if axis < start else start, axis)
    return _transpose_back(g, perm)


linear(np.transpose, transpose_transpose, batched=True)
linear(np.swapaxes, swapaxes_transpose, batched=True)
linear(np.moveaxis, moveaxis_transpose, batched=True)
linear(np.rollaxis, rollaxis_transpose, batched=True)


# ---------------------------------------------------------------------------- adding axes

linear(np.expand_dims, reshaping_transpose, batched=True)
linear(np.squeeze, reshaping_transpose, batched=True)


def _atleast_rule(func):
    """The rule of ``np.atleast_1d`` (2d, 3d): one or several arrays in, each reshaped."""

    def atleast_rule(*arys):
        ans = func(*arys)
        shapes = [shape_of(a) for a in arys]
        if len(arys) == 1:
            out_ndim = len(shape_of(ans))

            def atleast_pullback(g):
                return (_reshape_back(g, shapes[0], out_ndim),)
        else:  # several arrays in, a tuple out: one cotangent each
            out_ndims = [len(shape_of(o)) for o in ans]

            def atleast_pullback(gs):
                return tuple(_reshape_back(g, s, n) for g, s, n in zip(gs, shapes, out_ndims))

        return ans, atleast_pullback

    return atleast_rule


for _f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    rrule(_f, batched=True)(_atleast_rule(_f))

# broadcasting, copying and casting: the engine sums the broadcast axes away and casts the
# cotangent back to the input's dtype
linear(np.broadcast_to, lambda g, ans, array, shape, subok=False: g, batched=True)
linear(np.copy, lambda g, ans, a, *args, **kwargs: g, batched=True)
linear(astype, lambda g, ans, x, dtype: g, batched=True)


@rrule(np.broadcast_arrays, batched=True)
def broadcast_arrays_rule(*args, subok=False):
    ans = np.broadcast_arrays(*args)

    def broadcast_arrays_pullback(gs):
        return tuple(gs)  # the engine sums each cotangent back to its input's shape

    return ans, broadcast_arrays_pullback


# ---------------------------------------------------------------------------- rearranging

def flip_transpose(g, ans, m, axis=None):
    ndim = len(shape_of(m))
    return np.flip(g, tuple(a - ndim for a in normalize_axes(axis, ndim)))


def roll_transpose(g, ans, a, shift, axis=None):
    shape = shape_of(a)
    back = tuple(-int(s) for s in np.atleast_1d(shift)) if np.ndim(shift) else -int(shift)
    if axis is None:  # rolls the flattened array
        flat = np.reshape(g, batch_shape(g, len(shape)) + (-1,))
        return _reshape_back(np.roll(flat, back, -1), shape, 1)
    axes = tuple(_from_end(i, len(shape)) for i in np.atleast_1d(axis))
    return np.roll(g, back, axes if np.ndim(axis) else axes[0])


def rot90_transpose(g, ans, m, k=1, axes=(0, 1)):
    ndim = len(shape_of(m))
    return np.rot90(g, -k, (_from_end(axes[0], ndim), _from_end(axes[1], ndim)))


def fliplr_impl(m):
    if len(shape_of(m)) < 2:
        raise ValueError("Input must be >= 2-d.")  # NumPy's own check
    return np.flip(m, 1)


def flipud_impl(m):
    if len(shape_of(m)) < 1:
        raise ValueError("Input must be >= 1-d.")
    return np.flip(m, 0)


linear(np.flip, flip_transpose, batched=True)
linear(np.roll, roll_transpose, batched=True)
linear(np.rot90, rot90_transpose, batched=True)
composite(np.fliplr, fliplr_impl)
composite(np.flipud, flipud_impl)


# ---------------------------------------------------------------------------- tiling

def tile_transpose(g, ans, A, reps):
    shape = shape_of(A)
    reps = tuple(int(r) for r in np.atleast_1d(reps))
    d = max(len(reps), len(shape))
    reps = (1,) * (d - len(reps)) + reps
    grown = (1,) * (d - len(shape)) + shape
    # the output along each axis is reps[i] copies of the input: sum the copies
    split = tuple(n for pair in zip(reps, grown) for n in pair)
    parts = np.reshape(g, batch_shape(g, d) + split)
    total = np.sum(parts, axis=tuple(range(-2 * d, 0, 2)))
    return _reshape_back(total, shape, d)


def repeat_transpose(g, ans, a, repeats, axis=None):
    shape = shape_of(a)
    flat = axis is None or not shape  # (np.repeat checked the axis: 0 or -1 for a 0-d array)
    n = int(np.prod(shape)) if flat else shape[axis]
    counts = np.broadcast_to(np.asarray(repeats, dtype=np.intp), (n,))
    if flat:  # repeats the flattened array
        flat = np.reshape(g, batch_shape(g, 1) + (-1,))
        return _reshape_back(_sum_repeats(flat, counts, -1), shape, 1)
    return _sum_repeats(g, counts, _from_end(axis, len(shape)))


def _sum_repeats(g, counts, ax):
    """Sum each run of ``counts[i]`` repeated entries of ``g`` along ``ax`` (from the end)."""
    gshape = shape_of(g)
    p = len(gshape) + ax
    if counts.size and np.all(counts == counts[0]):
        # the same count everywhere: split the axis in two and sum the copies
        runs = np.reshape(g, gshape[:p] + (counts.size, int(counts[0])) + gshape[p + 1:])
        return np.sum(runs, axis=p + 1)
    # varying counts: output entry j came from input entry source[j]; scatter back
    source = np.repeat(np.arange(counts.size), counts)
    moved = np.moveaxis(g, p, 0)
    back = index_add(moved, (source,), (counts.size,) + shape_of(moved)[1:])
    return np.moveaxis(back, 0, p)


linear(np.tile, tile_transpose, batched=True)
linear(np.repeat, repeat_transpose, batched=True)


# ---------------------------------------------------------------------------- windows

def sliding_window_view_impl(x, window_shape, axis=None, *, subok=False, writeable=False):
    # NumPy's read-only view, as slices: the windows along an axis are the w shifted slices
    # of length n - w + 1 stacked on a last axis (a repeated axis: windows of windows, as
    # NumPy's)
    shape = shape_of(x)
    windows = tuple(window_shape) if np.iterable(window_shape) else (window_shape,)
    if axis is None:
        axes = tuple(range(len(shape)))
        if len(windows) != len(axes):
            raise ValueError(f"Since axis is `None`, must provide window_shape for all "
                             f"dimensions of `x`; got {len(windows)} window_shape elements "
                             f"and `x.ndim` is {len(shape)}.")
    else:
        axes = tuple(axis) if np.iterable(axis) else (axis,)
        if len(windows) != len(axes):
            raise ValueError(f"Must provide matching length window_shape and axis; got "
                             f"{len(windows)} window_shape elements and {len(axes)} axes "
                             "elements.")
    axes = [a % len(shape) for a in axes]
    for a, w in zip(axes, windows):
        if w < 0 or shape[a] - w + 1 < 1:  # (of the shape at that point, as NumPy's)
            raise ValueError("window shape cannot be larger than input array shape"
                             if w >= 0 else "`window_shape` cannot contain negative values")
        shape = shape[:a] + (shape[a] - w + 1,) + shape[a + 1:]
    v = memory(x)
    if isinstance(v, np.ndarray) and (v.flags.c_contiguous or v.flags.f_contiguous
                                      or base_and_geometry(x) is not None):
        # NumPy's view of the same memory (a write into x shows through it, and a write into
        # it reaches x when writeable=True), through pullback's as_strided
        strides = v.strides + tuple(v.strides[a] for a in axes)
        return as_strided(x, shape + windows, strides, writeable=writeable)
    out = x  # another library's array, or a strided view of a plain array: the windows as
    for a, w in zip(axes, windows):  # the w shifted slices along each axis, stacked (a copy)
        n = shape_of(out)[a] - w + 1
        lead = (slice(None),) * a
        out = np.stack([out[lead + (slice(k, k + n),)] for k in range(w)], axis=-1)
    return out


composite(np.lib.stride_tricks.sliding_window_view, sliding_window_view_impl)
