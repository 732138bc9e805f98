"""Indexing (``x[...]`` in every form) and selection (``np.where``)."""

import numpy as np

from ..core import Tracked, getitem, plain, primitive, rrule
from ._util import shape_of


def normalize_index(index, ndim):
    """``index`` as a tuple with lists made arrays and ``...`` spelled out, so that axes a
    cotangent carries after the indexed ones are left alone."""
    if not isinstance(index, tuple):
        index = (index,)
    items = []
    for i in index:
        if isinstance(i, Tracked):
            raise TypeError(
                "pullback: an index must be a plain integer, slice or array, not a tracked "
                "value; use np.argmax/np.argsort or i.value to build indices"
            )
        if isinstance(i, list):
            i = np.asarray(i)
        items.append(i)
    consumed = 0
    for i in items:
        if i is None or i is Ellipsis or isinstance(i, (bool, np.bool_)):
            continue
        if isinstance(i, np.ndarray) and i.dtype == bool:
            consumed += max(i.ndim, 1) if i.ndim else 0
        else:
            consumed += 1
    for k, i in enumerate(items):
        if i is Ellipsis:
            items[k:k + 1] = [slice(None)] * (ndim - consumed)
            break
    return tuple(items)


def _gathers(index):
    return any(isinstance(i, np.ndarray) and i.dtype != bool for i in index)


def _batch_last(g, nb):
    return np.moveaxis(g, tuple(range(nb)), tuple(range(-nb, 0))) if nb else g


def _batch_first(g, nb):
    return np.moveaxis(g, tuple(range(-nb, 0)), tuple(range(nb))) if nb else g


@primitive
def index_add(g, index, shape):
    """A zero array of ``shape`` with ``g`` added at ``index`` (repeated indices add up):
    the transpose of ``x[index]``."""
    out = np.zeros(shape, dtype=np.result_type(g))
    if _gathers(index):
        np.add.at(out, index, g)
    else:
        out[index] = g
    return out


@rrule(getitem)
def getitem_rule(x, index):
    shape = shape_of(x)
    index = normalize_index(index, len(shape))
    ans = x[index]
    out_ndim = np.ndim(plain(ans))

    def getitem_pullback(g):
        gshape = shape_of(g)
        nb = len(gshape) - out_ndim
        moved = _batch_last(g, nb)
        return (_batch_first(index_add(moved, index, shape + gshape[:nb]), nb), None)

    return ans, getitem_pullback


@rrule(index_add)
def index_add_rule(g, index, shape):
    ans = index_add(g, index, shape)

    def index_add_pullback(ct):
        nb = len(shape_of(ct)) - len(shape)
        return (_batch_first(_batch_last(ct, nb)[index], nb), None, None)

    return ans, index_add_pullback


@rrule(np.where)
def where_rule(condition, x=None, y=None):
    ans = np.where(condition, x, y)
    cond = plain(condition)

    def where_pullback(g):
        zero = np.zeros((), dtype=plain(g).dtype)
        return (None, np.where(cond, g, zero), np.where(cond, zero, g))

    return ans, where_pullback
