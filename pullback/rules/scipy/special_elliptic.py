"""scipy.special's elliptic integrals: the complete ones (``ellipk``, ``ellipe``,
``ellipkm1``) and the arithmetic-geometric mean ``agm``, the incomplete ones in the
amplitude phi (``ellipkinc``, ``ellipeinc``), the Jacobi elliptic functions ``ellipj`` in
u, and Carlson's symmetric integrals ``elliprc``, ``elliprd``, ``elliprf``, ``elliprg`` and
``elliprj`` in every argument.

The parameter m of the incomplete integrals and of ellipj has no rule here (their
derivatives in phi and u are elementary). Carlson's integrals differentiate into one
another (DLMF 19.18.1, 19.18.4): dR_F/dz = -R_D(x, y, z) / 6, dR_G/dz = R_F / 4 - z R_D(x,
y, z) / 12, and the derivatives of R_D and R_J, whose integrands have two poles, by partial
fractions: dR_D(x, y, z)/dx = (R_D(x, y, z) - R_D(y, z, x)) / (2 (z - x)) and dR_J/dx =
(R_J - R_D(y, z, x)) / (2 (p - x)); R_D's in z by parts, dR_D/dz = -3 / (2 sqrt(x y)
z^(3/2)) - dR_D/dx - dR_D/dy, and R_J's in p from the homogeneity relation (DLMF
19.18.11). Those divided differences are 0/0 where the two arguments are equal
(NaN there, and a relative error of about 1e-16 / d at a relative distance d from it): so
are the first derivatives of elliprd and elliprj at such points, and the second
derivatives of the others. For a real y < 0, R_C(x, y) is a Cauchy principal value, and
R_D(y, y, x) is not defined: there dR_C/dx = (1 / sqrt(x) - R_C) / (2 (x - y)).
"""

import numpy as np
from scipy import special

from ...extend import elementwise, is_complex, not_implemented, plain, rrule
from .special import _near_zero, _terms

# ---------------------------------------------------------------------------- complete integrals


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

# ellipkm1(p) = K(1 - p); dK/dm = (E(m) - (1 - m) K(m)) / (2 m (1 - m)), m = 1 - p
elementwise(special.ellipkm1, lambda ans, p: -(special.ellipe(1 - p) - p * ans)
            / (2 * (1 - p) * p), singular=True)

# ---------------------------------------------------------------------------- incomplete integrals


NO_ELLIPTIC_PARAMETER = not_implemented(
    "the parameter m of an incomplete elliptic integral or of the Jacobi elliptic "
    "functions: pullback has no rule for its derivative (differentiate with respect to the "
    "amplitude phi or the argument u only)")


@rrule(special.ellipkinc, batched=True)
def ellipkinc_rule(phi, m):
    def ellipkinc_pullback(g):
        # dF(phi | m) / dphi = 1 / sqrt(1 - m sin^2 phi) (DLMF 19.2.4)
        s = np.sin(phi)
        return (g / np.sqrt(1 - m * s * s), NO_ELLIPTIC_PARAMETER)

    return special.ellipkinc(phi, m), ellipkinc_pullback


@rrule(special.ellipeinc, batched=True)
def ellipeinc_rule(phi, m):
    def ellipeinc_pullback(g):
        # dE(phi | m) / dphi = sqrt(1 - m sin^2 phi) (DLMF 19.2.5)
        s = np.sin(phi)
        return (g * np.sqrt(1 - m * s * s), NO_ELLIPTIC_PARAMETER)

    return special.ellipeinc(phi, m), ellipeinc_pullback


@rrule(special.ellipj, batched=True)
def ellipj_rule(u, m):
    ans = special.ellipj(u, m)

    def ellipj_pullback(g):
        # (sn, cn, dn, ph) in u: sn' = cn dn, cn' = -sn dn, dn' = -m sn cn, ph' = dn
        # (DLMF 22.13.1-3; sn = sin ph)
        sn, cn, dn, _ = ans
        return (_terms(g, (lambda: cn * dn, lambda: -sn * dn, lambda: -m * sn * cn,
                           lambda: dn)), NO_ELLIPTIC_PARAMETER)

    return ans, ellipj_pullback


# ---------------------------------------------------------------------------- Carlson's integrals

def _rd_dx(x, y, z):
    """dR_D(x, y, z) / dx: the integrand's factor 1 / ((t + x) (t + z)) by partial
    fractions."""
    return (special.elliprd(x, y, z) - special.elliprd(y, z, x)) / (2 * (z - x))


def _rd_dz(x, y, z):
    """dR_D(x, y, z) / dz: by parts, -3 / (2 sqrt(x y) z^(3/2)) less the other two."""
    return (-3 / (2 * np.sqrt(x) * np.sqrt(y) * z * np.sqrt(z)) - _rd_dx(x, y, z)
            - _rd_dx(y, x, z))


def _rc_dx(ans, x, y):
    # -R_D(y, y, x) / 6, as R_C(x, y) = R_F(x, y, y); for a real y < 0, where R_C is a
    # Cauchy principal value (and R_D undefined), (1 / sqrt x - R_C) / (2 (x - y)), x > y
    if is_complex(x) or is_complex(y):
        return -special.elliprd(y, y, x) / 6
    principal = plain(y) < 0
    y_rd, y_pv = np.where(principal, 1.0, y), np.where(principal, y, -1.0)
    return np.where(principal, (1 / np.sqrt(x) - ans) / (2 * (x - y_pv)),
                    -special.elliprd(y_rd, y_rd, x) / 6)


def _rg_dz(x, y, z):
    return special.elliprf(x, y, z) / 4 - z * special.elliprd(x, y, z) / 12


def _rj_dx(ans, x, y, z, p):
    # the integrand's factor 1 / ((t + p) (t + x)) by partial fractions
    return (ans - special.elliprd(y, z, x)) / (2 * (p - x))


def _rj_dp(ans, x, y, z, p):
    # Euler's homogeneity relation: x d/dx + y d/dy + z d/dz + p d/dp = -3/2 (DLMF 19.18.11)
    return (-1.5 * ans - x * _rj_dx(ans, x, y, z, p) - y * _rj_dx(ans, y, z, x, p)
            - z * _rj_dx(ans, z, x, y, p)) / p


elementwise(special.elliprf, lambda ans, x, y, z: -special.elliprd(y, z, x) / 6,
            lambda ans, x, y, z: -special.elliprd(z, x, y) / 6,
            lambda ans, x, y, z: -special.elliprd(x, y, z) / 6, singular=True)
# dR_C/dy = -1 / (2 sqrt(x) y) - dR_C/dx (R_C's integrand, integrated by parts)
elementwise(special.elliprc, _rc_dx,
            lambda ans, x, y: -1 / (2 * np.sqrt(x) * y) - _rc_dx(ans, x, y), singular=True)
elementwise(special.elliprg, lambda ans, x, y, z: _rg_dz(y, z, x),
            lambda ans, x, y, z: _rg_dz(z, x, y), lambda ans, x, y, z: _rg_dz(x, y, z),
            singular=True)
elementwise(special.elliprd, lambda ans, x, y, z: _rd_dx(x, y, z),
            lambda ans, x, y, z: _rd_dx(y, x, z), lambda ans, x, y, z: _rd_dz(x, y, z),
            singular=True)
elementwise(special.elliprj, _rj_dx, lambda ans, x, y, z, p: _rj_dx(ans, y, z, x, p),
            lambda ans, x, y, z, p: _rj_dx(ans, z, x, y, p), _rj_dp, singular=True)
