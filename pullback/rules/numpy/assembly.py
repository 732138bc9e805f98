"""Joining and splitting arrays, and building arrays from parts: concatenate, the stacks,
block, append, the splits, meshgrid, diagflat, vander and linspace; delete, insert, resize
and trim_zeros; np.fromiter of tracked values.

Joining is linear, and its transpose splits the cotangent; splitting is transposed by
joining the cotangents. The stacks and hsplit, vsplit, dsplit are concatenate and split
of reshaped arrays, as NumPy computes them. Axes are counted from the end, past any leading
batch axes.
"""

import builtins
import functools
import itertools

import numpy as np

from ..._engine.interception import stand_in, swap_module_function
from ...extend import (
    Tracked,
    composite,
    is_foreign,
    linear,
    on_backend,
    plain,
    rrule,
    shape_of,
)
from .._util import batch_shape, conj_if_complex, listed


def _split_along(g, sizes, axis, ndim):
    """Pieces of ``g`` along ``axis`` of an ``ndim``-axis output (counted from the end)."""
    ax = axis % ndim - ndim
    pieces, start = [], 0
    tail = (slice(None),) * (-ax - 1)
    for n in sizes:
        pieces.append(g[(Ellipsis, slice(start, start + n)) + tail])
        start += n
    return pieces


# ---------------------------------------------------------------------------- joining

@rrule(np.concatenate, batched=True)
def concatenate_rule(arrays, axis=0, **kwargs):
    ans = np.concatenate(arrays, axis=axis, **kwargs)
    shapes = [shape_of(a) for a in arrays]

    def concatenate_pullback(g):
        if axis is None:  # joins the flattened arrays
            flat = _split_along(g, [int(np.prod(s)) for s in shapes], -1, 1)
            nb = batch_shape(g, 1)
            pieces = [np.reshape(p, nb + s) for p, s in zip(flat, shapes)]
        else:
            pieces = _split_along(g, [s[axis] for s in shapes], axis, len(shapes[0]))
        return ([listed(p, a, len(s)) for p, a, s in zip(pieces, arrays, shapes)], None)

    return ans, concatenate_pullback


@rrule(np.stack, batched=True)
def stack_rule(arrays, axis=0, **kwargs):
    ans = np.stack(arrays, axis=axis, **kwargs)
    ndim = len(shape_of(ans))
    ax = axis % ndim - ndim
    tail = (slice(None),) * (-ax - 1)

    def stack_pullback(g):
        return ([listed(g[(Ellipsis, i) + tail], a, ndim - 1) for i, a in enumerate(arrays)],
                None)

    return ans, stack_pullback


def _column(a):
    """``a`` as np.column_stack takes it: a column for 0-d and 1-d arrays."""
    return np.reshape(a, (-1, 1)) if len(shape_of(a)) < 2 else a


# the stacks are concatenations of arrays given at least 1, 2 or 3 axes (as NumPy does)

def vstack_impl(tup, **kwargs):
    return np.concatenate([np.atleast_2d(a) for a in tup], axis=0, **kwargs)


def hstack_impl(tup, **kwargs):
    arrs = [np.atleast_1d(a) for a in tup]
    axis = 0 if arrs and len(shape_of(arrs[0])) == 1 else 1
    return np.concatenate(arrs, axis=axis, **kwargs)


def dstack_impl(tup):
    return np.concatenate([np.atleast_3d(a) for a in tup], axis=2)


def column_stack_impl(tup):
    return np.concatenate([_column(a) for a in tup], axis=1)


composite(np.vstack, vstack_impl)
composite(np.hstack, hstack_impl)
composite(np.dstack, dstack_impl)
composite(np.column_stack, column_stack_impl)


@rrule(np.block, batched=True)
def block_rule(arrays):
    ans = np.block(arrays)
    ndim = len(shape_of(ans))
    depth = _depth(arrays)

    def block_pullback(g):
        return (_unblock(g, arrays, depth, ndim),)

    return ans, block_pullback


def _depth(arrays):
    return 1 + _depth(arrays[0]) if type(arrays) is list else 0


def _block_shape(item, depth, ndim):
    """The shape of the block ``item``: the innermost lists join along the last axis, the
    lists holding them along the second last, and so on."""
    if depth == 0:
        shape = shape_of(item)
        return (1,) * (ndim - len(shape)) + shape
    shapes = [_block_shape(part, depth - 1, ndim) for part in item]
    ax = ndim - depth
    return shapes[0][:ax] + (sum(s[ax] for s in shapes),) + shapes[0][ax + 1:]


def _unblock(g, item, depth, ndim):
    """The cotangent of each array in the nested lists ``item``, cut out of ``g``."""
    if depth == 0:
        return np.reshape(g, batch_shape(g, ndim) + shape_of(item))
    sizes = [_block_shape(part, depth - 1, ndim)[ndim - depth] for part in item]
    pieces = _split_along(g, sizes, -depth, ndim)
    return [_unblock(p, part, depth - 1, ndim) for p, part in zip(pieces, item)]


@rrule(np.append, batched=True)
def append_rule(arr, values, axis=None):
    ans = np.append(arr, values, axis)
    shapes = [shape_of(arr), shape_of(values)]

    def append_pullback(g):
        if axis is None:  # joins the flattened arrays
            sizes = [int(np.prod(s)) for s in shapes]
            nb = batch_shape(g, 1)
            return tuple(np.reshape(p, nb + s)
                         for p, s in zip(_split_along(g, sizes, -1, 1), shapes)) + (None,)
        ndim = len(shapes[0])
        return (*_split_along(g, [s[axis] for s in shapes], axis, ndim), None)

    return ans, append_pullback


# ---------------------------------------------------------------------------- splitting

def split_transpose(gs, ans, ary, indices_or_sections, axis=0):
    ndim = len(shape_of(ary))
    return np.concatenate(gs, axis=int(axis) % ndim - ndim)


def _split_impl(name, least, axis_of):
    """np.hsplit (vsplit, dsplit): np.split along ``axis_of(ndim)``, for arrays of at least
    ``least`` axes."""

    def split_impl(ary, indices_or_sections):
        ndim = len(shape_of(ary))
        if ndim < least:  # NumPy's own check
            raise ValueError(f"{name} only works on arrays of {least} or more dimensions")
        return np.split(ary, indices_or_sections, axis_of(ndim))

    return split_impl


linear(np.split, split_transpose, batched=True)
linear(np.array_split, split_transpose, batched=True)
composite(np.hsplit, _split_impl("hsplit", 1, lambda ndim: 1 if ndim > 1 else 0))
composite(np.vsplit, _split_impl("vsplit", 2, lambda ndim: 0))
composite(np.dsplit, _split_impl("dsplit", 3, lambda ndim: 2))


# ---------------------------------------------------------------------------- building

@rrule(np.meshgrid, batched=True)
def meshgrid_rule(*xi, indexing="xy", **kwargs):
    ans = np.meshgrid(*xi, indexing=indexing, **kwargs)
    ndim = len(xi)
    position = list(range(ndim))
    if indexing == "xy" and ndim > 1:  # the first two outputs' axes are swapped
        position[:2] = [1, 0]

    def meshgrid_cotangent(g, x, p):
        # output k repeats x_k along every other axis: sum those axes
        total = np.sum(g, axis=tuple(i - ndim for i in range(ndim) if i != p))
        return np.reshape(total, batch_shape(g, ndim) + shape_of(x))

    def meshgrid_pullback(gs):
        return tuple(functools.partial(meshgrid_cotangent, *gxp)
                     for gxp in zip(gs, xi, position))

    return ans, meshgrid_pullback


def diagflat_transpose(g, ans, v, k=0):
    shape = shape_of(v)
    n = int(np.prod(shape))
    rows = np.arange(n) + max(-k, 0)
    cols = np.arange(n) + max(k, 0)
    return np.reshape(g[..., rows, cols], batch_shape(g, 2) + shape)


linear(np.diagflat, diagflat_transpose, batched=True)


@rrule(np.vander, batched=True)
def vander_rule(x, N=None, increasing=False):
    ans = np.vander(x, N, increasing)
    N = shape_of(ans)[1]

    def vander_pullback(g):
        if N < 2:  # constant columns
            return (None, None, None)
        # d x**p / dx = p x**(p - 1): the same matrix with one column fewer, times p
        powers = np.arange(1, N) if increasing else np.arange(N - 1, 0, -1)
        lower = np.vander(x, N - 1, increasing) * on_backend(powers, x)
        used = g[..., 1:] if increasing else g[..., :-1]
        return (np.sum(used * conj_if_complex(lower), axis=-1), None, None)

    return ans, vander_pullback


@rrule(np.linspace, batched=True)
def linspace_rule(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    # by keyword, and only those given (Dask's linspace has chunks= fifth, and no axis=)
    kw = ({} if endpoint else {"endpoint": False}) | ({"retstep": True} if retstep else {}) | (
        {} if dtype is None else {"dtype": dtype}) | ({} if axis == 0 else {"axis": axis})
    ans = np.linspace(start, stop, num, **kw)
    num = int(num)
    div = (num - 1) if endpoint else num
    # sample i is start (1 - t_i) + stop t_i, t_i = i / div (the last is stop itself)
    t = np.arange(num) / div if div > 0 else np.zeros(num)
    ndim = len(shape_of(ans[0] if retstep else ans))
    ax = int(axis) % ndim - ndim  # the samples' axis, counted from the end past batch axes
    t = np.reshape(t, (num,) + (1,) * (-ax - 1))

    def linspace_pullback(g):
        g_step = None
        if retstep:
            g, g_step = g
        t_here = on_backend(t, g)
        ct_start = np.sum(g * (1 - t_here), axis=ax)
        ct_stop = np.sum(g * t_here, axis=ax)
        if g_step is not None and div > 0:  # step = (stop - start) / div
            ct_start = ct_start - g_step / div
            ct_stop = ct_stop + g_step / div
        return ct_start, ct_stop, None, None, None, None, None

    return ans, linspace_pullback


def logspace_impl(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    # NumPy's: base ** linspace(start, stop); an array base is broadcast with the ends
    # first, as it may change which axis ``axis`` names
    if not isinstance(base, (float, int)) and np.ndim(base):
        ndim = len(np.broadcast_shapes(*(np.shape(a) for a in (start, stop, base))))
        start, stop, base = (np.reshape(a, (1,) * (ndim - np.ndim(a)) + np.shape(a))
                             for a in (start, stop, base))
        base = np.expand_dims(base, axis)
    y = np.linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    out = np.power(base, y)
    return out if dtype is None else out.astype(dtype, copy=False)


def geomspace_impl(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    # NumPy's steps: the samples start ** (1 - t) * stop ** t, computed from start and stop
    # turned onto the positive reals by their sign (a constant: the samples do not depend
    # on it), with the ends exactly start and stop
    start, stop = np.asanyarray(start), np.asanyarray(stop)
    if np.any(start == 0) or np.any(stop == 0):
        raise ValueError("Geometric sequence cannot include zero")
    common = np.result_type(start, stop, float(num), np.float64 if dtype is None else dtype)
    dtype = common if dtype is None else np.dtype(dtype)
    start, stop = start.astype(common), stop.astype(common)
    sign = np.sign(plain(start))
    start, stop = start / sign, stop / sign
    result = np.logspace(np.log10(start), np.log10(stop), num=num, endpoint=endpoint,
                         base=10.0, dtype=common)
    if num > 0:  # (recorded writes: the ends are the arguments themselves)
        result[0] = start
        if num > 1 and endpoint:
            result[-1] = stop
    result = result * sign
    if axis != 0:
        result = np.moveaxis(result, 0, axis)
    return result.astype(dtype, copy=False)


composite(np.logspace, logspace_impl)
composite(np.geomspace, geomspace_impl)


# ---------------------------------------------------------------------------- delete, insert,
# resize, trim_zeros: each result is a gather of the elements of its inputs. NumPy's own
# function, run on plain integer codes (the flat position of each element), says which
# element lands where, with NumPy's every argument form, broadcast and error; the tracked
# result is then a gather at those positions (its cotangents add up where one element
# lands several times, as in np.resize). The codes are host arrays, which index the arrays
# of other libraries too (CuPy copies them to the device).

def _positions(shape, start=0):
    """The flat position of each element of an array of ``shape``, counted from ``start``."""
    return np.arange(start, start + int(np.prod(shape)), dtype=np.intp).reshape(shape)


def _array(x, like):
    """``x`` as an array on the library of ``like``: a tracked value or another library's
    array as it is, a constant (a list, a scalar, an ndarray) built in NumPy and moved."""
    if isinstance(x, Tracked) or is_foreign(x):
        return x
    return on_backend(np.asarray(x), like)


def _take_flat(x, codes):
    """The elements of ``x`` at the flat positions ``codes``, in ``codes``' shape (by a 1-d
    gather: Dask takes no n-d integer index)."""
    return np.reshape(np.ravel(x)[np.ravel(codes)], codes.shape)


def delete_of_tracked(arr, obj, axis=None):
    """np.delete on a tracked array: a gather of the elements it keeps."""
    kept = np.delete(_positions(shape_of(arr)), plain(obj), axis)  # obj is an index
    return _take_flat(arr, kept)


def insert_of_tracked(arr, obj, values, axis=None):
    """np.insert with a tracked ``arr`` or ``values``: a gather from the elements of both,
    ``values`` cast to ``arr``'s dtype as NumPy casts them."""
    like = arr if isinstance(arr, Tracked) or is_foreign(arr) else values
    arr, values = _array(arr, like), _array(values, like)
    n = int(np.prod(shape_of(arr)))
    codes = np.insert(_positions(shape_of(arr)), plain(obj), _positions(shape_of(values), n),
                      axis)
    dtype = plain(arr).dtype
    if plain(values).dtype != dtype:
        values = values.astype(dtype)
    return _take_flat(np.concatenate([np.ravel(arr), np.ravel(values)]), codes)


def resize_of_tracked(a, new_shape):
    """np.resize on a tracked array: the flattened elements repeated cyclically."""
    taken = np.resize(_positions(shape_of(a)), new_shape)
    if 0 in shape_of(a):  # NumPy fills with zeros: nothing depends on a
        return np.zeros_like(np.ravel(plain(a)), shape=taken.shape)
    return _take_flat(a, taken)


def trim_zeros_of_tracked(filt, trim="fb", *axis, **kwargs):
    """np.trim_zeros on a tracked array: a slice of it (``axis`` only where NumPy has it,
    2.2 on). Which zeros are trimmed is decided by the plain values, so a trimmed zero gets
    no cotangent (the positions are piecewise constant)."""
    x = plain(filt)
    kept = np.shape(np.trim_zeros(x, trim, *axis, **kwargs))  # NumPy's checks; the lengths
    if len(kept) == 0:
        return filt
    nonzero = x != 0
    front = "f" in trim.lower()
    ndim = len(kept)
    index = []
    for ax, (n, k) in enumerate(zip(shape_of(x), kept)):
        start = 0
        if front and k < n:  # the first position along ax with a nonzero anywhere
            others = tuple(i for i in range(ndim) if i != ax)
            start = int(np.argmax(np.any(nonzero, axis=others) if others else nonzero))
        index.append(slice(start, start + k))
    return filt[tuple(index)]


composite(np.delete, delete_of_tracked)
composite(np.insert, insert_of_tracked)
composite(np.resize, resize_of_tracked)
composite(np.trim_zeros, trim_zeros_of_tracked)


_np_fromiter = np.fromiter
_END = object()


def fromiter(iter, dtype, count=-1, *, like=None):
    """np.fromiter, which converts each item in C: an iterable whose first item is tracked
    is read into a list and stacked (``np.array``), so the result is tracked; any other
    goes to NumPy as it is (where a later item is tracked, NumPy's conversion refuses it:
    build such an array with np.array(list(...)) or np.stack)."""
    kwargs = {} if like is None else {"like": like}
    items = builtins.iter(iter)
    first = next(items, _END) if count != 0 else _END
    if first is _END or not isinstance(first, Tracked):
        rest = items if first is _END else itertools.chain((first,), items)
        return _np_fromiter(rest, dtype, count, **kwargs)
    values = [first, *itertools.islice(items, count - 1 if count > 0 else None)]
    if 0 < count and len(values) < count:
        raise ValueError(f"iterator too short: Expected {count} but iterator had only "
                         f"{len(values)} items.")
    return np.array(values, dtype=dtype)


swap_module_function(np, "fromiter", stand_in(_np_fromiter, fromiter))
