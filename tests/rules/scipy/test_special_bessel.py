"""The integrals of scipy.special's Bessel and Struve functions of order 0, and besselpoly
(rules/scipy/special_bessel.py; the Bessel functions' own rows are in test_special.py)."""

import pytest
from scipy import special

import pullback as pb

from ..spec import Spec

UNARY = [(), (3,), (2, 3)]


def _between(lo, hi):
    def draw(rng, shape):
        return rng.uniform(lo, hi, shape)

    return draw


POS = _between(0.3, 4.0)
NEAR_0 = _between(1e-5, 9e-4)  # where 1 - J0(x), I0(x) - 1 cancel: the series

SPECS = [
    Spec(special.itj0y0, UNARY, domain=POS),
    Spec(special.it2j0y0, UNARY, domain=POS),
    Spec(special.it2j0y0, [(3,)], domain=NEAR_0, call=lambda x: special.it2j0y0(x)[0],
         name="special.it2j0y0(near 0)"),
    Spec(special.iti0k0, UNARY, domain=POS),
    Spec(special.it2i0k0, UNARY, domain=POS),
    Spec(special.it2i0k0, [(3,)], domain=NEAR_0, call=lambda x: special.it2i0k0(x)[0],
         name="special.it2i0k0(near 0)"),
    Spec(special.itstruve0, UNARY, domain=POS),
    Spec(special.it2struve0, UNARY, domain=POS),
    Spec(special.it2struve0, [(3,)], domain=NEAR_0, name="special.it2struve0(near 0)"),
    Spec(special.itmodstruve0, UNARY, domain=POS),
    Spec(special.besselpoly, UNARY, domain=_between(0.2, 3.0),
         kwargs={"lmb": [0.0, 1.5], "nu": [0.0, 1.0, 2.5]},
         call=lambda a, lmb, nu: special.besselpoly(a, lmb, nu)),
]


@pytest.mark.parametrize("i", [1, 2], ids=["lmb", "nu"])
def test_besselpoly_refuses_lmb_and_nu_by_name(i):
    args = [0.7, 1.5, 2.0]

    def f(t):
        return special.besselpoly(*args[:i], t, *args[i + 1:])

    with pytest.raises(pb.NoRuleError, match="besselpoly.*no closed form"):
        pb.grad(f)(args[i])
