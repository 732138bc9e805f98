"""Polynomials in coefficient arrays (highest power first): polyadd, polysub, polymul,
polydiv, polyder, polyint, poly, roots and polyfit, each a composite of NumPy's own steps on
functions that have rules (polyval is in products.py).

Conventions. An ``np.poly1d`` cannot hold tracked coefficients, so a poly1d argument in a
call on tracked values raises TypeError: pass its ``.coeffs`` (the result is then an array
of coefficients). polymul drops leading zero coefficients, as poly1d does: they get no
gradient (the product's degree jumps there). polydiv is NumPy's long division, so its
quotient and remainder are smooth in both polynomials where the divisor's leading
coefficient is nonzero; the leading remainder coefficients NumPy drops (those within 1e-8
of zero, by its ``allclose``) get no gradient, as polymul's leading zeros. roots
differentiates the eigenvalues of the companion matrix: at a repeated root the derivative
is infinite, and the gradient there is huge or NaN (the companion matrix is defective).
Trailing zero coefficients (roots at 0, which NumPy strips) are differentiated too: a
simple root at 0 moves with the constant term, and every root with every coefficient.
poly of a square matrix is the characteristic polynomial of its eigenvalues (the same holds
at repeated eigenvalues). polyfit is differentiated through its least-squares solve, where
the scaled Vandermonde matrix has full rank.

numpy.polynomial's der and int functions (polyder, chebder, legder, lagder, hermder,
hermeder and the int forms; the classes' ``deriv`` and ``integ`` call them) are plain
Python that writes into an ``np.empty`` buffer, so each is replaced by a primitive
(``_util.intercept``) computed, on tracked values, as a matrix along the coefficient axis:
the function itself applied to the identity's columns. They are linear in the coefficients
(and ``integ`` affine in the constants ``k``); ``scl`` multiplies, and ``lbnd``, which
enters through the basis's values, must be a constant.
"""

import warnings

import numpy as np

from ...extend import (
    NoRuleError,
    Tracked,
    composite,
    is_foreign,
    on_backend,
    plain,
    shape_of,
    zeros_on,
)
from .._util import as_array, intercept

_RANK_WARNING = getattr(getattr(np, "exceptions", np), "RankWarning", None)


def _no_poly1d(name, *args):
    if any(isinstance(a, np.poly1d) for a in args):
        raise TypeError(
            f"pullback: {name}: an np.poly1d cannot hold tracked coefficients; pass its "
            "coefficient array (p.coeffs) instead, and the result is an array of coefficients"
        )



def _padded(a1, a2):
    """Both as 1-d coefficient arrays of the same length, the shorter padded in front."""
    a1, a2 = np.atleast_1d(as_array(a1)), np.atleast_1d(as_array(a2))
    diff = len(a2) - len(a1)
    if diff > 0:
        a1 = np.concatenate((zeros_on(a1, (diff,), a1.dtype), a1))
    elif diff < 0:
        a2 = np.concatenate((zeros_on(a2, (-diff,), a2.dtype), a2))
    return a1, a2


def polyadd_impl(a1, a2):
    _no_poly1d("np.polyadd", a1, a2)
    a1, a2 = _padded(a1, a2)
    return a1 + a2


def polysub_impl(a1, a2):
    _no_poly1d("np.polysub", a1, a2)
    a1, a2 = _padded(a1, a2)
    return a1 - a2


def _leading_zeros_dropped(a):
    """The coefficients as np.poly1d keeps them: 1-d, leading zeros dropped ([0] if all are
    zero)."""
    a = np.atleast_1d(as_array(a))
    if a.ndim > 1:
        raise ValueError("Polynomial must be 1d only.")
    nonzero = np.flatnonzero(plain(a))  # (on a device: read back, as the result's length)
    if len(nonzero) == 0:
        return zeros_on(a, (1,), a.dtype)  # the zero polynomial: a constant
    return a[int(nonzero[0]):]


def polymul_impl(a1, a2):
    _no_poly1d("np.polymul", a1, a2)
    return np.convolve(_leading_zeros_dropped(a1), _leading_zeros_dropped(a2))


def polydiv_impl(u, v):
    # NumPy's long division, step by step, on values that may be tracked
    _no_poly1d("np.polydiv", u, v)
    u = np.atleast_1d(as_array(u)) + 0.0
    v = np.atleast_1d(as_array(v)) + 0.0
    dtype = np.result_type(u.dtype, v.dtype)  # (NumPy's: that of u[0] + v[0])
    m, n = len(u) - 1, len(v) - 1
    scale = 1.0 / v[0]
    r = u if u.dtype == dtype else u.astype(dtype)
    quotient = []
    for k in range(m - n + 1):
        d = scale * r[k]
        quotient.append(d)
        # NumPy's r[k:k + n + 1] -= d * v, out of place
        r = np.concatenate((r[:k], r[k:k + n + 1] - d * v, r[k + n + 1:]))
    q = np.stack(quotient) if quotient else zeros_on(u, (1,), dtype)
    # the leading coefficients NumPy drops: those close to zero (the first m - n + 1 are)
    values, start = plain(r), 0  # (on a device: read back, as the remainder's length)
    while start < len(values) - 1 and np.allclose(values[start], 0, rtol=1e-14):
        start += 1
    return q, r[start:]


def polyder_impl(p, m=1):
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    _no_poly1d("np.polyder", p)
    p = as_array(p)
    for _ in range(m):
        p = p[:-1] * on_backend(np.arange(len(p) - 1, 0, -1), p)
    return p


def polyint_impl(p, m=1, k=None):
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    _no_poly1d("np.polyint", p)
    p = as_array(p)
    if k is None:
        k = np.zeros(m, float)
    k = np.atleast_1d(as_array(k))
    if not isinstance(k, Tracked) and not is_foreign(k):
        k = on_backend(k, p)  # constants of integration: where p's values are
    if len(k) == 1 and m > 1:
        k = k[0] * on_backend(np.ones(m, float), k)
    if len(k) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    for i in range(m):  # the constant of the i-th integration is k[i]
        p = np.concatenate((p / on_backend(np.arange(len(p), 0, -1), p), k[i:i + 1]))
    return p


def poly_impl(seq_of_zeros):
    zeros = np.atleast_1d(as_array(seq_of_zeros))
    shape = zeros.shape
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
        zeros = np.linalg.eigvals(zeros)
    elif len(shape) == 1:
        dtype = np.dtype(np.mintypecode(zeros.dtype.char))
        if zeros.dtype != dtype:
            zeros = zeros.astype(dtype)
    else:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if len(zeros) == 0:
        return 1.0
    dtype = zeros.dtype
    a = one = on_backend(np.ones((1,), dtype=dtype), zeros)
    for k in range(len(zeros)):  # a times (x - zero), one root at a time
        a = np.convolve(a, np.concatenate((one, -zeros[k:k + 1])), mode="full")
    if np.iscomplexobj(plain(a)):
        # roots in complex-conjugate pairs give a real polynomial
        values = plain(zeros).astype(complex)  # (on a device, the if reads it back)
        if np.all(np.sort(values) == np.sort(values.conjugate())):
            a = np.real(a)
    return a


def roots_impl(p):
    p = np.atleast_1d(as_array(p))
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    nonzero = np.flatnonzero(plain(p))  # (on a device: read back, as the result's length)
    if len(nonzero) == 0:
        return zeros_on(p, (0,), float)
    first, last = int(nonzero[0]), int(nonzero[-1])
    trailing_zeros = len(p) - last - 1  # the roots at 0
    found = _stripped_roots(p[first:last + 1], trailing_zeros)
    if not trailing_zeros:
        return found
    return _moved_by_trailing_zeros(p[first:], found)


def _moved_by_trailing_zeros(p, found):
    """The roots ``found`` of ``p`` (NumPy's values: those of ``p`` without its trailing
    zero coefficients, and zeros for them), moving with every coefficient of ``p``,
    the trailing zeros too (a root at 0 moves with the constant term): NumPy's values plus
    the derivatives of two Newton steps for ``p`` from them, which at a simple root are
    the root's own to the third order (each step squares the error). A root where
    ``p'`` is exactly 0 (0 as a root of multiplicity 2 or more, whose derivative is
    infinite) keeps the companion matrix's derivative (a root at 0: none)."""
    r = plain(found)
    slope = np.polyder(p)
    simple = _horner(plain(slope), r) != 0
    if not np.any(simple):
        return found
    start = np.where(simple, r, 0.0)
    x = start
    for _ in range(2):
        x = x - _horner(p, x) / np.where(simple, _horner(slope, x), 1.0)
    moved = start + (x - plain(x))  # NumPy's values, the derivatives of the steps
    return np.where(simple, moved, found)


def _horner(p, x):
    """The polynomial ``p`` at ``x``, in arithmetic (on any array library)."""
    value = p[0]
    for i in range(1, len(p)):
        value = value * x + p[i]
    return value


def _stripped_roots(p, trailing_zeros):
    if not np.issubdtype(p.dtype, np.inexact):
        p = p.astype(float)
    n = len(p)
    if n > 1:
        # the companion matrix: first row -p[1:] / p[0], ones below the diagonal
        below = on_backend(np.diag(np.ones((n - 2,), p.dtype), -1)[1:], p)
        companion = np.concatenate(((-p[1:] / p[0])[None, :], below), axis=0)
        found = np.linalg.eigvals(companion)
    else:
        found = zeros_on(p, (0,), float)
    return np.concatenate((found, zeros_on(found, (trailing_zeros,), found.dtype)))


def polyfit_impl(x, y, deg, rcond=None, full=False, w=None, cov=False):
    order = int(deg) + 1
    x, y = as_array(x) + 0.0, as_array(y) + 0.0
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = len(x) * np.finfo(x.dtype).eps
    lhs, rhs = np.vander(x, order), y
    if w is not None:
        w = as_array(w) + 0.0
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if rhs.ndim == 2 else w)
    # scale the columns to improve the condition number, solve, and scale back
    scale = np.sqrt(np.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = np.linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", _RANK_WARNING, stacklevel=3)
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    base = np.linalg.inv(np.dot(lhs.T, lhs)) / np.outer(scale, scale)
    if cov == "unscaled":
        fac = 1
    else:
        if len(x) <= order:
            raise ValueError("the number of data points must exceed order "
                             "to scale the covariance matrix")
        fac = resids / (len(x) - order)
    return c, (base * fac if y.ndim == 1 else base[:, :, None] * fac)


composite(np.polyadd, polyadd_impl)
composite(np.polysub, polysub_impl)
composite(np.polymul, polymul_impl)
composite(np.polydiv, polydiv_impl)
composite(np.polyder, polyder_impl)
composite(np.polyint, polyint_impl)
composite(np.poly, poly_impl)
composite(np.roots, roots_impl)
composite(np.polyfit, polyfit_impl)


# ---------------------------------------------------------------------------- numpy.polynomial

def _along(matrix, c, axis):
    """``matrix`` applied along ``axis`` of the coefficient array ``c``."""
    moved = np.moveaxis(c, axis, 0)
    return np.moveaxis(np.tensordot(on_backend(matrix, c), moved, axes=(1, 0)), 0, axis)


def _normalized_axis(axis, ndim):
    if not -ndim <= int(axis) < ndim:
        raise np.exceptions.AxisError(int(axis), ndim)
    return int(axis) % ndim


def _der_impl(original):
    def polynomial_der_impl(c, m=1, scl=1, axis=0):
        c = np.atleast_1d(as_array(c))
        ax = _normalized_axis(axis, np.ndim(plain(c)))
        matrix = original(np.eye(np.shape(plain(c))[ax]), m, 1, 0)  # (NumPy's checks of m)
        if int(m) == 0:
            return c
        out = _along(matrix, c, ax)
        if int(m) >= np.shape(plain(c))[ax]:
            # NumPy's c[:1] * 0, which hermeder leaves with its axis first: NumPy's shape
            want = np.shape(original(np.zeros(np.shape(plain(c))), m, 1, ax))
            if want != shape_of(out):
                out = np.moveaxis(out, ax, 0)
        return out if isinstance(scl, (int, float)) and scl == 1 else out * scl ** int(m)

    return polynomial_der_impl


def _int_impl(original, name):
    def polynomial_int_impl(c, m=1, k=(), lbnd=0, scl=1, axis=0):
        if isinstance(lbnd, Tracked):
            raise NoRuleError(
                f"pullback: {name} is not differentiable with respect to lbnd (the lower "
                "bound enters through the basis's values); pass it as a constant")
        c = np.atleast_1d(as_array(c))
        ax = _normalized_axis(axis, np.ndim(plain(c)))
        k = list(k) if np.iterable(k) else [k]
        size = np.shape(plain(c))[ax]
        if np.ndim(plain(scl)) != 0:
            raise ValueError("scl must be a scalar.")
        original(np.eye(size), m, [0] * len(k), lbnd, 1, 0)  # NumPy's checks of m, k, lbnd
        moved = np.moveaxis(c, ax, 0)
        for ki in k + [0] * (int(m) - len(k)):
            if not (isinstance(scl, (int, float)) and scl == 1):
                moved = moved * scl
            size = np.shape(plain(moved))[0]
            if size == 1 and np.all(plain(moved)[0] == 0):  # NumPy's: the constant alone
                moved = moved + ki
                continue
            moved = _along(original(np.eye(size), 1, [], lbnd, 1, 0), moved, 0)
            if isinstance(ki, Tracked) or np.any(plain(ki) != 0):  # the constant term (basis 1)
                first = np.zeros((size + 1,) + (1,) * (np.ndim(plain(moved)) - 1))
                first[0] = 1
                moved = moved + ki * on_backend(first, moved)
        return np.moveaxis(moved, 0, ax)

    return polynomial_int_impl


def _intercept_polynomial(module_name, prefix):
    module = getattr(np.polynomial, module_name)
    der, integ = getattr(module, prefix + "der"), getattr(module, prefix + "int")
    for suffix, impl in [("der", _der_impl(der)),
                         ("int", _int_impl(integ, f"np.polynomial.{module_name}.{prefix}int"))]:
        # (the class's _der and _int are the same functions: their code is swapped)
        composite(intercept(module, prefix + suffix), impl)


for _family in [("polynomial", "poly"), ("chebyshev", "cheb"), ("legendre", "leg"),
                ("laguerre", "lag"), ("hermite", "herm"), ("hermite_e", "herme")]:
    _intercept_polynomial(*_family)
