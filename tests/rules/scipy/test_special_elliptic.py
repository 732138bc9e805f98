"""Carlson's symmetric elliptic integrals (rules/scipy/special_elliptic.py; the other
elliptic integrals' rows are in test_special.py and test_special_distributions.py). Each
argument is drawn from its own interval, apart from the others': the derivatives of R_D
and R_J are divided differences in two of them."""

import numpy as np
from scipy import special

import pullback as pb

from ..spec import Spec


def _between(lo, hi, imag=None):
    def draw(rng, shape):
        real = rng.uniform(lo, hi, shape)
        return real if imag is None else real + imag * 1j * rng.uniform(-1.0, 1.0, shape)

    return draw


X, Y, Z, P = _between(0.2, 0.6), _between(0.9, 1.4), _between(1.8, 2.6), _between(3.0, 4.0)
CX, CY, CZ, CP = (_between(0.2, 0.6, 0.3), _between(0.9, 1.4, 0.3), _between(1.8, 2.6, 0.3),
                  _between(3.0, 4.0, 0.3))
TWO = [((), ()), ((3,), (3,)), ((2, 1), (1, 3))]
THREE = [((), (), ()), ((3,), (3,), (3,)), ((2, 1), (1, 3), ())]
FOUR = [((), (), (), ()), ((3,), (3,), (3,), (3,)), ((2, 1), (1, 3), (), (3,))]

SPECS = [
    Spec(special.elliprc, TWO, domain=(X, Y)),
    Spec(special.elliprc, TWO, domain=(Y, X), name="special.elliprc(x > y)"),
    Spec(special.elliprc, TWO, domain=(X, _between(-1.4, -0.9)),
         name="special.elliprc(y < 0, a principal value)"),
    Spec(special.elliprc, [((), ()), ((3,), (3,))], domain=(CX, CY),
         name="special.elliprc(complex)"),
    Spec(special.elliprf, THREE, domain=(X, Y, Z)),
    Spec(special.elliprf, THREE, domain=(CZ, CX, CY), name="special.elliprf(complex)"),
    Spec(special.elliprg, THREE, domain=(Y, Z, X)),
    Spec(special.elliprg, THREE, domain=(CX, CY, CZ), name="special.elliprg(complex)"),
    Spec(special.elliprd, THREE, domain=(X, Y, Z)),
    Spec(special.elliprd, THREE, domain=(Z, Y, X), name="special.elliprd(z < x, y)"),
    Spec(special.elliprd, THREE, domain=(CX, CZ, CY), name="special.elliprd(complex)"),
    Spec(special.elliprj, FOUR, domain=(X, Y, Z, P)),
    Spec(special.elliprj, FOUR, domain=(Y, P, X, Z), name="special.elliprj(p between)"),
    Spec(special.elliprj, FOUR, domain=(X, Y, Z, _between(-1.5, -0.8)),
         name="special.elliprj(p < 0, a principal value)"),
    Spec(special.elliprj, FOUR, domain=(CX, CY, CZ, CP), name="special.elliprj(complex)"),
]


def test_first_derivatives_of_rf_rc_and_rg_where_arguments_coincide():
    # R_F(x, y, y) = R_C(x, y), R_C(x, x), R_G(x, x, x): their first derivatives need R_D's
    # values only (the second ones divided differences, 0/0 there)
    x, y = np.float64(0.7), np.float64(1.9)
    pb.check_grads(lambda x, y: special.elliprf(x, y, y), x, y, order=1)
    pb.check_grads(lambda x: special.elliprc(x, x), x, order=1)
    pb.check_grads(lambda x: special.elliprg(x, x, x), x, order=1)
