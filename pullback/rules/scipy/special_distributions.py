"""scipy.special's complements and inverses of the distribution functions (``betaincc``,
``chdtrc``, ``fdtrc``, ``gdtrc``, ``bdtrc``, ``nbdtrc``, ``pdtrc``, ``betainccinv``,
``chdtri``, ``fdtri``, ``gdtrix``, ``stdtrit``, ``bdtri``, ``nbdtri``, ``pdtri``), the
noncentral t distribution function ``nctdtr``, the Kolmogorov-Smirnov functions
``kolmogorov``, ``kolmogi``, ``smirnov`` and ``smirnovi``, the scaled Bessel functions
``k0e`` and ``k1e``, the normal distribution's parameter inverses ``nrdtrimn`` and
``nrdtrisd``, ``gdtria`` (the gamma rate), Tukey's lambda ``tklmbda``, the noncentral
chi-square ``chndtr`` in x and nc and its inverses ``chndtrix`` and ``chndtrinc``, the
noncentral F ``ncfdtr`` and its inverse ``ncfdtri`` in the variate, the noncentral t
inverse ``nctdtrit``, and the private ufuncs under scipy.stats' binomial and negative
binomial distributions (``_binom_pmf``, ``_binom_cdf``, ``_nbinom_pmf`` ...).

A complement is 1 - the distribution function: its derivatives are the negated ones. An
inverse, by the inverse function theorem, has dx/dy = 1 / (dy/dx) at x = ans. As for the
distribution functions (special_integrals.py), the shape parameters and degrees of
freedom have no derivative in closed form (a tracked one raises NoRuleError), and the
integer counts k and n are constants (k rounded down). So the inverses in such a
parameter (``bdtrik``, ``btdtria``, ``chdtriv``, ``stdtridf`` ...) refuse every argument
by name: their derivatives need the distribution function's derivative in the parameter.

nctdtr's derivative in t is the noncentral t density, written with hyp1f1 (SciPy's former
``nct._pdf``), so it differentiates again; in df and nc it has no closed form. The
derivatives of kolmogorov and smirnov are SciPy's compiled ``_kolmogp`` and ``_smirnovp``,
which have no rule themselves: these four differentiate once (a second derivative raises
NoRuleError naming them).
"""

import numpy as np
from scipy import special
from scipy.special import _ufuncs

from ...extend import composite, not_implemented
from .special import SQRT_2PI, _row
from .special_integrals import (
    NO_DF,
    NO_SHAPE,
    _bdtr_dp,
    _beta_density,
    _gamma_density,
    _t_density,
)

# ---------------------------------------------------------------------------- complements

_row(special.betaincc, NO_SHAPE, NO_SHAPE,
            lambda ans, a, b, x: -_beta_density(a, b, x))
composite(special.chdtrc, lambda v, x: special.gammaincc(v / 2, x / 2))
composite(special.gdtrc, lambda a, b, x: special.gammaincc(b, a * x))


def _fdtr_dx(dfn, dfd, x):
    # fdtr = betainc(dfn / 2, dfd / 2, w), w = dfn x / (dfd + dfn x)
    s = dfd + dfn * x
    return _beta_density(dfn / 2, dfd / 2, dfn * x / s) * dfn * dfd / (s * s)


_row(special.fdtrc, NO_DF, NO_DF, lambda ans, dfn, dfd, x: -_fdtr_dx(dfn, dfd, x))
_row(special.bdtrc, None, None, lambda ans, k, n, p: -_bdtr_dp(ans, k, n, p))
_row(special.nbdtrc, None, None,
            lambda ans, k, n, p: -_beta_density(n, np.floor(k) + 1, p))
_row(special.pdtrc, None, lambda ans, k, m: _gamma_density(np.floor(k) + 1, m))

# the private ufuncs of scipy.stats' binomial and negative binomial distributions
# (binom.pmf, binom.cdf, nbinom.pmf ...), in p and in the negative binomial's n
_row(_ufuncs._binom_pmf, None, None,
     lambda ans, k, n, p: ans * (k / p - (n - k) / (1 - p)))
_row(_ufuncs._binom_cdf, None, None, _bdtr_dp)
_row(_ufuncs._binom_sf, None, None, lambda ans, k, n, p: -_bdtr_dp(ans, k, n, p))
_row(_ufuncs._nbinom_pmf, None,
     lambda ans, k, n, p: ans * (special.digamma(k + n) - special.digamma(n) + np.log(p)),
     lambda ans, k, n, p: ans * (n / p - k / (1 - p)))
_row(_ufuncs._nbinom_cdf, None, NO_SHAPE,
     lambda ans, k, n, p: _beta_density(n, np.floor(k) + 1, p))
_row(_ufuncs._nbinom_sf, None, NO_SHAPE,
     lambda ans, k, n, p: -_beta_density(n, np.floor(k) + 1, p))

# ---------------------------------------------------------------------------- inverses

_row(special.betainccinv, NO_SHAPE, NO_SHAPE,
            lambda ans, a, b, y: -1 / _beta_density(a, b, ans))
# chdtrc(v, x) = gammaincc(v / 2, x / 2): dy/dx = -density(v / 2, x / 2) / 2
_row(special.chdtri, NO_DF, lambda ans, v, p: -2 / _gamma_density(v / 2, ans / 2))
_row(special.fdtri, NO_DF, NO_DF, lambda ans, dfn, dfd, p: 1 / _fdtr_dx(dfn, dfd, ans))
_row(special.stdtrit, NO_DF, lambda ans, df, p: 1 / _t_density(df, ans))
# gdtr(a, b, x) = gammainc(b, a x) = p: x = gammaincinv(b, p) / a
_row(special.gdtrix, lambda ans, a, b, p: -ans / a, NO_SHAPE,
            lambda ans, a, b, p: 1 / (a * _gamma_density(b, a * ans)))
_row(special.bdtri, None, None, lambda ans, k, n, y: 1 / _bdtr_dp(ans, k, n, ans))
_row(special.nbdtri, None, None,
            lambda ans, k, n, y: 1 / _beta_density(n, np.floor(k) + 1, ans))
_row(special.pdtri, None,
            lambda ans, k, y: -1 / _gamma_density(np.floor(k) + 1, ans))

# the normal distribution's parameters: x = mn + std ndtri(p)
_row(special.nrdtrimn, lambda ans, p, std, x: -std * SQRT_2PI * np.exp(special.ndtri(p) ** 2 / 2),
     lambda ans, p, std, x: -special.ndtri(p), lambda ans, p, std, x: np.ones_like(x))
_row(special.nrdtrisd,
     lambda ans, mn, p, x: -1 / special.ndtri(p),
     lambda ans, mn, p, x: -ans / special.ndtri(p) * SQRT_2PI * np.exp(special.ndtri(p) ** 2 / 2),
     lambda ans, mn, p, x: 1 / special.ndtri(p))
# gdtr(a, b, x) = gammainc(b, a x) = p: the rate a = gammaincinv(b, p) / x
_row(special.gdtria, lambda ans, p, b, x: 1 / (x * _gamma_density(b, ans * x)), NO_SHAPE,
     lambda ans, p, b, x: -ans / x)
# Tukey's lambda: x = Q(F) = (F^l - (1 - F)^l) / l, so dF/dx = 1 / Q'(F)
_row(special.tklmbda, lambda ans, x, lmbda: 1 / (ans ** (lmbda - 1) + (1 - ans) ** (lmbda - 1)),
     not_implemented("the shape lambda of Tukey's lambda distribution function: its "
                     "derivative has no closed form"))


def _ncx2_density(x, df, nc):
    """The noncentral chi-square density, with I_v(z) = ive(v, z) e^z."""
    root = np.sqrt(nc * x)
    return 0.5 * np.exp(-(x + nc) / 2 + root) * (x / nc) ** (df / 4 - 0.5) * special.ive(
        df / 2 - 1, root)


# F(x; df, nc) = sum_j P_j(nc) G_(df + 2j)(x), P_j the Poisson weights of mean nc / 2 and G
# the chi-square distribution functions: dP_j/dnc = (P_(j-1) - P_j) / 2 and G_k - G_(k+2) =
# 2 g_(k+2) (DLMF 8.8.5) give dF/dnc = -f(x; df + 2, nc), a density again
_row(special.chndtr, lambda ans, x, df, nc: _ncx2_density(x, df, nc), NO_DF,
     lambda ans, x, df, nc: -_ncx2_density(x, df + 2, nc))
_row(special.chndtrix, lambda ans, p, df, nc: 1 / _ncx2_density(ans, df, nc), NO_DF,
     lambda ans, p, df, nc: _ncx2_density(ans, df + 2, nc) / _ncx2_density(ans, df, nc))
_row(special.chndtrinc,
     lambda ans, x, df, p: _ncx2_density(x, df, ans) / _ncx2_density(x, df + 2, ans), NO_DF,
     lambda ans, x, df, p: -1 / _ncx2_density(x, df + 2, ans))

# ---------------------------------------------------------------------------- noncentral F

NO_NCF_NONCENTRALITY = not_implemented(
    "the noncentrality nc of the noncentral F distribution function: pullback has no rule "
    "for its derivative in nc (differentiate with respect to the variate only)")


def _ncf_density(dfn, dfd, nc, x):
    """The noncentral F density (SciPy's former ``ncf._pdf``), its Poisson mixture of beta
    densities summed into the generalized Laguerre function L_n^(a)(-z) = binom(n + a, n)
    1F1(-n; a + 1; -z), n = dfd / 2, a = dfn / 2 - 1, z = nc dfn x / (2 (dfd + dfn x))."""
    s = dfd + dfn * x
    z = nc * dfn * x / (2 * s)
    log_front = (z - nc / 2 + special.gammaln(dfn / 2) + special.gammaln(1 + dfd / 2)
                 - special.gammaln((dfn + dfd) / 2) - special.betaln(dfn / 2, dfd / 2)
                 + dfn / 2 * np.log(dfn) + dfd / 2 * np.log(dfd)
                 + special.xlogy(dfn / 2 - 1, x) - (dfn + dfd) / 2 * np.log(s))
    laguerre = special.binom((dfn + dfd) / 2 - 1, dfd / 2) * special.hyp1f1(
        -dfd / 2, dfn / 2, -z)
    return np.exp(log_front) * laguerre


_row(special.ncfdtr, NO_DF, NO_DF, NO_NCF_NONCENTRALITY,
     lambda ans, dfn, dfd, nc, f: _ncf_density(dfn, dfd, nc, f))
_row(special.ncfdtri, NO_DF, NO_DF, NO_NCF_NONCENTRALITY,
     lambda ans, dfn, dfd, nc, p: 1 / _ncf_density(dfn, dfd, nc, ans))

# ---------------------------------------------------------------------------- noncentral t

NO_NONCENTRALITY = not_implemented("the noncentrality of the noncentral t distribution "
                                   "function: its derivative has no closed form")


def _nct_density(df, nc, t):
    """The noncentral t density (SciPy's former ``nct._pdf``, from its series in hyp1f1)."""
    fac = df + t * t
    log_front = (df / 2 * np.log(df) + special.gammaln(df + 1) - df * np.log(2.0)
                 - nc * nc / 2 - df / 2 * np.log(fac) - special.gammaln(df / 2))
    z = nc * nc * t * t / (2 * fac)
    odd = np.sqrt(2.0) * nc * t * special.hyp1f1(df / 2 + 1, 1.5, z) / (
        fac * special.gamma((df + 1) / 2))
    even = special.hyp1f1((df + 1) / 2, 0.5, z) / (np.sqrt(fac) * special.gamma(df / 2 + 1))
    return np.exp(log_front) * (odd + even)


_row(special.nctdtr, NO_DF, NO_NONCENTRALITY, lambda ans, df, nc, t: _nct_density(df, nc, t))
_row(special.nctdtrit, NO_DF, NO_NONCENTRALITY,
     lambda ans, df, nc, p: 1 / _nct_density(df, nc, ans))

# ---------------------------------------------------------------------------- Kolmogorov-Smirnov

# _kolmogp(y) = d kolmogorov / dy, _smirnovp(n, d) = d smirnov / dd (both <= 0)
_row(special.kolmogorov, lambda ans, y: _ufuncs._kolmogp(y))
_row(special.kolmogi, lambda ans, p: 1 / _ufuncs._kolmogp(ans))
_row(special.smirnov, None, lambda ans, n, d: _ufuncs._smirnovp(n, d))
_row(special.smirnovi, None, lambda ans, n, p: 1 / _ufuncs._smirnovp(n, ans))

# ---------------------------------------------------------------------------- others

# k0e = e^x k0, k1e = e^x k1; k0' = -k1, k1' = -k0 - k1 / x (DLMF 10.29.3)
_row(special.k0e, lambda ans, x: ans - special.k1e(x))
_row(special.k1e, lambda ans, x: ans - special.k0e(x) - ans / x)

# ---------------------------------------------------------------------------- parameter inverses


def _refuse(func, arguments, solves):
    """Refuse every argument of ``func``, the inverse of a distribution function in a
    parameter (``solves``), by name: its derivatives need the distribution function's
    derivative in that parameter, which has no closed form in scipy.special."""
    _row(func, *[not_implemented(
        f"{arguments} of scipy.special.{func.__name__}, which solves {solves}: its "
        "derivatives need that function's derivative in the parameter solved for, which "
        "has no closed form in scipy.special")] * func.nin)


_refuse(special.bdtrik, "y, n and p", "bdtr(k, n, p) = y for the count k")
_refuse(special.bdtrin, "k, y and p", "bdtr(k, n, p) = y for the count n")
_refuse(special.btdtria, "p, b and x", "betainc(a, b, x) = p for the shape a")
_refuse(special.btdtrib, "a, p and x", "betainc(a, b, x) = p for the shape b")
_refuse(special.chdtriv, "p and x", "chdtr(v, x) = p for the degrees of freedom v")
_refuse(special.chndtridf, "x, p and nc", "chndtr(x, df, nc) = p for the degrees of freedom df")
_refuse(special.fdtridfd, "dfn, p and x", "fdtr(dfn, dfd, x) = p for the degrees of freedom dfd")
_refuse(special.gdtrib, "a, p and x", "gdtr(a, b, x) = p for the shape b")
_refuse(special.nbdtrik, "y, n and p", "nbdtr(k, n, p) = y for the count k")
_refuse(special.nbdtrin, "k, y and p", "nbdtr(k, n, p) = y for the count n")
_refuse(special.ncfdtridfd, "dfn, p, nc and f",
        "ncfdtr(dfn, dfd, nc, f) = p for the degrees of freedom dfd")
_refuse(special.ncfdtridfn, "p, dfd, nc and f",
        "ncfdtr(dfn, dfd, nc, f) = p for the degrees of freedom dfn")
_refuse(special.nctdtridf, "p, nc and t", "nctdtr(df, nc, t) = p for the degrees of freedom df")
_refuse(special.nctdtrinc, "df, p and t", "nctdtr(df, nc, t) = p for the noncentrality nc")
_refuse(special.pdtrik, "p and m", "pdtr(k, m) = p for the count k")
_refuse(special.stdtridf, "p and t", "stdtr(df, t) = p for the degrees of freedom df")
_row(special.ncfdtrinc, *[not_implemented(
    "dfn, dfd, p and f of scipy.special.ncfdtrinc, which solves ncfdtr(dfn, dfd, nc, f) = p "
    "for the noncentrality nc: its derivatives need ncfdtr's derivative in nc, for which "
    "pullback has no rule")] * 4)
