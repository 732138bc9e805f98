"""scipy.special's orthogonal polynomials, Hankel, hypergeometric and Kelvin functions
(rules/scipy/special_more.py)."""

import numpy as np
import pytest
from scipy import special

import pullback as pb

from ..spec import UNARY, Spec


def _between(lo, hi):
    def draw(rng, shape):
        return rng.uniform(lo, hi, shape)

    return draw


DEGREES = {"n": [0, 1, 4]}
UNIT = _between(-0.9, 0.9)


def _in_x(func, domain=UNIT, **params):
    return Spec(func, UNARY, domain=domain, kwargs={**DEGREES, **params},
                call=lambda x, n, **p: func(n, *p.values(), x))


SPECS = [
    _in_x(special.eval_legendre),
    _in_x(special.eval_chebyt),
    _in_x(special.eval_chebyu),
    _in_x(special.eval_chebyc, _between(-1.8, 1.8)),
    _in_x(special.eval_chebys, _between(-1.8, 1.8)),
    _in_x(special.eval_sh_legendre, _between(0.05, 0.95)),
    _in_x(special.eval_sh_chebyt, _between(0.05, 0.95)),
    _in_x(special.eval_sh_chebyu, _between(0.05, 0.95)),
    _in_x(special.eval_hermite, "real"),
    _in_x(special.eval_hermitenorm, "real"),
    _in_x(special.eval_laguerre, _between(0.1, 3.0)),
    _in_x(special.eval_gegenbauer, alpha=[0.7, 2.0]),
    _in_x(special.eval_genlaguerre, _between(0.1, 3.0), alpha=[0.5, 2.0]),
    _in_x(special.eval_jacobi, alpha=[0.5], beta=[1.5]),
    _in_x(special.eval_sh_jacobi, _between(0.05, 0.95), p=[2.5, 3.0], q=[0.7, 1.5]),
    Spec(special.eval_legendre, UNARY, domain=UNIT, call=lambda x: special.eval_legendre(2.5, x),
         name="scipy.special.eval_legendre(non-integer degree)"),
    *[Spec(func, UNARY, domain=_between(0.5, 3.0), kwargs={"v": [0.0, 1.5]},
           call=lambda z, v, func=func: func(v, z)) for func in (
        special.hankel1, special.hankel2, special.hankel1e, special.hankel2e)],
    *[Spec(func, [(), (3,)], domain="complex", kwargs={"v": [0.5]},
           call=lambda z, v, func=func: func(v, z + 2.0),
           name=f"scipy.special.{func.__name__}(complex)") for func in (
        special.hankel1, special.hankel2, special.hankel1e, special.hankel2e)],
]


def test_a_polynomial_parameter_has_no_rule():
    with pytest.raises(pb.NoRuleError, match="parameter alpha or beta"):
        pb.grad(lambda a: special.eval_gegenbauer(3, a, 0.3))(1.5)
    with pytest.raises(pb.NoRuleError, match="parameter p or q of scipy.special.eval_sh_jacobi"):
        pb.grad(lambda q: special.eval_sh_jacobi(3, 2.5, q, 0.3))(1.5)


SPECS += [
    Spec(special.hyp0f1, UNARY, domain=_between(-2.0, 3.0), kwargs={"v": [0.5, 2.5]},
         call=lambda z, v: special.hyp0f1(v, z)),
    Spec(special.hyp0f1, [()], domain="complex", call=lambda z: special.hyp0f1(1.5, z),
         name="scipy.special.hyp0f1(complex)"),
    Spec(special.hyperu, UNARY, domain=_between(0.3, 3.0), kwargs={"a": [0.5, 1.5], "b": [0.7]},
         call=lambda x, a, b: special.hyperu(a, b, x)),
    Spec(special.wright_bessel, UNARY, domain=_between(0.1, 3.0),
         kwargs={"a": [0.5, 2.0], "b": [0.3, 1.0]},
         call=lambda x, a, b: special.wright_bessel(a, b, x)),
    Spec(special.log_wright_bessel, UNARY, domain=_between(0.1, 3.0),
         kwargs={"a": [0.5, 2.0], "b": [0.3, 1.0]},
         call=lambda x, a, b: special.log_wright_bessel(a, b, x)),
    Spec(special.lpmv, UNARY, domain=UNIT, kwargs={"m": [0, 1, 2], "v": [2.0, 3.5]},
         call=lambda x, m, v: special.lpmv(m, v, x)),
]


SPECS += [
    *[Spec(func, UNARY, domain=_between(0.5, 4.0)) for func in (
        special.ber, special.bei, special.ker, special.kei,
        special.berp, special.beip, special.kerp, special.keip)],
    Spec(special.kelvin, UNARY, domain=_between(0.5, 4.0)),
    *[Spec(func, UNARY, domain=_between(0.5, 4.0), kwargs={"v": [0.0, 1.5]},
           call=lambda z, v, func=func: func(v, z)) for func in (special.jve, special.yve)],
]


def test_jve_of_a_complex_argument_is_refused():
    with pytest.raises(pb.NoRuleError, match="not holomorphic"):
        pb.grad(lambda z: np.real(special.jve(1.0, z * (1 + 1j))))(0.7)
