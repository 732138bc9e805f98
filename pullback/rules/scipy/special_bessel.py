"""scipy.special's Bessel functions: of the first, second and third kinds and their
modified and exponentially scaled forms (DLMF 10.6.2, 10.29.2), the spherical ones
(``spherical_jn``, ``spherical_yn``, intercepted in ``scipy.special``), the Struve
functions, the integrals of the functions of order 0 (``itj0y0``, ``it2j0y0``,
``iti0k0``, ``it2i0k0``, ``itstruve0``, ``it2struve0``, ``itmodstruve0``: their
derivative is the integrand) and ``besselpoly``, each in the argument x.

The derivative of a Bessel or Struve function with respect to its order v has no closed
form: v has no derivative (a tracked v raises NoRuleError in the backward pass); integer
orders (yn's and kn's n, the spherical functions' n) are constants. besselpoly(a, lmb, nu)
= int_0^1 x^lmb J_nu(2 a x) dx has the derivative int_0^1 x^(lmb + 1) (J_(nu-1) -
J_(nu+1))(2 a x) dx = besselpoly(a, lmb + 1, nu - 1) - besselpoly(a, lmb + 1, nu + 1) in
a (DLMF 10.6.1); in lmb and nu it has none in closed form.
"""

import numpy as np
from scipy import special

from ...extend import elementwise, not_implemented, plain, rrule
from .._util import intercept
from .special import SQRT_2PI, _near_zero, _outputs_rule, _row, _sign

spherical_jn = intercept(special, "spherical_jn")
spherical_yn = intercept(special, "spherical_yn")


# The exponentially scaled ones carry exp(-|x|): a kink at 0, where sign(0) = 0 averages.
def _scaled_bessel_slope(nu, terms=14):
    """The coefficients c_k of d/dx ive(nu, x) ~ sum_k c_k x^(-k - 3/2) / sqrt(2 pi) for
    large x > 0: DLMF 10.40.1 differentiated term by term."""
    a, out = 1.0, []
    for k in range(terms):
        if k:
            a *= (4 * nu * nu - (2 * k - 1) ** 2) / (8 * k)
        out.append(-(-1) ** k * a * (k + 0.5))
    return out


def _far(x, near, nu, odd, large=50.0):
    """``near(x)``, the derivative of ``ive(nu, x)`` (nu 0 or 1) as a difference of two
    terms that cancel to ~1/|x| of their size, and beyond ``|x| = large`` its asymptotic
    series, exact to double precision there (SciPy's ive(2, x) is NaN past 1e10), times
    sign(x) where the derivative is ``odd``."""
    far = np.abs(plain(x)) > large
    u = np.abs(np.where(far, x, 2 * large))
    coefficients = _SLOPES[nu]
    series = coefficients[-1]
    for c in coefficients[-2::-1]:
        series = series / u + c
    series = series / (SQRT_2PI * u * np.sqrt(u))
    return np.where(far, _sign(x) * series if odd else series, near(np.where(far, 0.0, x)))


_SLOPES = {nu: _scaled_bessel_slope(nu) for nu in (0, 1)}

elementwise(special.i0, lambda ans, x: special.i1(x))
# i0e' = i1e - sign(x) i0e, i1e' = (i0e + ive(2, x)) / 2 - sign(x) i1e (DLMF 10.29.3)
elementwise(special.i0e, lambda ans, x: _far(
    x, lambda x: special.i1e(x) - _sign(x) * special.i0e(x),
    0, odd=True))
elementwise(special.i1, lambda ans, x: (special.i0(x) + special.iv(2, x)) / 2)
elementwise(special.i1e, lambda ans, x: _far(
    x, lambda x: (special.i0e(x) + special.ive(2, x)) / 2 - _sign(x) * special.i1e(x),
    1, odd=False))
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

def _spherical_pullback(f, n, z, derivative):
    def spherical_pullback(g):
        if not derivative:
            return (None, g * f(n, z, True), None)
        # (2n + 1) f_n' = n f_(n-1) - (n + 1) f_(n+1) (DLMF 10.51.2), differentiated once
        # more (the term of f_(-1) has the factor n = 0); n is an integer: a constant
        return (None, g * (n * f(np.maximum(n - 1, 0), z, True)
                           - (n + 1) * f(n + 1, z, True)) / (2 * n + 1), None)

    return spherical_pullback


@rrule(spherical_jn, batched=True)
def spherical_jn_rule(n, z, derivative=False):
    return spherical_jn(n, z, derivative), _spherical_pullback(spherical_jn, n, z, derivative)


@rrule(spherical_yn, batched=True)
def spherical_yn_rule(n, z, derivative=False):
    return spherical_yn(n, z, derivative), _spherical_pullback(spherical_yn, n, z, derivative)


# Struve functions: d/dx (x^v H_v) = x^v H_(v-1) (DLMF 11.4.24, 11.4.26 for L_v); the order
# v, as a Bessel function's, has no derivative
elementwise(special.struve, None,
            lambda ans, v, x: special.struve(v - 1, x) - v / x * ans, singular=True)
elementwise(special.modstruve, None,
            lambda ans, v, x: special.modstruve(v - 1, x) - v / x * ans, singular=True)


# ---------------------------------------------------------------------------- integrals


def _one_minus_j0_over_x(x):
    # (1 - J0(x)) / x, and near 0, where 1 - J0 cancels, sum_k>=1 (-1)^(k+1) x^(2k-1) /
    # (4^k k!^2) (DLMF 10.2.2)
    return _near_zero(x, lambda x: (1 - special.j0(x)) / x,
                      [0.0, 1 / 4, 0.0, -1 / 64, 0.0, 1 / 2304, 0.0, -1 / 147456])


def _i0_minus_one_over_x(x):
    # (I0(x) - 1) / x, and near 0 sum_k>=1 x^(2k-1) / (4^k k!^2) (DLMF 10.25.2)
    return _near_zero(x, lambda x: (special.i0(x) - 1) / x,
                      [0.0, 1 / 4, 0.0, 1 / 64, 0.0, 1 / 2304, 0.0, 1 / 147456])


def _struve0_over_x(x):
    # H0(x) / x, and at 0 its limit 2 / pi: (2 / pi) (1 - x^2 / 9 + x^4 / 225 ...) (DLMF 11.2.1)
    return _near_zero(x, lambda x: special.struve(0.0, x) / x,
                      [2 / np.pi, 0.0, -2 / (9 * np.pi), 0.0, 2 / (225 * np.pi)])


# itj0y0 = (int_0^x J0, int_0^x Y0), it2j0y0 = (int_0^x (1 - J0(t)) / t dt, int_x^inf Y0(t) / t
# dt), iti0k0 = (int_0^x I0, int_0^x K0), it2i0k0 = (int_0^x (I0(t) - 1) / t dt,
# int_x^inf K0(t) / t dt): each output's derivative is its integrand (with a minus sign
# for an integral from x to infinity)
_outputs_rule(special.itj0y0,
              lambda ans, x: (lambda: special.j0(x), lambda: special.y0(x)))
_outputs_rule(special.it2j0y0,
              lambda ans, x: (lambda: _one_minus_j0_over_x(x), lambda: -special.y0(x) / x))
_outputs_rule(special.iti0k0,
              lambda ans, x: (lambda: special.i0(x), lambda: special.k0(x)))
_outputs_rule(special.it2i0k0,
              lambda ans, x: (lambda: _i0_minus_one_over_x(x), lambda: -special.k0(x) / x))
# int_0^x H0, int_x^inf H0(t) / t dt, int_0^x L0
elementwise(special.itstruve0, lambda ans, x: special.struve(0.0, x))
elementwise(special.it2struve0, lambda ans, x: -_struve0_over_x(x))
elementwise(special.itmodstruve0, lambda ans, x: special.modstruve(0.0, x))

NO_BESSELPOLY_PARAMETER = not_implemented(
    "the exponent lmb or the order nu of scipy.special.besselpoly: its derivative in them "
    "has no closed form in scipy.special (differentiate with respect to a only)")

_row(special.besselpoly,
     lambda ans, a, lmb, nu: special.besselpoly(a, lmb + 1, nu - 1)
     - special.besselpoly(a, lmb + 1, nu + 1),
     NO_BESSELPOLY_PARAMETER, NO_BESSELPOLY_PARAMETER)
