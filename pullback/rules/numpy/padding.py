"""np.pad in every mode, the differences np.diff and np.ediff1d, whose transposes are
differences of the padded cotangent, and np.gradient.

np.pad pads one axis after another, each time mapping every line along that axis by the
same rule. For the linear modes (constant, edge, reflect, symmetric, wrap, linear_ramp,
mean) that rule is a matrix P (the identity with rows added), found by padding the
identity; the pullback applies P transposed along each axis. The statistic modes maximum,
minimum and median copy a selected element of each line, so their pullback sends the
summed cotangent of the padding to that element (ties share it equally).
"""

import numpy as np

from ...extend import (
    NoRuleError,
    is_foreign,
    not_implemented,
    on_backend,
    plain,
    rrule,
    shape_of,
    zeros_on,
)
from .._util import batch_shape, zero_of

_STAT = ("maximum", "minimum", "median")
_SLICE = ("constant", "empty")  # the padding is a constant (or undefined): nothing flows


def _pairs(value, ndim):
    """A pad_width or stat_length as one (before, after) pair of ints per axis."""
    if isinstance(value, dict):  # {axis: width}, other axes unpadded
        rows = [(0, 0)] * ndim
        for axis, width in value.items():
            rows[axis] = tuple(int(v) for v in np.broadcast_to(np.asarray(width), (2,)))
        return rows
    return [tuple(int(v) for v in row) for row in np.broadcast_to(np.asarray(value), (ndim, 2))]


def _pad_axis(x, ax, before, after):
    """``x`` with zeros added along axis ``ax`` (counted from the end)."""
    v = plain(x)
    if v.__class__ is not np.ndarray and is_foreign(v):  # zeros joined on: Dask's pad
        shape = shape_of(x)                                # fails on an empty array
        parts = [zeros_on(x, shape[:ax % len(shape)] + (before,) + shape[ax % len(shape) + 1:],
                          v.dtype), x,
                 zeros_on(x, shape[:ax % len(shape)] + (after,) + shape[ax % len(shape) + 1:],
                          v.dtype)]
        return np.concatenate(parts, axis=ax)
    widths = [(0, 0)] * len(shape_of(x))  # (static: np.ndim of a pb.jit trace is traced)
    widths[ax] = (before, after)
    return np.pad(x, widths)


@rrule(np.pad, batched=True)
def pad_rule(array, pad_width, mode="constant", **kwargs):
    if callable(mode):
        raise NoRuleError("pullback: np.pad with a function as mode has no rule; pad with a "
                          "named mode, or assemble the padding with np.concatenate")
    ans = np.pad(array, pad_width, mode, **kwargs)
    shape = shape_of(array)
    ndim = len(shape)
    widths = _pairs(pad_width, ndim)
    stat = kwargs.get("stat_length")
    lengths = [(n, n) for n in shape] if stat is None else [
        (min(b, n), min(a, n)) for (b, a), n in zip(_pairs(stat, ndim), shape)]
    padded = [k for k in range(ndim) if widths[k] != (0, 0)]

    def pad_pullback(g):
        if mode in _SLICE:
            center = tuple(slice(b, b + n) for (b, _), n in zip(widths, shape))
            return (g[(Ellipsis,) + center], None, None)
        for k in reversed(padded):  # undo the last axis padded first
            moved = np.moveaxis(g, k - ndim, -1)
            if mode in _STAT:
                ct = _stat_transpose(moved, _stat_lines(array, widths, k, mode, kwargs),
                                     widths[k], lengths[k], mode)
            else:
                ct = _linear_transpose(moved, shape[k], widths[k], lengths[k], mode, kwargs)
            g = np.moveaxis(ct, -1, k - ndim)
        return (g, None, None)

    return ans, pad_pullback


def _linear_transpose(g, n, width, length, mode, kwargs):
    """P transposed applied along the last axis of ``g``, P being how ``mode`` pads a line
    of ``n`` entries by ``width``: the identity, with padding rows found by padding it."""
    b, a = width
    options = {}
    if mode in ("reflect", "symmetric"):
        options["reflect_type"] = kwargs.get("reflect_type", "even")
    elif mode == "linear_ramp":
        options["end_values"] = 0  # the end values are constants
    elif mode == "mean":
        options["stat_length"] = (length, (1, 1))
    P = np.pad(np.eye(n), (width, (0, 0)), mode, **options)
    rows = np.concatenate([P[:b], P[b + n:]])
    edges = np.concatenate([g[..., :b], g[..., b + n:]], axis=-1)
    pe = plain(edges)
    if not is_foreign(pe) and np.isfinite(np.add.reduce(pe, axis=None)):
        return g[..., b:b + n] + np.matmul(edges, on_backend(rows, g))
    # an inf or NaN in the padding's cotangent would reach every entry through the zeros of
    # P's rows (inf * 0): each row adds to the entries it copies, and to those alone
    ct, zero = g[..., b:b + n], zero_of(g)
    for k, row in enumerate(rows):
        used = on_backend(row != 0, g)
        ct = ct + np.where(used, edges[..., k:k + 1], zero) * on_backend(row, g)
    return ct


def _stat_lines(array, widths, k, mode, kwargs):
    """The lines (along the last axis) that axis ``k`` is padded from: the input padded
    along the axes before ``k``, as np.pad pads them in turn."""
    earlier = [w if i < k else (0, 0) for i, w in enumerate(widths)]
    return np.moveaxis(np.pad(plain(array), earlier, mode, **kwargs), k, -1)


def _stat_transpose(g, lines, width, length, mode):
    """The cotangent of lines padded with a statistic of their first ``length[0]`` and
    last ``length[1]`` entries: the padding's summed cotangent goes to the entries the
    statistic selects."""
    b, a = width
    n = lines.shape[-1]
    ct = g[..., b:b + n]
    # the padding's cotangent goes to the selected entries alone: exactly 0 elsewhere, also
    # where it is inf or NaN (np.where, not a product with the share's zeros)
    if b:
        share = _selected(lines[..., :length[0]], mode)
        total = np.where(share != 0, np.sum(g[..., :b], axis=-1, keepdims=True), zero_of(g))
        ct = ct + _pad_axis(total * share, -1, 0, n - length[0])
    if a:
        share = _selected(lines[..., n - length[1]:], mode)
        total = np.where(share != 0, np.sum(g[..., b + n:], axis=-1, keepdims=True), zero_of(g))
        ct = ct + _pad_axis(total * share, -1, n - length[1], 0)
    return ct


def _selected(region, mode):
    """How much of the statistic of each line of ``region`` each entry carries: the
    maximum's or minimum's entries share 1 equally; a median of an even count is the mean
    of the two middle values, each shared among the entries equal to it."""
    if mode != "median":
        hit = region == (np.max if mode == "maximum" else np.min)(region, -1, keepdims=True)
        return hit / np.sum(hit, axis=-1, keepdims=True)
    m = region.shape[-1]
    ordered = np.sort(region, axis=-1)
    share = 0.0
    for i in ((m - 1) // 2, m // 2):
        hit = region == ordered[..., i:i + 1]
        share = share + 0.5 * hit / np.sum(hit, axis=-1, keepdims=True)
    return share


# ---------------------------------------------------------------------------- differences

@rrule(np.diff, batched=True)
def diff_rule(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    # prepend= and append= only when given: Dask's diff takes np._NoValue for a value
    ans = np.diff(a, n, axis, **{k: v for k, v in (("prepend", prepend), ("append", append))
                                 if v is not np._NoValue})
    shape = shape_of(a)
    ax = int(axis) % len(shape) - len(shape)

    def along(x):
        return 0 if x is np._NoValue else 1 if np.ndim(plain(x)) == 0 else shape_of(x)[ax]

    before, m = along(prepend), shape[ax]

    def diff_pullback(g):
        if n == 0:
            return (g, None, None, None, None)
        # the transpose of a difference is minus the difference of the padded cotangent
        full = (-1) ** n * np.diff(_pad_axis(g, ax, n, n), n, axis=ax)
        tail = (slice(None),) * (-ax - 1)
        parts = [full[(Ellipsis, s) + tail] for s in
                 (slice(before, before + m), slice(0, before), slice(before + m, None))]
        return (parts[0], None, None,
                None if prepend is np._NoValue else parts[1],
                None if append is np._NoValue else parts[2])

    return ans, diff_pullback


@rrule(np.ediff1d, batched=True)
def ediff1d_rule(ary, to_end=None, to_begin=None):
    ans = np.ediff1d(ary, to_end, to_begin)
    shapes = [shape_of(x) if x is not None else (0,) for x in (ary, to_begin)]
    m, b = (int(np.prod(s)) for s in shapes)

    def ediff1d_pullback(g):
        # the output is [to_begin, diff(ary), to_end], all flattened
        batch = batch_shape(g, 1)
        end = b + max(m - 1, 0)
        ct_ary = -np.diff(_pad_axis(g[..., b:end], -1, 1, 1), axis=-1) if m else None
        return (None if ct_ary is None else np.reshape(ct_ary, batch + shapes[0]),
                None if to_end is None else np.reshape(g[..., end:], batch + shape_of(to_end)),
                None if to_begin is None else np.reshape(g[..., :b], batch + shapes[1]))

    return ans, ediff1d_pullback


NO_COORDINATES = not_implemented("the sample coordinates, given as an array: only a scalar "
                                 "spacing has a derivative")


def _gradient_stencil(n, coordinates, edge_order):
    """The weights of the 1-d np.gradient of ``n`` samples (unit spacing, or the plain
    ``coordinates``): rows k = 0 .. 4 with out[i] = sum_k w[k, i] f[i + k - 2]. Every output
    uses at most the samples i - 2 .. i + 2, so the gradients of five combs (the samples
    spaced 5 apart, from 0 .. 4) hold each weight once."""
    i = np.arange(n)
    combs = (i % 5 == np.arange(5)[:, None]).astype(float)
    spacing = () if coordinates is None else (coordinates,)
    response = np.gradient(combs, *spacing, axis=1, edge_order=edge_order)
    rows = [np.where((i + k >= 0) & (i + k < n), response[(i + k) % 5, i], 0.0)
            for k in range(-2, 3)]
    return np.stack(rows)


def _gradient_transpose(g, weights, ax):
    """The stencil's transpose along axis ``ax`` (counted from the end):
    ct[j] = sum_k w[k, j - k] g[j - k]."""
    n = weights.shape[1]
    tail = (slice(None),) * (-ax - 1)
    total = 0
    for k in range(-2, 3):
        w = weights[k + 2]
        if abs(k) >= n or not np.any(w):
            continue
        part = g * on_backend(np.reshape(w, (n,) + (1,) * (-ax - 1)), g)
        if k > 0:
            part = _pad_axis(part[(Ellipsis, slice(0, n - k)) + tail], ax, k, 0)
        elif k < 0:
            part = _pad_axis(part[(Ellipsis, slice(-k, None)) + tail], ax, 0, -k)
        total = total + part
    return total


@rrule(np.gradient, batched=True)
def gradient_rule(f, *varargs, axis=None, edge_order=1):
    """Derivatives with respect to f and scalar spacings (out = gradient(f, 1) / h); sample
    coordinates given as arrays are constants."""
    ans = np.gradient(f, *varargs, axis=axis, edge_order=edge_order)
    shape = shape_of(f)
    ndim = len(shape)
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(int(a) % ndim for a in np.atleast_1d(axis))
    if len(axes) == 1 and isinstance(ans, list):  # Dask's, for one axis: NumPy's is an array
        ans = ans[0]
    # one spacing for every axis, or one per axis
    spacings = list(varargs) * len(axes) if len(varargs) == 1 else list(varargs)
    if not spacings:
        spacings = [None] * len(axes)
    scalar = [h is None or np.ndim(plain(h)) == 0 for h in spacings]
    outs = [ans] if len(axes) == 1 else list(ans)

    def gradient_pullback(g):
        gs = [g] if len(axes) == 1 else list(g)
        ct_f = 0
        for a, h, is_scalar, gk in zip(axes, spacings, scalar, gs):
            weights = _gradient_stencil(shape[a], None if is_scalar else plain(h), edge_order)
            ct = _gradient_transpose(gk, weights, a - ndim)
            ct_f = ct_f + (ct if h is None or not is_scalar else ct / h)

        def spacing_cotangent(i):
            if not scalar[i]:
                return NO_COORDINATES
            # d out / dh = -out / h for a scalar spacing h
            return -np.sum(gs[i] * outs[i], axis=tuple(range(-ndim, 0))) / spacings[i]

        if len(varargs) == 1 and scalar[0] and len(axes) > 1:  # one h for all axes
            total = sum(spacing_cotangent(i) for i in range(len(axes)))
            return (ct_f, total)
        return (ct_f, *[spacing_cotangent(i) for i in range(len(varargs))])

    return ans, gradient_pullback
