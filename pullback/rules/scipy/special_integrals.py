"""scipy.special's integrals and their relatives: the regularized incomplete gamma and
beta functions and their inverses, the distribution functions built on them, the
exponential integrals, the sine and cosine integrals (``sici``, ``shichi``), the Fresnel
integrals and the modified ones (``modfresnelp``, ``modfresnelm``), spence, Owen's T, the
Faddeeva and Voigt functions, Lambert W and the Hurwitz zeta function (zeta and lambertw
are thin wrappers around private ufuncs, which have the rules instead).

The incomplete functions, their inverses and the distribution functions have derivatives
in x (and a rate) only: those in the shape parameters and degrees of freedom have no
closed form (a tracked one raises NoRuleError), nor has the Hurwitz zeta function's in its
exponent. Integer counts (expn's n, the k and n of the binomial, negative binomial and
Poisson distributions) are constants.

The Riemann zeta function zeta(x) (SciPy's private ``_riemann_zeta``) and ``zetac(x) =
zeta(x) - 1`` have no derivative in x in closed form in scipy.special: zeta(x) has no
rule, and zetac refuses x by name. The complements and inverses of the distribution
functions, kolmogorov and smirnov are in special_distributions.py.
"""

import numpy as np
from scipy import special
from scipy.special import _ufuncs

from ...extend import composite, elementwise, not_implemented, plain, rrule
from .special import (
    IMAG_UNIT,
    SQRT2,
    SQRT_2PI,
    SQRT_PI,
    _log1prel,
    _near_zero,
    _outputs_rule,
    _row,
    _terms,
)

# ---------------------------------------------------------------------------- incomplete functions

NO_SHAPE = not_implemented("a shape parameter of an incomplete gamma or beta function: its "
                           "derivative has no closed form")


def _gamma_density(a, x):
    """d gammainc(a, x) / dx = x^(a - 1) e^(-x) / Gamma(a) (DLMF 8.8.13)."""
    return np.exp(special.xlogy(a - 1, x) - x - special.gammaln(a))


@rrule(special.gammainc, batched=True)
def gammainc_rule(a, x):
    def gammainc_pullback(g):
        return (NO_SHAPE, g * _gamma_density(a, x))

    return special.gammainc(a, x), gammainc_pullback


@rrule(special.gammaincc, batched=True)
def gammaincc_rule(a, x):
    def gammaincc_pullback(g):
        return (NO_SHAPE, -g * _gamma_density(a, x))

    return special.gammaincc(a, x), gammaincc_pullback


@rrule(special.betainc, batched=True)
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
@rrule(special.gammaincinv, batched=True)
def gammaincinv_rule(a, y):
    ans = special.gammaincinv(a, y)

    def gammaincinv_pullback(g):
        return (NO_SHAPE, g / _gamma_density(a, ans))

    return ans, gammaincinv_pullback


@rrule(special.gammainccinv, batched=True)
def gammainccinv_rule(a, y):
    ans = special.gammainccinv(a, y)

    def gammainccinv_pullback(g):
        return (NO_SHAPE, -g / _gamma_density(a, ans))

    return ans, gammainccinv_pullback


@rrule(special.betaincinv, batched=True)
def betaincinv_rule(a, b, y):
    ans = special.betaincinv(a, b, y)

    def betaincinv_pullback(g):
        return (NO_SHAPE, NO_SHAPE, g / _beta_density(a, b, ans))

    return ans, betaincinv_pullback


# distribution functions: Student's t and F, whose degrees of freedom have no derivative;
# chi-square and gamma (rate a, shape b) are incomplete gamma functions, exactly as SciPy's
@rrule(special.stdtr, batched=True)
def stdtr_rule(df, t):
    def stdtr_pullback(g):
        return (NO_DF, g * _t_density(df, t))

    return special.stdtr(df, t), stdtr_pullback


@rrule(special.fdtr, batched=True)
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

# the sine and cosine integrals, hyperbolic and not, and the Fresnel integrals


def _sinhc(x):
    # sinh(x) / x, and its Taylor series near 0
    return _near_zero(x, lambda x: np.sinh(x) / x, [1, 0, 1 / 6, 0, 1 / 120])


@rrule(special.sici, batched=True)
def sici_rule(x):
    def sici_pullback(g):
        # Si' = sin(x) / x, Ci' = cos(x) / x (DLMF 6.2.9, 6.2.11; SciPy's Ci of x < 0 is
        # the real part, Ci(|x|), whose derivative is the same)
        return (_terms(g, (lambda: np.sinc(x / np.pi), lambda: np.cos(x) / x)),)

    return special.sici(x), sici_pullback


@rrule(special.shichi, batched=True)
def shichi_rule(x):
    def shichi_pullback(g):
        # Shi' = sinh(x) / x, Chi' = cosh(x) / x (DLMF 6.2.15, 6.2.16)
        return (_terms(g, (lambda: _sinhc(x), lambda: np.cosh(x) / x)),)

    return special.shichi(x), shichi_pullback


@rrule(special.fresnel, batched=True)
def fresnel_rule(z):
    def fresnel_pullback(g):
        # (S, C)' = (sin(pi z^2 / 2), cos(pi z^2 / 2)) (DLMF 7.2.7, 7.2.8)
        t = np.pi / 2 * z * z
        return (_terms(g, (lambda: np.sin(t), lambda: np.cos(t))),)

    return special.fresnel(z), fresnel_pullback


# the modified Fresnel integrals F(x) = int_x^inf exp(+-i t^2) dt and K(x) = exp(-+i (x^2 +
# pi / 4)) F(x) / sqrt(pi): F' = -exp(+-i x^2), K' = -+2i x K - exp(-+i pi / 4) / sqrt(pi).
# (SciPy's F of x < 0 has another imaginary part than this integral's, and so another
# derivative; its K is the integral's.)
_outputs_rule(special.modfresnelp, lambda ans, x: (
    lambda: -np.exp(1j * x * x), lambda: -2j * x * ans[1] - np.exp(-0.25j * np.pi) / SQRT_PI))
_outputs_rule(special.modfresnelm, lambda ans, x: (
    lambda: -np.exp(-1j * x * x), lambda: 2j * x * ans[1] - np.exp(0.25j * np.pi) / SQRT_PI))


# the Faddeeva function w(z) = exp(-z^2) erfc(-iz), and the Voigt profile
# Re w(z) / (sigma sqrt(2 pi)) at z = (x + i gamma) / (sigma sqrt 2)
elementwise(special.wofz, lambda ans, z: 2j / SQRT_PI - 2 * z * ans)  # DLMF 7.10.2


def _voigt_dw(x, sigma, gamma):
    """z and w'(z) = 2i / sqrt(pi) - 2 z w(z) (DLMF 7.10.2), and where sigma is 0 (SciPy's
    Lorentz profile gamma / (pi (x^2 + gamma^2)), whose derivatives are the rows' other
    branch), sigma 1 instead."""
    lorentz = np.equal(plain(sigma), 0)
    sigma = np.where(lorentz, 1.0, sigma)
    z = (x + IMAG_UNIT * gamma) / (sigma * SQRT2)
    return z, 2j / SQRT_PI - 2 * z * special.wofz(z), sigma, lorentz


def _lorentz_denominator(x, gamma):
    return np.pi * (x * x + gamma * gamma) ** 2


def _voigt_dx(ans, x, sigma, gamma):
    # dz/dx = 1 / (sigma sqrt 2); at sigma = 0, -2 x gamma / (pi (x^2 + gamma^2)^2)
    _, dw, sigma, lorentz = _voigt_dw(x, sigma, gamma)
    return np.where(lorentz, -2 * x * gamma / _lorentz_denominator(x, gamma),
                    np.real(dw) / (2 * SQRT_PI * sigma * sigma))


def _voigt_dsigma(ans, x, sigma, gamma):
    # dz/dsigma = -z / sigma. The profile is even in sigma and solves the heat equation,
    # dV/d(sigma^2) = V_xx / 2: at sigma = 0 the derivative is sigma L_xx (0, and its own
    # derivative L_xx, with L the Lorentz profile)
    z, dw, safe, lorentz = _voigt_dw(x, sigma, gamma)
    curvature = 2 * gamma * (3 * x * x - gamma * gamma) / (
        _lorentz_denominator(x, gamma) * (x * x + gamma * gamma))
    return np.where(lorentz, sigma * curvature,
                    -(ans + np.real(z * dw) / (safe * SQRT_2PI)) / safe)


def _voigt_dgamma(ans, x, sigma, gamma):
    # dz/dgamma = i dz/dx; at sigma = 0, (x^2 - gamma^2) / (pi (x^2 + gamma^2)^2)
    _, dw, sigma, lorentz = _voigt_dw(x, sigma, gamma)
    return np.where(lorentz, (x * x - gamma * gamma) / _lorentz_denominator(x, gamma),
                    -np.imag(dw) / (2 * SQRT_PI * sigma * sigma))


elementwise(special.voigt_profile, _voigt_dx, _voigt_dsigma, _voigt_dgamma)

# lambertw(z, k, tol) calls _lambertw: W' = W / (z (1 + W)) = exp(-W) / (1 + W), on every
# branch k; infinite at the branch point z = -1/e, where W = -1
elementwise(_ufuncs._lambertw, lambda ans, z, k, tol: np.exp(-ans) / (1 + ans), None, None,
            singular=True)

# zeta(x, q) calls _zeta (and zeta(x), with no derivative, _riemann_zeta)
NO_ZETA_X = not_implemented("the exponent x of the Hurwitz zeta function: its derivative in "
                            "x has no closed form in scipy.special")


@rrule(_ufuncs._zeta, batched=True)
def zeta_rule(x, q):
    def zeta_pullback(g):
        return (NO_ZETA_X, -g * x * special.zeta(x + 1, q))  # DLMF 25.11.17

    return special.zeta(x, q), zeta_pullback


_row(special.zetac, not_implemented(
    "the argument x of scipy.special.zetac (zeta(x) - 1): the derivative of the Riemann zeta "
    "function has no closed form in scipy.special"))
