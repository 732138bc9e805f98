"""Reductions: sum, mean, average, prod, max/min, ptp, var/std, their nan-forms, trace,
and the ufunc methods ``reduce``, ``outer`` and ``at``.

A nan-form is its plain form restricted to the non-NaN elements (``where=~isnan(a)``), so
the two share one pullback. Kink conventions: ties of max/min share the gradient equally
(np.max([1, 3, 3]) sends [0, 1/2, 1/2]); std at a constant slice has gradient 0 (as the
norm at 0). The elements a cotangent does not reach (those not attaining the extremum,
masked ones) get exactly 0, by np.where, also where the cotangent is inf or NaN.
"""

import math

import numpy as np

from ..._engine.register import reduction
from ...extend import is_complex, is_foreign, on_backend, plain, rrule, shape_of, ufunc_method
from .._util import conj_if_complex, normalize_axes, unreduce, zero_of
from .scans import _cumprod_vjp, _no_out

_NoValue = np._NoValue


def _given(**kwargs):
    """The keyword arguments that were given (NumPy's own defaults for the rest)."""
    return {k: v for k, v in kwargs.items() if v is not _NoValue}


def _mask(where, nan_of=None):
    """The plain mask of the elements taking part: ``where``, and not NaN for a nan-form."""
    mask = plain(where) if where is not _NoValue else True
    if nan_of is not None:
        mask = np.logical_and(mask, ~np.isnan(plain(nan_of)))
    return mask


def _masked(ct, mask):
    if mask is True:
        return ct
    return np.where(mask, ct, on_backend(np.zeros((), dtype=plain(ct).dtype), ct))


def _count(shape, axis, mask):
    """How many elements each reduced slice takes in (keeping the reduced axes)."""
    if mask is True:
        axes = normalize_axes(axis, len(shape))
        return math.prod([shape[i] for i in axes])
    return np.sum(np.broadcast_to(mask, shape), axis=axis, keepdims=True)


# ---------------------------------------------------------------------------- sum, mean

def _sum_rule(func, nan):
    def sum_rule(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue,
                 where=_NoValue):
        _no_out(func, out)
        if a.__class__ is np.ndarray and not nan and initial is where is _NoValue:
            ans = np.add.reduce(a, axis, dtype, None, keepdims)  # np.sum's own call
        else:
            ans = func(a, axis=axis, dtype=dtype, keepdims=keepdims,
                       **_given(initial=initial, where=where))
        shape = shape_of(a)

        def sum_pullback(g):
            ct = _masked(unreduce(g, shape, axis, keepdims), _mask(where, a if nan else None))
            return ct, None, None, None, None, (None if initial is _NoValue else g), None

        return ans, sum_pullback

    return sum_rule


rrule(np.sum, batched=True)(_sum_rule(np.sum, nan=False))
rrule(np.nansum, batched=True)(_sum_rule(np.nansum, nan=True))


def _mean_rule(func, nan):
    def mean_rule(a, axis=None, dtype=None, out=None, keepdims=False, *, where=_NoValue):
        _no_out(func, out)  # (a float array's common calls take the row below instead)
        ans = func(a, axis=axis, dtype=dtype, keepdims=keepdims, **_given(where=where))
        shape = shape_of(a)

        def mean_pullback(g):
            mask = _mask(where, a if nan else None)
            ct = unreduce(g, shape, axis, keepdims) / _count(shape, axis, mask)
            return _masked(ct, mask), None, None, None, None

        return ans, mean_pullback

    return mean_rule


rrule(np.mean, batched=True)(_mean_rule(np.mean, nan=False))
rrule(np.nanmean, batched=True)(_mean_rule(np.nanmean, nan=True))


@rrule(np.average, batched=True)
def average_rule(a, axis=None, weights=None, returned=False, *, keepdims=False):
    ans = np.average(a, axis=axis, weights=weights, returned=returned, keepdims=keepdims)
    shape = shape_of(a)
    ndim = len(shape)
    axes = normalize_axes(axis, ndim)

    def average_pullback(g):
        g_avg, g_total = g if returned else (g, None)
        g_avg = unreduce(g_avg, shape, axis, keepdims)
        if weights is None:
            return g_avg / int(np.prod([shape[i] for i in axes])), None, None, None
        w = weights
        if shape_of(w) != shape:  # weights along ``axis`` only, as NumPy lays them out
            order = tuple(int(i) for i in np.argsort(np.atleast_1d(axis) % ndim))
            w = np.reshape(np.transpose(w, order),
                           tuple(s if i in axes else 1 for i, s in enumerate(shape)))
        total = np.sum(w, axis=axis, keepdims=True)

        def weights_cotangent():  # only when the weights are tracked
            avg = unreduce(ans[0] if returned else ans, shape, axis, keepdims)
            ct = g_avg * conj_if_complex((a - avg) / total)
            if returned:
                ct = ct + unreduce(g_total, shape, axis, keepdims)
            return _weights_back(ct, shape_of(weights), shape, axis, axes)

        return g_avg * conj_if_complex(w / total), None, weights_cotangent, None

    return ans, average_pullback


def _weights_back(ct, w_shape, shape, axis, axes):
    """The cotangent of 1-d (or per-axis) weights from one of ``a``'s shape (plus batch)."""
    if w_shape == shape:
        return ct
    ndim = len(shape)
    ct = np.broadcast_to(ct, shape_of(ct)[:len(shape_of(ct)) - ndim] + shape)
    ct = np.sum(ct, axis=tuple(i - ndim for i in range(ndim) if i not in axes))
    order = np.argsort(np.atleast_1d(axis) % ndim)
    k = len(order)
    nb = len(shape_of(ct)) - k
    return np.transpose(ct, tuple(range(nb)) + tuple(nb + i for i in np.argsort(order)))


# ---------------------------------------------------------------------------- var, std

def _drops_imaginary(a, dtype):
    """Whether NumPy computes with ``a`` cast to a real ``dtype`` (its real part)."""
    return dtype is not None and np.dtype(dtype).kind != "c" and is_complex(a)


def _var_rule(func, nan, root):
    def var_rule(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
                 where=_NoValue, mean=_NoValue, correction=_NoValue):
        _no_out(func, out)
        ans = func(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                   **_given(where=where, mean=mean, correction=correction))
        shape = shape_of(a)
        dof = ddof if correction is _NoValue else correction

        def var_pullback(g):
            mask = _mask(where, a if nan else None)
            # the centre: NumPy 2's mean= where given (a constant), else the mean of the
            # values cast to dtype (a real dtype= of a complex a takes its real part), whose
            # derivative cancels at first order and not in a nested derivative
            values = np.real(a) if _drops_imaginary(a, dtype) else a
            if mean is not _NoValue:
                centre = mean
            elif mask is True:
                centre = np.mean(values, axis=axis, keepdims=True)
            elif a.__class__ is np.ndarray:
                centre = np.mean(values, axis=axis, keepdims=True, where=mask)
            else:  # (Dask's mean takes no where=)
                centre = np.sum(_masked(values, mask), axis=axis, keepdims=True) / _count(
                    shape, axis, mask)
            centred = _masked(a - centre, mask)
            scale = unreduce(g, shape, axis, keepdims) / (_count(shape, axis, mask) - dof)
            if root:
                # std at a constant slice: gradient 0 (the norm at 0), not 0/0
                std = unreduce(ans, shape, axis, keepdims)
                scale = scale / np.where(plain(std) == 0, 1, std)
            else:
                scale = 2 * scale
            return scale * centred, None, None, None, None, None

        return ans, var_pullback

    return var_rule


rrule(np.var, batched=True)(_var_rule(np.var, nan=False, root=False))
rrule(np.std, batched=True)(_var_rule(np.std, nan=False, root=True))
rrule(np.nanvar, batched=True)(_var_rule(np.nanvar, nan=True, root=False))
rrule(np.nanstd, batched=True)(_var_rule(np.nanstd, nan=True, root=True))


# ---------------------------------------------------------------------------- max, min, ptp

def _ties(a, ans, shape, axis, keepdims, mask, initial=_NoValue):
    """Where ``a`` attains the extremum ``ans``: the tied elements (True there) and their
    count per slice, with the reduced axes kept; ties share equally, and a NaN extremum goes
    to the NaNs. Also whether ``initial`` ties (None without one)."""
    x = plain(a)
    best = unreduce(plain(ans), shape, axis, keepdims)
    hit = np.equal(x, best)
    if x.__class__ is not np.ndarray or (total := np.add.reduce(best, axis=None)) != total:
        hit = hit | (np.isnan(x) & np.isnan(best))  # a NaN extremum: the NaNs share it
    if mask is not True:
        hit = hit & mask
    # (the ufunc method skips np.sum's Python layer; a bool array's sum counts)
    count = (np.add.reduce if hit.__class__ is np.ndarray else np.sum)(hit, axis=axis,
                                                                       keepdims=True)
    init_hit = None
    if initial is not _NoValue:
        init_hit = np.equal(plain(initial), best)
        count = count + init_hit
    if mask is not True or initial is not _NoValue:  # else every slice holds its extremum
        count = np.maximum(count, 1)
    return hit, count, init_hit


def _extremum_cotangents(g, a, ans, shape, axis, keepdims, mask, initial=_NoValue):
    """The cotangents of ``a`` and of ``initial`` (None without one) of an extremum:
    each slice's cotangent shared by the elements that attain it."""
    hit, count, init_hit = _ties(a, ans, shape, axis, keepdims, mask, initial)
    g = unreduce(g, shape, axis, keepdims) / count  # each tie's share, per slice
    # np.where, not g * hit: the other elements get exactly 0 even where g is inf or NaN
    # (a Python 0.0: the engine casts the cotangent to the array's dtype)
    return np.where(hit, g, 0.0), (None if init_hit is None else np.where(init_hit, g, 0.0))


def _extremum_rule(func, nan):
    reduce = None if nan else (np.maximum if func in (np.max, np.amax) else np.minimum).reduce

    def extremum_rule(a, axis=None, out=None, keepdims=False, initial=_NoValue,
                      where=_NoValue):
        _no_out(func, out)
        if a.__class__ is np.ndarray and reduce is not None and initial is where is _NoValue:
            ans = reduce(a, axis, None, None, keepdims)  # np.max's own call
        else:
            # np.max for np.amax, its alias: Dask registers np.amax as found at its import,
            # where pullback's wrapper may stand, and computes what it does not know
            ans = _ALIASES.get(func, func)(a, axis=axis, keepdims=keepdims,
                                           **_given(initial=initial, where=where))
        shape = shape_of(a)

        def extremum_pullback(g):
            ct, ct_initial = _extremum_cotangents(g, a, ans, shape, axis, keepdims,
                                                  _mask(where), initial)
            return ct, None, None, None, ct_initial, None

        return ans, extremum_pullback

    return extremum_rule


# np.amax and np.amin are separate functions from np.max and np.min in NumPy 2
_ALIASES = {np.amax: np.max, np.amin: np.min}
for _f in (np.max, np.amax, np.min, np.amin):
    rrule(_f, batched=True)(_extremum_rule(_f, nan=False))
for _f in (np.nanmax, np.nanmin):
    rrule(_f, batched=True)(_extremum_rule(_f, nan=True))


# ---------------------------------------------------------------------------- the rows

# np.sum, np.mean, np.max and np.min of a float array along axes, with keepdims and no other
# argument, are recorded as a reduction's row (registry.Reduction): no closure, and a
# cotangent written out at the array's shape, which needs no fitting (bench/NOTES.md)

_AXIS_KEYWORDS = frozenset({"axis", "keepdims", "dtype"})  # (dtype None: x.sum(0) gives it)


def _row_reduce(reduce, dtypes, mean=False):
    """The forward of a reduction's row: ``reduce`` (a ufunc's) of a nonempty ndarray whose
    dtype character is in ``dtypes``, given ``axis`` (None, an int or a tuple) and
    ``keepdims`` alone (and ``dtype=None``); None for any other call."""
    def row_reduce(vals, kwargs):
        a, n = vals[0], len(vals)
        if (a.__class__ is not np.ndarray or a.dtype.char not in dtypes or not a.size
                or n > 2 or kwargs and (not kwargs.keys() <= _AXIS_KEYWORDS
                                        or kwargs.get("dtype") is not None)):
            return None
        axis = vals[1] if n == 2 else kwargs.get("axis")
        keepdims = kwargs.get("keepdims", False)
        if (axis is not None and axis.__class__ is not int and axis.__class__ is not tuple
                or keepdims.__class__ is not bool or n == 2 and "axis" in kwargs):
            return None
        ans = reduce(a, axis, None, None, keepdims)
        return (ans / (a.size // ans.size) if mean else ans), axis, keepdims

    return row_reduce


def _spread(g, shape, axis, keepdims, count=1):
    """The cotangent of a sum (``count`` 1) or of a mean of ``count`` elements per slice:
    ``g / count`` at every element of its slice, as a new array of ``shape`` after ``g``'s
    batch axes. A tracked ``g`` (a nested derivative's) is left for the engine to
    broadcast."""
    g = unreduce(g, shape, axis, keepdims)
    if g.__class__ is not np.ndarray:
        return g if count == 1 else g / count
    ct = np.empty(g.shape[:g.ndim - len(shape)] + shape, g.dtype)
    if count == 1:
        ct[...] = g
    else:
        np.divide(g, count, out=ct)
    return ct


def _extremum_vjp(g, ans, x, axis, keepdims):
    return _extremum_cotangents(g, x, ans, x.shape, axis, keepdims, True)[0]


reduction(np.sum, _row_reduce(np.add.reduce, "efdg"),
          lambda g, ans, x, axis, keepdims: _spread(g, x.shape, axis, keepdims))
reduction(np.mean, _row_reduce(np.add.reduce, "d", mean=True),
          lambda g, ans, x, axis, keepdims: _spread(g, x.shape, axis, keepdims,
                                                    x.size // ans.size))
for _f in (np.max, np.amax):
    reduction(_f, _row_reduce(np.maximum.reduce, "efdg"), _extremum_vjp)
for _f in (np.min, np.amin):
    reduction(_f, _row_reduce(np.minimum.reduce, "efdg"), _extremum_vjp)


@rrule(np.ptp, batched=True)
def ptp_rule(a, axis=None, out=None, keepdims=False):
    _no_out(np.ptp, out)
    ans = np.ptp(a, axis=axis, **({"keepdims": True} if keepdims else {}))  # (Dask)
    shape = shape_of(a)

    def ptp_pullback(g):
        top, n_top, _ = _ties(a, np.max(plain(a), axis=axis, keepdims=True), shape, axis,
                              True, True)
        bottom, n_bottom, _ = _ties(a, np.min(plain(a), axis=axis, keepdims=True), shape,
                                    axis, True, True)
        share = top / n_top - bottom / n_bottom
        # exactly 0 where the share is (not an extreme, or a constant slice, where the
        # max's and the min's shares cancel), also where g is inf or NaN (no 0 * inf)
        g = np.where(share != 0, unreduce(g, shape, axis, keepdims), zero_of(g))
        return g * share, None, None, None

    return ans, ptp_pullback


# ---------------------------------------------------------------------------- prod

def _prod_rule(func, nan):
    def prod_rule(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue,
                  where=_NoValue):
        _no_out(func, out)
        ans = func(a, axis=axis, dtype=dtype, keepdims=keepdims,
                   **_given(initial=initial, where=where))
        shape = shape_of(a)

        def prod_pullback(g):
            mask = _mask(where, a if nan else None)
            x = np.real(a) if _drops_imaginary(a, dtype) else a  # (NumPy's cast to dtype)
            x = x if mask is True else np.where(mask, x, 1)
            g = unreduce(g, shape, axis, keepdims)
            px = plain(x)  # (another library's array: the exact form, with no branch)
            if not is_foreign(px) and np.all(px != 0):
                ct = g * conj_if_complex(unreduce(ans, shape, axis, keepdims) / x)
            else:
                scale = g if initial is _NoValue else g * conj_if_complex(initial)
                ct = _others_product_vjp(x, axis, scale)
            ct_initial = None
            if initial is not _NoValue:
                ct_initial = g * conj_if_complex(np.prod(x, axis=axis, keepdims=True))
            return _masked(ct, mask), None, None, None, None, ct_initial, None

        return ans, prod_pullback

    return prod_rule


rrule(np.prod, batched=True)(_prod_rule(np.prod, nan=False))
rrule(np.nanprod, batched=True)(_prod_rule(np.nanprod, nan=True))


def _others_product_vjp(x, axis, g):
    """``g`` times (the conjugate of) the product of the other elements along ``axis``,
    exact where elements are zero, to every order: the product is the last cumulative
    product, so this is cumprod's exact pullback of ``g`` placed at the last position."""
    shape = shape_of(x)
    ndim = len(shape)
    axes = normalize_axes(axis, ndim)
    k = len(axes)
    ends = tuple(range(-k, 0))
    moved = np.moveaxis(x, axes, ends)
    rest = shape_of(moved)[:ndim - k]
    flat = np.reshape(moved, rest + (-1,))
    n = shape_of(flat)[-1]
    batch = shape_of(g)[:len(shape_of(g)) - ndim]
    g = np.reshape(np.moveaxis(g, tuple(i - ndim for i in axes), ends), batch + rest + (1,))
    last = on_backend(np.arange(n) == n - 1, g)  # g at the last position, exactly 0 before it
    ct = _cumprod_vjp(flat, np.cumprod(flat, axis=-1), np.where(last, g, zero_of(g)))
    ct = np.reshape(ct, batch + shape_of(moved))
    return np.moveaxis(ct, ends, tuple(i - ndim for i in axes))


# ---------------------------------------------------------------------------- trace

@rrule(np.trace, batched=True)
def trace_rule(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _no_out(np.trace, out)
    ans = np.trace(a, offset=offset, axis1=axis1, axis2=axis2, dtype=dtype)
    shape = shape_of(a)
    ndim = len(shape)

    def trace_pullback(g):
        # the cotangent spread over the (offset) diagonal of axes axis1, axis2
        ax1, ax2 = axis1 % ndim, axis2 % ndim
        eye = np.eye(shape[ax1], shape[ax2], k=offset, dtype=bool)
        if ax1 > ax2:
            eye = eye.T
        diagonal = on_backend(np.reshape(eye, tuple(s if i in (ax1, ax2) else 1
                                                    for i, s in enumerate(shape))), g)
        ct = np.expand_dims(g, (ax1 - ndim, ax2 - ndim))
        zero = on_backend(np.zeros((), dtype=plain(g).dtype), g)
        return np.where(diagonal, ct, zero), None, None, None, None, None

    return ans, trace_pullback


# ---------------------------------------------------------------------------- ufunc methods

_REDUCTIONS = {np.add: np.sum, np.multiply: np.prod, np.maximum: np.max, np.minimum: np.min}


def _reduce_method(func):
    def reduce_method(a, axis=0, **kwargs):
        return func(a, axis=axis, **kwargs)

    return reduce_method


for _ufunc, _func in _REDUCTIONS.items():
    ufunc_method(_ufunc, "reduce")(_reduce_method(_func))


def _log_sum_exp_method(exp, log):
    """``np.logaddexp.reduce`` (``np.logaddexp2.reduce`` for base 2): a log-sum-exp, shifted
    by the largest entry (a constant: the shift's derivative cancels, to every order)."""
    def reduce_method(a, axis=0, dtype=None, out=None, keepdims=False, **kwargs):
        if dtype is not None or out is not None or kwargs:
            raise TypeError(f"pullback: np.{exp.__name__.replace('exp', 'logaddexp')}.reduce "
                            "of a tracked value takes axis and keepdims only")
        axes = tuple(range(len(shape_of(a)))) if axis is None else axis
        empty = {"initial": -np.inf} if 0 in shape_of(a) else {}  # (Dask's max has none)
        top = np.max(plain(a), axis=axes, keepdims=True, **empty)
        top = np.where(np.isfinite(top), top, 0.0)  # all -inf (or an inf): log(0), log(inf)
        with np.errstate(divide="ignore"):  # log(0) of no entries, or all -inf: -inf
            ans = log(np.sum(exp(a - top), axis=axes, keepdims=True)) + top
        if keepdims:
            return ans
        ans = np.squeeze(ans, axis=axes)
        return ans[()] if not shape_of(ans) else ans  # a NumPy scalar, as NumPy's

    return reduce_method


ufunc_method(np.logaddexp, "reduce")(_log_sum_exp_method(np.exp, np.log))
ufunc_method(np.logaddexp2, "reduce")(_log_sum_exp_method(np.exp2, np.log2))
