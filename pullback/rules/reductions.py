"""Reductions: sum, mean, prod, max, min."""

import numpy as np

from ..core import plain, rrule
from ._util import normalize_axes, shape_of, unreduce


@rrule(np.sum)
def sum_rule(a, axis=None, dtype=None, keepdims=False):
    ans = np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    shape = shape_of(a)

    def sum_pullback(g):
        return (unreduce(g, shape, axis, keepdims),)

    return ans, sum_pullback


@rrule(np.mean)
def mean_rule(a, axis=None, dtype=None, keepdims=False):
    ans = np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    shape = shape_of(a)
    count = int(np.prod([shape[i] for i in normalize_axes(axis, len(shape))]))

    def mean_pullback(g):
        return (unreduce(g, shape, axis, keepdims) / count,)

    return ans, mean_pullback


def _extremum_rule(func):
    def extremum_rule(a, axis=None, keepdims=False):
        ans = func(a, axis=axis, keepdims=keepdims)
        shape = shape_of(a)

        def extremum_pullback(g):
            # ties share the gradient equally
            hit = np.equal(a, unreduce(ans, shape, axis, keepdims))
            share = hit / np.sum(hit, axis=axis, keepdims=True)
            return (unreduce(g, shape, axis, keepdims) * share,)

        extremum_pullback.__qualname__ = f"{func.__name__}_pullback"
        return ans, extremum_pullback

    extremum_rule.__qualname__ = f"{func.__name__}_rule"
    return extremum_rule


rrule(np.max)(_extremum_rule(np.max))
rrule(np.min)(_extremum_rule(np.min))


@rrule(np.prod)
def prod_rule(a, axis=None, dtype=None, keepdims=False):
    ans = np.prod(a, axis=axis, dtype=dtype, keepdims=keepdims)
    shape = shape_of(a)

    def prod_pullback(g):
        if np.all(plain(a) != 0):
            others = unreduce(ans, shape, axis, keepdims) / a
        else:
            others = _others_product(a, axis)
        return (unreduce(g, shape, axis, keepdims) * others,)

    return ans, prod_pullback


def _others_product(a, axis):
    """For each element, the product of the other elements along ``axis`` (exact when
    some elements are zero): exclusive cumulative products from both ends."""
    shape = shape_of(a)
    if axis is None:
        return np.reshape(_others_product(np.ravel(a), 0), shape)
    axes = normalize_axes(axis, len(shape))
    if len(axes) != 1:
        moved = np.moveaxis(a, axes, tuple(range(-len(axes), 0)))
        flat = np.reshape(moved, shape_of(moved)[:-len(axes)] + (-1,))
        other = np.reshape(_others_product(flat, -1), shape_of(moved))
        return np.moveaxis(other, tuple(range(-len(axes), 0)), axes)
    ax = axes[0]
    moved = np.moveaxis(a, ax, -1)
    n = shape_of(moved)[-1]
    ones = np.ones(shape_of(moved)[:-1] + (1,), dtype=plain(a).dtype)
    left = np.cumprod(np.concatenate([ones, moved[..., :n - 1]], axis=-1), axis=-1)
    right = np.flip(np.cumprod(np.flip(np.concatenate([moved[..., 1:], ones], axis=-1),
                                       axis=-1), axis=-1), axis=-1)
    return np.moveaxis(left * right, -1, ax)
