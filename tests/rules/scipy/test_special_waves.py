"""scipy.special's solutions of second-order equations, returned with their derivative: the
scaled Airy functions and the Airy integrals, the parabolic cylinder, Mathieu and
spheroidal wave functions (rules/scipy/special_waves.py; airy's rows are in
test_special.py). Each row checks both outputs to second order in x; the domains keep
to where SciPy's values are accurate (itairy's lose digits beyond |x| ~ 1; pro_rad2's of
m = 1, n = 2 and obl_rad2's of most orders do not solve the spheroidal equation)."""

import pytest
from scipy import special

import pullback as pb

from ..spec import Spec

UNARY = [(), (3,), (2, 3)]


def _between(lo, hi):
    def draw(rng, shape):
        return rng.uniform(lo, hi, shape)

    return draw


def _complex(rng, shape):
    return rng.uniform(0.3, 2.0, shape) + 1j * rng.uniform(-1.5, 1.5, shape)


def _in_x(func, domain, rtol=1e-6, **params):
    """Rows of ``func(*params, x)`` in x, the parameters a keyword grid."""
    return Spec(func, UNARY, domain=domain, kwargs=params, rtol=rtol,
                call=lambda x, **p: func(*p.values(), x))


SPECS = [
    Spec(special.airye, UNARY, domain=_between(0.2, 3.0)),
    Spec(special.airye, UNARY, domain=_between(-3.0, -0.2),
         call=lambda x: special.airye(x)[2:], name="special.airye(x < 0: eBi, eBi')"),
    Spec(special.airye, [(), (3,)], domain=_complex, name="special.airye(complex)"),
    Spec(special.airye, [(), (3,)], domain=_complex, call=lambda z: special.airye(z)[2:],
         name="special.airye(complex: eBi, eBi')"),
    Spec(special.itairy, UNARY, domain=_between(-0.8, 0.8)),
    _in_x(special.pbdv, _between(-2.5, 2.5), v=[0.0, 1.5, -0.7]),
    _in_x(special.pbvv, _between(-2.5, 2.5), v=[0.0, 1.5, -0.7]),
    _in_x(special.pbwa, _between(-2.5, 2.5), a=[0.0, 1.5, -0.7]),
]

# ce and se take x in degrees; the modified functions are radial, x > 0
MATHIEU = {"m": [0, 1, 3], "q": [0.5, 3.0]}
SPECS += [
    _in_x(special.mathieu_cem, _between(5.0, 170.0), rtol=1e-5, **MATHIEU),
    _in_x(special.mathieu_sem, _between(5.0, 170.0), rtol=1e-5, m=[1, 3], q=[0.5, 3.0]),
    _in_x(special.mathieu_modcem1, _between(0.2, 1.5), **MATHIEU),
    _in_x(special.mathieu_modcem2, _between(0.2, 1.5), **MATHIEU),
    _in_x(special.mathieu_modsem1, _between(0.2, 1.5), m=[1, 3], q=[0.5, 3.0]),
    _in_x(special.mathieu_modsem2, _between(0.2, 1.5), m=[1, 3], q=[0.5, 3.0]),
]

# spheroidal functions: angular ones in (-1, 1), radial ones in x > 1 (prolate), x > 0
# (oblate); (m, n) pairs with n >= m
ORDERS = [(0, 0), (1, 2), (2, 3)]
ANGULAR, PROLATE, OBLATE = _between(-0.9, 0.9), _between(1.1, 2.5), _between(0.3, 2.5)


def _spheroidal(func, domain, orders=ORDERS, cv=None):
    if cv is None:
        return Spec(func, UNARY, domain=domain, kwargs={"mn": orders, "c": [0.5, 2.0]},
                    call=lambda x, mn, c: func(*mn, c, x))
    return Spec(func, UNARY, domain=domain, kwargs={"mn": orders, "c": [0.5, 2.0]},
                call=lambda x, mn, c: func(*mn, c, cv(*mn, c), x))


SPECS += [
    _spheroidal(special.pro_ang1, ANGULAR),
    _spheroidal(special.pro_rad1, PROLATE),
    _spheroidal(special.pro_rad2, PROLATE, orders=[(0, 0), (0, 1), (2, 3)]),
    _spheroidal(special.obl_ang1, ANGULAR),
    _spheroidal(special.obl_rad1, OBLATE),
    _spheroidal(special.obl_rad2, _between(1.0, 2.5), orders=[(0, 1)]),
    _spheroidal(special.pro_ang1_cv, ANGULAR, cv=special.pro_cv),
    _spheroidal(special.pro_rad1_cv, PROLATE, cv=special.pro_cv),
    _spheroidal(special.pro_rad2_cv, PROLATE, orders=[(0, 0), (0, 1), (2, 3)],
                cv=special.pro_cv),
    _spheroidal(special.obl_ang1_cv, ANGULAR, cv=special.obl_cv),
    _spheroidal(special.obl_rad1_cv, OBLATE, cv=special.obl_cv),
    _spheroidal(special.obl_rad2_cv, _between(1.0, 2.5), orders=[(0, 1)], cv=special.obl_cv),
]


@pytest.mark.parametrize("call,reason", [
    (lambda v: special.pbdv(v, 1.2)[0], "order .* parabolic cylinder"),
    (lambda v: special.pbvv(v, 1.2)[1], "order .* parabolic cylinder"),
    (lambda a: special.pbwa(a, 1.2)[0], "order .* parabolic cylinder"),
    (lambda q: special.mathieu_cem(2, q, 30.0)[0], "parameter q of a Mathieu"),
    (lambda q: special.mathieu_modsem1(2, q, 0.5)[0], "parameter q of a Mathieu"),
    (lambda c: special.pro_ang1(1, 2, c, 0.3)[0], "parameter c of a spheroidal"),
    (lambda c: special.obl_rad1_cv(1, 2, c, special.obl_cv(1, 2, 1.5), 1.3)[0],
     "parameter c of a spheroidal"),
    (lambda cv: special.pro_rad1_cv(1, 2, 1.5, cv, 1.3)[0], "characteristic value cv"),
], ids=["pbdv", "pbvv", "pbwa", "mathieu_cem", "mathieu_modsem1", "pro_ang1", "obl_rad1_cv",
        "pro_rad1_cv"])
def test_parameters_are_refused_by_name(call, reason):
    x = 1.5 if "cv" not in reason else special.pro_cv(1, 2, 1.5)
    with pytest.raises(pb.NoRuleError, match=reason):
        pb.grad(call)(x)
