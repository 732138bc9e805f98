"""Shape functions. Each is linear, so its pullback is its transpose: another shape
function applied to the cotangent (with any leading batch axes left alone)."""

import numpy as np

from ..core import astype, rrule
from ._util import batch_shape, shape_of


@rrule(np.reshape)
def reshape_rule(a, *args, **kwargs):
    ans = np.reshape(a, *args, **kwargs)
    shape = shape_of(a)
    out_ndim = len(shape_of(ans))

    def reshape_pullback(g):
        return (np.reshape(g, batch_shape(g, out_ndim) + shape),) + (None,) * len(args)

    return ans, reshape_pullback


@rrule(np.ravel)
def ravel_rule(a, order="C"):
    ans = np.ravel(a, order=order)
    shape = shape_of(a)

    def ravel_pullback(g):
        return (np.reshape(g, batch_shape(g, 1) + shape, order=order),)

    return ans, ravel_pullback


@rrule(np.transpose)
def transpose_rule(a, axes=None):
    ans = np.transpose(a, axes)
    ndim = len(shape_of(a))
    perm = tuple(range(ndim))[::-1] if axes is None else tuple(int(i) % ndim for i in axes)
    inverse = tuple(np.argsort(perm))

    def transpose_pullback(g):
        nb = len(batch_shape(g, ndim))
        return (np.transpose(g, tuple(range(nb)) + tuple(nb + i for i in inverse)), None)

    return ans, transpose_pullback


@rrule(np.swapaxes)
def swapaxes_rule(a, axis1, axis2):
    ans = np.swapaxes(a, axis1, axis2)
    ndim = len(shape_of(a))

    def swapaxes_pullback(g):
        return (np.swapaxes(g, int(axis1) % ndim - ndim, int(axis2) % ndim - ndim), None, None)

    return ans, swapaxes_pullback


@rrule(np.moveaxis)
def moveaxis_rule(a, source, destination):
    ans = np.moveaxis(a, source, destination)
    ndim = len(shape_of(a))

    def moveaxis_pullback(g):
        s = [int(i) % ndim - ndim for i in np.atleast_1d(source)]
        d = [int(i) % ndim - ndim for i in np.atleast_1d(destination)]
        return (np.moveaxis(g, d, s), None, None)

    return ans, moveaxis_pullback


def _reshape_back_rule(func):
    def reshape_back_rule(a, *args, **kwargs):
        ans = func(a, *args, **kwargs)
        shape = shape_of(a)
        out_ndim = len(shape_of(ans))

        def reshape_back_pullback(g):
            return (np.reshape(g, batch_shape(g, out_ndim) + shape),) + (None,) * len(args)

        reshape_back_pullback.__qualname__ = f"{func.__name__}_pullback"
        return ans, reshape_back_pullback

    reshape_back_rule.__qualname__ = f"{func.__name__}_rule"
    return reshape_back_rule


for _f in (np.expand_dims, np.squeeze, np.atleast_1d, np.atleast_2d, np.atleast_3d):
    rrule(_f)(_reshape_back_rule(_f))


@rrule(np.broadcast_to)
def broadcast_to_rule(array, shape, subok=False):
    ans = np.broadcast_to(array, shape)

    def broadcast_to_pullback(g):
        return (g, None)  # the engine sums the broadcast axes away

    return ans, broadcast_to_pullback


@rrule(np.copy)
def copy_rule(a, order="K", subok=False):
    def copy_pullback(g):
        return (g,)

    return np.copy(a, order=order), copy_pullback


@rrule(astype)
def astype_rule(x, dtype):
    ans = astype(x, dtype)

    def astype_pullback(g):
        return (g, None)  # the engine casts the cotangent back to the input's dtype

    return ans, astype_pullback


def _split_along(g, sizes, axis, ndim):
    """Pieces of ``g`` along ``axis`` (counted from the end, past the batch axes)."""
    ax = axis % ndim - ndim
    pieces, start = [], 0
    tail = (slice(None),) * (-ax - 1)
    for n in sizes:
        pieces.append(g[(Ellipsis, slice(start, start + n)) + tail])
        start += n
    return pieces


@rrule(np.concatenate)
def concatenate_rule(arrays, axis=0, **kwargs):
    ans = np.concatenate(arrays, axis=axis, **kwargs)
    shapes = [shape_of(a) for a in arrays]

    def concatenate_pullback(g):
        if axis is None:
            flat = _split_along(g, [int(np.prod(s)) for s in shapes], -1, 1)
            nb = batch_shape(g, 1)
            return ([np.reshape(p, nb + s) for p, s in zip(flat, shapes)],)
        ndim = len(shapes[0])
        return (_split_along(g, [s[axis] for s in shapes], axis, ndim),)

    return ans, concatenate_pullback


@rrule(np.stack)
def stack_rule(arrays, axis=0, **kwargs):
    ans = np.stack(arrays, axis=axis, **kwargs)
    ndim = len(shape_of(ans))
    ax = axis % ndim - ndim
    tail = (slice(None),) * (-ax - 1)

    def stack_pullback(g):
        return ([g[(Ellipsis, i) + tail] for i in range(len(arrays))],)

    return ans, stack_pullback
