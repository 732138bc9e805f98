"""Changing shape, transposing, adding and removing axes, rearranging and tiling.

Each function is linear, so its pullback is its transpose: another shape function applied
to the cotangent, with axes counted from the end so that leading batch axes are left alone.
"""

import numpy as np

from ..extend import astype, plain, rrule, shape_of
from ._util import batch_shape, normalize_axes
from .indexing import index_add


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
    if order == "C" or not batch:
        return np.reshape(g, batch + shape, order=order)
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


# ---------------------------------------------------------------------------- changing shape

@rrule(np.reshape)
def reshape_rule(a, *args, **kwargs):
    ans = np.reshape(a, *args, **kwargs)
    order = _memory_order(a, kwargs.get("order", args[1] if len(args) > 1 else "C"))
    shape = shape_of(a)
    out_ndim = len(shape_of(ans))

    def reshape_pullback(g):
        return (_reshape_back(g, shape, out_ndim, order),) + (None,) * len(args)

    return ans, reshape_pullback


@rrule(np.ravel)
def ravel_rule(a, order="C"):
    ans = np.ravel(a, order=order)
    shape = shape_of(a)
    if order == "K":
        # memory order: the permutation that ravel applies to an index array laid out like a
        index = np.empty_like(plain(a), dtype=np.intp)
        index[...] = np.arange(index.size).reshape(shape)
        perm = np.ravel(index, order="K")
        inverse = None if np.all(perm == np.arange(perm.size)) else np.argsort(perm)
    else:
        inverse = None
        order = _memory_order(a, order)

    def ravel_pullback(g):
        if order == "K":
            return (_reshape_back(g if inverse is None else g[..., inverse], shape, 1), None)
        return (_reshape_back(g, shape, 1, order), None)

    return ans, ravel_pullback


# ---------------------------------------------------------------------------- transposing

@rrule(np.transpose)
def transpose_rule(a, axes=None):
    ans = np.transpose(a, axes)
    ndim = len(shape_of(a))
    perm = tuple(range(ndim))[::-1] if axes is None else tuple(int(i) % ndim for i in axes)

    def transpose_pullback(g):
        return (_transpose_back(g, perm), None)

    return ans, transpose_pullback


@rrule(np.swapaxes)
def swapaxes_rule(a, axis1, axis2):
    ans = np.swapaxes(a, axis1, axis2)
    ndim = len(shape_of(a))

    def swapaxes_pullback(g):
        return (np.swapaxes(g, _from_end(axis1, ndim), _from_end(axis2, ndim)), None, None)

    return ans, swapaxes_pullback


@rrule(np.moveaxis)
def moveaxis_rule(a, source, destination):
    ans = np.moveaxis(a, source, destination)
    ndim = len(shape_of(a))

    def moveaxis_pullback(g):
        s = [_from_end(i, ndim) for i in np.atleast_1d(source)]
        d = [_from_end(i, ndim) for i in np.atleast_1d(destination)]
        return (np.moveaxis(g, d, s), None, None)

    return ans, moveaxis_pullback


@rrule(np.rollaxis)
def rollaxis_rule(a, axis, start=0):
    ans = np.rollaxis(a, axis, start)
    ndim = len(shape_of(a))
    # the permutation rollaxis applies (NumPy's own reading of axis and start)
    axis, start = int(axis) % ndim, int(start) + ndim if start < 0 else int(start)
    perm = [i for i in range(ndim) if i != axis]
    perm.insert(start - 1 if axis < start else start, axis)

    def rollaxis_pullback(g):
        return (_transpose_back(g, perm), None, None)

    return ans, rollaxis_pullback


# ---------------------------------------------------------------------------- adding axes

def _reshape_back_rule(func):
    def reshape_back_rule(a, *args, **kwargs):
        ans = func(a, *args, **kwargs)
        shape = shape_of(a)
        out_ndim = len(shape_of(ans))

        def reshape_back_pullback(g):
            return (_reshape_back(g, shape, out_ndim),) + (None,) * len(args)

        reshape_back_pullback.__qualname__ = f"{func.__name__}_pullback"
        return ans, reshape_back_pullback

    reshape_back_rule.__qualname__ = f"{func.__name__}_rule"
    return reshape_back_rule


for _f in (np.expand_dims, np.squeeze):
    rrule(_f)(_reshape_back_rule(_f))


def _atleast_rule(func):
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

        atleast_pullback.__qualname__ = f"{func.__name__}_pullback"
        return ans, atleast_pullback

    atleast_rule.__qualname__ = f"{func.__name__}_rule"
    return atleast_rule


for _f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    rrule(_f)(_atleast_rule(_f))


@rrule(np.broadcast_to)
def broadcast_to_rule(array, shape, subok=False):
    ans = np.broadcast_to(array, shape)

    def broadcast_to_pullback(g):
        return (g, None)  # the engine sums the broadcast axes away

    return ans, broadcast_to_pullback


@rrule(np.broadcast_arrays)
def broadcast_arrays_rule(*args, subok=False):
    ans = np.broadcast_arrays(*args)

    def broadcast_arrays_pullback(gs):
        return tuple(gs)  # the engine sums each cotangent back to its input's shape

    return ans, broadcast_arrays_pullback


@rrule(np.copy)
def copy_rule(a, order="K", subok=False):
    def copy_pullback(g):
        return (g, None, None)

    return np.copy(a, order=order), copy_pullback


@rrule(astype)
def astype_rule(x, dtype):
    ans = astype(x, dtype)

    def astype_pullback(g):
        return (g, None)  # the engine casts the cotangent back to the input's dtype

    return ans, astype_pullback


# ---------------------------------------------------------------------------- rearranging

@rrule(np.flip)
def flip_rule(m, axis=None):
    ans = np.flip(m, axis)
    ndim = len(shape_of(m))
    axes = tuple(a - ndim for a in normalize_axes(axis, ndim))

    def flip_pullback(g):
        return (np.flip(g, axes), None)

    return ans, flip_pullback


@rrule(np.fliplr)
def fliplr_rule(m):
    ndim = len(shape_of(m))

    def fliplr_pullback(g):
        return (np.flip(g, 1 - ndim),)

    return np.fliplr(m), fliplr_pullback


@rrule(np.flipud)
def flipud_rule(m):
    ndim = len(shape_of(m))

    def flipud_pullback(g):
        return (np.flip(g, -ndim),)

    return np.flipud(m), flipud_pullback


@rrule(np.roll)
def roll_rule(a, shift, axis=None):
    ans = np.roll(a, shift, axis)
    shape = shape_of(a)
    back = tuple(-int(s) for s in np.atleast_1d(shift)) if np.ndim(shift) else -int(shift)

    def roll_pullback(g):
        if axis is None:  # rolls the flattened array
            flat = np.reshape(g, batch_shape(g, len(shape)) + (-1,))
            return (_reshape_back(np.roll(flat, back, -1), shape, 1), None, None)
        axes = tuple(_from_end(i, len(shape)) for i in np.atleast_1d(axis))
        return (np.roll(g, back, axes if np.ndim(axis) else axes[0]), None, None)

    return ans, roll_pullback


@rrule(np.rot90)
def rot90_rule(m, k=1, axes=(0, 1)):
    ans = np.rot90(m, k, axes)
    ndim = len(shape_of(m))
    back = (_from_end(axes[0], ndim), _from_end(axes[1], ndim))

    def rot90_pullback(g):
        return (np.rot90(g, -k, back), None, None)

    return ans, rot90_pullback


# ---------------------------------------------------------------------------- tiling

@rrule(np.tile)
def tile_rule(A, reps):
    ans = np.tile(A, reps)
    shape = shape_of(A)
    reps = tuple(int(r) for r in np.atleast_1d(reps))
    d = max(len(reps), len(shape))
    reps = (1,) * (d - len(reps)) + reps
    grown = (1,) * (d - len(shape)) + shape

    def tile_pullback(g):
        # the output along each axis is reps[i] copies of the input: sum the copies
        split = tuple(n for pair in zip(reps, grown) for n in pair)
        parts = np.reshape(g, batch_shape(g, d) + split)
        total = np.sum(parts, axis=tuple(range(-2 * d, 0, 2)))
        return (_reshape_back(total, shape, d), None)

    return ans, tile_pullback


@rrule(np.repeat)
def repeat_rule(a, repeats, axis=None):
    ans = np.repeat(a, repeats, axis)
    shape = shape_of(a)
    n = int(np.prod(shape)) if axis is None else shape[axis]
    counts = np.broadcast_to(np.asarray(repeats, dtype=np.intp), (n,))

    def repeat_pullback(g):
        if axis is None:  # repeats the flattened array
            flat = np.reshape(g, batch_shape(g, 1) + (-1,))
            return (_reshape_back(_sum_repeats(flat, counts, -1), shape, 1), None, None)
        return (_sum_repeats(g, counts, _from_end(axis, len(shape))), None, None)

    return ans, repeat_pullback


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
