"""scipy.special's solutions of second-order linear equations, which SciPy returns with
their derivative in x: the Airy functions (``airy``, the scaled ``airye`` and the
integrals ``itairy``), the parabolic cylinder functions (``pbdv``, ``pbvv``, ``pbwa``), the
Mathieu functions (``mathieu_cem`` ... ``mathieu_modsem2``) and the spheroidal wave
functions (``pro_ang1`` ... ``obl_rad2_cv``). Each output pair (y, y') differentiates in x
by the equation: y' is SciPy's second output, and y'' follows from y and y', so they
differentiate to every order.

    Ai'' = x Ai, Bi'' = x Bi (DLMF 9.2.1); D_v'' = (x^2 / 4 - v - 1/2) D_v and the same for
    V_v (DLMF 12.2.2, a = -v - 1/2); W(a, x)'' = (a - x^2 / 4) W (DLMF 12.2.3); ce'' = -(a - 2 q
    cos 2x) ce, se'' the same with b (DLMF 28.2.1), Mc'' = (a - 2 q cosh 2x) Mc and Ms'' the
    same with b (DLMF 28.20.1); and the spheroidal equation (DLMF 30.2.1), (1 - x^2) w'' -
    2 x w' + (lambda - c^2 x^2 - m^2 / (1 - x^2)) w = 0 for the prolate functions, c^2 -> -c^2
    for the oblate angular ones, and (1 + x^2) w'' + 2 x w' - (lambda - c^2 x^2 - m^2 / (1 +
    x^2)) w = 0 for the oblate radial ones (x -> i x), lambda their characteristic value.

SciPy's Mathieu functions ce and se take x in degrees, and return y' in radians: both
derivatives carry the factor pi / 180. The scaled airye(z) = (e^zeta Ai, e^zeta Ai',
e^(-|Re zeta|) Bi, e^(-|Re zeta|) Bi'), zeta = 2/3 z^(3/2): for a real x < 0 SciPy's eAi is
NaN and eBi = Bi; for a complex z, eBi's factor is not holomorphic, and its cotangent has
the term in conj(z) too (sign(Re zeta) a constant: at Re zeta = 0, sign 0 averages).

The orders (v of pbdv and pbvv, a of pbwa), the Mathieu parameter q, the spheroidal
parameter c and a given characteristic value cv have no derivative in closed form in
scipy.special: each is refused by name, and so are the characteristic values
(``mathieu_a``, ``mathieu_b``, ``pro_cv``, ``obl_cv``) in q and c. The integer orders m and n
are constants. SciPy's values are not everywhere accurate: itairy's lose digits beyond
|x| ~ 1 (errors of 1e-8 at x = 1.1, 1e-4 at 5), and pro_rad2 (of m = 1, n = 2) and obl_rad2
(of most orders) do not solve the equation (their Wronskians with the rad1 functions are
off): there the derivative of the output y' follows the equation, not SciPy's values.
"""

import numpy as np
from scipy import special

from ...extend import is_complex, not_implemented, plain, rrule
from ..numpy._linalg import is_zero
from .special import RAD_PER_DEG, _outputs_rule, _row, _terms

# ---------------------------------------------------------------------------- Airy

@rrule(special.airy, batched=True)
def airy_rule(z):
    ans = special.airy(z)

    def airy_pullback(g):
        # (Ai, Ai', Bi, Bi'): Ai'' = z Ai, Bi'' = z Bi (DLMF 9.2.1)
        ai, aip, bi, bip = ans
        return (_terms(g, (lambda: aip, lambda: z * ai, lambda: bip, lambda: z * bi)),)

    return ans, airy_pullback


@rrule(special.airye, batched=True)
def airye_rule(z):
    ans = special.airye(z)

    def airye_pullback(g):
        # e^zeta (Ai, Ai') is holomorphic: d/dz e^zeta f = e^zeta (sqrt(z) f + f')
        eai, eaip, ebi, ebip = ans
        if not is_complex(z):  # (|Re zeta| = zeta for x > 0, 0 for x < 0: eBi = Bi there)
            root = np.sqrt(np.maximum(z, 0.0))
            return (_terms(g, (lambda: root * eai + eaip, lambda: root * eaip + z * eai,
                               lambda: ebip - root * ebi, lambda: z * ebi - root * ebip)),)
        root = np.sqrt(z)
        ct = _terms(g[:2], (lambda: root * eai + eaip, lambda: root * eaip + z * eai))
        # e^(-|Re zeta|) is not: its derivatives in z and conj(z) are -h and -conj(h) times
        # itself, h = sign(Re zeta) sqrt(z) / 2, and a cotangent g of f(z) gives g conj(df/dz)
        # + conj(g) df/dconj(z)
        zp = plain(z)
        h = np.sign(np.real(zp * np.sqrt(zp))) * root / 2
        for gk, fk, dk in ((g[2], ebi, ebip - h * ebi), (g[3], ebip, z * ebi - h * ebip)):
            if not is_zero(gk):
                ct = ct + gk * np.conjugate(dk) - np.conjugate(gk) * np.conjugate(h) * fk
        return (ct,)

    return ans, airye_pullback


# itairy(x) = (int_0^x Ai, int_0^x Bi, int_0^x Ai(-t) dt, int_0^x Bi(-t) dt)
_outputs_rule(special.itairy, lambda ans, x: (
    lambda: special.airy(x)[0], lambda: special.airy(x)[2], lambda: special.airy(-x)[0],
    lambda: special.airy(-x)[2]))

# ---------------------------------------------------------------------------- parabolic cylinder

NO_ORDER = not_implemented(
    "the order (v, or a for pbwa) of a parabolic cylinder function: its derivative in it "
    "has no closed form in scipy.special (differentiate with respect to x only)")

_outputs_rule(special.pbdv, lambda ans, v, x: (
    lambda: ans[1], lambda: (x * x / 4 - v - 0.5) * ans[0]), NO_ORDER)
_outputs_rule(special.pbvv, lambda ans, v, x: (
    lambda: ans[1], lambda: (x * x / 4 - v - 0.5) * ans[0]), NO_ORDER)
_outputs_rule(special.pbwa, lambda ans, a, x: (
    lambda: ans[1], lambda: (a - x * x / 4) * ans[0]), NO_ORDER)

# ---------------------------------------------------------------------------- Mathieu

NO_MATHIEU_Q = not_implemented(
    "the parameter q of a Mathieu function or characteristic value: its derivative in q "
    "has no closed form in scipy.special (differentiate the functions with respect to x "
    "only)")

_row(special.mathieu_a, None, NO_MATHIEU_Q)
_row(special.mathieu_b, None, NO_MATHIEU_Q)


def _mathieu(func, characteristic):
    """ce_m or se_m (x in degrees, y' per radian): y'' = -(a - 2 q cos 2x) y."""

    def derivatives(ans, m, q, x):
        y, yp = ans
        radians = RAD_PER_DEG * x
        return (lambda: RAD_PER_DEG * yp, lambda: -RAD_PER_DEG * (
            characteristic(m, q) - 2 * q * np.cos(2 * radians)) * y)

    _outputs_rule(func, derivatives, None, NO_MATHIEU_Q)


def _modified_mathieu(func, characteristic):
    """Mc_m^(j) or Ms_m^(j): y'' = (a - 2 q cosh 2x) y."""

    def derivatives(ans, m, q, x):
        y, yp = ans
        return (lambda: yp, lambda: (characteristic(m, q) - 2 * q * np.cosh(2 * x)) * y)

    _outputs_rule(func, derivatives, None, NO_MATHIEU_Q)


_mathieu(special.mathieu_cem, special.mathieu_a)
_mathieu(special.mathieu_sem, special.mathieu_b)
for _func in (special.mathieu_modcem1, special.mathieu_modcem2):
    _modified_mathieu(_func, special.mathieu_a)
for _func in (special.mathieu_modsem1, special.mathieu_modsem2):
    _modified_mathieu(_func, special.mathieu_b)

# ---------------------------------------------------------------------------- spheroidal

NO_SPHEROIDAL_C = not_implemented(
    "the parameter c of a spheroidal wave function or characteristic value: its derivative "
    "in c has no closed form in scipy.special (differentiate the functions with respect to "
    "x only)")
NO_CV = not_implemented(
    "the characteristic value cv given to a spheroidal wave function: its derivative in cv "
    "has no closed form in scipy.special (differentiate with respect to x only)")

_row(special.pro_cv, None, None, NO_SPHEROIDAL_C)
_row(special.obl_cv, None, None, NO_SPHEROIDAL_C)


def _prolate(y, yp, m, c, cv, x):
    # (1 - x^2) y'' = 2 x y' - (cv - c^2 x^2 - m^2 / (1 - x^2)) y
    t = 1 - x * x
    return (2 * x * yp - (cv - c * c * x * x - m * m / t) * y) / t


def _oblate_angular(y, yp, m, c, cv, x):
    t = 1 - x * x
    return (2 * x * yp - (cv + c * c * x * x - m * m / t) * y) / t


def _oblate_radial(y, yp, m, c, cv, x):
    # (1 + x^2) y'' = (cv - c^2 x^2 - m^2 / (1 + x^2)) y - 2 x y'
    t = 1 + x * x
    return ((cv - c * c * x * x - m * m / t) * y - 2 * x * yp) / t


def _spheroidal(func, second, characteristic):
    """A spheroidal function (m, n, c, x), its characteristic value ``characteristic(m, n,
    c)``, and its _cv form (m, n, c, cv, x)."""

    def derivatives(ans, m, n, c, x):
        return (lambda: ans[1],
                lambda: second(*ans, m, c, characteristic(m, n, c), x))

    def cv_derivatives(ans, m, n, c, cv, x):
        return (lambda: ans[1], lambda: second(*ans, m, c, cv, x))

    _outputs_rule(func, derivatives, None, None, NO_SPHEROIDAL_C)
    _outputs_rule(getattr(special, func.__name__ + "_cv"), cv_derivatives, None, None,
                  NO_SPHEROIDAL_C, NO_CV)


for _func in (special.pro_ang1, special.pro_rad1, special.pro_rad2):
    _spheroidal(_func, _prolate, special.pro_cv)
_spheroidal(special.obl_ang1, _oblate_angular, special.obl_cv)
for _func in (special.obl_rad1, special.obl_rad2):
    _spheroidal(_func, _oblate_radial, special.obl_cv)
