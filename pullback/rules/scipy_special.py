"""scipy.special. Most of its functions are ufuncs, which reach pullback through NumPy's
dispatch and are declared here as data, like numpy's elementwise functions; each
derivative is written with functions that have rules themselves, so second derivatives
follow. The plain Python functions (polygamma, multigammaln, logsumexp, softmax,
log_softmax, spherical_jn, spherical_yn) are intercepted in ``scipy.special`` so that
calls on tracked values reach their rules (code that imported them before pullback keeps
the originals); zeta and lambertw are thin wrappers around private ufuncs, which have the
rules instead.

Integer orders and counts (polygamma's n, multigammaln's d, yn's, kn's and expn's n, the
k and n of the binomial, negative binomial and Poisson distributions) are constants. The
regularized incomplete gamma and beta functions, their inverses and the distribution
functions built on them have derivatives in x (and a rate) only: those in the shape
parameters and degrees of freedom have no closed form (a tracked one raises NoRuleError),
nor has the Hurwitz zeta function's in its exponent; gammasgn and round are piecewise
constant. The derivative of a Bessel function with respect to its order v has no closed
form: v has no derivative (a tracked v raises NoRuleError in the backward pass).
``scipy.special.sinc`` is ``np.sinc`` (elementwise.py).

Not declared, for want of a closed form in scipy.special's functions: the Riemann zeta
function zeta(x) and zetac (no derivative in x), kolmogorov and smirnov (series).
"""

import numpy as np
from scipy import special
from scipy.special import _ufuncs

from ..extend import (
    composite,
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
spherical_jn = intercept(special, "spherical_jn")
spherical_yn = intercept(special, "spherical_yn")

SQRT_PI = np.sqrt(np.pi)
SQRT_2PI = np.sqrt(2.0 * np.pi)
SQRT2 = np.sqrt(2.0)
RAD_PER_DEG = np.pi / 180
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


def _near_zero(z, formula, coefficients, small=1e-3):
    """``formula(z)``, a quotient with a removable singularity at ``z = 0``, and below
    ``|z| = small``, where it cancels, its Taylor polynomial (``coefficients`` of z^0, z^1
    ...: exact to double precision there), as np.sinc's derivative."""
    near = np.abs(plain(z)) < small
    series = coefficients[-1]
    for c in coefficients[-2::-1]:
        series = series * z + c
    return np.where(near, series, formula(np.where(near, small, z)))


def _exprel_d(z):
    # d/dz (e^z - 1) / z = (e^z - exprel(z)) / z
    return _near_zero(z, lambda z: (np.exp(z) - special.exprel(z)) / z,
                      [1 / 2, 1 / 3, 1 / 8, 1 / 30, 1 / 144])


def _log1prel(z):
    # log(1 + z) / z
    return _near_zero(z, lambda z: np.log1p(z) / z, [1, -1 / 2, 1 / 3, -1 / 4, 1 / 5])


def _log1prel_d(z):
    # d/dz log(1 + z) / z = (1 / (1 + z) - log(1 + z) / z) / z
    return _near_zero(z, lambda z: (1 / (1 + z) - np.log1p(z) / z) / z,
                      [-1 / 2, 2 / 3, -3 / 4, 4 / 5, -5 / 6])


# gamma and relatives; digamma is also special.psi
elementwise(special.gamma, lambda ans, x: ans * digamma(x))
elementwise(special.gammaln, lambda ans, x: digamma(x))
elementwise(special.loggamma, lambda ans, x: digamma(x))
elementwise(special.digamma, lambda ans, x: _polygamma(1, x))
elementwise(special.beta, _beta_da, lambda ans, a, b: _beta_da(ans, b, a))
elementwise(special.betaln, _betaln_da, lambda ans, a, b: _betaln_da(ans, b, a))

elementwise(special.rgamma, lambda ans, x: -digamma(x) * ans)  # 1 / gamma
nondifferentiable(special.gammasgn)


def _binom_dn(ans, n, k):
    return ans * (digamma(n + 1) - digamma(n - k + 1))


def _binom_dk(ans, n, k):
    return ans * (digamma(n - k + 1) - digamma(k + 1))


# binom(n, k) = Gamma(n + 1) / (Gamma(k + 1) Gamma(n - k + 1)), poch(z, m) = Gamma(z + m) / Gamma(z)
elementwise(special.binom, _binom_dn, _binom_dk)
elementwise(special.poch, lambda ans, z, m: ans * (digamma(z + m) - digamma(z)),
            lambda ans, z, m: ans * digamma(z + m))

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

elementwise(special.erfi, lambda ans, x: 2 / SQRT_PI * np.exp(x * x))
elementwise(special.dawsn, lambda ans, x: 1 - 2 * x * ans)
elementwise(special.ndtri_exp, lambda ans, y: SQRT_2PI * np.exp(y + ans * ans / 2), singular=True)

# logistic
elementwise(special.expit, lambda ans, x: ans * (1 - ans))
elementwise(special.logit, lambda ans, x: 1 / (x * (1 - x)), singular=True)
elementwise(special.log_expit, lambda ans, x: special.expit(-x))

# exponentials, trigonometric functions of degrees (radian: degrees, minutes, seconds)
elementwise(special.expm1, lambda ans, x: np.exp(x))
elementwise(special.cosm1, lambda ans, x: -np.sin(x))
elementwise(special.exprel, lambda ans, x: _exprel_d(x))
elementwise(special.exp2, lambda ans, x: ans * np.log(2.0))
elementwise(special.exp10, lambda ans, x: ans * np.log(10.0))
elementwise(special.cbrt, lambda ans, x: 1 / (3 * ans * ans), singular=True)
elementwise(special.radian, lambda ans, d, m, s: RAD_PER_DEG,
            lambda ans, d, m, s: RAD_PER_DEG / 60, lambda ans, d, m, s: RAD_PER_DEG / 3600)
elementwise(special.sindg, lambda ans, x: RAD_PER_DEG * special.cosdg(x))
elementwise(special.cosdg, lambda ans, x: -RAD_PER_DEG * special.sindg(x))
elementwise(special.tandg, lambda ans, x: RAD_PER_DEG * (1 + ans * ans), singular=True)
elementwise(special.cotdg, lambda ans, x: -RAD_PER_DEG * (1 + ans * ans), singular=True)
nondifferentiable(special.round)  # piecewise constant, as np.round


# Huber losses of a residual r with threshold delta (argument 0)
def _huber_dr(ans, delta, r):
    # r inside |r| <= delta, delta sign(r) outside: the branches meet at |r| = delta
    return np.where(np.abs(plain(r)) <= plain(delta), r, delta * _sign(r))


def _huber_ddelta(ans, delta, r):
    return np.where(np.abs(plain(r)) <= plain(delta), 0.0, np.abs(r) - delta)


def _pseudo_huber_ddelta(ans, delta, r):
    # 2 delta (s - 1) - r^2 / (delta s), s = hypot(delta, r) / delta, without cancellation
    h = np.hypot(delta, r)
    return r ** 4 / (h * (h + delta) ** 2)


# Box-Cox: boxcox(x, l) = L exprel(l L), L = log x; inv_boxcox(y, l) = exp(y log1prel(l y))
def _boxcox_dl(ans, log_x, lmbda):
    # L^2 exprel'(l L), and at x = 0, where L = -inf and boxcox = -1 / l, its limit 1 / l^2
    zero = np.isneginf(plain(log_x))
    log_x = np.where(zero, 0.0, log_x)
    return np.where(zero, ans * ans, log_x * log_x * _exprel_d(lmbda * log_x))


def _inv_boxcox_dl(base, y, lmbda):
    return base * y * y * _log1prel_d(lmbda * y)


elementwise(special.huber, _huber_ddelta, _huber_dr)
elementwise(special.pseudo_huber, _pseudo_huber_ddelta,
            lambda ans, delta, r: r * delta / np.hypot(delta, r))
elementwise(special.boxcox, lambda ans, x, lmbda: np.power(x, lmbda - 1),
            lambda ans, x, lmbda: _boxcox_dl(ans, np.log(x), lmbda), singular=True)
elementwise(special.boxcox1p, lambda ans, x, lmbda: np.power(1 + x, lmbda - 1),
            lambda ans, x, lmbda: _boxcox_dl(ans, np.log1p(x), lmbda), singular=True)
elementwise(special.inv_boxcox, lambda ans, y, lmbda: ans / (1 + lmbda * y),
            lambda ans, y, lmbda: _inv_boxcox_dl(ans, y, lmbda), singular=True)
elementwise(special.inv_boxcox1p, lambda ans, y, lmbda: (ans + 1) / (1 + lmbda * y),
            lambda ans, y, lmbda: _inv_boxcox_dl(ans + 1, y, lmbda), singular=True)

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

elementwise(special.kn, None,
            lambda ans, n, x: -(special.kn(n - 1, x) + special.kn(n + 1, x)) / 2, singular=True)
elementwise(special.kve, None,
            lambda ans, v, x: ans - (special.kve(v - 1, x) + special.kve(v + 1, x)) / 2,
            singular=True)


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


def _spherical_pullback(f, n, z, derivative):
    def spherical_pullback(g):
        if not derivative:
            return (None, g * f(n, z, True), None)
        # (2n + 1) f_n' = n f_(n-1) - (n + 1) f_(n+1) (DLMF 10.51.2), differentiated once
        # more (the term of f_(-1) has the factor n = 0); n is an integer: a constant
        return (None, g * (n * f(np.maximum(n - 1, 0), z, True)
                           - (n + 1) * f(n + 1, z, True)) / (2 * n + 1), None)

    return spherical_pullback


@rrule(spherical_jn)
def spherical_jn_rule(n, z, derivative=False):
    return spherical_jn(n, z, derivative), _spherical_pullback(spherical_jn, n, z, derivative)


@rrule(spherical_yn)
def spherical_yn_rule(n, z, derivative=False):
    return spherical_yn(n, z, derivative), _spherical_pullback(spherical_yn, n, z, derivative)


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


NO_DF = not_implemented("the degrees of freedom of a distribution function: its derivative "
                        "in them has no closed form")


def _beta_density(a, b, x):
    """d betainc(a, b, x) / dx = x^(a - 1) (1 - x)^(b - 1) / B(a, b) (DLMF 8.17.2)."""
    return np.exp(special.xlogy(a - 1, x) + special.xlog1py(b - 1, -x) - special.betaln(a, b))


def _t_density(df, t):
    return np.exp(special.gammaln((df + 1) / 2) - special.gammaln(df / 2)
                  - np.log(df * np.pi) / 2 - (df + 1) / 2 * np.log1p(t * t / df))


# the inverses, by the inverse function theorem: dx/dy = 1 / (dy/dx) at x = ans
@rrule(special.gammaincinv)
def gammaincinv_rule(a, y):
    ans = special.gammaincinv(a, y)

    def gammaincinv_pullback(g):
        return (NO_SHAPE, g / _gamma_density(a, ans))

    return ans, gammaincinv_pullback


@rrule(special.gammainccinv)
def gammainccinv_rule(a, y):
    ans = special.gammainccinv(a, y)

    def gammainccinv_pullback(g):
        return (NO_SHAPE, -g / _gamma_density(a, ans))

    return ans, gammainccinv_pullback


@rrule(special.betaincinv)
def betaincinv_rule(a, b, y):
    ans = special.betaincinv(a, b, y)

    def betaincinv_pullback(g):
        return (NO_SHAPE, NO_SHAPE, g / _beta_density(a, b, ans))

    return ans, betaincinv_pullback


# distribution functions: Student's t and F, whose degrees of freedom have no derivative;
# chi-square and gamma (rate a, shape b) are incomplete gamma functions, exactly as SciPy's
@rrule(special.stdtr)
def stdtr_rule(df, t):
    def stdtr_pullback(g):
        return (NO_DF, g * _t_density(df, t))

    return special.stdtr(df, t), stdtr_pullback


@rrule(special.fdtr)
def fdtr_rule(dfn, dfd, x):
    def fdtr_pullback(g):
        # fdtr = betainc(dfn / 2, dfd / 2, w), w = dfn x / (dfd + dfn x)
        s = dfd + dfn * x
        w = dfn * x / s
        return (NO_DF, NO_DF, g * _beta_density(dfn / 2, dfd / 2, w) * dfn * dfd / (s * s))

    return special.fdtr(dfn, dfd, x), fdtr_pullback


composite(special.chdtr, lambda v, x: special.gammainc(v / 2, x / 2))
composite(special.gdtr, lambda a, b, x: special.gammainc(b, a * x))


# the binomial, negative binomial and Poisson distribution functions in p and m; the counts
# k and n are integers (k is rounded down)
def _bdtr_dp(ans, k, n, p):
    k = np.floor(k)  # bdtr = betainc(n - k, k + 1, 1 - p)
    return -np.exp(special.xlogy(k, p) + special.xlog1py(n - k - 1, -p)
                   - special.betaln(n - k, k + 1))


elementwise(special.bdtr, None, None, _bdtr_dp)
elementwise(special.nbdtr, None, None,
            lambda ans, k, n, p: _beta_density(n, np.floor(k) + 1, p))
elementwise(special.pdtr, None, lambda ans, k, m: -_gamma_density(np.floor(k) + 1, m))


# ---------------------------------------------------------------------------- other functions

def _expn_dx(ans, n, x):
    # E_n' = -E_(n-1) (DLMF 8.19.13); E_0(x) = e^(-x) / x has the derivative -E_0 (1 + 1 / x)
    n = plain(n)
    return np.where(n > 0, -special.expn(np.maximum(n - 1, 0), x), -(1 + 1 / x) * ans)


elementwise(special.exp1, lambda ans, x: -np.exp(-x) / x, singular=True)
elementwise(special.expi, lambda ans, x: np.exp(x) / x, singular=True)
elementwise(special.expn, None, _expn_dx, singular=True)
# spence(z) = int_1^z log t / (1 - t) dt: its derivative is -log1p(z - 1) / (z - 1)
elementwise(special.spence, lambda ans, z: -_log1prel(z - 1), singular=True)
# owens_t(h, a) = int_0^a exp(-h^2 (1 + t^2) / 2) / (1 + t^2) dt / (2 pi)
elementwise(special.owens_t, lambda ans, h, a: -np.exp(-h * h / 2) / SQRT_2PI
            * special.erf(a * h / SQRT2) / 2,
            lambda ans, h, a: np.exp(-h * h * (1 + a * a) / 2) / (2 * np.pi * (1 + a * a)))


def _ellipk_dm(m):
    # (E - (1 - m) K) / (2 m (1 - m)) (DLMF 19.4.1, in the parameter m = k^2)
    return _near_zero(m, lambda m: (special.ellipe(m) - (1 - m) * special.ellipk(m))
                      / (2 * m * (1 - m)),
                      [np.pi / 8, 9 * np.pi / 64, 75 * np.pi / 512, 1225 * np.pi / 8192,
                       19845 * np.pi / 131072])


def _ellipe_dm(m):
    # (E - K) / (2 m)
    return _near_zero(m, lambda m: (special.ellipe(m) - special.ellipk(m)) / (2 * m),
                      [-np.pi / 8, -3 * np.pi / 64, -15 * np.pi / 512, -175 * np.pi / 8192,
                       -2205 * np.pi / 131072])


def _agm_db(a, b):
    # agm(a, b) = a agm(1, x) and agm(1, x) = pi / (2 K(1 - x^2)), x = b / a (DLMF 19.8.5);
    # agm(0, b) = 0 for every b
    zero = plain(a) == 0
    x = b / np.where(zero, 1.0, a)
    m = 1 - x * x
    k = special.ellipk(m)
    return np.where(zero, 0.0, np.pi * x * _ellipk_dm(m) / (k * k))


elementwise(special.ellipk, lambda ans, m: _ellipk_dm(m), singular=True)
elementwise(special.ellipe, lambda ans, m: _ellipe_dm(m), singular=True)
elementwise(special.agm, lambda ans, a, b: _agm_db(b, a), lambda ans, a, b: _agm_db(a, b),
            singular=True)


# the Faddeeva function w(z) = exp(-z^2) erfc(-iz), and the Voigt profile
# Re w(z) / (sigma sqrt(2 pi)) at z = (x + i gamma) / (sigma sqrt 2)
elementwise(special.wofz, lambda ans, z: 2j / SQRT_PI - 2 * z * ans)  # DLMF 7.10.2


def _voigt_dw(x, sigma, gamma):
    """z and w'(z) = 2i / sqrt(pi) - 2 z w(z) (DLMF 7.10.2)."""
    z = (x + 1j * gamma) / (sigma * SQRT2)
    return z, 2j / SQRT_PI - 2 * z * special.wofz(z)


def _voigt_dx(ans, x, sigma, gamma):
    # dz/dx = 1 / (sigma sqrt 2)
    return np.real(_voigt_dw(x, sigma, gamma)[1]) / (2 * SQRT_PI * sigma * sigma)


def _voigt_dsigma(ans, x, sigma, gamma):
    z, dw = _voigt_dw(x, sigma, gamma)  # dz/dsigma = -z / sigma
    return -(ans + np.real(z * dw) / (sigma * SQRT_2PI)) / sigma


def _voigt_dgamma(ans, x, sigma, gamma):
    # dz/dgamma = i dz/dx
    return -np.imag(_voigt_dw(x, sigma, gamma)[1]) / (2 * SQRT_PI * sigma * sigma)


elementwise(special.voigt_profile, _voigt_dx, _voigt_dsigma, _voigt_dgamma)

# lambertw(z, k, tol) calls _lambertw: W' = W / (z (1 + W)) = exp(-W) / (1 + W), on every
# branch k; infinite at the branch point z = -1/e, where W = -1
elementwise(_ufuncs._lambertw, lambda ans, z, k, tol: np.exp(-ans) / (1 + ans), None, None,
            singular=True)

# zeta(x, q) calls _zeta (and zeta(x), with no derivative, _riemann_zeta)
NO_ZETA_X = not_implemented("the exponent x of the Hurwitz zeta function: its derivative in "
                            "x has no closed form in scipy.special")


@rrule(_ufuncs._zeta)
def zeta_rule(x, q):
    def zeta_pullback(g):
        return (NO_ZETA_X, -g * x * special.zeta(x + 1, q))  # DLMF 25.11.17

    return special.zeta(x, q), zeta_pullback
