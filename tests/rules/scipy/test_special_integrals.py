"""The modified Fresnel integrals (rules/scipy/special_integrals.py; the other integrals'
rows are in test_special.py). SciPy's F_+ and F_- of x < 0 have another imaginary part
than the integrals int_x^inf exp(+-i t^2) dt, whose derivatives the rules give: the rows
keep to x > 0."""

from scipy import special

from ..spec import Spec


def _between(lo, hi):
    def draw(rng, shape):
        return rng.uniform(lo, hi, shape)

    return draw


SPECS = [
    Spec(special.modfresnelp, [(), (3,), (2, 3)], domain=_between(0.05, 3.0)),
    Spec(special.modfresnelm, [(), (3,), (2, 3)], domain=_between(0.05, 3.0)),
]
