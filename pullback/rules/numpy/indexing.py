"""Indexing (``x[...]`` in every form) and selection: take, take_along_axis, compress,
extract, choose, select, where, diagonal, diag, tril, triu.

Every gather is ``x[index]`` for some index, and its pullback is ``index_add``: the
cotangent added into zeros at ``index`` (repeated indices add up). ``index_add`` is
itself a registered primitive, whose pullback is the gather again, so these rules are
differentiable to every order.
"""

import numpy as np

from ..._engine.lazy import is_lazy
from ...extend import (
    Tracked,
    getitem,
    is_foreign,
    linear,
    plain,
    primitive,
    rrule,
    shape_of,
    zeros_on,
)
from .._util import zero_of


def _plain_item(i):
    if isinstance(i, Tracked) and not i.traced:  # (pb.jit traces indices)
        raise TypeError(
            "pullback: an index must be a plain integer, slice or array, not a tracked "
            "value; use np.argmax/np.argsort or i.value to build indices"
        )
    if isinstance(i, (list, tuple)):  # NumPy reads a sequence as an array, an empty one as intp
        i = np.asarray(i)
        if i.size == 0 and i.dtype.kind not in "biu":
            i = i.astype(np.intp)
    return i


def _is_array(i):
    return isinstance(i, (np.ndarray, bool, np.bool_))


def _advanced(items):
    """The positions of the advanced indices in ``items``: arrays (0-d ones too) and
    booleans, and integers where one of those is present."""
    if not any(_is_array(i) for i in items):
        return []
    return [k for k, i in enumerate(items) if _is_array(i) or isinstance(i, (int, np.integer))]


def _together(positions):
    return not positions or positions[-1] - positions[0] + 1 == len(positions)


def _advanced_ndim(i):
    """The number of axes the advanced index ``i`` gives (a mask or a boolean gives one)."""
    if isinstance(i, np.ndarray) and i.dtype != bool:
        return i.ndim
    return 1 if _is_array(i) else 0


def normalize_index(index, ndim):
    """``index`` for an array of ``ndim`` axes as ``(items, front)``. ``items`` is a tuple
    (sequences made arrays, ``...`` spelled out as slices) that takes the leading ``ndim``
    axes of an array with more axes as ``index`` takes them, and leaves the others alone.
    ``front`` is ``(start, count)``: the ``count`` axes of ``x[items]`` from ``start`` on
    are the first axes of ``x[index]`` (``start`` is 0 where nothing moves).

    NumPy leaves the axes of the advanced indices where the first one stands when those
    indices stand next to each other in the index, and puts them first when anything
    stands between them, even an ``...`` of no axes, which ``items`` spells as nothing.
    """
    if not isinstance(index, tuple):
        index = (index,)
    index = [_plain_item(i) for i in index]
    consumed = 0
    for i in index:
        if i is None or i is Ellipsis or isinstance(i, (bool, np.bool_)):
            continue
        consumed += i.ndim if isinstance(i, np.ndarray) and i.dtype == bool else 1
    items = list(index)
    for k, i in enumerate(items):
        if i is Ellipsis:
            items[k:k + 1] = [slice(None)] * (ndim - consumed)
            break
    items = tuple(items)
    advanced = _advanced(items)
    if _together(_advanced(index)) or not _together(advanced):
        return items, (0, 0)
    # only slices and None stand before the first advanced index: one axis each
    return items, (advanced[0], max(_advanced_ndim(items[k]) for k in advanced))


def _numpy_layout(y, front):
    """``x[items]`` laid out as ``x[index]`` (see ``normalize_index``)."""
    start, count = front
    if not (start and count):
        return y
    return np.moveaxis(y, tuple(range(start, start + count)), tuple(range(count)))


def _items_layout(y, front):
    """``x[index]`` laid out as ``x[items]``: the inverse of ``_numpy_layout``."""
    start, count = front
    if not (start and count):
        return y
    return np.moveaxis(y, tuple(range(count)), tuple(range(start, start + count)))


def _gathers(items):
    # an integer array of any array library (a device's too): its repeats must add up
    return any(getattr(i, "ndim", 0) and i.dtype.kind in "iu" for i in items)


def _batch_last(g, nb):
    return np.moveaxis(g, tuple(range(nb)), tuple(range(-nb, 0))) if nb else g


def _batch_first(g, nb):
    return np.moveaxis(g, tuple(range(-nb, 0)), tuple(range(nb))) if nb else g


@primitive
def index_add(g, index, shape):
    """A zero array of ``shape`` with ``g`` added at ``index`` (repeated indices add up):
    the transpose of ``x[index]`` for ``x`` of that shape. ``index`` applies to the
    leading axes; trailing axes of ``shape`` it leaves alone are carried along. It is
    ``np.add.at(np.zeros(shape), index, g)`` without the update in place.

    >>> index_add(np.ones(3), [0, 0, 2], (4,))
    array([2., 0., 1., 0.])
    """
    if g is None or isinstance(g, (str, bytes)) or not (
            isinstance(shape, (int, np.integer)) or isinstance(shape, (tuple, list)) and all(
                isinstance(n, (int, np.integer)) for n in shape)):
        raise TypeError(f"pullback: index_add(values, index, shape) takes numeric values and a "
                        f"shape of integers; got values {type(g).__name__}, shape {shape!r}")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)  # (as NumPy's)
    items, front = normalize_index(index, len(shape))
    g = _items_layout(g, front)
    out = zeros_on(g, tuple(shape), np.result_type(g))
    if _gathers(items):
        try:
            np.add.at(out, items, g)
        except TypeError:  # an array library without ufunc.at (Dask)
            if not is_foreign(g) or any(is_foreign(i) for i in items):
                raise
            return _add_by_gathers(g, items, tuple(shape), out.dtype)
    elif g.__class__ is np.ndarray:
        out[items] = g
    elif 0 not in shape_of(g):  # (Dask fails to write nothing)
        if any(i is None for i in items):
            g, items = _without_new_axes(g, items)
            if not items:
                return g
        out[items] = g
    return out


def _without_new_axes(g, items):
    """``g`` without the length-1 axes the ``None`` entries of ``items`` made, and
    ``items`` without them: the same write, which Dask's assignment takes."""
    new, axis = [], 0
    for item in items:
        if item is None:
            new.append(axis)
        if not isinstance(item, (int, np.integer)):
            axis += 1
    return np.squeeze(g, axis=tuple(new)), tuple(i for i in items if i is not None)


def _add_by_gathers(g, items, shape, dtype):
    """``np.add.at(zeros(shape), items, g)`` by gathers of ``g`` alone, for an array
    library without ``ufunc.at``: the positions ``items`` reach are known on the host, so
    each output element sums its k-th contribution over k up to the most repeats (one
    gather for an index without repeats)."""
    size = int(np.prod(shape))
    targets = np.arange(size).reshape(shape)[items]  # on the host: each element's target
    where = targets.ravel()
    flat = np.reshape(np.broadcast_to(g, targets.shape), (-1,))
    padded = np.concatenate([flat, zeros_on(g, (1,), dtype)])  # a zero at position m
    order = np.argsort(where, kind="stable")
    counts = np.bincount(where, minlength=size)
    first = np.cumsum(counts) - counts  # where each target's run starts in ``order``
    out = None
    for k in range(int(counts.max(initial=0))):
        source = np.where(counts > k, order[np.minimum(first + k, len(order) - 1)],
                          len(order))
        term = padded[source]
        out = term if out is None else out + term
    if out is None:
        return zeros_on(g, shape, dtype)
    return np.reshape(out, shape)


def index_add_transpose(ct, ans, g, index, shape):
    # the gather at index, past the cotangent's leading batch axes
    nb = len(shape_of(ct)) - len(shape)
    items, front = normalize_index(index, len(shape))
    return _batch_first(_numpy_layout(_batch_last(ct, nb)[items], front), nb)


linear(index_add, index_add_transpose, batched=True)


def _scatter(items, front, shape, out_ndim):
    """The pullback of ``x[index]`` for ``x`` of ``shape``, ``index`` normalized."""

    def scatter(g):
        gshape = shape_of(g)
        nb = len(gshape) - out_ndim
        # batch axes go last, where the items leave them alone, and come back first
        g = _items_layout(_batch_last(g, nb), front)
        return _batch_first(index_add(g, items, shape + gshape[:nb]), nb)

    return scatter


def _gather(x, index):
    """``x[index]`` and the pullback of the gather."""
    shape = shape_of(x)
    items, front = normalize_index(index, len(shape))
    ans = x[index]
    return ans, _scatter(items, front, shape, len(shape_of(ans)))


def _flat_gather(x, indices):
    """``np.ravel(x)[indices]`` and the pullback of the gather."""
    shape = shape_of(x)
    ans, scatter = _gather(np.ravel(x), (indices,))

    def flat_scatter(g):
        ct = scatter(g)
        return np.reshape(ct, shape_of(ct)[:len(shape_of(ct)) - 1] + shape)

    return ans, flat_scatter


def _basic(index):
    """Whether ``index`` is an int, a slice or a tuple of them: NumPy's basic indexing, which
    takes each element at most once, so that its transpose is a write into zeros."""
    if index.__class__ is int or index.__class__ is slice:
        return True
    return index.__class__ is tuple and all(i.__class__ is int or i.__class__ is slice
                                            for i in index)


@rrule(getitem, batched=True)
def getitem_rule(x, index):
    if x.__class__ is np.ndarray and _basic(index):  # the common case: x[i], x[:, 0]
        ans = x[index]
        shape, ndim = x.shape, ans.ndim

        def basic_pullback(g):
            if g.__class__ is np.ndarray and g.ndim == ndim:  # no batch axes
                ct = np.zeros(shape, dtype=g.dtype)
                ct[index] = g
                return ct, None
            return _scatter(*normalize_index(index, len(shape)), shape, ndim)(g), None

        return ans, basic_pullback
    if x.__class__ is np.ndarray and index.__class__ is np.ndarray and x.ndim and (
            index.dtype.kind in "biu"):  # x[i], x[mask]: along the leading axes
        ans = x[index]
        shape, ndim, gathers = x.shape, ans.ndim, index.dtype.kind != "b"

        def array_index_pullback(g):
            if g.__class__ is not np.ndarray or g.ndim != ndim:  # batch axes, or nested
                return _scatter(*normalize_index(index, len(shape)), shape, ndim)(g), None
            ct = np.zeros(shape, dtype=g.dtype)
            if gathers:
                np.add.at(ct, index, g)  # repeated indices add up
            else:
                ct[index] = g
            return ct, None

        return ans, array_index_pullback
    ans, scatter = _gather(x, index)

    def getitem_pullback(g):
        return scatter(g), None

    return ans, getitem_pullback


def _along(indices, axis, ndim):
    """The index taking ``indices`` along ``axis`` (every element of the other axes)."""
    return (slice(None),) * (axis % ndim) + (indices,)


def _reads_flat(axis, shape):
    """Whether a function taking ``axis`` reads its array flattened: for axis None, and for a
    0-d array, which NumPy reads as 1-d (axis 0 or -1; any other is out of bounds)."""
    if axis is None or shape:
        return axis is None
    if axis not in (0, -1):
        raise np.exceptions.AxisError(axis, 1)
    return True


@rrule(np.take, batched=True)
def take_rule(a, indices, axis=None, out=None, mode="raise"):
    shape = shape_of(a)
    flat = _reads_flat(axis, shape)
    if not is_foreign(plain(indices)):
        given = indices
        indices = np.asarray(indices)  # a list; an empty one is integers, as NumPy reads it
        if not indices.size and type(given) in (list, tuple):
            indices = indices.astype(np.intp)
    n = int(np.prod(shape)) if flat else shape[axis]
    if mode == "wrap":
        indices = indices % n
    elif mode == "clip":
        indices = np.clip(indices, 0, n - 1)
    if flat:
        ans, scatter = _flat_gather(a, indices)
    else:
        ans, scatter = _gather(a, _along(indices, axis, len(shape)))

    def take_pullback(g):
        return scatter(g), None, None, None, None

    return ans, take_pullback


@rrule(np.take_along_axis, batched=True)
def take_along_axis_rule(arr, indices, axis=-1):
    shape = shape_of(arr)
    if axis is None:
        ans, scatter = _flat_gather(arr, indices)
    else:
        ndim = len(shape)
        grid = np.ogrid[tuple(slice(s) for s in shape)]
        index = tuple(indices if i == axis % ndim else grid[i] for i in range(ndim))
        if is_lazy(arr):  # (Dask gathers along one axis only: its own take_along_axis)
            ans = np.take_along_axis(arr, indices, axis=axis)
            scatter = _scatter(*normalize_index(index, ndim), shape, len(shape_of(ans)))
        else:
            ans, scatter = _gather(arr, index)

    def take_along_axis_pullback(g):
        return scatter(g), None, None

    return ans, take_along_axis_pullback


@rrule(np.compress, batched=True)
def compress_rule(condition, a, axis=None, out=None):
    taken = np.flatnonzero(plain(condition))
    if _reads_flat(axis, shape_of(a)):
        ans, scatter = _flat_gather(a, taken)
    else:
        ans, scatter = _gather(a, _along(taken, axis, len(shape_of(a))))

    def compress_pullback(g):
        return None, scatter(g), None, None

    return ans, compress_pullback


@rrule(np.extract, batched=True)
def extract_rule(condition, arr):
    ans, scatter = _flat_gather(arr, np.flatnonzero(plain(condition)))

    def extract_pullback(g):
        return None, scatter(g)

    return ans, extract_pullback


# ---------------------------------------------------------------------------- choices

def _zero(g):
    return zero_of(g)


@rrule(np.choose, batched=True)
def choose_rule(a, choices, out=None, mode="raise"):
    ans = np.choose(a, choices) if mode == "raise" else np.choose(a, choices, mode=mode)
    which = np.asarray(plain(a))
    n = len(choices)
    if mode == "wrap":
        which = which % n
    elif mode == "clip":
        which = np.clip(which, 0, n - 1)
    out_ndim = len(shape_of(ans))

    def choose_pullback(g):
        if isinstance(choices, (list, tuple)):
            return None, [np.where(which == k, g, _zero(g)) for k in range(n)], None, None
        # one array of choices along its first axis
        onehot = which == np.reshape(np.arange(n), (n,) + (1,) * out_ndim)
        # (np.where, not a product with onehot: exactly 0 where g is inf or NaN)
        ct = np.where(onehot, np.expand_dims(g, -out_ndim - 1), _zero(g))
        extra = out_ndim - (len(shape_of(choices)) - 1)  # axes broadcasting put in front
        if extra > 0:
            ct = np.sum(ct, axis=tuple(range(-out_ndim, -out_ndim + extra)))
        return None, ct, None, None

    return ans, choose_pullback


@rrule(np.select, batched=True)
def select_rule(condlist, choicelist, default=0):
    ans = np.select(condlist, choicelist, default)
    conds = [np.asarray(plain(c), dtype=bool) for c in condlist]

    def select_pullback(g):
        cts, taken = [], np.zeros((), dtype=bool)
        for c in conds:  # the first true condition chooses
            cts.append(np.where(c & ~taken, g, _zero(g)))
            taken = taken | c
        return None, cts, np.where(taken, _zero(g), g)

    return ans, select_pullback


@rrule(np.where, batched=True)
def where_rule(condition, x=None, y=None):
    if x is None and y is None:
        return np.nonzero(plain(condition)), None
    ans = np.where(condition, x, y)
    cond = plain(condition)

    def where_pullback(g):
        return None, np.where(cond, g, _zero(g)), np.where(cond, _zero(g), g)

    return ans, where_pullback


# ---------------------------------------------------------------------------- diagonals

def _diagonal_index(shape, offset, axis1, axis2):
    """The index of ``x[index]`` taking the ``offset`` diagonal of axes ``axis1``,
    ``axis2``, and the position of the diagonal's axis in that result."""
    ndim = len(shape)
    ax1, ax2 = axis1 % ndim, axis2 % ndim
    n = max(0, min(shape[ax1] + min(offset, 0), shape[ax2] - max(offset, 0)))
    steps = np.arange(n)
    index = [slice(None)] * ndim
    index[ax1] = steps - min(offset, 0)
    index[ax2] = steps + max(offset, 0)
    # advanced indices next to each other stay in place; apart, they go first
    position = min(ax1, ax2) if abs(ax1 - ax2) == 1 else 0
    return tuple(index), position


def _diagonal_scatter(shape, offset, axis1, axis2):
    """The pullback of ``np.diagonal(x, offset, axis1, axis2)`` for ``x`` of ``shape``."""
    index, position = _diagonal_index(shape, offset, axis1, axis2)
    out_ndim = len(shape) - 1
    scatter = _scatter(*normalize_index(index, len(shape)), shape, out_ndim)

    def diagonal_scatter(g):
        return scatter(np.moveaxis(g, -1, position - out_ndim))

    return diagonal_scatter


def diagonal_transpose(g, ans, a, offset=0, axis1=0, axis2=1):
    return _diagonal_scatter(shape_of(a), offset, axis1, axis2)(g)


def diag_transpose(g, ans, v, k=0):
    shape = shape_of(v)
    if len(shape) == 1:  # vector to matrix: read the diagonal back
        return np.diagonal(g, k, -2, -1)
    return _diagonal_scatter(shape, k, 0, 1)(g)


linear(np.diagonal, diagonal_transpose, batched=True)
linear(np.diag, diag_transpose, batched=True)
# a triangle of a matrix (or of a 1-d array broadcast to rows): its own transpose
linear(np.tril, lambda g, ans, m, k=0: np.tril(g, k), batched=True)
linear(np.triu, lambda g, ans, m, k=0: np.triu(g, k), batched=True)
