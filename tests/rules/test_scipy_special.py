import numpy as np
import pytest
from scipy import special

import pullback as pb

from .spec import Spec

UNARY = [(), (3,)]
BINARY = [((3,), (3,)), ((2, 1), (3,))]
REDUCE = [(2, 3)]
AXES = [None, 0, -1, (0, 1)]


def _between(lo, hi):
    def draw(rng, shape):
        return rng.uniform(lo, hi, shape)

    return draw


def _right_half_plane(rng, shape):
    return rng.uniform(0.5, 2.0, shape) + 1j * rng.standard_normal(shape)


SHAPES = np.array([[0.5, 1.0, 1.5], [2.0, 3.5, 5.0]])  # shape parameters a (and b)
BESSEL_ORDERS = {"v": [0.0, 1.5, -2.0]}
NOT_COMPLEX_TWICE = "digamma's derivative polygamma is real-only in SciPy"

SPECS = [
    Spec(special.gamma, UNARY, domain="positive"),
    Spec(special.gamma, UNARY, domain=_right_half_plane, order=1, why=NOT_COMPLEX_TWICE,
         name="special.gamma(complex)"),
    Spec(special.gammaln, UNARY, domain="positive"),
    Spec(special.gammaln, UNARY, domain=_between(-2.9, -2.1), name="special.gammaln(negative)"),
    Spec(special.loggamma, UNARY, domain="positive"),
    Spec(special.loggamma, UNARY, domain=_right_half_plane, order=1, why=NOT_COMPLEX_TWICE,
         name="special.loggamma(complex)"),
    Spec(special.digamma, UNARY, domain="positive"),
    Spec(special.digamma, UNARY, domain="positive", call=special.psi, name="special.psi"),
    Spec(special.polygamma, UNARY, domain="positive", kwargs={"n": [0, 1, 3]},
         call=lambda x, n: special.polygamma(n, x)),
    Spec(special.rgamma, UNARY, domain="positive"),
    Spec(special.rgamma, UNARY, domain=_between(-2.9, -2.1), name="special.rgamma(negative)"),
    Spec(special.gammainc, UNARY, domain="positive", kwargs={"a": [0.5, 1.0, 3.5]},
         call=lambda x, a: special.gammainc(a, x)),
    Spec(special.gammaincc, UNARY, domain="positive", kwargs={"a": [0.5, 1.0, 3.5]},
         call=lambda x, a: special.gammaincc(a, x)),
    Spec(special.gammainc, [(2, 3)], domain="positive", name="special.gammainc(array a)",
         call=lambda x: special.gammainc(SHAPES, x)),
    Spec(special.gammaincc, [(2, 3)], domain="positive", name="special.gammaincc(array a)",
         call=lambda x: special.gammaincc(SHAPES, x)),
    Spec(special.betainc, UNARY, domain=_between(0.05, 0.95),
         kwargs={"a": [0.5, 1.0, 2.5], "b": [0.7, 3.0]},
         call=lambda x, a, b: special.betainc(a, b, x)),
    Spec(special.betainc, [(2, 3)], domain=_between(0.05, 0.95), name="special.betainc(array a, b)",
         call=lambda x: special.betainc(SHAPES, SHAPES[::-1, ::-1], x)),
    Spec(special.multigammaln, UNARY, domain=_between(2.0, 4.0), kwargs={"d": [1, 3]}),
    Spec(special.beta, BINARY, domain="positive"),
    Spec(special.betaln, BINARY, domain="positive"),
    Spec(special.erf, UNARY),
    Spec(special.erf, UNARY, domain="complex", name="special.erf(complex)"),
    Spec(special.erfc, UNARY),
    Spec(special.erfinv, UNARY, domain="unit"),
    Spec(special.erfcinv, UNARY, domain=_between(0.2, 1.8)),
    Spec(special.erfcx, UNARY),
    Spec(special.ndtr, UNARY),
    Spec(special.log_ndtr, UNARY, domain=_between(-30.0, 3.0)),
    Spec(special.ndtri, UNARY, domain=_between(0.05, 0.95)),
    Spec(special.expit, UNARY),
    Spec(special.logit, UNARY, domain=_between(0.05, 0.95)),
    Spec(special.log_expit, UNARY),
    Spec(special.xlogy, BINARY, domain=("real", "positive")),
    Spec(special.xlog1py, BINARY, domain=("real", "positive")),
    Spec(special.entr, UNARY, domain="positive"),
    Spec(special.rel_entr, BINARY, domain="positive"),
    Spec(special.kl_div, BINARY, domain="positive"),
    Spec(special.i0, UNARY),
    Spec(special.i0e, UNARY, domain="nonzero"),
    Spec(special.i1, UNARY),
    Spec(special.i1e, UNARY, domain="nonzero"),
    Spec(special.iv, UNARY, domain="positive", kwargs=BESSEL_ORDERS,
         call=lambda x, v: special.iv(v, x)),
    Spec(special.ive, UNARY, domain="positive", kwargs=BESSEL_ORDERS,
         call=lambda x, v: special.ive(v, x)),
    Spec(special.j0, UNARY),
    Spec(special.j1, UNARY),
    Spec(special.jv, UNARY, domain="positive", kwargs=BESSEL_ORDERS,
         call=lambda x, v: special.jv(v, x)),
    Spec(special.y0, UNARY, domain="positive"),
    Spec(special.y1, UNARY, domain="positive"),
    Spec(special.yv, UNARY, domain="positive", kwargs=BESSEL_ORDERS,
         call=lambda x, v: special.yv(v, x)),
    Spec(special.yn, UNARY, domain="positive", kwargs={"n": [0, 1, 3, -2]},
         call=lambda x, n: special.yn(n, x)),
    Spec(special.k0, UNARY, domain="positive"),
    Spec(special.k1, UNARY, domain="positive"),
    Spec(special.kv, UNARY, domain="positive", kwargs=BESSEL_ORDERS,
         call=lambda x, v: special.kv(v, x)),
    Spec(special.logsumexp, [()], kwargs={"keepdims": [False, True]},
         name="special.logsumexp(0-d)"),
    Spec(special.logsumexp, REDUCE, kwargs={"axis": AXES, "keepdims": [False, True]}),
    Spec(special.logsumexp, [((2, 3), (2, 3)), ((2, 3), (3,))], domain=("real", "positive"),
         kwargs={"axis": [None, -1], "keepdims": [False, True]},
         call=lambda a, b, **kw: special.logsumexp(a, b=b, **kw), name="special.logsumexp(b)"),
    # b of mixed signs: sum b e^a < 0 in some rows; the sign is a second (constant) output
    Spec(special.logsumexp, [((2, 3), (2, 3))], domain=("real", "nonzero"),
         kwargs={"axis": [None, 0, -1]},
         call=lambda a, b, **kw: special.logsumexp(a, b=b, return_sign=True, **kw),
         name="special.logsumexp(b, return_sign)"),
    Spec(special.softmax, [(), (3,)], name="special.softmax(1-d)"),
    Spec(special.softmax, REDUCE, kwargs={"axis": AXES}),
    Spec(special.log_softmax, [(), (3,)], name="special.log_softmax(1-d)"),
    Spec(special.log_softmax, REDUCE, kwargs={"axis": AXES}),
]




@pytest.mark.parametrize("f", [special.iv, special.ive, special.jv, special.yv, special.kv])
def test_bessel_order_has_no_derivative(f):
    # the message names the function where it lives (scipy.special's ufuncs are no np.*)
    with pytest.raises(pb.NoRuleError, match=f"scipy.special.{f.__name__} .*argument 0"):
        pb.grad(f)(0.5, 1.5)


NONDIFF = {special.gammasgn: (np.array([-2.5, -1.5, 0.5, 3.0]),)}


def test_gammasgn_is_a_constant_factor():
    x = np.array([-2.5, -1.5, 0.5, 3.0])
    np.testing.assert_array_equal(pb.grad(lambda x: np.sum(special.gammasgn(x) * x))(x),
                                  special.gammasgn(x))


@pytest.mark.parametrize("call", [
    lambda a: special.gammainc(a, 1.5), lambda a: special.gammaincc(a, 1.5),
    lambda a: special.betainc(a, 2.0, 0.4), lambda b: special.betainc(2.0, b, 0.4),
], ids=["gammainc", "gammaincc", "betainc(a)", "betainc(b)"])
def test_incomplete_functions_have_no_derivative_in_the_shape_parameters(call):
    with pytest.raises(pb.NoRuleError, match="shape parameter"):
        pb.grad(call)(1.5)


def test_plain_functions_are_intercepted_in_scipy_special():
    for name in ("polygamma", "multigammaln", "logsumexp", "softmax", "log_softmax"):
        assert getattr(getattr(special, name), "_pb_primitive", False), name
    def unwrapped(f):  # np.sinc stands wrapped in NumPy's namespace (construct.py)
        return getattr(f, "_pb_original", f)

    assert unwrapped(special.sinc) is unwrapped(np.sinc)
    np.testing.assert_allclose(pb.grad(special.sinc)(0.5), -4 / np.pi)


def test_softmax_and_logsumexp_of_a_scalar():
    assert pb.grad(special.softmax)(0.7) == 0.0
    assert pb.grad(special.log_softmax)(0.7) == 0.0
    assert pb.grad(special.logsumexp)(0.7) == 1.0


SPECS += [Spec(special.logsumexp, [((2,), (2,))],
               domain=(lambda rng, s: np.array([0.0, 1.0]), lambda rng, s: np.array([1.0, -2.0])),
               call=lambda a, b: special.logsumexp(a, b=b, return_sign=True)[0],
               name="logsumexp(b with a negative entry, return_sign)")]


def test_logsumexp_sign_with_a_negative_b():
    a, b = np.array([0.0, 1.0]), np.array([1.0, -2.0])
    sign = pb.vjp(lambda b: special.logsumexp(a, b=b, return_sign=True)[1], b)[0]
    assert sign == -1.0
