"""Joining and splitting arrays, and building arrays from parts: concatenate, the stacks,
block, append, the splits, meshgrid, diagflat, vander and linspace.

Joining is linear, and its transpose splits the cotangent; splitting is transposed by
joining the cotangents. Axes are counted from the end, past any leading batch axes.
"""

import functools

import numpy as np

from ..core import rrule
from ._util import batch_shape, conj_if_complex, shape_of


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

@rrule(np.concatenate)
def concatenate_rule(arrays, axis=0, **kwargs):
    ans = np.concatenate(arrays, axis=axis, **kwargs)
    shapes = [shape_of(a) for a in arrays]

    def concatenate_pullback(g):
        if axis is None:  # joins the flattened arrays
            flat = _split_along(g, [int(np.prod(s)) for s in shapes], -1, 1)
            nb = batch_shape(g, 1)
            return ([np.reshape(p, nb + s) for p, s in zip(flat, shapes)], None)
        return (_split_along(g, [s[axis] for s in shapes], axis, len(shapes[0])), None)

    return ans, concatenate_pullback


@rrule(np.stack)
def stack_rule(arrays, axis=0, **kwargs):
    ans = np.stack(arrays, axis=axis, **kwargs)
    ndim = len(shape_of(ans))
    ax = axis % ndim - ndim
    tail = (slice(None),) * (-ax - 1)

    def stack_pullback(g):
        return ([g[(Ellipsis, i) + tail] for i in range(len(arrays))], None)

    return ans, stack_pullback


def _grown_shape(grow, shape):
    """The shape ``grow`` (np.atleast_2d ...) gives an array of ``shape``."""
    return np.shape(grow(np.broadcast_to(0.0, shape)))


def _column(a):
    return np.reshape(a, (-1, 1)) if np.ndim(a) < 2 else np.atleast_2d(a)


def _join_rule(func, grow, axis_of):
    """The rule of a function that grows each array with ``grow`` and concatenates them
    along ``axis_of(grown shapes)``: split the cotangent, reshape each piece back."""

    def join_rule(tup, **kwargs):
        ans = func(tup, **kwargs)
        shapes = [shape_of(a) for a in tup]
        grown = [_grown_shape(grow, s) for s in shapes]
        axis, ndim = axis_of(grown), len(grown[0])

        def join_pullback(g):
            pieces = _split_along(g, [s[axis] for s in grown], axis, ndim)
            nb = batch_shape(g, ndim)
            return ([np.reshape(p, nb + s) for p, s in zip(pieces, shapes)],)

        join_pullback.__qualname__ = f"{func.__name__}_pullback"
        return ans, join_pullback

    join_rule.__qualname__ = f"{func.__name__}_rule"
    return join_rule


rrule(np.vstack)(_join_rule(np.vstack, np.atleast_2d, lambda grown: 0))
rrule(np.hstack)(_join_rule(np.hstack, np.atleast_1d,
                            lambda grown: 0 if len(grown[0]) == 1 else 1))
rrule(np.dstack)(_join_rule(np.dstack, np.atleast_3d, lambda grown: 2))
rrule(np.column_stack)(_join_rule(np.column_stack, _column, lambda grown: 1))


@rrule(np.block)
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


@rrule(np.append)
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

def _split_rule(func, axis_of):
    def split_rule(ary, *args, **kwargs):
        ans = func(ary, *args, **kwargs)
        ndim = len(shape_of(ary))
        axis = axis_of(ndim, args, kwargs) - ndim

        def split_pullback(gs):
            return (np.concatenate(gs, axis=axis),) + (None,) * len(args)

        split_pullback.__qualname__ = f"{func.__name__}_pullback"
        return ans, split_pullback

    split_rule.__qualname__ = f"{func.__name__}_rule"
    return split_rule


def _axis_arg(ndim, args, kwargs):
    return int(args[1] if len(args) > 1 else kwargs.get("axis", 0)) % ndim


rrule(np.split)(_split_rule(np.split, _axis_arg))
rrule(np.array_split)(_split_rule(np.array_split, _axis_arg))
rrule(np.hsplit)(_split_rule(np.hsplit, lambda ndim, args, kwargs: 1 if ndim > 1 else 0))
rrule(np.vsplit)(_split_rule(np.vsplit, lambda ndim, args, kwargs: 0))
rrule(np.dsplit)(_split_rule(np.dsplit, lambda ndim, args, kwargs: 2))


# ---------------------------------------------------------------------------- building

@rrule(np.meshgrid)
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


@rrule(np.diagflat)
def diagflat_rule(v, k=0):
    ans = np.diagflat(v, k)
    shape = shape_of(v)
    n = int(np.prod(shape))
    rows = np.arange(n) + max(-k, 0)
    cols = np.arange(n) + max(k, 0)

    def diagflat_pullback(g):
        return (np.reshape(g[..., rows, cols], batch_shape(g, 2) + shape), None)

    return ans, diagflat_pullback


@rrule(np.vander)
def vander_rule(x, N=None, increasing=False):
    ans = np.vander(x, N, increasing)
    N = shape_of(ans)[1]

    def vander_pullback(g):
        if N < 2:  # constant columns
            return (None, None, None)
        # d x**p / dx = p x**(p - 1): the same matrix with one column fewer, times p
        powers = np.arange(1, N) if increasing else np.arange(N - 1, 0, -1)
        lower = np.vander(x, N - 1, increasing) * powers
        used = g[..., 1:] if increasing else g[..., :-1]
        return (np.sum(used * conj_if_complex(lower), axis=-1), None, None)

    return ans, vander_pullback


@rrule(np.linspace)
def linspace_rule(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    ans = np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
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
        ct_start = np.sum(g * (1 - t), axis=ax)
        ct_stop = np.sum(g * t, axis=ax)
        if g_step is not None and div > 0:  # step = (stop - start) / div
            ct_start = ct_start - g_step / div
            ct_stop = ct_stop + g_step / div
        return ct_start, ct_stop, None, None, None, None, None

    return ans, linspace_pullback
