"""scipy.stats distributions: pdf, logpdf, cdf, logcdf, sf and logsf (pmf and logpmf for
the Poisson distribution) with respect to the variate, loc, scale and shape parameters;
dirichlet and multivariate_normal pdf and logpdf, and multivariate_normal's entropy.

A distribution's methods are plain Python, so each is replaced on the distribution
instance (``scipy.stats.norm.logpdf`` ...) by a ``pullback.primitive``. The univariate
methods are elementwise in all their arguments, so their rules are table rows: each
argument's local derivative, from the family's standardized log-density h(z), z = (x -
loc) / scale:

    d logpdf / dx = h'(z) / scale,   d / dloc = -h'(z) / scale,
    d logpdf / dscale = -(1 + z h'(z)) / scale,   d / dshape = dh / dshape,
    d cdf / dx = pdf,   d cdf / dloc = -pdf,   d cdf / dscale = -z pdf,
    d sf = -d cdf (sf = 1 - cdf), and logcdf and logsf divide by the cdf and the sf.

A row needs every argument in its place, so a call of the method on tracked values goes to
a function with the distribution's own signature, ``norm.logpdf(x, loc=0, scale=1)``,
``gamma.cdf(x, a, loc=0, scale=1)``, that hands all of them to the primitive positionally
(``primitive_of(norm.logpdf)``). The derivative of a cdf with respect to a shape parameter (gamma's
``a``, t's ``df`` ...) has no closed form in scipy.special: differentiating it raises
NoRuleError (weibull_min's ``c`` and lognorm's ``s`` have one). The Poisson variate is
discrete: no derivative with respect to k or loc. Outside the support every derivative is
zero (the density and the cdf are constant there); logpdf and pdf take it as zero on the
support's edge too. The quantiles (ppf, isf) and entropies are in stats_quantiles.py.

A singular multivariate normal (``allow_singular=True``, cov of rank r < n) is SciPy's:
the pseudo-inverse and the pseudo-determinant on the range of cov. Where the rank stays
put, d log pdet = tr(pinv(cov) dcov), and for x - mean in the range (the support) the
terms of d pinv that leave the range vanish, so the derivatives are the regular ones with
pinv for inv. Outside the support the logpdf is -inf, a constant: its derivatives are 0.
"""

import functools
import inspect

import numpy as np
import scipy.special as sc
import scipy.stats as st

from ...extend import elementwise, plain, rrule, shape_of
from .._util import batch_shape, intercept, intercept_method
from ..numpy._linalg import hermitian_adjoint

# ---------------------------------------------------------------------------- univariate


class Family:
    """A location-scale family by its standardized log-density's derivatives: ``dlog(z,
    *shapes)`` = h'(z), and ``dshapes[i](z, *shapes)`` = dh / dshape_i; ``dcdfs[i](z,
    *shapes)`` is the standardized cdf's dF / dshape_i where a closed form exists (None
    where it does not)."""

    def __init__(self, dist, dlog, *dshapes, dcdfs=()):
        self.dist = dist
        self.dlog = dlog
        self.dshapes = dshapes
        self.dcdfs = tuple(dcdfs) + (None,) * (len(dshapes) - len(dcdfs))
        lo, hi = (float(b) for b in dist.support(*[1.5] * len(dshapes)))
        self.support = None if np.isinf(lo) and np.isinf(hi) else (lo, hi)
        if self.support:
            self.inner = (lo + hi) / 2 if np.isfinite(lo + hi) else (
                lo + 1 if np.isfinite(lo) else hi - 1)

    def standardize(self, x, loc, scale):
        """The support mask of z = (x - loc) / scale (None where all of z is inside) and z,
        moved inside where it is outside so that the derivative's formula stays finite."""
        z = (x - loc) / scale
        if self.support is None:
            return None, z
        zp = plain(z)
        inside = (zp > self.support[0]) & (zp < self.support[1])
        if np.all(inside):
            return None, z
        return inside, np.where(inside, z, self.inner)


def _t_ddf(z, df):
    z2 = z * z
    return (0.5 * (sc.digamma((df + 1) / 2) - sc.digamma(df / 2)) - 0.5 / df
            - 0.5 * np.log1p(z2 / df) + (df + 1) * z2 / (2 * df * (df + z2)))


FAMILIES = [
    Family(st.norm, lambda z: -z),
    Family(st.t, lambda z, df: -(df + 1) * z / (df + z * z), _t_ddf),
    Family(st.gamma, lambda z, a: (a - 1) / z - 1, lambda z, a: np.log(z) - sc.digamma(a)),
    Family(st.beta, lambda z, a, b: (a - 1) / z - (b - 1) / (1 - z),
           lambda z, a, b: np.log(z) - sc.digamma(a) + sc.digamma(a + b),
           lambda z, a, b: np.log1p(-z) - sc.digamma(b) + sc.digamma(a + b)),
    Family(st.expon, lambda z: -np.ones_like(z)),
    Family(st.laplace, lambda z: -np.sign(z)),  # the kink at z = 0 gets 0
    Family(st.logistic, lambda z: -np.tanh(z / 2)),
    Family(st.cauchy, lambda z: -2 * z / (1 + z * z)),
    Family(st.chi2, lambda z, df: (df / 2 - 1) / z - 0.5,
           lambda z, df: 0.5 * (np.log(z / 2) - sc.digamma(df / 2))),
    Family(st.uniform, lambda z: np.zeros_like(z)),
    Family(st.halfnorm, lambda z: -z),
    # F = 1 - exp(-z^c)
    Family(st.weibull_min, lambda z, c: (c - 1) / z - c * z ** (c - 1),
           lambda z, c: 1 / c + np.log(z) * (1 - z ** c),
           dcdfs=[lambda z, c: np.exp(-z ** c) * z ** c * np.log(z)]),
    # F = Q(a, 1 / z), the regularized upper incomplete gamma: no closed form in a
    Family(st.invgamma, lambda z, a: (1 / z - a - 1) / z,
           lambda z, a: -np.log(z) - sc.digamma(a)),
    # F = Phi(log(z) / s)
    Family(st.lognorm, lambda z, s: -(1 + np.log(z) / s ** 2) / z,
           lambda z, s: (np.log(z) ** 2 / s ** 2 - 1) / s,
           dcdfs=[lambda z, s: -np.exp(-(np.log(z) / s) ** 2 / 2) * np.log(z)
                  / (np.sqrt(2 * np.pi) * s ** 2)]),
]


def _masked(value, inside):
    return value if inside is None else np.where(inside, value, 0)


def _logpdf_partial(fam, which):
    """d logpdf / d(argument ``which``): "x", "loc", "scale" or a shape's index."""

    def logpdf_partial(ans, x, *params):
        shapes, loc, scale = params[:-2], params[-2], params[-1]
        inside, z = fam.standardize(x, loc, scale)
        if isinstance(which, int):
            return _masked(fam.dshapes[which](z, *shapes), inside)
        h = fam.dlog(z, *shapes)
        d = {"x": h, "loc": -h, "scale": -(1 + z * h)}[which] / scale
        return _masked(d, inside)

    return logpdf_partial


def _pdf_partial(fam, which):
    logpdf_partial = _logpdf_partial(fam, which)

    def pdf_partial(ans, *args):
        return ans * logpdf_partial(ans, *args)

    return pdf_partial


def _cdf_shape_partial(fam, which, log, survival):
    """d cdf / d shape ``which`` from the family's closed form (None where there is none);
    logcdf divides by the cdf, sf and logsf negate."""
    dcdf = fam.dcdfs[which]
    if dcdf is None:
        return None
    sign = -1 if survival else 1

    def cdf_shape_partial(ans, x, *params):
        shapes, loc, scale = params[:-2], params[-2], params[-1]
        inside, z = fam.standardize(x, loc, scale)
        d = sign * _masked(dcdf(z, *shapes), inside)
        if log:  # where the log is -inf the density is 0 too, and so is this
            d = d * np.exp(-np.where(plain(ans) > -np.inf, ans, 0))
        return d

    return cdf_shape_partial


def _cdf_partial(fam, which, log, survival=False):
    """d cdf / d(argument ``which``) (or of logcdf: divided by the cdf); for a shape
    parameter, the family's closed form or None. With ``survival``, those of sf = 1 - cdf
    (and logsf: divided by the sf)."""
    if isinstance(which, int):
        return _cdf_shape_partial(fam, which, log, survival)
    if survival:
        partial = _cdf_partial(fam, which, log=False)
        if not log:
            return lambda ans, *args: -partial(ans, *args)

        def logsf_partial(ans, x, *params):
            # -pdf / sf; where the logsf is -inf the logpdf is too, and this is 0
            finite = plain(ans) > -np.inf
            density = np.exp(fam.dist.logpdf(x, *params) - np.where(finite, ans, 0))
            return -density * {"x": 1, "loc": -1, "scale": -(x - params[-2]) / params[-1]}[which]

        return logsf_partial

    def cdf_partial(ans, x, *params):
        loc, scale = params[-2], params[-1]
        if log:
            # pdf / cdf; where the logcdf is -inf the logpdf is too, and this is 0
            finite = plain(ans) > -np.inf
            density = np.exp(fam.dist.logpdf(x, *params) - np.where(finite, ans, 0))
        else:
            density = fam.dist.pdf(x, *params)
        if which == "x":
            return density
        if which == "loc":
            return -density
        return -density * (x - loc) / scale

    return cdf_partial


def _intercept(dist, name, method):
    """``intercept`` with the primitive named as users call it (scipy.stats.norm.logpdf),
    reached from the method of every instance of the distribution's type."""
    prim = intercept(dist, method)
    intercept_method(dist, method, prim)
    _primitives[(type(dist), method)] = prim
    prim.__module__ = "scipy.stats"
    prim.__qualname__ = prim.__name__ = f"{name}.{method}"
    return prim


def _with_signature(dist, method, names):
    """Put the method's primitive on ``dist`` behind a function that binds the method's
    arguments by ``names`` (defaults: loc=0, scale=1) and passes all of them positionally.
    Returns the primitive."""
    prim = _intercept(dist, dist.name, method)
    P = inspect.Parameter
    sig = inspect.Signature([
        P(n, P.POSITIONAL_OR_KEYWORD, default={"loc": 0, "scale": 1}.get(n, P.empty))
        for n in names])

    def method_with_signature(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return prim(*bound.args)

    functools.update_wrapper(method_with_signature, prim, updated=())
    method_with_signature.__name__ = method
    method_with_signature.__signature__ = sig
    intercept_method(dist, method, method_with_signature)
    return prim


_primitives: dict = {}  # (a distribution's type, a method) -> the primitive of its rule


def primitive_of(method):
    """The primitive whose rule a distribution's bound method (``scipy.stats.norm.logpdf``)
    reaches: what the rule is registered for."""
    return _primitives[(type(method.__self__), method.__name__)]


# A frozen distribution (norm(loc=m)) holds an instance of its own type, made when frozen,
# whose methods reach the rules as the module's instance's do (intercept_method).


def _register_family(fam):
    dist = fam.dist
    shapes = [s.strip() for s in dist.shapes.split(",")] if dist.shapes else []
    names = ["x", *shapes, "loc", "scale"]
    which = ["x", *range(len(shapes)), "loc", "scale"]
    for method, partial in [("logpdf", _logpdf_partial), ("pdf", _pdf_partial)]:
        elementwise(_with_signature(dist, method, names),
                    *[partial(fam, w) for w in which], singular=True)
    for method, log, survival in [("cdf", False, False), ("logcdf", True, False),
                                  ("sf", False, True), ("logsf", True, True)]:
        elementwise(_with_signature(dist, method, names),
                    *[_cdf_partial(fam, w, log, survival) for w in which], singular=True)


for _fam in FAMILIES:
    _register_family(_fam)


def _poisson_dlogpmf(ans, k, mu, loc):
    kp = plain(k) - plain(loc)
    inside = (kp >= 0) & (kp == np.floor(kp))
    return np.where(inside, np.where(inside, kp, 0) / mu - 1, 0)


def _poisson_dpmf(ans, k, mu, loc):
    return ans * _poisson_dlogpmf(ans, k, mu, loc)


def _poisson_dcdf(ans, k, mu, loc):
    # d/dmu P(X <= k) = -pmf(floor(k))
    return -st.poisson.pmf(np.floor(plain(k) - plain(loc)), mu)


def _poisson_dlogcdf(ans, k, mu, loc):
    finite = plain(ans) > -np.inf
    logpmf = st.poisson.logpmf(np.floor(plain(k) - plain(loc)), mu)
    return -np.exp(logpmf - np.where(finite, ans, 0))


for _method, _partial in [("logpmf", _poisson_dlogpmf), ("pmf", _poisson_dpmf),
                          ("cdf", _poisson_dcdf), ("logcdf", _poisson_dlogcdf)]:
    elementwise(_with_signature(st.poisson, _method, ["k", "mu", "loc"]),
                None, _partial, None, singular=True)


# ---------------------------------------------------------------------------- multivariate

def _unsqueeze(g, ans, shape):
    """The cotangent of an output SciPy squeezed (size-1 axes removed), reshaped to the
    unsqueezed ``shape``, past any batch axes."""
    return np.reshape(g, batch_shape(g, len(shape_of(ans))) + tuple(shape))


def _dirichlet_rule(method, log):
    def dirichlet_rule(x, alpha):
        ans = method(x, alpha)

        def dirichlet_pullback(g):
            # x holds the components along its first axis, all k of them or the first k - 1
            k = shape_of(alpha)[0]
            rest = shape_of(x)[1:]
            implied = shape_of(x)[0] == k - 1
            full = x
            if implied:  # the last component is 1 - the others
                full = np.concatenate([x, 1 - np.sum(x, axis=0, keepdims=True)], axis=0)
            a = np.reshape(alpha, (k,) + (1,) * len(rest))
            gk = _unsqueeze(g if log else g * ans, ans, rest)
            gk = np.expand_dims(gk, -len(rest) - 1)
            ct_x = gk * (a - 1) / full
            if implied:
                tail = (slice(None),) * len(rest)
                ct_x = ct_x[(Ellipsis, slice(0, k - 1)) + tail] - \
                    ct_x[(Ellipsis, slice(k - 1, k)) + tail]
            score = np.log(full) - sc.digamma(a) + sc.digamma(np.sum(alpha))
            ct_alpha = np.sum(gk * score, axis=tuple(range(-len(rest), 0)))
            return ct_x, ct_alpha

        return ans, dirichlet_pullback

    return dirichlet_rule


# SciPy's _PSD counts eigenvalues below 1e6 eps times the largest as zero
PSD_CUTOFF = 1e6 * np.finfo(float).eps


def _quantile_shape(shape, dim):
    """The shape SciPy gives the multivariate normal's ``x``: points along the last axis."""
    if len(shape) == 0:
        return (1,)
    if len(shape) == 1:
        return (shape[0], 1) if dim == 1 else (1, shape[0])
    return shape


def _from_lower(matrix):
    """The symmetric matrix SciPy reads a covariance as: its lower triangle (eigh with
    lower=True), mirrored."""
    low = np.tril(matrix, -1)
    return low + np.swapaxes(low, -1, -2) + np.tril(np.triu(matrix))


def _mvn_rule(method, log):
    def mvn_rule(x, mean=None, cov=1, allow_singular=False):
        ans = method(x, mean, cov, allow_singular)

        def mvn_pullback(g):
            is_object = isinstance(cov, st.Covariance)
            matrix = cov.covariance if is_object else cov
            if mean is not None:
                dim = int(np.size(plain(mean)))
            else:
                dim = shape_of(matrix)[0] if len(shape_of(matrix)) == 2 else 1
            eye = np.eye(dim)
            cov_ndim = len(shape_of(matrix))
            # a scalar is a multiple of the identity, a vector a diagonal
            full = _from_lower(matrix) if cov_ndim == 2 else np.expand_dims(matrix, -1) * eye
            qshape = _quantile_shape(shape_of(x), dim)
            xq = np.reshape(x, qshape)
            r = xq if mean is None else xq - mean
            # a singular cov: the pseudo-inverse, with SciPy's cutoff for zero eigenvalues
            inv = np.linalg.pinv(full, rcond=PSD_CUTOFF) if allow_singular else \
                np.linalg.inv(full)
            s = np.matmul(r, inv)  # (x - mean) @ inv(cov): one row per point
            batch = batch_shape(g, len(shape_of(ans)))
            if log and allow_singular:  # outside the support the logpdf is -inf: constant
                g = np.where(plain(ans) > -np.inf, g, 0)
            gq = np.reshape(g if log else g * ans, batch + qshape[:-1])
            ct_xq = -np.expand_dims(gq, -1) * s
            ct_x = np.reshape(ct_xq, batch + shape_of(x))
            ct_mean = None if mean is None else -ct_xq
            if is_object:
                return ct_x, ct_mean, None, None
            # d/dcov = -1/2 (inv(cov) - s s^T) per point: the symmetric gradient
            gf = np.reshape(gq, batch + (-1,))
            sf = np.reshape(s, (-1, dim))
            outer = np.matmul(np.swapaxes(np.expand_dims(gf, -1) * sf, -1, -2), sf)
            total = np.expand_dims(np.sum(gf, axis=-1), (-1, -2))
            ct_cov = 0.5 * (outer - total * inv)
            if cov_ndim == 2:
                ct_cov = hermitian_adjoint(ct_cov, lower=True)  # (the triangle read)
            elif cov_ndim == 1:
                ct_cov = np.sum(ct_cov * eye, axis=-1)
            elif cov_ndim == 0:
                ct_cov = np.sum(ct_cov * eye, axis=(-2, -1))
            return ct_x, ct_mean, ct_cov, None

        return ans, mvn_pullback

    return mvn_rule


for _dist, _name, _rule in [(st.dirichlet, "dirichlet", _dirichlet_rule),
                            (st.multivariate_normal, "multivariate_normal", _mvn_rule)]:
    for _method in ("logpdf", "pdf"):
        _prim = _intercept(_dist, _name, _method)
        rrule(_prim, batched=True)(_rule(_prim, _method == "logpdf"))


_mvn_entropy = _intercept(st.multivariate_normal, "multivariate_normal", "entropy")


@rrule(_mvn_entropy, batched=True)
def mvn_entropy_rule(mean=None, cov=1):
    """entropy = (rank (log 2 pi + 1) + log pdet(cov)) / 2: with respect to cov (the
    pseudo-determinant's derivative is the pseudo-inverse where the rank stays put); the
    mean does not enter."""
    ans = _mvn_entropy(mean, cov)

    def mvn_entropy_pullback(g):
        cov_ndim = len(shape_of(cov))
        g = np.reshape(g, batch_shape(g, len(shape_of(ans))) + (1,) * cov_ndim)
        if cov_ndim == 2:
            inv = np.linalg.pinv(_from_lower(cov), rcond=PSD_CUTOFF)
            return None, hermitian_adjoint(0.5 * g * inv, lower=True)
        # a scalar is a multiple of the identity, a vector a diagonal
        dim = int(np.size(plain(mean))) if mean is not None and cov_ndim == 0 else 1
        return None, 0.5 * g * dim / cov

    return ans, mvn_entropy_pullback
