"""scipy.special's orthogonal polynomials evaluated at x (``eval_legendre``,
``eval_chebyt`` ... ``eval_jacobi``, ``eval_sh_jacobi``), the associated Legendre function
``lpmv``, the Hankel functions (``hankel1``, ``hankel2`` and their scaled forms), the
hypergeometric ``hyp1f1``, ``hyp2f1``, ``hyp0f1`` and ``hyperu`` and Wright's
``wright_bessel`` and ``log_wright_bessel``, and the Kelvin functions (``ber`` ... ``keip``
and ``kelvin``), in x (z): their derivatives are functions of the same families, so they
differentiate to every order.

The degree n is a constant (a count), and so are the parameters alpha and beta of the
Gegenbauer, generalized Laguerre and Jacobi polynomials and p and q of the shifted Jacobi
ones: their derivatives in them have no closed form in scipy.special (a tracked one raises
NoRuleError). A polynomial of
degree 0 has the derivative 0. The orders v of the Hankel functions are constants, as
those of the other Bessel functions (special_bessel.py).

    P_n' = C_(n-1)^(3/2),  T_n' = n U_(n-1),  U_n' = 2 C_(n-1)^(2),
    C_n^(a)' = 2 a C_(n-1)^(a+1),  L_n^(a)' = -L_(n-1)^(a+1),  H_n' = 2 n H_(n-1),
    He_n' = n He_(n-1),  P_n^(a,b)' = (n + a + b + 1) / 2 P_(n-1)^(a+1,b+1)
    (DLMF 18.9.19, 18.9.21, 18.9.23, 18.9.25, 18.9.26), and the shifted ones by the chain
    rule: chebyc(n, x) = 2 T_n(x / 2), chebys(n, x) = U_n(x / 2), sh_*(n, x) = *(n, 2 x - 1);
    G_n^(p,q)(x) = P_n^(p-q,q-1)(2 x - 1) / binom(2n + p - 1, n) has G_n' = n G_(n-1)^(p+2,q+1).
    H_v' = (H_(v-1) - H_(v+1)) / 2 (DLMF 10.6.1); hankel1e = e^(-iz) H1, hankel2e = e^(iz) H2.
    0F1(; v; z)' = 0F1(; v + 1; z) / v,  U(a, b, x)' = -a U(a + 1, b + 1, x) (DLMF 13.3.22),
    Phi(a, b; x)' = Phi(a, a + b; x) (term by term), and (1 - x^2) P_v^m' = (v + m) P_(v-1)^m
    - v x P_v^m (DLMF 14.10.5).
Their other parameters (and hyp1f1's and hyp2f1's a, b, c) have no derivative in closed
form (a tracked one raises NoRuleError). The Kelvin functions ber, bei, ker, kei, their
derivatives berp ... keip and kelvin(x) = (ber + i bei, ker + i kei, berp + i beip, kerp +
i keip) differentiate by the Kelvin equation; jve and yve of a real argument are jv and yv (of a
complex one, not holomorphic, they are refused).
"""

import numpy as np
from scipy import special

from ...extend import NoRuleError, not_implemented, plain, rrule
from .._util import conj_if_complex
from .special import _outputs_rule, _row

NO_POLYNOMIAL_PARAMETER = not_implemented(
    "a parameter alpha or beta of an orthogonal polynomial: its derivative has no closed "
    "form in scipy.special")


def _lower(n, derivative):
    """``derivative(n - 1)`` where the degree n > 0, and 0 where it is 0."""
    n = np.asarray(plain(n))
    return np.where(n > 0, derivative(np.maximum(n - 1, 0)), 0.0)


def _polynomial(func, dx, parameters=0, refusal=NO_POLYNOMIAL_PARAMETER):
    """An rrule for ``func(n, *parameters, x)``: n and the parameters constants (the
    parameters refused by name, with ``refusal``), ``dx(n, *parameters, x)`` the derivative
    in x."""

    def polynomial_rule(n, *args):
        ans = func(n, *args)

        def polynomial_pullback(g):
            return (None, *[refusal] * parameters,
                    g * _lower(n, lambda m: dx(n, m, *args)))

        polynomial_pullback.__name__ = polynomial_pullback.__qualname__ = \
            f"{func.__name__}_pullback"
        return ans, polynomial_pullback

    polynomial_rule.__name__ = polynomial_rule.__qualname__ = f"{func.__name__}_rule"
    rrule(func, batched=True)(polynomial_rule)


def _chebyt_dx(n, m, x):
    return n * special.eval_chebyu(m, x)


def _chebyu_dx(n, m, x):
    return 2 * special.eval_gegenbauer(m, 2.0, x)


_polynomial(special.eval_legendre, lambda n, m, x: special.eval_gegenbauer(m, 1.5, x))
_polynomial(special.eval_chebyt, _chebyt_dx)
_polynomial(special.eval_chebyu, _chebyu_dx)
_polynomial(special.eval_chebyc, lambda n, m, x: _chebyt_dx(n, m, x / 2))
_polynomial(special.eval_chebys, lambda n, m, x: _chebyu_dx(n, m, x / 2) / 2)
_polynomial(special.eval_sh_legendre,
            lambda n, m, x: 2 * special.eval_gegenbauer(m, 1.5, 2 * x - 1))
_polynomial(special.eval_sh_chebyt, lambda n, m, x: 2 * _chebyt_dx(n, m, 2 * x - 1))
_polynomial(special.eval_sh_chebyu, lambda n, m, x: 2 * _chebyu_dx(n, m, 2 * x - 1))
_polynomial(special.eval_hermite, lambda n, m, x: 2 * n * special.eval_hermite(m, x))
_polynomial(special.eval_hermitenorm, lambda n, m, x: n * special.eval_hermitenorm(m, x))
_polynomial(special.eval_laguerre, lambda n, m, x: -special.eval_genlaguerre(m, 1.0, x))
_polynomial(special.eval_gegenbauer,
            lambda n, m, alpha, x: 2 * alpha * special.eval_gegenbauer(m, alpha + 1, x), 1)
_polynomial(special.eval_genlaguerre,
            lambda n, m, alpha, x: -special.eval_genlaguerre(m, alpha + 1, x), 1)
_polynomial(special.eval_jacobi,
            lambda n, m, a, b, x: (n + a + b + 1) / 2 * special.eval_jacobi(m, a + 1, b + 1, x),
            2)
_polynomial(special.eval_sh_jacobi,
            lambda n, m, p, q, x: n * special.eval_sh_jacobi(m, p + 2, q + 1, x), 2,
            refusal=not_implemented(
                "a parameter p or q of scipy.special.eval_sh_jacobi: its derivative has no "
                "closed form in scipy.special"))

# ---------------------------------------------------------------------------- Hankel


def _hankel(func, scale):
    """H_v(z) * e^(scale z) (scale 0, -i or i): its derivative in z."""

    def hankel_rule(v, z):
        ans = func(v, z)

        def hankel_pullback(g):
            d = (func(v - 1, z) - func(v + 1, z)) / 2 + scale * ans
            return None, g * np.conjugate(d)

        hankel_pullback.__name__ = hankel_pullback.__qualname__ = f"{func.__name__}_pullback"
        return ans, hankel_pullback

    hankel_rule.__name__ = hankel_rule.__qualname__ = f"{func.__name__}_rule"
    rrule(func, batched=True)(hankel_rule)


_hankel(special.hankel1, 0)
_hankel(special.hankel2, 0)
_hankel(special.hankel1e, -1j)
_hankel(special.hankel2e, 1j)

# ---------------------------------------------------------------------------- hypergeometric

NO_HYPERGEOMETRIC_PARAMETER = not_implemented(
    "a parameter a, b or c of a hypergeometric function: its derivative has no closed form "
    "in scipy.special (differentiate with respect to the argument z only)")


@rrule(special.hyp1f1, batched=True)
def hyp1f1_rule(a, b, z):
    def hyp1f1_pullback(g):
        # d/dz 1F1(a; b; z) = a / b 1F1(a + 1; b + 1; z) (DLMF 13.3.15)
        d = a / b * special.hyp1f1(a + 1, b + 1, z)
        return (NO_HYPERGEOMETRIC_PARAMETER, NO_HYPERGEOMETRIC_PARAMETER,
                g * conj_if_complex(d))

    return special.hyp1f1(a, b, z), hyp1f1_pullback


@rrule(special.hyp2f1, batched=True)
def hyp2f1_rule(a, b, c, z):
    def hyp2f1_pullback(g):
        # d/dz 2F1(a, b; c; z) = a b / c 2F1(a + 1, b + 1; c + 1; z) (DLMF 15.5.1)
        d = a * b / c * special.hyp2f1(a + 1, b + 1, c + 1, z)
        return (NO_HYPERGEOMETRIC_PARAMETER,) * 3 + (g * conj_if_complex(d),)

    return special.hyp2f1(a, b, c, z), hyp2f1_pullback


NO_PARAMETER = not_implemented("a parameter (order or index) of this function: its "
                               "derivative has no closed form in scipy.special")

_row(special.hyp0f1, NO_PARAMETER, lambda ans, v, z: special.hyp0f1(v + 1, z) / v)
_row(special.hyperu, NO_PARAMETER, NO_PARAMETER,
     lambda ans, a, b, x: -a * special.hyperu(a + 1, b + 1, x))
_row(special.wright_bessel, NO_PARAMETER, NO_PARAMETER,
     lambda ans, a, b, x: special.wright_bessel(a, a + b, x))
_row(special.log_wright_bessel, NO_PARAMETER, NO_PARAMETER,
     lambda ans, a, b, x: np.exp(special.log_wright_bessel(a, a + b, x) - ans))
_row(special.lpmv, None, NO_PARAMETER,
     lambda ans, m, v, x: ((v + m) * special.lpmv(m, v - 1, x) - v * x * ans) / (1 - x * x))

# ---------------------------------------------------------------------------- Kelvin functions
# w = ber + i bei (and ker + i kei) solve x^2 w'' + x w' - i x^2 w = 0 (DLMF 10.61), so
# ber'' = -bei - ber' / x and bei'' = ber - bei' / x: the derivatives of berp ... keip

_row(special.ber, lambda ans, x: special.berp(x))
_row(special.bei, lambda ans, x: special.beip(x))
_row(special.ker, lambda ans, x: special.kerp(x))
_row(special.kei, lambda ans, x: special.keip(x))
_row(special.berp, lambda ans, x: -special.bei(x) - ans / x)
_row(special.beip, lambda ans, x: special.ber(x) - ans / x)
_row(special.kerp, lambda ans, x: -special.kei(x) - ans / x)
_row(special.keip, lambda ans, x: special.ker(x) - ans / x)
# kelvin(x) = (Be, Ke, Be', Ke'), Be = ber + i bei: Be'' = i Be - Be' / x, as Ke''
_outputs_rule(special.kelvin, lambda ans, x: (
    lambda: ans[2], lambda: ans[3], lambda: 1j * ans[0] - ans[2] / x,
    lambda: 1j * ans[1] - ans[3] / x))

# ---------------------------------------------------------------------------- scaled Bessel


def _real_only(name, derivative):
    """``derivative`` for a real argument; a complex one is refused by name (jve = jv
    e^(-|Im z|) is not holomorphic)."""

    def real_only(ans, v, z):
        if np.iscomplexobj(plain(z)):
            raise NoRuleError(
                f"pullback: scipy.special.{name} of a complex z is not differentiable: the "
                f"factor e^(-|Im z|) is not holomorphic (differentiate {name[:2]}v(v, z) * "
                "np.exp(-np.abs(np.imag(z))) instead)")
        return derivative(ans, v, z)

    return real_only


_row(special.jve, NO_PARAMETER, _real_only(
    "jve", lambda ans, v, z: (special.jve(v - 1, z) - special.jve(v + 1, z)) / 2))
_row(special.yve, NO_PARAMETER, _real_only(
    "yve", lambda ans, v, z: (special.yve(v - 1, z) - special.yve(v + 1, z)) / 2))
