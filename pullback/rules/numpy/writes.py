"""The rules of the functional updates that writes into tracked arrays record
(``_engine/writes.py``): ``index_update`` (``x[index] = v``), ``reread`` (a view of a base
written into) and ``ufunc_where`` (a ufunc's ``where=``), and the ``*_like`` buffers to
write into, each a tracked constant.
"""

import numpy as np

from ..._engine.registry import rules as _rows
from ..._engine.writes import index_update, reread, ufunc_where, view_positions
from ...extend import (
    MINUS_ONE,
    ONE,
    NoRuleError,
    is_complex,
    name_of,
    on_backend,
    plain,
    rrule,
    shape_of,
)
from .._util import zero_of
from .indexing import index_add

# ---------------------------------------------------------------------------- the update

def _written(shape, index):
    """``(kept, won)``: where ``x[index] = v`` leaves ``x`` alone, and which elements of the
    broadcast ``v`` end up in the result (with a repeated index the last write wins)."""
    ids = np.full(shape, -1, dtype=np.intp)
    taken = ids[index]
    positions = np.arange(taken.size, dtype=np.intp).reshape(taken.shape)
    ids[index] = positions
    return ids < 0, ids[index] == positions


def _sum_to(ct, shape):
    """``ct`` summed down to the ``shape`` it was broadcast from."""
    cshape = shape_of(ct)
    lead = len(cshape) - len(shape)
    if lead < 0:  # x[i] = v with v's leading axes of length 1 beyond x[i]'s (NumPy drops them)
        return np.reshape(_sum_to(ct, shape[-lead:]), shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and cshape[lead + i] != 1)
    return np.reshape(np.sum(ct, axis=axes), shape) if axes else ct


@rrule(index_update, batched=False)
def index_update_rule(x, index, v):
    ans = index_update(x, index, v)
    shape, vshape = shape_of(x), shape_of(v)

    def index_update_pullback(g):
        kept, won = _written(shape, index)  # host masks, moved to g's array library
        kept, zero = on_backend(kept, g), zero_of(g)

        def ct_v():
            taken = g[index]
            if not won.all():
                taken = np.where(on_backend(won, g), taken, zero)
            return _sum_to(taken, vshape)

        return (lambda: np.where(kept, g, zero)), None, ct_v

    return ans, index_update_pullback


class RereadPullback:
    """The pullback of ``reread``: the cotangent goes back to where the view lies in its
    base. ``view_of``: the argument whose memory the view is, for a later write
    (_engine/writes.py)."""

    view_of = 1

    def __init__(self, shape, geometry):
        self.shape, self.geometry = shape, geometry

    def __call__(self, g):
        if not self.shape:  # a view of a 0-d base: each of its elements is the base's one
            return None, np.sum(g), None
        # added, not written: a broadcast view holds an element of the base many times
        where = view_positions(self.shape, self.geometry, np.dtype(plain(g).dtype).itemsize)
        return None, index_add(g, where, self.shape), None


@rrule(reread, batched=False)
def reread_rule(old, base, geometry):
    return reread(old, base, geometry), RereadPullback(shape_of(base), geometry)


# ---------------------------------------------------------------------------- buffers

def _like_rule(func):
    """``func(a, ...)`` of a tracked ``a`` is a tracked constant (its cotangent goes
    nowhere), so that writing a tracked value into it is recorded."""
    def like_rule(a, *args, **kwargs):
        def like_pullback(g):
            return (None,) * (1 + len(args))

        return func(a, *args, **kwargs), like_pullback

    like_rule.__name__ = like_rule.__qualname__ = f"{func.__name__}_rule"
    rrule(func, batched=True)(like_rule)


for _func in (np.zeros_like, np.ones_like):
    _like_rule(_func)


@rrule(np.empty_like, batched=True)
def empty_like_rule(prototype, dtype=None, order="K", subok=True, shape=None):
    # zeros: an empty buffer's contents are unspecified, and zeros make them reproducible
    def empty_like_pullback(g):
        return (None,) * 5

    return np.zeros_like(prototype, dtype, order, subok, shape), empty_like_pullback


@rrule(np.full_like, batched=True)
def full_like_rule(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    zeros = np.zeros_like(a, dtype, order, subok, shape)
    # fill_value may be tracked one level down; a 0-d buffer is summed as a (1,) one and
    # made 0-d again: a 0-d array, as NumPy's, where a sum gives a scalar that takes no write
    ans = (zeros if zeros.ndim else np.reshape(zeros, (1,))) + fill_value
    if ans.dtype != zeros.dtype:
        ans = ans.astype(zeros.dtype)
    if not zeros.ndim:
        ans = np.reshape(ans, ())

    def full_like_pullback(g):
        return None, g, None, None, None, None  # the engine sums g to fill_value's shape

    return ans, full_like_pullback


# ---------------------------------------------------------------------------- where=

@rrule(ufunc_where, batched=False)
def ufunc_where_rule(ufunc, mask, fill, *inputs):
    ans = ufunc_where(ufunc, mask, fill, *inputs)
    row, on = _rows.get(ufunc), on_backend(mask, ans)

    def ufunc_where_pullback(g):
        zero = zero_of(g)
        cts = []
        for i, a in enumerate(inputs):
            d = row.derivs[i]
            if d is None:
                raise NoRuleError(f"pullback: {name_of(ufunc)} is not differentiable with "
                                  f"respect to argument {i}")
            if d is ONE or d is MINUS_ONE:
                ct = np.where(on, g if d is ONE else -g, zero)
            else:
                with np.errstate(all="ignore"):  # where the ufunc did not run
                    local = d(ans, *inputs)
                # zero where the entry was left out, even where the derivative is not finite
                local = np.where(on, np.conjugate(local) if is_complex(local) else local, 0)
                ct = g * local
            cts.append(_sum_to(ct, shape_of(a)))
        ct_fill = None if fill is None else _sum_to(np.where(on, zero, g), shape_of(fill))
        return (None, None, ct_fill, *cts)

    return ans, ufunc_where_pullback


