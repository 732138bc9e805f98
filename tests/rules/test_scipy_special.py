import numpy as np
import pytest
from scipy import special
from scipy.special import _ufuncs

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


def _points(*values):
    def draw(rng, shape):
        return np.array(values)

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



# near removable singularities (the Taylor series below 1e-3, the quotient above): to
# second order, at the points around 1e-3 and the singular point itself
NEAR_0 = _points(0.0, 1e-5, -9e-4, 1.1e-3, -0.3)
TERNARY = [((3,), (3,), (3,)), ((2, 1), (3,), ())]
SPECS += [
    Spec(special.expm1, UNARY),
    Spec(special.expm1, UNARY, domain="complex", name="special.expm1(complex)"),
    Spec(special.cosm1, UNARY),
    Spec(special.exprel, UNARY),
    Spec(special.exprel, [(5,)], domain=NEAR_0, name="special.exprel(near 0)"),
    Spec(special.exp2, UNARY),
    Spec(special.exp10, UNARY),
    Spec(special.cbrt, UNARY, domain="nonzero"),
    Spec(special.radian, TERNARY),
    Spec(special.sindg, UNARY, domain=_between(-400.0, 400.0)),
    Spec(special.cosdg, UNARY, domain=_between(-400.0, 400.0)),
    Spec(special.tandg, UNARY, domain=_between(-80.0, 80.0)),
    Spec(special.cotdg, UNARY, domain=_between(10.0, 170.0)),
    Spec(special.huber, BINARY, domain=("positive", "real")),
    Spec(special.pseudo_huber, BINARY, domain=("positive", "real")),
    Spec(special.boxcox, BINARY, domain=("positive", "real")),
    Spec(special.boxcox, [((5,), (5,))], domain=("positive", NEAR_0),
         name="special.boxcox(lmbda near 0)"),
    Spec(special.boxcox1p, BINARY, domain=("positive", "real")),
    Spec(special.boxcox1p, [((5,), (5,))], domain=(_between(-0.5, 2.0), NEAR_0),
         name="special.boxcox1p(lmbda near 0)"),
    Spec(special.inv_boxcox, BINARY, domain=("positive", _between(-0.3, 1.5))),
    Spec(special.inv_boxcox, [((5,), (5,))], domain=("real", NEAR_0),
         name="special.inv_boxcox(lmbda near 0)"),
    Spec(special.inv_boxcox1p, BINARY, domain=("positive", _between(-0.3, 1.5))),
    Spec(special.inv_boxcox1p, [((5,), (5,))], domain=("real", NEAR_0),
         name="special.inv_boxcox1p(lmbda near 0)"),
    Spec(special.binom, BINARY, domain=(_between(3.0, 5.0), _between(0.5, 2.5))),
    Spec(special.poch, BINARY, domain="positive"),
    Spec(special.erfi, UNARY),
    Spec(special.erfi, UNARY, domain="complex", name="special.erfi(complex)"),
    Spec(special.dawsn, UNARY),
    Spec(special.dawsn, UNARY, domain="complex", name="special.dawsn(complex)"),
    Spec(special.ndtri_exp, UNARY, domain=_between(-10.0, -0.1)),
    Spec(special.exp1, UNARY, domain="positive"),
    Spec(special.exp1, UNARY, domain=_right_half_plane, name="special.exp1(complex)"),
    Spec(special.expi, UNARY, domain="nonzero"),
    Spec(special.expn, UNARY, domain="positive", kwargs={"n": [0, 1, 3]},
         call=lambda x, n: special.expn(n, x)),
    Spec(special.spence, UNARY, domain="positive"),
    Spec(special.spence, [(5,)], domain=_points(1.0, 1 + 1e-5, 1 - 9e-4, 1 + 1.1e-3, 0.3),
         name="special.spence(near 1)"),
    Spec(special.spence, UNARY, domain=_right_half_plane, name="special.spence(complex)"),
    Spec(_ufuncs._zeta, UNARY, domain="positive", kwargs={"x": [2.0, 3.5]},
         call=lambda q, x: special.zeta(x, q), name="special.zeta"),
    Spec(special.owens_t, BINARY),
    Spec(special.ellipk, UNARY, domain=_between(-1.5, 0.9)),
    Spec(special.ellipk, [(5,)], domain=NEAR_0, name="special.ellipk(near 0)"),
    Spec(special.ellipe, UNARY, domain=_between(-1.5, 0.9)),
    Spec(special.ellipe, [(5,)], domain=NEAR_0, name="special.ellipe(near 0)"),
    Spec(special.agm, BINARY, domain="positive"),
    Spec(special.agm, [((4,), (4,))], domain=(_points(1.0, 1.0, 2.0, 0.7),
                                              _points(1.0, 1 + 1e-5, 2 - 8e-4, 0.7 * 1.0006)),
         name="special.agm(a near b)"),
    Spec(special.wofz, UNARY, domain="complex"),
    Spec(special.voigt_profile, TERNARY, domain=("real", "positive", "positive")),
    Spec(_ufuncs._lambertw, UNARY, domain="positive", call=special.lambertw,
         name="special.lambertw"),
    Spec(_ufuncs._lambertw, UNARY, domain="complex", kwargs={"k": [0, 1, -1]},
         call=special.lambertw, name="special.lambertw(complex)"),
    Spec(special.kn, UNARY, domain="positive", kwargs={"n": [0, 1, 3, -2]},
         call=lambda x, n: special.kn(n, x)),
    Spec(special.kve, UNARY, domain="positive", kwargs=BESSEL_ORDERS,
         call=lambda x, v: special.kve(v, x)),
    Spec(special.kve, UNARY, domain=_right_half_plane, kwargs={"v": [0.5]},
         call=lambda x, v: special.kve(v, x), name="special.kve(complex)"),
    Spec(special.spherical_jn, UNARY, domain="positive", kwargs={"n": [0, 1, 3]},
         call=lambda z, n: special.spherical_jn(n, z)),
    Spec(special.spherical_jn, UNARY, domain="positive", kwargs={"n": [0, 1, 3]},
         call=lambda z, n: special.spherical_jn(n, z, derivative=True),
         name="special.spherical_jn(derivative)"),
    Spec(special.spherical_yn, UNARY, domain="positive", kwargs={"n": [0, 1, 3]},
         call=lambda z, n: special.spherical_yn(n, z)),
    Spec(special.spherical_yn, UNARY, domain="positive", kwargs={"n": [0, 1, 3]},
         call=lambda z, n: special.spherical_yn(n, z, derivative=True),
         name="special.spherical_yn(derivative)"),
    # distribution functions in x (p, m) and their inverses, with constant shapes and counts
    Spec(special.stdtr, UNARY, kwargs={"df": [1.0, 3.5]},
         call=lambda t, df: special.stdtr(df, t)),
    Spec(special.fdtr, UNARY, domain="positive", kwargs={"dfn": [1.0, 3.0], "dfd": [2.0, 5.5]},
         call=lambda x, dfn, dfd: special.fdtr(dfn, dfd, x)),
    Spec(special.chdtr, UNARY, domain="positive", kwargs={"v": [1.0, 3.5]},
         call=lambda x, v: special.chdtr(v, x)),
    Spec(special.gdtr, BINARY, domain="positive", kwargs={"b": [0.5, 2.0]},
         call=lambda a, x, b: special.gdtr(a, b, x)),
    Spec(special.bdtr, UNARY, domain=_between(0.05, 0.95), kwargs={"k": [0, 2, 3.5], "n": [5]},
         call=lambda p, k, n: special.bdtr(k, n, p)),
    Spec(special.nbdtr, UNARY, domain=_between(0.05, 0.95), kwargs={"k": [0, 2], "n": [1, 4]},
         call=lambda p, k, n: special.nbdtr(k, n, p)),
    Spec(special.pdtr, UNARY, domain="positive", kwargs={"k": [0, 2]},
         call=lambda m, k: special.pdtr(k, m)),
    Spec(special.gammaincinv, UNARY, domain=_between(0.05, 0.95), kwargs={"a": [0.5, 1.0, 3.5]},
         call=lambda y, a: special.gammaincinv(a, y)),
    Spec(special.gammainccinv, UNARY, domain=_between(0.05, 0.95),
         kwargs={"a": [0.5, 1.0, 3.5]}, call=lambda y, a: special.gammainccinv(a, y)),
    Spec(special.betaincinv, UNARY, domain=_between(0.05, 0.95),
         kwargs={"a": [0.5, 2.5], "b": [0.7, 3.0]},
         call=lambda y, a, b: special.betaincinv(a, b, y)),
]


@pytest.mark.parametrize("f", [special.iv, special.ive, special.jv, special.yv, special.kv,
                               special.kve])
def test_bessel_order_has_no_derivative(f):
    # the message names the function where it lives (scipy.special's ufuncs are no np.*)
    with pytest.raises(pb.NoRuleError, match=f"scipy.special.{f.__name__} .*argument 0"):
        pb.grad(f)(0.5, 1.5)


NONDIFF = {special.gammasgn: (np.array([-2.5, -1.5, 0.5, 3.0]),),
           special.round: (np.array([-2.5, -0.4, 0.5, 3.7]),)}


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


@pytest.mark.parametrize("call,reason", [
    (lambda a: special.gammaincinv(a, 0.3), "shape parameter"),
    (lambda a: special.gammainccinv(a, 0.3), "shape parameter"),
    (lambda b: special.betaincinv(2.0, b, 0.3), "shape parameter"),
    (lambda v: special.chdtr(v, 1.5), "shape parameter"),
    (lambda b: special.gdtr(1.0, b, 1.5), "shape parameter"),
    (lambda df: special.stdtr(df, 0.3), "degrees of freedom"),
    (lambda dfd: special.fdtr(2.0, dfd, 0.3), "degrees of freedom"),
    (lambda x: special.zeta(x, 1.5), "exponent x of the Hurwitz zeta function"),
], ids=["gammaincinv", "gammainccinv", "betaincinv", "chdtr", "gdtr", "stdtr", "fdtr", "zeta"])
def test_arguments_without_a_closed_form_derivative_say_why(call, reason):
    with pytest.raises(pb.NoRuleError, match=reason):
        pb.grad(call)(2.5)


@pytest.mark.parametrize("call", [
    lambda n: special.expn(n, 1.5), lambda n: special.kn(n, 1.5),
    lambda k: special.bdtr(k, 5, 0.3), lambda k: special.pdtr(k, 1.5),
], ids=["expn", "kn", "bdtr", "pdtr"])
def test_integer_arguments_have_no_derivative(call):
    with pytest.raises(pb.NoRuleError, match="argument 0"):
        pb.grad(call)(2.0)


def test_plain_functions_are_intercepted_in_scipy_special():
    for name in ("polygamma", "multigammaln", "logsumexp", "softmax", "log_softmax",
                 "spherical_jn", "spherical_yn"):
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


# elementary derivatives (and the argument z of the hypergeometric functions)
SPECS += [
    Spec(special.log1p, UNARY, domain=_between(-0.5, 2.0)),
    Spec(special.log1p, UNARY, domain="complex", name="special.log1p(complex)"),
    Spec(special.powm1, BINARY, domain=("positive", "real")),
    Spec(special.wrightomega, UNARY),
    Spec(special.wrightomega, UNARY, domain="complex", name="special.wrightomega(complex)"),
    Spec(special.struve, UNARY, domain="positive", kwargs=BESSEL_ORDERS,
         call=lambda x, v: special.struve(v, x)),
    Spec(special.modstruve, UNARY, domain="positive", kwargs=BESSEL_ORDERS,
         call=lambda x, v: special.modstruve(v, x)),
    Spec(special.sici, UNARY, domain="nonzero"),
    Spec(special.sici, [(5,)], domain=NEAR_0, call=lambda x: special.sici(x)[0],
         name="special.sici(Si near 0)"),
    Spec(special.sici, UNARY, domain=_right_half_plane, name="special.sici(complex)"),
    Spec(special.shichi, UNARY, domain="nonzero"),
    Spec(special.shichi, [(5,)], domain=NEAR_0, call=lambda x: special.shichi(x)[0],
         name="special.shichi(Shi near 0)"),
    Spec(special.fresnel, UNARY),
    Spec(special.fresnel, UNARY, domain="complex", name="special.fresnel(complex)"),
    Spec(special.airy, UNARY),
    Spec(special.airy, UNARY, domain="complex", name="special.airy(complex)"),
    Spec(special.hyp1f1, UNARY, kwargs={"a": [0.5, 2.0], "b": [1.5, 3.0]},
         call=lambda z, a, b: special.hyp1f1(a, b, z)),
    Spec(special.hyp2f1, UNARY, domain=_between(-0.6, 0.6),
         kwargs={"a": [0.5, 2.0], "b": [1.0], "c": [1.5, 3.0]},
         call=lambda z, a, b, c: special.hyp2f1(a, b, c, z)),
    Spec(special.ellipkinc, UNARY, domain=_between(-1.5, 1.5), kwargs={"m": [-0.5, 0.3, 0.9]},
         call=lambda phi, m: special.ellipkinc(phi, m)),
    Spec(special.ellipeinc, UNARY, domain=_between(-1.5, 1.5), kwargs={"m": [-0.5, 0.3, 0.9]},
         call=lambda phi, m: special.ellipeinc(phi, m)),
    Spec(special.ellipj, UNARY, kwargs={"m": [0.0, 0.3, 0.9]},
         call=lambda u, m: special.ellipj(u, m)),
]


@pytest.mark.parametrize("call,reason", [
    (lambda a: special.hyp1f1(a, 2.0, 0.3), "parameter a, b or c of a hypergeometric"),
    (lambda b: special.hyp2f1(1.0, b, 3.0, 0.3), "parameter a, b or c of a hypergeometric"),
    (lambda m: special.ellipkinc(0.7, m), "parameter m of an incomplete elliptic"),
    (lambda m: special.ellipeinc(0.7, m), "parameter m of an incomplete elliptic"),
    (lambda m: special.ellipj(0.7, m)[0], "parameter m of an incomplete elliptic"),
    (lambda v: special.struve(v, 1.5), "argument 0"),
], ids=["hyp1f1", "hyp2f1", "ellipkinc", "ellipeinc", "ellipj", "struve"])
def test_parameters_without_a_rule_say_so(call, reason):
    with pytest.raises(pb.NoRuleError, match=reason):
        pb.grad(call)(0.5)


def test_si_alone_has_a_finite_gradient_where_ci_is_infinite():
    # Ci(0) = -inf and Ci'(0) = 1/0: a loss of Si alone takes no term from Ci
    x = np.array([0.0, 1.0])
    pb.check_grads(lambda x: np.sum(special.sici(x)[0]), x, order=1)
    pb.check_grads(lambda x: np.sum(special.shichi(x)[0] * x), x, order=1)
    assert np.all(np.isfinite(pb.grad(lambda x: np.sum(special.sici(x)[0]))(x)))
