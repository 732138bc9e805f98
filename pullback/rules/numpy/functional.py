"""Functions that call the user's functions: piecewise, apply_along_axis, apply_over_axes;
and unwrap.

The first three are composites written as NumPy writes them: the user's functions are
called on tracked values (the selected elements, each 1-d slice, the array so far), so
their derivatives come from their own rules, and the results are assembled with functions
that have rules (np.where, np.stack, np.expand_dims). Which elements
a piecewise condition selects is decided by the plain conditions.

unwrap has a general rule: its result is ``p`` plus multiples of the period, which are
piecewise constant in ``p``, so the pullback is the identity (NumPy's own result is kept, as
``p + (unwrap(p) - p)`` would not reproduce it bit for bit). ``period`` is keyword-only, so
a tracked one is refused before the rule runs.
"""

import collections.abc
import operator

import numpy as np

from ...extend import Tracked, composite, is_foreign, plain, rrule, shape_of

# ---------------------------------------------------------------------------- piecewise


def _is_array(c):
    """Whether NumPy's piecewise takes ``c`` (the first condition) for an array: a list or
    an ndarray, or an array of another library or a pb.jit trace that has axes."""
    if isinstance(c, (list, np.ndarray)):
        return True
    return (is_foreign(c) or isinstance(c, Tracked)) and len(shape_of(c)) > 0


def _as_bool(condlist):
    """``np.asarray(condlist, dtype=bool)`` (NumPy's step), stacking the conditions that are
    arrays of another library (or pb.jit traces) where they live."""
    if not isinstance(condlist, (list, tuple)):
        condlist = list(condlist) if _is_array(condlist) else condlist
    if isinstance(condlist, list) and any(is_foreign(c) or isinstance(c, Tracked)
                                          for c in condlist):
        return np.stack([c.astype(bool) for c in condlist])
    return np.asarray(condlist, dtype=bool)


def piecewise_of_tracked(x, condlist, funclist, *args, **kw):
    """np.piecewise on a tracked ``x``: NumPy's own steps, each write out of place.
    A function gets the tracked elements its condition selects, with ``args`` and ``kw``
    (which may be tracked too); a constant (maybe tracked) is written as it is."""
    n2 = len(funclist)
    if isinstance(condlist, (list, tuple)):
        condlist = [plain(c) for c in condlist]
    else:
        condlist = plain(condlist)
    # NumPy's undocumented promotion of a single condition to a list of one
    if np.isscalar(condlist) or (not _is_array(condlist[0]) and len(shape_of(x)) != 0):
        condlist = [condlist]
    condlist = _as_bool(condlist)
    n = len(condlist)
    if n == n2 - 1:  # the default function: where no condition holds
        otherwise = ~np.any(condlist, axis=0, keepdims=True)
        condlist = np.concatenate([condlist, otherwise], axis=0)
        n += 1
    elif n != n2:
        raise ValueError(
            f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = np.zeros_like(x)
    for cond, func in zip(condlist, funclist):
        vals, mask = _selected(x, cond)
        if not isinstance(func, collections.abc.Callable):
            y = _put(y, mask, func, shape_of(vals))
        elif 0 not in shape_of(vals):
            y = _put(y, mask, func(vals, *args, **kw), shape_of(vals))
    return y


def _selected(x, cond):
    """NumPy's ``x[cond]`` for a condition of ``x``'s leading axes (all of them, as a rule),
    and ``cond`` broadcast to ``x``'s shape (computed, ``np.asarray``, where a lazy array
    such as Dask's does not know how many elements it selects). The elements are picked
    from the flattened ``x`` by a 1-d mask, which every array library takes."""
    shape, k = shape_of(x), len(shape_of(cond))
    if shape_of(cond) != shape[:k]:
        x[cond]  # NumPy's IndexError
        raise IndexError(f"np.piecewise: a condition of shape {shape_of(cond)} does not "
                         f"index an array of shape {shape}")
    mask = np.broadcast_to(np.reshape(cond, shape_of(cond) + (1,) * (len(shape) - k)), shape)
    picked = np.ravel(x)[np.ravel(mask)]
    if shape_of(picked)[0] != shape_of(picked)[0]:  # NaN: the count of a Dask array's mask
        mask = np.asarray(mask)
        picked = np.ravel(x)[np.ravel(mask)]
    rest = int(np.prod(shape[k:]))
    count = shape_of(picked)[0] // rest if rest else int(np.count_nonzero(cond))
    return np.reshape(picked, (count,) + shape[k:]), mask


def _put(y, mask, v, selected):
    """NumPy's ``y[cond] = v`` (``v`` broadcast to the ``selected`` shape, cast to ``y``'s
    dtype) out of place, ``mask`` being ``cond`` broadcast to ``y``'s shape: a np.where of
    ``v``'s elements gathered to where they go."""
    if len(shape_of(v)) > 0:
        size = int(np.prod(selected))
        if size == 0:
            return y
        # the k-th selected element (in C order) takes v's k-th; the others a spare copy
        # of its first that np.where drops (so that no index repeats among the selected)
        v = np.ravel(np.broadcast_to(v, selected))
        flat = np.ravel(mask)
        v = np.concatenate([v, v[:1]])[np.where(flat, np.cumsum(flat) - 1, size)]
        v = np.reshape(v, shape_of(mask))  # (a 1-d gather: Dask takes no n-d index)
    out = np.where(mask, v, y)
    dtype = plain(y).dtype
    return out if plain(out).dtype == dtype else out.astype(dtype)


# ---------------------------------------------------------------------------- apply_*

def apply_along_axis_of_tracked(func1d, axis, arr, *args, **kwargs):
    """np.apply_along_axis on a tracked ``arr``: ``func1d`` on each tracked 1-d slice, the
    results stacked as NumPy stacks them (their axes in place of ``axis``; each later result
    broadcast to the first's shape and cast to its dtype)."""
    ndim = len(shape_of(arr))
    axis = operator.index(axis)
    moved = np.moveaxis(arr, axis, -1)  # (an axis out of range: NumPy's AxisError)
    axis %= ndim
    outer = shape_of(moved)[:-1]
    if 0 in outer:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = [np.asarray(func1d(moved[ind], *args, **kwargs)) for ind in np.ndindex(outer)]
    first = results[0]
    shape, dtype = shape_of(first), plain(first).dtype
    for k, res in enumerate(results):
        if shape_of(res) != shape:
            res = np.broadcast_to(res, shape)
        if plain(res).dtype != dtype:
            res = res.astype(dtype)
        results[k] = res
    stacked = np.reshape(np.stack(results), outer + shape)
    dims = list(range(len(shape_of(stacked))))
    return np.transpose(stacked, dims[:axis] + dims[ndim - 1:] + dims[axis:ndim - 1])


def apply_over_axes_of_tracked(func, a, axes):
    """np.apply_over_axes on a tracked ``a``: NumPy's loop, on the tracked array so far."""
    val = a
    ndim = len(shape_of(a))
    if np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = ndim + axis
        res = func(val, axis)
        if np.ndim(res) != np.ndim(val):
            res = np.expand_dims(res, axis)
            if np.ndim(res) != np.ndim(val):
                raise ValueError("function is not returning an array of the correct shape")
        val = res
    return val


# ---------------------------------------------------------------------------- unwrap

@rrule(np.unwrap, batched=True)
def unwrap_rule(p, discont=None, axis=-1, *, period=2 * np.pi):
    ans = np.unwrap(p, discont, axis, period=period)

    def unwrap_pullback(g):
        # unwrap adds multiples of the period, piecewise constant in p: the derivative is
        # the identity. discont only decides where they are added: no cotangent.
        return g, None, None

    return ans, unwrap_pullback


composite(np.piecewise, piecewise_of_tracked)
composite(np.apply_along_axis, apply_along_axis_of_tracked)
composite(np.apply_over_axes, apply_over_axes_of_tracked)
