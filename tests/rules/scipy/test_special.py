import numpy as np
import pytest
from scipy import special
from scipy.special import _ufuncs

import pullback as pb
from tests.conftest import central_differences

from ..spec import Spec

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

SPECS = [
    Spec(special.gamma, UNARY, domain="positive"),
    Spec(special.gamma, UNARY, domain=_right_half_plane, name="special.gamma(complex)"),
    Spec(special.gammaln, UNARY, domain="positive"),
    Spec(special.gammaln, UNARY, domain=_between(-2.9, -2.1), name="special.gammaln(negative)"),
    Spec(special.loggamma, UNARY, domain="positive"),
    Spec(special.loggamma, UNARY, domain=_right_half_plane, name="special.loggamma(complex)"),
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
    # far in the tails, x = s t scaled to order 1: exp(-x^2/2 - log_ndtr(x)) is a difference
    # of two numbers near x^2/2 there, and erfcx'(x) one of two near 2 / sqrt(pi)
    *[Spec(special.log_ndtr, [(3,)], domain=_between(lo, hi), kwargs={"s": [s]},
           call=lambda t, s: special.log_ndtr(s * t) / (s * s), name="special.log_ndtr(far)")
      for s, lo, hi in ((1e3, -2.0, -0.5), (1e8, -2.0, -0.5), (1e150, -2.0, -0.5))],
    *[Spec(special.erfcx, [(3,)], domain=_between(lo, hi), kwargs={"s": [s]},
           call=lambda t, s: s * special.erfcx(s * t), name="special.erfcx(far)")
      for s, lo, hi in ((40.0, 0.5, 2.0), (1e8, 0.5, 2.0), (1e150, 0.5, 2.0))],
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
    # far out, where the derivatives' two terms cancel (and SciPy's ive(2, x) is NaN past
    # 1e10): x = s t, scaled so that value and derivative in t are of order 1
    *[Spec(f, [(4,)], domain=_between(lo, hi), kwargs={"s": [s]},
           call=lambda t, s, f=f: s ** 0.75 * f(s * t), name=f"special.{f.__name__}(far)")
      for f in (special.i0e, special.i1e)
      for s, lo, hi in ((40.0, 0.5, 2.0), (40.0, -2.0, -0.5), (1e12, 1.0, 2.0),
                        (1e12, -2.0, -1.0))],
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
    # sigma = 0, SciPy's Lorentz profile (a negative sigma is outside the domain: sigma's own
    # derivative there is test_voigt_profile_at_sigma_zero's)
    *[Spec(special.voigt_profile, BINARY, domain=("real", "positive"), kwargs={"sigma": [zero]},
           call=lambda x, gamma, sigma: special.voigt_profile(x, sigma, gamma),
           name=f"special.voigt_profile(sigma={zero!r})") for zero in (0.0, np.zeros(3))],
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
    rules = pb.registered_rules()
    for name in ("polygamma", "multigammaln", "logsumexp", "softmax", "log_softmax",
                 "spherical_jn", "spherical_yn"):
        assert getattr(special, name) in rules, name
    assert special.sinc == np.sinc  # (NumPy's own, or its stand-in while a param lives)
    np.testing.assert_allclose(pb.grad(special.sinc)(0.5), -4 / np.pi)


def test_softmax_and_logsumexp_of_a_scalar():
    assert pb.grad(special.softmax)(0.7) == 0.0
    assert pb.grad(special.log_softmax)(0.7) == 0.0
    assert pb.grad(special.logsumexp)(0.7) == 1.0


SPECS += [Spec(special.logsumexp, [((2,), (2,))],
               domain=(lambda rng, s: np.array([0.0, 1.0]), lambda rng, s: np.array([1.0, -2.0])),
               call=lambda a, b: special.logsumexp(a, b=b, return_sign=True)[0],
               name="logsumexp(b with a negative entry, return_sign)")]


# (tests of their own, not spec rows: Dask and CuPy do not run these SciPy functions)
_Z = np.array([[1.2 + 0.3j, 0.6 - 0.8j, 0.9 + 0.5j], [-0.4 + 1.1j, 0.2 - 0.1j, 1.5 - 0.7j]])
_B = np.array([[0.5 - 0.2j, 1.0 + 0.4j, -0.3 + 0.9j], [0.8 + 0.1j, -1.2 - 0.5j, 0.6 + 0.6j]])


@pytest.mark.parametrize("axis", [None, -1])
@pytest.mark.parametrize("f", [
    special.logsumexp, special.softmax, special.log_softmax,
    lambda z, axis: special.logsumexp(z, axis=axis, b=_B),
    lambda z, axis: special.logsumexp(_Z, axis=axis, b=z),
    lambda z, axis: special.logsumexp(z, axis=axis, b=_B, return_sign=True),
    lambda z, axis: special.logsumexp(z[::-1], axis=axis, b=z, return_sign=True),
], ids=["logsumexp", "softmax", "log_softmax", "logsumexp(b)", "logsumexp(tracked b)",
        "logsumexp(return_sign)", "logsumexp(tracked b, return_sign)"])
def test_complex_input_has_the_conjugated_holomorphic_derivative(f, axis):
    # d/dz of log sum e^z and of softmax, conjugated (ChainRules); return_sign's (log|s|,
    # s / |s|) moves with the phase of s too: checked against finite differences in the
    # real and the imaginary directions, to second order
    pb.check_grads(lambda z: f(z, axis=axis), _Z, order=2)


def test_digamma_of_complex_input_has_a_derivative():
    # SciPy's polygamma is real-only: digamma's complex derivatives are pullback's own
    # series, checked against finite differences of SciPy's complex digamma (and of gamma
    # and loggamma, whose second derivatives they are)
    z = np.array([1.2 + 0.3j, 0.6 - 0.8j, -2.5 + 0.5j, -7.3 - 2j, 25 + 1j, 0.05 + 0.1j])

    def f(z):
        return np.sum(np.abs(special.digamma(z)))

    np.testing.assert_allclose(pb.grad(f)(z), central_differences(f, z), rtol=1e-6)
    for g in (special.digamma, special.loggamma, special.gamma):
        pb.check_grads(g, z[:3], order=2)
    pb.check_grads(special.digamma, z, order=2, rtol=1e-5)


def test_logsumexp_entries_that_b_leaves_out_get_zero_gradient():
    # b as a 0/1 mask: a left-out score far above the others (e^(a - L) overflows) has
    # derivative b e^(a - L) = 0, as finite differences give, also at second order
    a, mask = np.array([800.0, 1.0, 2.0]), np.array([0.0, 1.0, 1.0])

    def f(a):
        return special.logsumexp(a, b=mask) ** 2

    got = pb.grad(f)(a)
    assert got[0] == 0.0
    np.testing.assert_allclose(got, central_differences(f, a), rtol=1e-6)
    hessian = pb.hessian(f)(a)
    assert np.all(hessian[0] == 0) and np.all(hessian[:, 0] == 0)
    pb.check_grads(f, a, order=2)
    # a tracked b keeps its own derivative e^(a - L), infinite for the left-out entry
    gb = pb.grad(lambda b: special.logsumexp(a, b=b), losscheck=False)(mask)
    assert gb[0] == np.inf and np.all(np.isfinite(gb[1:]))


def test_voigt_profile_at_sigma_zero():
    # the profile is even in sigma: dV/dsigma = 0 at 0, and d2V/dsigma2 = L_xx there (the
    # heat equation), checked against one-sided differences of the function itself
    x, gamma, h = np.array([0.0, 0.5, 2.0]), 0.7, 1e-4

    def f(sigma):
        return special.voigt_profile(x, sigma, gamma)

    first = pb.jacobian(f)(0.0)
    np.testing.assert_array_equal(first, np.zeros(3))
    second = pb.jacobian(pb.jacobian(f))(0.0)
    one_sided = (f(2 * h) - 2 * f(h) + f(0.0)) / (h * h)
    np.testing.assert_allclose(second, one_sided, rtol=1e-4)


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
