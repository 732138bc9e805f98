"""scipy.special's complements and inverses of the distribution functions, nctdtr, the
noncentral chi-square and F distributions, the Kolmogorov-Smirnov functions, k0e and k1e
(rules/scipy/special_distributions.py), and ellipkm1 (rules/scipy/special_elliptic.py)."""

import numpy as np
import pytest
import scipy.stats as st
from scipy import special
from scipy.special import _ufuncs

import pullback as pb

from ..spec import UNARY, Spec


def _between(lo, hi):
    def draw(rng, shape):
        return rng.uniform(lo, hi, shape)

    return draw


PROB = _between(0.1, 0.9)
POS = _between(0.5, 3.0)
ONCE = "its derivative is compiled code without a rule"

SPECS = [
    # complements: in x (p, m), the shapes and degrees of freedom held
    Spec(special.betaincc, UNARY, domain=PROB, kwargs={"a": [0.7, 2.5], "b": [1.5]},
         call=lambda x, a, b: special.betaincc(a, b, x)),
    Spec(special.chdtrc, UNARY, domain=POS, kwargs={"v": [1.0, 3.5]},
         call=lambda x, v: special.chdtrc(v, x)),
    Spec(special.gdtrc, [((), ()), ((3,), (3,)), ((2, 1), (1, 3))], domain=POS,
         kwargs={"b": [0.5, 2.0]}, call=lambda a, x, b: special.gdtrc(a, b, x)),
    Spec(special.fdtrc, UNARY, domain=POS, kwargs={"dfn": [1.0, 3.0], "dfd": [2.0, 5.5]},
         call=lambda x, dfn, dfd: special.fdtrc(dfn, dfd, x)),
    Spec(special.bdtrc, UNARY, domain=_between(0.05, 0.95), kwargs={"k": [0, 2, 3.5], "n": [5]},
         call=lambda p, k, n: special.bdtrc(k, n, p)),
    Spec(special.nbdtrc, UNARY, domain=_between(0.05, 0.95), kwargs={"k": [0, 3], "n": [4]},
         call=lambda p, k, n: special.nbdtrc(k, n, p)),
    Spec(special.pdtrc, UNARY, domain=POS, kwargs={"k": [0, 2, 3.5]},
         call=lambda m, k: special.pdtrc(k, m)),
    # inverses: in the probability (and gdtrix's rate a)
    Spec(special.betainccinv, UNARY, domain=PROB, kwargs={"a": [0.7, 2.5], "b": [1.5]},
         call=lambda y, a, b: special.betainccinv(a, b, y)),
    Spec(special.chdtri, UNARY, domain=PROB, kwargs={"v": [1.0, 3.5]},
         call=lambda p, v: special.chdtri(v, p)),
    Spec(special.fdtri, UNARY, domain=PROB, kwargs={"dfn": [1.0, 3.0], "dfd": [2.0, 5.5]},
         call=lambda p, dfn, dfd: special.fdtri(dfn, dfd, p)),
    Spec(special.stdtrit, UNARY, domain=PROB, kwargs={"df": [1.0, 3.5]},
         call=lambda p, df: special.stdtrit(df, p)),
    Spec(special.gdtrix, [((), ()), ((3,), (3,))], domain=(POS, PROB), kwargs={"b": [0.5, 2.0]},
         call=lambda a, p, b: special.gdtrix(a, b, p)),
    Spec(special.bdtri, UNARY, domain=PROB, kwargs={"k": [0, 2], "n": [5]},
         call=lambda y, k, n: special.bdtri(k, n, y)),
    Spec(special.nbdtri, UNARY, domain=PROB, kwargs={"k": [0, 3], "n": [4]},
         call=lambda y, k, n: special.nbdtri(k, n, y)),
    Spec(special.pdtri, UNARY, domain=PROB, kwargs={"k": [0, 2]},
         call=lambda y, k: special.pdtri(k, y)),
    # the noncentral t distribution function in t
    Spec(special.nctdtr, UNARY, kwargs={"df": [1.5, 6.0], "nc": [-0.8, 0.0, 1.3]},
         call=lambda t, df, nc: special.nctdtr(df, nc, t), rtol=1e-5),
    # Kolmogorov-Smirnov: once
    Spec(special.kolmogorov, UNARY, domain=_between(0.4, 2.0), order=1, why=ONCE),
    Spec(special.kolmogi, UNARY, domain=PROB, order=1, why=ONCE),
    Spec(special.smirnov, UNARY, domain=_between(0.05, 0.6), kwargs={"n": [3, 10]}, order=1,
         why=ONCE, call=lambda d, n: special.smirnov(n, d)),
    Spec(special.smirnovi, UNARY, domain=PROB, kwargs={"n": [3, 10]}, order=1, why=ONCE,
         call=lambda p, n: special.smirnovi(n, p)),
    # scipy.stats' binomial and negative binomial, through their private ufuncs
    *[Spec(getattr(_ufuncs, f"_binom_{m}"), UNARY, domain=PROB,
           call=lambda p, m=m: getattr(st.binom, m)(np.array([0.0, 3.0, 7.0]), 10, p),
           name=f"scipy.stats.binom.{m}") for m in ("pmf", "cdf", "sf")],
    Spec(_ufuncs._nbinom_pmf, [((), ()), ((3,), ())], domain=(POS, PROB),
         call=lambda n, p: st.nbinom.pmf(np.array([0.0, 2.0, 5.0]), n, p),
         name="scipy.stats.nbinom.pmf"),
    *[Spec(getattr(_ufuncs, f"_nbinom_{m}"), UNARY, domain=PROB,
           call=lambda p, m=m: getattr(st.nbinom, m)(np.array([0.0, 2.0, 5.0]), 3.5, p),
           name=f"scipy.stats.nbinom.{m}") for m in ("cdf", "sf")],
    Spec(special.k0e, UNARY, domain=POS),
    Spec(special.k1e, UNARY, domain=POS),
    Spec(special.ellipkm1, UNARY, domain=_between(0.05, 0.95)),
]


@pytest.mark.parametrize("f", [lambda df: special.nctdtr(df, 0.5, 1.0),
                               lambda nc: special.nctdtr(3.0, nc, 1.0),
                               lambda v: special.chdtri(v, 0.3),
                               lambda b: special.gdtrix(1.0, b, 0.3)])
def test_shape_parameters_have_no_closed_form(f):
    with pytest.raises(pb.NoRuleError, match="no closed form"):
        pb.grad(f)(2.0)


def test_kolmogorov_differentiates_once_and_says_why_not_twice():
    with pytest.raises(pb.NoRuleError, match="_kolmogp"):
        pb.hessian(special.kolmogorov)(0.8)


SPECS += [
    Spec(special.nrdtrimn, [((), (), ()), ((3,), (), (3,))], domain=(PROB, POS, "real")),
    Spec(special.nrdtrisd, [((), (), ()), ((3,), (3,), ())],
         domain=("real", _between(0.6, 0.9), _between(2.0, 3.0))),
    Spec(special.gdtria, [((), ()), ((3,), (3,))], domain=(PROB, POS), kwargs={"b": [0.5, 2.0]},
         call=lambda p, x, b: special.gdtria(p, b, x)),
    Spec(special.tklmbda, UNARY, domain="real", kwargs={"lmbda": [-0.5, 0.0, 0.14, 1.5]},
         call=lambda x, lmbda: special.tklmbda(x, lmbda) if lmbda <= 0 else
         special.tklmbda(np.tanh(x) / lmbda, lmbda)),
    Spec(special.chndtr, UNARY, domain=POS, kwargs={"df": [2.0, 5.5], "nc": [0.5, 3.0]},
         call=lambda x, df, nc: special.chndtr(x, df, nc)),
]


SPECS += [
    Spec(special.chndtrix, UNARY, domain=PROB, kwargs={"df": [2.0, 5.5], "nc": [0.5, 3.0]},
         call=lambda p, df, nc: special.chndtrix(p, df, nc)),
    Spec(special.nctdtrit, UNARY, domain=PROB, kwargs={"df": [1.5, 6.0], "nc": [-0.8, 1.3]},
         call=lambda p, df, nc: special.nctdtrit(df, nc, p), rtol=1e-5),
]

# the noncentral chi-square in its noncentrality, and the noncentral F in its variate
PAIRS = [((), ()), ((3,), (3,)), ((2, 1), (1, 3))]
SPECS += [
    Spec(special.chndtr, PAIRS, domain=(POS, _between(0.3, 3.0)), kwargs={"df": [2.0, 5.5]},
         call=lambda x, nc, df: special.chndtr(x, df, nc), name="special.chndtr(x, nc)"),
    Spec(special.chndtrix, PAIRS, domain=(PROB, _between(0.3, 3.0)),
         kwargs={"df": [2.0, 5.5]}, call=lambda p, nc, df: special.chndtrix(p, df, nc),
         name="special.chndtrix(p, nc)"),
    Spec(special.chndtrinc, PAIRS, domain=(_between(6.0, 9.0), _between(0.2, 0.4)),
         kwargs={"df": [2.0, 5.5]}, call=lambda x, p, df: special.chndtrinc(x, df, p)),
    Spec(special.ncfdtr, UNARY, domain=POS,
         kwargs={"dfn": [1.5, 6.0], "dfd": [2.5, 7.0], "nc": [0.5, 4.0]},
         call=lambda f, dfn, dfd, nc: special.ncfdtr(dfn, dfd, nc, f)),
    Spec(special.ncfdtri, UNARY, domain=PROB,
         kwargs={"dfn": [1.5, 6.0], "dfd": [2.5, 7.0], "nc": [0.5, 4.0]},
         call=lambda p, dfn, dfd, nc: special.ncfdtri(dfn, dfd, nc, p)),
]


@pytest.mark.parametrize("i", [0, 1, 2], ids=["dfn", "dfd", "nc"])
def test_ncfdtr_refuses_its_parameters_by_name(i):
    args = [3.0, 6.0, 1.5, 1.2]

    def f(t):
        return special.ncfdtr(*args[:i], t, *args[i + 1:])

    with pytest.raises(pb.NoRuleError, match="degrees of freedom|noncentrality nc"):
        pb.grad(f)(args[i])
