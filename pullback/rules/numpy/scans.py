"""Cumulative sums and products (``cumsum``, ``cumprod``, their nan-forms, the Array API's
``cumulative_sum``/``cumulative_prod``, and ``np.add.accumulate``/``np.multiply.accumulate``),
running extrema (``np.maximum.accumulate``, ``minimum``, ``fmax``, ``fmin``) and segment
sums (``np.add.reduceat``).

The pullback of a cumulative sum is a cumulative sum from the other end. That of a
cumulative product divides by the elements where none is zero, and is exact (to every
order) where some are: see ``_cumprod_vjp``. A running extremum's output i is the
extremum of the first i + 1 elements, whose cotangent goes as np.max's does: see
``_running_extremum_vjp``.
"""

import numpy as np

from ...extend import (
    Tracked,
    is_complex,
    is_foreign,
    linear,
    name_of,
    on_backend,
    plain,
    primitive,
    rrule,
    shape_of,
    ufunc_method,
)
from .._util import conj_if_complex, zero_of


def _no_out(func, out):
    if out is not None:
        raise TypeError(
            f"pullback: {name_of(func)}(..., out=...) writes into an existing array, "
            "which cannot record a gradient; use the returned value instead"
        )


def _reverse_cumsum(g):
    """Sums from the end along the last axis: out[i] = sum(g[i:])."""
    return np.cumsum(g[..., ::-1], axis=-1)[..., ::-1]


def _scan_rule(func, vjp, nan=False, include_initial=False):
    """A cumulative function along one axis (or of the flattened array for axis=None),
    given ``vjp(x, ans, g)``: the cotangent of ``x`` for a scan along the last axis."""

    def scan_rule(a, axis=None, dtype=None, out=None, **kwargs):
        _no_out(func, out)
        ans = func(a, axis=axis, dtype=dtype, **kwargs)
        shape = shape_of(a)
        initial = kwargs.get("include_initial", False)
        # the scan of the flattened array: axis None, or a 0-d array (NumPy reads it as 1-d
        # for axis 0 or -1)
        flat = axis is None or not shape

        def scan_pullback(g):
            # a real dtype= of a complex input: NumPy scans the real part
            x = np.real(a) if dtype is not None and np.dtype(dtype).kind != "c" and is_complex(
                a) else a
            if nan:
                x = np.where(np.isnan(plain(a)), 0 if func is np.nancumsum else 1, a)
            if flat:
                x = np.ravel(x)
            ax = -1 if flat else axis % len(shape) - len(shape)
            x = np.moveaxis(x, ax, -1)
            moved = np.moveaxis(g, ax, -1)
            y = ans if flat else np.moveaxis(ans, ax, -1)
            if initial:  # the first output is the operation's identity: no gradient
                moved, y = moved[..., 1:], y[..., 1:]
            ct = np.moveaxis(vjp(x, y, moved), -1, ax)
            if flat:
                ct = np.reshape(ct, shape_of(ct)[:len(shape_of(ct)) - 1] + shape)
            if nan:
                ct = np.where(np.isnan(plain(a)), zero_of(ct), ct)
            return ct, None, None, None

        return ans, scan_pullback

    return scan_rule


def _cumsum_vjp(x, y, g):
    return _reverse_cumsum(g)


def _cumprod_vjp(x, y, g):
    """d/dx_j of sum_i g_i y_i with y = cumprod(x): sum_{i >= j} g_i prod_{k <= i, k != j} x_k.

    Where no x is zero this is reverse_cumsum(g * y) / x. Where a row has zeros, let z be
    its first zero and x' be x with x_z replaced by 1. Then for j < z the division is
    still exact (x_j != 0, and y carries every order of its dependence on x_z); for j = z
    the answer is the vjp at x'; for j > z it is x_z times the vjp at x' (linear in x_z).
    Each step removes one zero per row, so the recursion ends; the result is exact to every
    order because each piece is written with functions that have rules. (A tracked x with
    many zeros in a row costs one pass per zero; a plain x, two passes.)
    """
    x_conj, y_conj = conj_if_complex(x), conj_if_complex(y)
    zero = plain(x) == 0
    if not is_foreign(zero) and not zero.any():  # (another library's: no branch)
        return _reverse_cumsum(g * y_conj) / x_conj
    n = zero.shape[-1]
    position = on_backend(np.arange(n), zero)
    first = np.where(zero.any(-1, keepdims=True), np.argmax(zero, -1)[..., None], n)
    before, at = position < first, position == first
    one = on_backend(np.ones((), dtype=plain(x).dtype), zero)
    divided = _reverse_cumsum(g * y_conj) / np.where(before, x_conj, one)
    rest = np.where(at, one, x)
    if isinstance(x, Tracked):
        inner = _cumprod_vjp(rest, np.cumprod(rest, axis=-1), g)
    else:
        # a plain x needs values only: inner is exact at z (rest has no zero up to z),
        # and beyond z it is multiplied by x_z = 0, so one more division pass will do
        rest_conj = conj_if_complex(rest)
        inner = _reverse_cumsum(g * np.cumprod(rest_conj, axis=-1)) / np.where(
            rest == 0, one, rest_conj)
    x_first = np.sum(np.where(at, x_conj, 0 * one), axis=-1, keepdims=True)
    return np.where(before, divided, np.where(at, inner, x_first * inner))


rrule(np.cumsum, batched=True)(_scan_rule(np.cumsum, _cumsum_vjp))
rrule(np.nancumsum, batched=True)(_scan_rule(np.nancumsum, _cumsum_vjp, nan=True))
rrule(np.cumprod, batched=True)(_scan_rule(np.cumprod, _cumprod_vjp))
rrule(np.nancumprod, batched=True)(_scan_rule(np.nancumprod, _cumprod_vjp, nan=True))


def _cumulative_rule(func, vjp):
    rule = _scan_rule(func, vjp)

    def cumulative_rule(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        if axis is None and len(shape_of(x)) > 1:
            raise ValueError(f"{name_of(func)}: axis is required for arrays with ndim > 1")
        axis = 0 if axis is None else axis
        return rule(x, axis=axis, dtype=dtype, out=out, include_initial=include_initial)

    return cumulative_rule


if hasattr(np, "cumulative_sum"):  # NumPy 2.1 and later
    rrule(np.cumulative_sum, batched=True)(_cumulative_rule(np.cumulative_sum, _cumsum_vjp))
    rrule(np.cumulative_prod, batched=True)(_cumulative_rule(np.cumulative_prod, _cumprod_vjp))


def _accumulate_method(func):
    def accumulate_method(a, axis=0, dtype=None, **kwargs):
        return func(a, axis=axis, dtype=dtype, **kwargs)

    return accumulate_method


ufunc_method(np.add, "accumulate")(_accumulate_method(np.cumsum))
ufunc_method(np.multiply, "accumulate")(_accumulate_method(np.cumprod))


# ---------------------------------------------------------------------------- running extrema

def _equal_or_both_nan(a, b):
    """Elementwise a == b, with NaN equal to NaN."""
    return np.equal(a, b) | (np.isnan(a) & np.isnan(b))


def _running_extremum_vjp(x, y, g):
    """The cotangent of ``x`` for y = a running extremum along the last axis.

    y[i] is the extremum of x[:i + 1], and as in np.max its cotangent is shared equally by
    the elements that attain it (ties share; a NaN extremum goes to the NaNs): for two
    elements that is np.maximum's half each. Since y is monotone, the x[j] (j <= i) equal
    to y[i] are those with x[j] = y[j] in the run of equal y around i: with c[i] of them up
    to i, x[j] gets sum of g[i] / c[i] over the i >= j in its run. The masks are constants,
    so this is linear in ``g`` and exact to every order (the second derivative is 0)."""
    xp, yp = plain(x), plain(y)
    hit = _equal_or_both_nan(xp, yp)
    new_run = ~_equal_or_both_nan(yp[..., 1:], yp[..., :-1])
    start = np.concatenate([np.ones_like(hit[..., :1]), new_run], -1)
    hits = np.cumsum(hit, axis=-1)
    count = hits - np.maximum.accumulate(np.where(start, hits - hit, 0), axis=-1)
    after = _reverse_cumsum(g / count)  # sum of g[i] / c[i] over i >= j
    n = shape_of(yp)[-1]
    index = np.cumsum(np.ones_like(yp, dtype=np.intp), axis=-1) - 1
    # the start of the next run, n past the last: where the sum leaves the run
    first = np.minimum.accumulate(np.where(start, index, n)[..., ::-1], axis=-1)[..., ::-1]
    nxt = np.concatenate([first[..., 1:], np.full_like(first[..., :1], n)], -1)
    padded = np.concatenate([after, np.zeros_like(plain(after)[..., :1])], -1)
    beyond = np.take_along_axis(padded, np.broadcast_to(nxt, shape_of(after)), axis=-1)
    return np.where(hit, after - beyond, zero_of(after))


def _running_extremum(ufunc):
    """``ufunc.accumulate`` (maximum, minimum, fmax, fmin) as a primitive with a rule, and
    the ufunc method that calls it."""

    def accumulate(a, axis=0, dtype=None):
        return ufunc.accumulate(a, axis=axis, dtype=dtype)

    # named as users call it, np.maximum.accumulate
    accumulate.__module__, accumulate.__qualname__ = "numpy", f"{ufunc.__name__}.accumulate"
    prim = primitive(accumulate)

    def running_extremum_rule(a, axis=0, dtype=None):
        ans = prim(a, axis=axis, dtype=dtype)

        def running_extremum_pullback(g):
            ax = axis % len(shape_of(a)) - len(shape_of(a))
            ct = _running_extremum_vjp(np.moveaxis(a, ax, -1), np.moveaxis(ans, ax, -1),
                                       np.moveaxis(g, ax, -1))
            return np.moveaxis(ct, -1, ax), None, None

        return ans, running_extremum_pullback

    rrule(prim, batched=True)(running_extremum_rule)

    def extremum_accumulate(a, axis=0, dtype=None):  # (the engine takes out=)
        return prim(a, axis, dtype)

    ufunc_method(ufunc, "accumulate")(extremum_accumulate)
    return prim


maximum_accumulate = _running_extremum(np.maximum)
minimum_accumulate = _running_extremum(np.minimum)
fmax_accumulate = _running_extremum(np.fmax)
fmin_accumulate = _running_extremum(np.fmin)


# ---------------------------------------------------------------------------- segment sums

def _add_reduceat(a, indices, axis=0, dtype=None):
    return np.add.reduceat(a, indices, axis=axis, dtype=dtype)


_add_reduceat.__module__, _add_reduceat.__qualname__ = "numpy", "add.reduceat"
add_reduceat = primitive(_add_reduceat)


def _reduceat_transpose(g, ans, a, indices, axis=0, dtype=None):
    """Each segment's cotangent spread over its segment: [indices[i], indices[i + 1]), or
    the one element indices[i] where indices[i] >= indices[i + 1] (NumPy's rule), the last
    to the end. As sums of g over the segments starting (lo) minus ending (hi) at or before
    each position, by cumulative sums over the segments sorted by either bound."""
    n = shape_of(a)[axis]
    lo = np.asarray(plain(indices), dtype=np.intp).ravel()
    following = np.append(lo[1:], n)
    hi = np.where(lo < following, following, lo + 1)
    moved = np.moveaxis(g, axis % len(shape_of(a)) - len(shape_of(a)), -1)
    position = np.arange(n)

    def started_by(bound):  # per position j: the sum of g over the segments with bound <= j
        order = np.argsort(bound, kind="stable")
        sums = np.cumsum(np.take(moved, on_backend(order, g), axis=-1), axis=-1)
        sums = np.concatenate([np.zeros_like(plain(sums)[..., :1]), sums], -1)
        count = np.searchsorted(bound[order], position, side="right")
        return np.take(sums, on_backend(count, g), axis=-1)

    ct = started_by(lo) - started_by(hi)
    return np.moveaxis(ct, -1, axis % len(shape_of(a)) - len(shape_of(a)))


linear(add_reduceat, _reduceat_transpose, batched=True)


@ufunc_method(np.add, "reduceat")
def add_reduceat_method(a, indices, axis=0, dtype=None):  # (the engine takes out=)
    return add_reduceat(a, indices, axis, dtype)
