"""scipy.stats' generic distribution methods (rules/scipy/stats_generic.py): one table of
every family of SciPy's own test parameters (``scipy.stats._distr_params``) whose methods
differentiate, one generic spec row per family and method, and the families that do not,
each with the reason."""

import numpy as np
import pytest
import scipy.stats as st
from scipy.stats._distr_params import distcont, distdiscrete

import pullback as pb
from pullback.rules.scipy.stats import FAMILIES as OWN_RULES
from pullback.rules.scipy.stats_generic import DISCRETE_QUANTILES, GENERIC, discrete_variate

from ..spec import Args, Spec

PARAMS = {name: params for name, params in distcont + distdiscrete
          if isinstance(name, str) and all(np.ndim(p) == 0 for p in params)}
DISCRETE_NAMES = {name for name, _ in distdiscrete}
# the families with rules of their own (scipy/stats.py): their methods are not the generic ones
OWN = {fam.dist.name for fam in OWN_RULES} | {"poisson"}

# the families whose log-density (log-mass) differentiates in the variate, the shape
# parameters whose test value is not an integer, loc and scale (bench/sweep_stats.py)
DENSITY = {
    "alpha", "anglit", "arcsine", "argus", "bernoulli", "beta", "betabinom", "betanbinom",
    "betaprime", "binom", "boltzmann", "bradford", "burr", "burr12", "cauchy", "chi", "chi2",
    "cosine", "crystalball", "dgamma", "dlaplace", "dpareto_lognorm", "dweibull", "erlang",
    "expon", "exponnorm", "exponpow", "exponweib", "f", "fatiguelife", "fisk", "foldcauchy",
    "foldnorm", "gamma", "genexpon", "genextreme", "gengamma", "genhalflogistic", "genlogistic",
    "gennorm", "genpareto", "geom", "gibrat", "gompertz", "gumbel_l", "gumbel_r", "halfcauchy",
    "halfgennorm", "halflogistic", "halfnorm", "hypergeom", "hypsecant", "invgamma", "invgauss",
    "invweibull", "jf_skew_t", "johnsonsb", "johnsonsu", "kappa3", "kappa4", "laplace",
    "laplace_asymmetric", "levy", "levy_l", "loggamma", "logistic", "loglaplace", "lognorm",
    "logser", "loguniform", "lomax", "maxwell", "mielke", "moyal", "nakagami", "nbinom", "ncx2",
    "nhypergeom", "norm", "norminvgauss", "pareto", "pearson3", "planck", "poisson", "powerlaw",
    "powerlognorm", "powernorm", "randint", "rayleigh", "rdist", "recipinvgauss", "reciprocal",
    "rel_breitwigner", "rice", "semicircular", "skellam", "skewcauchy", "skewnorm", "t",
    "trapezoid", "triang", "truncexpon", "truncnorm", "truncpareto", "truncweibull_min", "uniform",
    "vonmises", "vonmises_line", "wald", "weibull_max", "weibull_min", "wrapcauchy", "yulesimon",
}
CDF = {
    "alpha", "anglit", "arcsine", "argus", "bernoulli", "betaprime", "binom", "boltzmann",
    "bradford", "burr", "burr12", "cauchy", "chi", "chi2", "crystalball", "dlaplace",
    "dpareto_lognorm", "dweibull", "erlang", "expon", "exponnorm", "exponpow", "exponweib", "f",
    "fatiguelife", "fisk", "foldcauchy", "foldnorm", "genexpon", "genextreme", "genhalflogistic",
    "genlogistic", "genpareto", "geom", "gibrat", "gompertz", "gumbel_l", "gumbel_r", "halfcauchy",
    "halflogistic", "halfnorm", "hypergeom", "hypsecant", "invgauss", "invweibull", "jf_skew_t",
    "johnsonsb", "johnsonsu", "kappa3", "kappa4", "laplace", "laplace_asymmetric", "levy",
    "levy_l", "logistic", "loglaplace", "lognorm", "loguniform", "lomax", "maxwell", "mielke",
    "moyal", "nhypergeom", "norm", "pareto", "planck", "poisson", "powerlaw", "powerlognorm",
    "powernorm", "randint", "rayleigh", "recipinvgauss", "reciprocal", "rel_breitwigner",
    "semicircular", "skellam", "skewcauchy", "trapezoid", "triang", "truncexpon", "truncnorm",
    "truncpareto", "truncweibull_min", "uniform", "wald", "weibull_max", "weibull_min",
    "wrapcauchy", "yulesimon",
}
# the others, and why: a compiled function without a rule (refused by name), or a Python
# loop over floats (float() refused), or code NumPy's own machinery rejects
REFUSED = {
    "gausshyper": "hyp2f1's derivative in its parameters has no closed form",
    "genhyperbolic": "integrates its density with quad: float() of a tracked value",
    "geninvgauss": "integrates its density with quad: float() of a tracked value",
    "irwinhall": "its pdf is a compiled B-spline (BSpline), which needs plain arrays",
    "ksone": "_smirnovp, compiled, has no rule",
    "kstwo": "its pdf writes through np.nditer into plain arrays",
    "kstwobign": "_kolmogp, compiled, has no rule",
    "landau": "_landau_pdf, compiled, has no rule",
    "levy_stable": "integrates its density with quad: float() of a tracked value",
    "ncf": "_ncf_pdf, compiled, has no rule",
    "nchypergeom_fisher": "a Python loop over int(n) of its parameters",
    "nchypergeom_wallenius": "a Python loop over int(n) of its parameters",
    "nct": "_nct_pdf, compiled, has no rule",
    "studentized_range": "integrates with np.frompyfunc over object arrays",
    "tukeylambda": "tklmbda's derivative in its shape lambda has no closed form",
    "zipf": "the Hurwitz zeta function's derivative in its exponent has no closed form",
    "zipfian": "_normalized_gen_harmonic, compiled, has no rule",
}

# methods of the families above that do not differentiate, and why
METHODS_REFUSED = {
    ("ncx2", "pdf"): "_ncx2_pdf, compiled, has no rule (logpdf differentiates)",
    **{("dpareto_lognorm", m): "_log1mexp, compiled, has no rule" for m in ("sf", "logsf")},
    # SciPy's generic logcdf and logsf switch tails at the median, ppf(0.5), which these
    # families find by root finding on plain floats
    **{(name, m): "the median, by SciPy's root finder" for m in ("logcdf", "logsf")
       for name in ("exponnorm", "foldcauchy", "foldnorm", "recipinvgauss", "rel_breitwigner")},
}


def _near(value):
    return lambda rng, s: value * rng.uniform(0.97, 1.03, s)


def _variate(dist, params):
    return lambda rng, s: dist.ppf(rng.uniform(0.25, 0.75, s), *params)


def _row(name, method, order, why=""):
    """A spec row for ``scipy.stats.<name>.<method>`` in every argument it differentiates:
    the variate (continuous), the non-integer shape parameters, loc and scale (continuous);
    the others held at SciPy's test values."""
    dist, params = getattr(st, name), PARAMS[name]
    discrete = name in DISCRETE_NAMES
    free = [float(p) != int(p) for p in params]
    domains = [_near(p) for p, f in zip(params, free) if f]
    if not discrete:
        domains = [_variate(dist, params), *domains, lambda rng, s: rng.uniform(-0.02, 0.02, s),
                   _near(1.0)]
    k = dist.ppf(np.array([0.3, 0.5, 0.7]), *params) if discrete else None

    def call(*xs):
        xs = list(xs)
        x = k if discrete else xs.pop(0)
        shapes = [xs.pop(0) if f else p for p, f in zip(params, free)]
        return getattr(dist, method)(x, *shapes, *xs)

    cls = st.rv_discrete if discrete else st.rv_continuous
    shapes = [((3,), *[()] * (len(domains) - 1))] if not discrete else [((),) * len(domains)]
    return Spec(GENERIC[cls, method], shapes, domain=tuple(domains), call=call, order=order,
                why=why, rtol=1e-5, batched=False, name=f"scipy.stats.{name}.{method}")


def _rows():
    rows = []
    for name in sorted(DENSITY - OWN):
        discrete = name in DISCRETE_NAMES
        if discrete and not any(float(p) != int(p) for p in PARAMS[name]):
            continue  # no parameter to differentiate (all counts)
        rows.append(_row(name, "logpmf" if discrete else "logpdf", 2))
        methods = ["pmf" if discrete else "pdf"]
        if name in CDF:
            methods += ["cdf", "sf", "logcdf", "logsf"]
        rows += [_row(name, m, 1, "order 2: the logpdf rows") for m in methods
                 if (name, m) not in METHODS_REFUSED]
    return rows


# the continuous families with quantile functions of their own, checked by the ppf rows
QUANTILES = ["alpha", "burr12", "cauchy", "genextreme", "genpareto", "gompertz", "gumbel_l",
             "pareto", "powerlaw", "skewcauchy", "truncexpon", "weibull_max"]


def _quantile_rows():
    """ppf and isf of the families with quantile functions of their own that are NumPy
    code (SciPy's generic ones find the root on plain floats: the separate test)."""
    rows = [_row(name, m, 1, "order 2: the logpdf rows") for name in QUANTILES
            for m in ("ppf", "isf")]
    for row in rows:  # q in (0.2, 0.8)
        row.domain = (lambda rng, s: rng.uniform(0.2, 0.8, s), *row.domain[1:])
    return rows


NONDIFF = [(q, Args((st.binom, np.array([0.2, 0.7]), 10, 0.3))) for q in DISCRETE_QUANTILES]


def test_every_family_is_in_the_table_or_refused_with_a_reason():
    assert DENSITY.isdisjoint(REFUSED)
    assert set(PARAMS) == DENSITY | set(REFUSED)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_refused_family_says_so(name):
    spec = _row(name, "logpmf" if name in DISCRETE_NAMES else "logpdf", 1)
    with pytest.raises((pb.NoRuleError, TypeError, ValueError)):
        spec.cases().__next__().check()


@pytest.mark.parametrize("key", sorted(METHODS_REFUSED))
def test_a_refused_method_says_so(key):
    name, method = key
    spec = _row(name, method, 1)
    with pytest.raises((pb.NoRuleError, TypeError, ValueError), match="tracked value"):
        spec.cases().__next__().check()


def test_the_quantile_by_root_finding_is_refused_by_name():
    assert st.gausshyper._ppf.__func__ is st.rv_continuous._ppf
    with pytest.raises(pb.NoRuleError, match=r"gausshyper.ppf .*root finder"):
        pb.grad(lambda q: st.gausshyper.ppf(q, 1.5, 2.5, 0.5, 0.5))(0.3)


def test_a_discrete_variate_or_loc_is_refused():
    # (geom's private methods use k as it is; binom's round it down first: a derivative 0)
    for f in (lambda k: st.geom.logpmf(k, 0.3), lambda loc: st.geom.logpmf(3, 0.4, loc)):
        with pytest.raises(pb.NoRuleError, match="discrete scipy.stats distribution"):
            pb.grad(f)(2.0)


def test_a_discrete_quantile_is_a_constant():
    assert pb.grad(lambda p: st.binom.ppf(0.3, 10, p) * p)(0.4) == st.binom.ppf(0.3, 10, 0.4)


@pytest.mark.parametrize("f", [
    lambda a: st.gennorm(a, loc=0.2).logpdf(np.array([0.1, 1.5])).sum(),
    lambda a: st.skewnorm(a).logpdf(0.3) + st.genpareto(a, scale=np.exp(a)).ppf(0.6),
    lambda p: st.binom(10, p).logpmf(3) + st.betabinom(8, p, 2.0).sf(4),
    lambda c: st.genextreme(c).logsf(0.5) + st.genextreme(c, loc=c).isf(0.2),
])
def test_a_frozen_distribution_differentiates(f):
    np.testing.assert_allclose(pb.value_and_grad(f)(0.4)[0], f(0.4), rtol=1e-12)
    pb.check_grads(f, 0.4, order=2)


def test_outside_the_support_the_value_is_scipys_and_the_derivative_zero():
    x = np.array([-1.0, 0.5, 2.0, np.nan])
    for method in ("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"):
        def f(x, c, loc, method=method):
            return getattr(st.genpareto, method)(x, c, loc)

        out, pullback = pb.vjp(f, x, -0.4, np.zeros(4))
        np.testing.assert_array_equal(out, f(x, -0.4, np.zeros(4)))
        ct_x, ct_c, ct_loc = pullback(np.array([1.0, 1.0, 1.0, 0.0]))
        # genpareto with c = -0.4 lives on [0, 2.5]: -1 is below it, 0.5 and 2 inside
        assert ct_x[0] == 0 and ct_loc[0] == 0 and np.all(ct_x[1:3] != 0), method
        assert np.isfinite(ct_c)


def test_invalid_parameters_give_scipys_nan_and_no_gradient():
    out, pullback = pb.vjp(lambda a: st.gennorm.logpdf(0.3, a), np.array([-1.0, 1.5]))
    np.testing.assert_array_equal(out, st.gennorm.logpdf(0.3, np.array([-1.0, 1.5])))
    (ct,) = pullback(np.array([0.0, 1.0]))
    assert ct[0] == 0 and np.isfinite(ct[1])


# discrete_variate carries k and loc of a discrete family into its private methods: its
# rule refuses their derivative (test_a_discrete_variate_or_loc_is_refused); the row
# checks that it leaves the value and the derivatives in the shape parameters alone
SPECS = _rows() + _quantile_rows() + [
    Spec(discrete_variate, [(), (3,)], domain=_near(0.3),
         call=lambda p: discrete_variate(np.array(2.0)) * st.binom.logpmf(3, 10, p),
         name="discrete_variate(k) with binom.logpmf"),
]
