"""scipy.special. Most of its functions are ufuncs, which reach pullback through NumPy's
dispatch and are declared here as data, like numpy's elementwise functions; each
derivative is written with functions that have rules themselves, so second derivatives
follow. The plain Python functions (polygamma, multigammaln, logsumexp, softmax,
log_softmax) are intercepted in ``scipy.special`` so that calls on tracked values reach
their rules (code that imported them before pullback keeps the originals).

Integer orders (polygamma's n, multigammaln's d, yn's n) are constants. The regularized
incomplete gamma and beta functions have derivatives in x only: those in the shape
parameters have no closed form (a tracked a or b raises NoRuleError); gammasgn is
piecewise constant. The derivative of a Bessel
function with respect to its order v has no closed form: v has no derivative (a tracked v
raises NoRuleError in the backward pass). ``scipy.special.sinc`` is ``np.sinc``
(elementwise.py).
"""

import numpy as np
from scipy import special

from ..extend import (
    elementwise,
    is_foreign,
    nondifferentiable,
    not_implemented,
    plain,
    rrule,
    shape_of,
)
from ._util import intercept, normalize_axes, unreduce

polygamma = intercept(special, "polygamma")
multigammaln = intercept(special, "multigammaln")
logsumexp = intercept(special, "logsumexp")
softmax = intercept(special, "softmax")
log_softmax = intercept(special, "log_softmax")

SQRT_PI = np.sqrt(np.pi)
SQRT_2PI = np.sqrt(2.0 * np.pi)
digamma = special.digamma


def _beta_da(ans, a, b):
    return ans * (digamma(a) - digamma(a + b))


def _betaln_da(ans, a, b):
    return digamma(a) - digamma(a + b)


def _xlogy_dy(ans, x, y):
    # x / y, and 0 where x == y == 0 (xlogy(0, y) = 0 for every y)
    return x / np.where((plain(x) == 0) & (plain(y) == 0), 1, y)


def _xlog1py_dy(ans, x, y):
    return x / np.where((plain(x) == 0) & (plain(y) == -1), 1, 1 + y)


def _sign(x):
    return np.sign(plain(x))


# gamma and relatives; digamma is also special.psi
elementwise(special.gamma, lambda ans, x: ans * digamma(x))
elementwise(special.gammaln, lambda ans, x: digamma(x))
elementwise(special.loggamma, lambda ans, x: digamma(x))
elementwise(special.digamma, lambda ans, x: _polygamma(1, x))
elementwise(special.beta, _beta_da, lambda ans, a, b: _beta_da(ans, b, a))
elementwise(special.betaln, _betaln_da, lambda ans, a, b: _betaln_da(ans, b, a))

elementwise(special.rgamma, lambda ans, x: -digamma(x) * ans)  # 1 / gamma
nondifferentiable(special.gammasgn)

# error functions and the normal distribution
elementwise(special.erf, lambda ans, x: 2 / SQRT_PI * np.exp(-x * x))
elementwise(special.erfc, lambda ans, x: -2 / SQRT_PI * np.exp(-x * x))
elementwise(special.erfinv, lambda ans, x: SQRT_PI / 2 * np.exp(ans * ans), singular=True)
elementwise(special.erfcinv, lambda ans, x: -SQRT_PI / 2 * np.exp(ans * ans), singular=True)
elementwise(special.erfcx, lambda ans, x: 2 * x * ans - 2 / SQRT_PI)
elementwise(special.ndtr, lambda ans, x: np.exp(-x * x / 2) / SQRT_2PI)
# exp(-x^2/2 - log_ndtr(x)): no underflow to 0/0 far in the left tail
elementwise(special.log_ndtr, lambda ans, x: np.exp(-x * x / 2 - ans) / SQRT_2PI)
elementwise(special.ndtri, lambda ans, x: SQRT_2PI * np.exp(ans * ans / 2), singular=True)

# logistic
elementwise(special.expit, lambda ans, x: ans * (1 - ans))
elementwise(special.logit, lambda ans, x: 1 / (x * (1 - x)), singular=True)
elementwise(special.log_expit, lambda ans, x: special.expit(-x))

# information theory; x log y terms are 0 where x == 0, and so is their derivative in y
elementwise(special.xlogy, lambda ans, x, y: np.log(y), _xlogy_dy, singular=True)
elementwise(special.xlog1py, lambda ans, x, y: np.log1p(y), _xlog1py_dy, singular=True)
elementwise(special.entr, lambda ans, x: -(np.log(x) + 1), singular=True)
elementwise(special.rel_entr, lambda ans, x, y: np.log(x / y) + 1, lambda ans, x, y: -x / y,
            singular=True)
elementwise(special.kl_div, lambda ans, x, y: np.log(x / y), lambda ans, x, y: 1 - x / y,
            singular=True)

# Bessel functions (DLMF 10.6.2, 10.29.2): the order v (argument 0) has no derivative.
# The exponentially scaled ones carry exp(-|x|): a kink at 0, where sign(0) = 0 averages.
elementwise(special.i0, lambda ans, x: special.i1(x))
elementwise(special.i0e, lambda ans, x: special.i1e(x) - _sign(x) * ans)
elementwise(special.i1, lambda ans, x: (special.i0(x) + special.iv(2, x)) / 2)
elementwise(special.i1e, lambda ans, x: (special.i0e(x) + special.ive(2, x)) / 2 - _sign(x) * ans)
elementwise(special.iv, None, lambda ans, v, x: (special.iv(v - 1, x) + special.iv(v + 1, x)) / 2,
            singular=True)
elementwise(special.ive, None,
            lambda ans, v, x: (special.ive(v - 1, x) + special.ive(v + 1, x)) / 2
            - _sign(np.real(x)) * ans, singular=True)
elementwise(special.j0, lambda ans, x: -special.j1(x))
elementwise(special.j1, lambda ans, x: (special.j0(x) - special.jv(2, x)) / 2)
elementwise(special.jv, None, lambda ans, v, x: (special.jv(v - 1, x) - special.jv(v + 1, x)) / 2,
            singular=True)
elementwise(special.y0, lambda ans, x: -special.y1(x), singular=True)
elementwise(special.y1, lambda ans, x: (special.y0(x) - special.yv(2, x)) / 2, singular=True)
elementwise(special.yv, None, lambda ans, v, x: (special.yv(v - 1, x) - special.yv(v + 1, x)) / 2,
            singular=True)
elementwise(special.yn, None, lambda ans, n, x: (special.yn(n - 1, x) - special.yn(n + 1, x)) / 2,
            singular=True)
elementwise(special.k0, lambda ans, x: -special.k1(x), singular=True)
elementwise(special.k1, lambda ans, x: -(special.k0(x) + special.kv(2, x)) / 2, singular=True)
elementwise(special.kv, None,
            lambda ans, v, x: -(special.kv(v - 1, x) + special.kv(v + 1, x)) / 2, singular=True)


def _polygamma(n, x):
    """``polygamma(n, x)`` for an array ``x`` of any library: SciPy's converts ``x`` with
    ``np.asarray`` (which CuPy refuses), so another library's plain array gets SciPy's
    formula for an integer ``n``, in ufuncs, which dispatch to that library."""
    if x.__class__ is np.ndarray or not is_foreign(x) or np.ndim(n):
        return polygamma(n, x)
    n = int(n)
    if n == 0:
        return special.digamma(x)
    return (-1.0) ** (n + 1) * special.gamma(n + 1.0) * special.zeta(n + 1, x)


@rrule(polygamma)
def polygamma_rule(n, x):
    ans = _polygamma(n, x)

    def polygamma_pullback(g):
        return (None, g * _polygamma(n + 1, x))  # n is an integer: a constant

    return ans, polygamma_pullback


@rrule(multigammaln)
def multigammaln_rule(a, d):
    ans = multigammaln(a, d)

    def multigammaln_pullback(g):
        # log Gamma_d(a) = const + sum_j gammaln(a - j / 2), j = 0 .. d - 1
        return (g * sum(digamma(a - j / 2) for j in range(int(d))), None)

    return ans, multigammaln_pullback


def _end_axes(axis, ndim):
    """``axis`` counted from the end, so that a cotangent's leading batch axes stay put."""
    return tuple(a - ndim for a in normalize_axes(axis, ndim))


@rrule(logsumexp)
def logsumexp_rule(a, axis=None, b=None, keepdims=False, return_sign=False):
    ans = logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    shape = shape_of(a) if b is None else np.broadcast_shapes(shape_of(a), shape_of(b))

    def logsumexp_pullback(g):
        # r = log|s|, s = sum b e^a: dr/da = sign(s) b e^(a - r), dr/db = sign(s) e^(a - r);
        # the sign itself is piecewise constant
        if return_sign:
            g = g[0]
            r, sign = ans
            weight = np.exp(a - unreduce(r, shape, axis, keepdims)) * unreduce(
                plain(sign), shape, axis, keepdims)
        else:
            weight = np.exp(a - unreduce(ans, shape, axis, keepdims))
        g = unreduce(g, shape, axis, keepdims)
        return (g * weight if b is None else g * weight * b,
                None, None if b is None else g * weight, None, None)

    return ans, logsumexp_pullback


@rrule(softmax)
def softmax_rule(x, axis=None):
    ans = softmax(x, axis=axis)
    axes = _end_axes(axis, len(shape_of(x)))

    def softmax_pullback(g):
        return (ans * (g - np.sum(g * ans, axis=axes, keepdims=True)), None)

    return ans, softmax_pullback


@rrule(log_softmax)
def log_softmax_rule(x, axis=None):
    ans = log_softmax(x, axis=axis)
    axes = _end_axes(axis, len(shape_of(x)))

    def log_softmax_pullback(g):
        return (g - np.exp(ans) * np.sum(g, axis=axes, keepdims=True), None)

    return ans, log_softmax_pullback


# ---------------------------------------------------------------------------- incomplete functions

NO_SHAPE = not_implemented("a shape parameter of an incomplete gamma or beta function: its "
                           "derivative has no closed form")


def _gamma_density(a, x):
    """d gammainc(a, x) / dx = x^(a - 1) e^(-x) / Gamma(a) (DLMF 8.8.13)."""
    return np.exp(special.xlogy(a - 1, x) - x - special.gammaln(a))


@rrule(special.gammainc)
def gammainc_rule(a, x):
    def gammainc_pullback(g):
        return (NO_SHAPE, g * _gamma_density(a, x))

    return special.gammainc(a, x), gammainc_pullback


@rrule(special.gammaincc)
def gammaincc_rule(a, x):
    def gammaincc_pullback(g):
        return (NO_SHAPE, -g * _gamma_density(a, x))

    return special.gammaincc(a, x), gammaincc_pullback


@rrule(special.betainc)
def betainc_rule(a, b, x):
    def betainc_pullback(g):
        # d I_x(a, b) / dx = x^(a - 1) (1 - x)^(b - 1) / B(a, b) (DLMF 8.17.2)
        density = np.exp(special.xlogy(a - 1, x) + special.xlog1py(b - 1, -x)
                         - special.betaln(a, b))
        return (NO_SHAPE, NO_SHAPE, g * density)

    return special.betainc(a, b, x), betainc_pullback
