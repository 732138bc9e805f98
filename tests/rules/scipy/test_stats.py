import numpy as np
import pytest
import scipy.stats as st

import pullback as pb
from pullback.rules.scipy import stats as scipy_stats  # noqa: F401  (scipy.stats's rules)
from pullback.rules.scipy import stats_quantiles as scipy_stats_quantiles  # noqa: F401

from ..spec import Spec


def _near0(rng, shape):
    return rng.uniform(-0.3, 0.3, shape)


def _tail(rng, shape):
    return rng.choice([-1.0, 1.0], shape) * rng.uniform(8.0, 30.0, shape)


def _frac(rng, shape):
    return rng.uniform(0.1, 0.9, shape)


def _df(rng, shape):
    return rng.uniform(2.5, 6.0, shape)


def _simplex_head(rng, shape):
    """The first k - 1 components of points on the simplex, components along axis 0."""
    points = rng.dirichlet(np.full(shape[0] + 1, 5.0), size=shape[1:])  # away from the edges
    return np.moveaxis(points, -1, 0)[:-1]


def _shapes(n):
    """Argument shapes for n arguments: all 0-d, all (3,), and broadcasting against (2, 3)."""
    spread = [(3,), (2, 1), (), (1, 3)]
    return [((),) * n, ((3,),) * n, ((2, 3),) + tuple(spread[i % 4] for i in range(n - 1))]


def _prim(method):
    return scipy_stats.primitive_of(method)


METHODS = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]

# name, variate domain, shape parameters (domain, a constant for the cdf rows)
FAMILIES = [
    ("norm", "real", []),
    ("t", "real", [(_df, 3.5)]),
    ("gamma", "gt1", [("gt1", 2.5)]),
    ("beta", _frac, [("gt1", 2.5), ("positive", 0.8)]),
    ("expon", "gt1", []),
    ("laplace", "nonzero", []),
    ("logistic", "real", []),
    ("cauchy", "real", []),
    ("chi2", "gt1", [(_df, 3.5)]),
    ("uniform", _frac, []),
    ("halfnorm", "gt1", []),
    ("weibull_min", "gt1", [("gt1", 1.5)]),
    ("invgamma", "gt1", [("gt1", 2.5)]),
    ("lognorm", "gt1", [("positive", 0.7)]),
]
# the families whose cdf has a closed-form derivative in its shape parameter
CDF_SHAPES = {"weibull_min", "lognorm"}


def _loc_scale(name):
    """The domains of loc and scale: beta and uniform live on (0, 1), so keep their loc
    and scale close to 0 and 1."""
    if name in ("beta", "uniform"):
        return lambda rng, s: rng.uniform(-0.05, 0.05, s), lambda rng, s: rng.uniform(1.0, 1.2, s)
    return _near0, "positive"


def _family_specs(name, variate, shape_params):
    dist = getattr(st, name)
    loc, scale = _loc_scale(name)
    specs = []
    for method in METHODS:
        func = getattr(dist, method)
        if method in ("logpdf", "pdf") or not shape_params or name in CDF_SHAPES:
            domains = (variate, *[d for d, _ in shape_params], loc, scale)
            specs.append(Spec(_prim(func), _shapes(len(domains)), domain=domains, call=func))
        else:  # no derivative with respect to the shape parameters
            consts = [c for _, c in shape_params]
            specs.append(Spec(
                _prim(func), _shapes(3), domain=(variate, loc, scale),
                call=lambda x, lo, sc, func=func, consts=consts: func(x, *consts, lo, sc)))
    return specs


def _keywords(name, variate, shape_params):
    dist = getattr(st, name)
    keys = [s.strip() for s in dist.shapes.split(",")] if dist.shapes else []
    domains = (variate, *[d for d, _ in shape_params], _near0, "positive")

    def call(x, *params):
        kw = dict(zip(keys + ["loc", "scale"], params))
        return dist.logpdf(x=x, **kw)

    return Spec(_prim(dist.logpdf), [((3,),) * len(domains)], domain=domains, call=call,
                name=f"scipy.stats.{name}.logpdf(keywords)")


K = np.array([0.0, 1.0, 3.0, 2.0])


def _simplex_full(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def _spd(c):
    """A symmetric positive definite covariance made from any square matrix."""
    return c @ np.swapaxes(c, -1, -2) + np.eye(np.shape(c)[-1])


MVN = st.multivariate_normal
_COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])

SPECS = [
    *[s for fam in FAMILIES for s in _family_specs(*fam)],
    # far in the tails, where sf and cdf underflow in one direction
    *[Spec(_prim(getattr(st.norm, m)), [((3,), (), ())], domain=(_tail, _near0, "positive"),
           call=getattr(st.norm, m), name=f"scipy.stats.norm.{m}(tails)")
      for m in ("logsf", "logcdf")],
    *[_keywords(*fam) for fam in FAMILIES if fam[0] in ("norm", "gamma", "beta")],
    *[Spec(_prim(getattr(st.poisson, m)), [(4,), (2, 4)], domain="positive",
           call=lambda mu, m=m: getattr(st.poisson, m)(K, mu))
      for m in ("logpmf", "pmf", "cdf", "logcdf")],
    Spec(_prim(st.poisson.logpmf), [((4,), ())], domain=("positive", "real"),
         call=lambda mu, shift: st.poisson.logpmf(K + 1, mu=mu * np.exp(shift), loc=1),
         name="scipy.stats.poisson.logpmf(keywords)"),
    *[Spec(_prim(method), [((2,), (3,)), ((2, 4), (3,))], domain=(_simplex_head, "positive"),
           call=method) for method in (st.dirichlet.logpdf, st.dirichlet.pdf)],
    Spec(_prim(st.dirichlet.logpdf), [((3,), (3,)), ((3, 2), (3,))],
         domain=(_simplex_full, "positive"),
         call=lambda y, alpha: st.dirichlet.logpdf(y / np.sum(y, axis=0), alpha),
         name="scipy.stats.dirichlet.logpdf(all components)"),
    *[Spec(_prim(method), [((4, 3), (3,), (3, 3)), ((3,), (3,), (3, 3)), ((2, 1, 3), (3,), (3, 3))],
           call=lambda x, mean, c, method=method: method(x, mean, _spd(c)))
      for method in (MVN.logpdf, MVN.pdf)],
    Spec(_prim(MVN.logpdf), [((2, 3), (3,), (3, 3))],
         call=lambda x, mean, c: MVN.logpdf(x, mean=mean, cov=_spd(c)),
         name="scipy.stats.multivariate_normal.logpdf(keywords)"),
    Spec(_prim(MVN.pdf), [((4, 2), (2,), (2,)), ((2,), (), ())],
         domain=("real", "real", "positive"), call=MVN.pdf,
         name="scipy.stats.multivariate_normal.pdf(diagonal or scalar cov)"),
    Spec(_prim(MVN.logpdf), [((5,), ()), ((), ())], domain=("real", "positive"),
         call=lambda x, c: MVN.logpdf(x, None, c),
         name="scipy.stats.multivariate_normal.logpdf(1-d)"),
    # a singular cov A A^T (A tall and thin) and points in its support, mean + A z: the
    # directions keep the rank, and the points stay in the support
    *[Spec(_prim(method), [((4, 2), (4,), (3, 2)), ((3, 1), (3,), (2, 1)), ((3, 2), (3,), (2,))],
           call=lambda a, mean, z, method=method: method(
               mean + z @ a.T, mean, a @ a.T, allow_singular=True),
           name=f"scipy.stats.multivariate_normal.{method.__name__}(singular cov)")
      for method in (MVN.logpdf, MVN.pdf)],
    Spec(_prim(MVN.logpdf), [((3, 3), (3,), (2, 3))], name="scipy.stats.multivariate_normal.logpdf("
         "allow_singular, regular cov)",
         call=lambda c, mean, x: MVN.logpdf(x, mean, _spd(c), allow_singular=True)),
    # the matrix itself, each entry moved alone: SciPy reads its lower triangle
    *[Spec(_prim(method), [((4, 3), (3,), (3, 3))], name=f"scipy.stats.multivariate_normal."
           f"{method.__name__}(the covariance's entries)",
           call=lambda x, mean, c, method=method: method(x, mean, _COV + 0.1 * c))
      for method in (MVN.logpdf, MVN.pdf)],
    Spec(_prim(MVN.entropy), [((3, 3),)], call=lambda c: MVN.entropy(None, _COV + 0.1 * c),
         name="scipy.stats.multivariate_normal.entropy(the covariance's entries)"),
    Spec(_prim(MVN.entropy), [((3,), (3, 3)), ((1,), (1, 1))],
         call=lambda mean, c: MVN.entropy(mean, _spd(c))),
    Spec(_prim(MVN.entropy), [(4, 2), (3, 1), (3, 3)], call=lambda a: MVN.entropy(None, a @ a.T),
         name="scipy.stats.multivariate_normal.entropy(A A^T, singular where A is thin)"),
    Spec(_prim(MVN.entropy), [((3,), ()), ((2,), (2,))], domain=("real", "positive"),
         call=MVN.entropy,
         name="scipy.stats.multivariate_normal.entropy(scalar or diagonal cov)"),
]




@pytest.mark.parametrize("name", ["t", "gamma", "beta", "chi2", "invgamma"])
def test_cdf_shape_parameters_have_no_rule(name):
    dist = getattr(st, name)
    shapes = [2.5] * dist.numargs
    for method in (dist.cdf, dist.logcdf, dist.sf, dist.logsf):
        with pytest.raises(pb.NoRuleError, match="not differentiable with respect to argument 1"):
            pb.grad(lambda a, method=method: method(0.5, a, *shapes[1:]))(2.5)


def test_poisson_variate_has_no_rule():
    with pytest.raises(pb.NoRuleError, match="argument 0"):
        pb.grad(lambda k: st.poisson.logpmf(k, 2.0))(3.0)


def test_outside_the_support_the_derivative_is_zero():
    for dist, args, x in [(st.gamma, (2.0,), [-1.0, 0.5, 2.0]), (st.expon, (), [-1.0, 0.5, 2.0]),
                          (st.beta, (2.0, 3.0), [-1.0, 0.5, 1.5]),
                          (st.halfnorm, (), [-1.0, 0.5, 2.0]),
                          (st.weibull_min, (1.5,), [-1.0, 0.5, 2.0]),
                          (st.invgamma, (2.0,), [-1.0, 0.5, 2.0]),
                          (st.lognorm, (0.7,), [-1.0, 0.5, 2.0])]:
        inside = (np.array(x) > 0) & (np.array(x) < (1 if dist is st.beta else np.inf))
        for method in (dist.pdf, dist.logpdf, dist.cdf, dist.logcdf, dist.sf, dist.logsf):
            def f(x, loc, method=method, args=args):
                return method(x, *args, loc)

            # the variate's and loc's cotangents: zero outside, finite everywhere
            cts = pb.vjp(f, np.array(x), np.zeros(3))[1](np.ones(3))
            assert np.all(np.isfinite(cts[0])) and np.all(np.isfinite(cts[1]))
            assert np.all((cts[0] != 0) == inside), (dist.name, method.__name__)
            assert np.all((cts[1] != 0) == inside), (dist.name, method.__name__)


def test_methods_keep_scipy_signatures():
    assert st.gamma.logpdf(1.5, 2.0, scale=2.0) == pytest.approx(
        st.gamma.logpdf(1.5, a=2.0, loc=0.0, scale=2.0))
    with pytest.raises(TypeError):
        st.gamma.logpdf(1.5)


def test_singular_logpdf_outside_the_support_has_zero_gradient():
    a = np.array([[1.0, 0.0], [0.5, 1.0], [0.0, 2.0]])
    x = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5]])  # the first is outside, the second in
    out, pullback = pb.vjp(lambda mean: MVN.logpdf(x, mean, a @ a.T, allow_singular=True),
                           np.zeros(3))
    assert out[0] == -np.inf and np.isfinite(out[1])
    (ct,) = pullback(np.array([1.0, 0.0]))
    np.testing.assert_array_equal(ct, np.zeros(3))
    (ct,) = pullback(np.array([0.0, 1.0]))
    assert np.all(np.isfinite(ct)) and np.any(ct != 0)


@pytest.mark.parametrize("f", [
    lambda m: st.norm(loc=m, scale=2.0).logpdf(0.3) + st.norm(m).cdf(0.1),
    lambda m: st.norm(loc=m).ppf(0.3) + st.norm(m, np.exp(m)).isf(0.6),
    lambda m: st.gamma(2.0, scale=np.exp(m)).logpdf(1.5) + st.gamma(2.0, m).sf(1.0),
    lambda m: np.sum(st.t(df=3.0, loc=m).logcdf(np.array([0.1, 0.9]))),
    lambda m: st.poisson(np.exp(m)).logpmf(3) + st.norm(m, np.exp(m)).entropy(),
])
def test_a_frozen_distribution_differentiates_as_the_module_ones(f):
    # norm(loc=m) holds an instance of its own: its methods call scipy.stats.norm's
    np.testing.assert_allclose(pb.value_and_grad(f)(0.5)[0], f(0.5), rtol=1e-12)
    pb.check_grads(f, 0.5, order=2)
