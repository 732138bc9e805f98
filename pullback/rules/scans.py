"""Cumulative sums and products (``cumsum``, ``cumprod``, their nan-forms, the Array API's
``cumulative_sum``/``cumulative_prod``, and ``np.add.accumulate``/``np.multiply.accumulate``).

The pullback of a cumulative sum is a cumulative sum from the other end. That of a
cumulative product divides by the elements where none is zero, and is exact (to every
order) where some are: see ``_cumprod_vjp``.
"""

import numpy as np

from ..extend import Tracked, is_foreign, name_of, on_backend, plain, rrule, shape_of, ufunc_method
from ._util import conj_if_complex, zero_of


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
            x = a
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


rrule(np.cumsum)(_scan_rule(np.cumsum, _cumsum_vjp))
rrule(np.nancumsum)(_scan_rule(np.nancumsum, _cumsum_vjp, nan=True))
rrule(np.cumprod)(_scan_rule(np.cumprod, _cumprod_vjp))
rrule(np.nancumprod)(_scan_rule(np.nancumprod, _cumprod_vjp, nan=True))


def _cumulative_rule(func, vjp):
    rule = _scan_rule(func, vjp)

    def cumulative_rule(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        if axis is None and len(shape_of(x)) > 1:
            raise ValueError(f"{name_of(func)}: axis is required for arrays with ndim > 1")
        axis = 0 if axis is None else axis
        return rule(x, axis=axis, dtype=dtype, out=out, include_initial=include_initial)

    return cumulative_rule


if hasattr(np, "cumulative_sum"):  # NumPy 2.1 and later
    rrule(np.cumulative_sum)(_cumulative_rule(np.cumulative_sum, _cumsum_vjp))
    rrule(np.cumulative_prod)(_cumulative_rule(np.cumulative_prod, _cumprod_vjp))


def _accumulate_method(func):
    def accumulate_method(a, axis=0, dtype=None, **kwargs):
        return func(a, axis=axis, dtype=dtype, **kwargs)

    return accumulate_method


ufunc_method(np.add, "accumulate")(_accumulate_method(np.cumsum))
ufunc_method(np.multiply, "accumulate")(_accumulate_method(np.cumprod))
