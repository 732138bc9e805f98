"""scipy.stats' generic distribution methods on tracked values: ``pdf``, ``logpdf``,
``cdf``, ``logcdf``, ``sf``, ``logsf``, ``ppf`` and ``isf`` of ``rv_continuous``, and
``pmf``, ``logpmf``, ``cdf``, ``logcdf``, ``sf`` and ``logsf`` of ``rv_discrete``: every
family without rules of its own (those of stats.py replace the methods on their
instances), and its frozen form.

SciPy's methods check the arguments, fill a plain output with ``np.place`` and hand the
valid entries, compressed by ``argsreduce``, to the family's private method (``_logpdf``,
``_cdf`` ...). On tracked values each is computed the same way with functions that have
rules: the masks (the shape parameters' check, the support) on plain values, the valid
entries gathered by a boolean index, the private method run on them as tracked values,
its results gathered back into place, and the constants (0, 1, -inf, NaN) put around them
by ``np.where``. The loc/scale transform is the generic one, z = (x - loc) / scale, and
the density divided by the scale. So a family differentiates in its shape parameters, loc,
scale and x wherever its private methods are NumPy code and functions with rules; outside
the support the derivatives are 0, the value being constant there.

A discrete family is piecewise constant in its variate k and in loc: it differentiates in
its shape parameters; differentiating with respect to k or loc raises NoRuleError, as for
the Poisson distribution's rules; its quantiles (ppf, isf), integers, are constants. A continuous
family without a quantile function of its own (``_ppf``/``_isf`` SciPy's generic root
finding) is refused by name: the root finder runs on plain floats.
"""

import numpy as np
import scipy.stats as st
from scipy.stats import _continuous_distns
from scipy.stats import _distn_infrastructure as infra

from ..._engine.registry import display_names
from ...extend import (
    NoRuleError,
    Tracked,
    composite,
    nondifferentiable,
    not_implemented,
    plain,
    primitive,
    rrule,
    shape_of,
)
from .._util import intercept
from .array_api import intercept_lazyselect


def _mask_of(cond):
    return np.asarray(plain(cond), dtype=bool)


def _reduced(cond, *args):
    """SciPy's ``argsreduce`` on tracked values: each argument at least 1-d; all broadcast
    and flattened where ``cond`` holds everywhere, else each argument of more than one
    entry gathered at ``cond``."""
    args = [np.reshape(a, (1,)) if len(shape_of(a)) == 0 else a for a in args]
    if np.all(cond):
        shape = np.broadcast_shapes(cond.shape, *[shape_of(a) for a in args])
        return [np.ravel(np.broadcast_to(a, shape)) for a in args]
    return [a if int(np.prod(shape_of(a))) == 1 else np.broadcast_to(a, cond.shape)[cond]
            for a in args]


def _placed(cond, values, output):
    """``output`` (a plain array of ``cond``'s shape) with ``values``, one per true entry
    of ``cond`` in order (or one for all), put in place: a gather, tracked where
    ``values`` is, so that its cotangent reaches the values in the places they went."""
    if not np.any(cond):
        return output
    n = int(np.count_nonzero(cond))
    flat = np.broadcast_to(values, (n,)) if int(np.prod(shape_of(values))) == 1 else values
    where = np.maximum(np.cumsum(cond.ravel()) - 1, 0)
    spread = np.reshape(flat[where], cond.shape)
    return np.where(cond, spread, output)


def _scalar(output):
    return output[()] if len(shape_of(output)) == 0 else output


def _args(self, x, args, kwds, discrete=False):
    shapes, loc, scale = self._parse_args(*args, **kwds) if not discrete else (
        *self._parse_args(*args, **kwds)[:2], 1.0)
    x, loc, scale = (a if isinstance(a, Tracked) else np.asarray(a) for a in (x, loc, scale))
    shapes = tuple(a if isinstance(a, Tracked) else np.asarray(a) for a in shapes)
    return x, shapes, loc, scale


# ---------------------------------------------------------------------------- continuous

def _check(self, shapes, scale):
    """The entries where the shape parameters and the scale are valid (plain)."""
    return _mask_of(self._argcheck(*[plain(s) for s in shapes])) & (plain(scale) > 0)


def _density(log):
    def density_impl(self, x, *args, **kwds):
        x, shapes, loc, scale = _args(self, x, args, kwds)
        z = (x - loc) / scale
        zp = np.asarray(plain(z), dtype=np.promote_types(np.result_type(plain(x)), np.float64))
        cond0 = _check(self, shapes, scale)
        cond0, zp = np.broadcast_arrays(cond0, zp)
        cond = cond0 & _mask_of(self._support_mask(zp, *[plain(s) for s in shapes]))
        output = np.full(cond.shape, -np.inf if log else 0.0)
        output = np.where(~cond0 | np.isnan(zp), self.badvalue, output)
        if np.any(cond):
            *good, good_scale = _reduced(cond, z, *shapes, scale)
            value = self._logpdf(*good) - np.log(good_scale) if log else \
                self._pdf(*good) / good_scale
            output = _placed(cond, value, output)
        return _scalar(output)

    density_impl.__name__ = density_impl.__qualname__ = \
        f"rv_continuous_{'log' if log else ''}pdf_impl"
    return density_impl


def _tail(name, log, survival):
    """cdf, logcdf, sf and logsf: the private method on the open support, the limits
    beyond it."""

    def tail_impl(self, x, *args, **kwds):
        x, shapes, loc, scale = _args(self, x, args, kwds)
        plain_shapes = [plain(s) for s in shapes]
        a, b = self._get_support(*plain_shapes)
        z = (x - loc) / scale
        zp = np.asarray(plain(z), dtype=np.promote_types(np.result_type(plain(x)), np.float64))
        cond0 = _check(self, shapes, scale)
        cond0, zp = np.broadcast_arrays(cond0, zp)
        cond = cond0 & _mask_of(self._open_support_mask(zp, *plain_shapes))
        beyond = cond0 & ((zp <= a) if survival else (zp >= b))  # where it is 1 (log: 0)
        output = np.full(cond.shape, -np.inf if log else 0.0)
        output = np.where(beyond, 0.0 if log else 1.0, output)
        output = np.where(~cond0 | np.isnan(zp), self.badvalue, output)
        if np.any(cond):
            good = _reduced(cond, z, *shapes)
            output = _placed(cond, getattr(self, name)(*good), output)
        return _scalar(output)

    tail_impl.__name__ = tail_impl.__qualname__ = f"rv_continuous{name}_impl"
    return tail_impl


def _refused_quantile(self, name):
    return NoRuleError(
        f"pullback: scipy.stats.{self.name}.{name.lstrip('_')} on tracked values: the "
        f"{self.name} distribution has no {name} of its own, and SciPy's generic one finds "
        "the quantile by a root finder on plain floats, which no rule follows. Pass plain "
        "values (pb.stop_gradient), or give the quantile a rule with pb.primitive and "
        "pb.rrule (its derivative in q is 1 / pdf)")


def _quantile(name, lower_at):
    """ppf and isf: the private method on (0, 1), the support's bounds at ``lower_at``
    (q = 0 for ppf, 1 for isf) and the other end."""

    def quantile_impl(self, q, *args, **kwds):
        if getattr(type(self), name) is getattr(st.rv_continuous, name) and not (
                name == "_isf" and type(self)._ppf is not st.rv_continuous._ppf):
            raise _refused_quantile(self, name)
        q, shapes, loc, scale = _args(self, q, args, kwds)
        qp = np.asarray(plain(q))
        a, b = self._get_support(*[plain(s) for s in shapes])
        cond0 = _check(self, shapes, scale) & (plain(loc) == plain(loc))
        cond0, qp = np.broadcast_arrays(cond0, qp)
        cond = cond0 & (qp > 0) & (qp < 1)
        output = np.full(cond.shape, self.badvalue)
        for at, bound in ((lower_at, a), (1 - lower_at, b)):
            edge = cond0 & (qp == at)
            if np.any(edge):
                output = np.where(edge, bound * scale + loc, output)
        if np.any(cond):
            *good, good_scale, good_loc = _reduced(cond, q, *shapes, scale, loc)
            output = _placed(cond, getattr(self, name)(*good) * good_scale + good_loc, output)
        return _scalar(output)

    quantile_impl.__name__ = quantile_impl.__qualname__ = f"rv_continuous{name}_impl"
    return quantile_impl


CONTINUOUS = {
    "pdf": _density(False),
    "logpdf": _density(True),
    "cdf": _tail("_cdf", False, False),
    "logcdf": _tail("_logcdf", True, False),
    "sf": _tail("_sf", False, True),
    "logsf": _tail("_logsf", True, True),
    "ppf": _quantile("_ppf", 0),
    "isf": _quantile("_isf", 1),
}


# ---------------------------------------------------------------------------- discrete

NO_DISCRETE_VARIATE = not_implemented(
    "the variate k or loc of a discrete scipy.stats distribution: its methods are piecewise "
    "constant in them (pass them as plain values, pb.stop_gradient)")


@primitive
def discrete_variate(k):
    """``k``, the variate (or ``loc``) of a discrete distribution, unchanged: differentiating
    with respect to it raises NoRuleError."""
    return k


@rrule(discrete_variate, batched=True)
def discrete_variate_rule(k):
    def discrete_variate_pullback(g):
        return (NO_DISCRETE_VARIATE,)

    return k, discrete_variate_pullback


def _discrete_args(self, k, args, kwds):
    k, shapes, loc, _ = _args(self, k, args, kwds, discrete=True)
    k = discrete_variate(k) - discrete_variate(loc)
    return k, plain(k), shapes


def _mass(log):
    def mass_impl(self, k, *args, **kwds):
        k, kp, shapes = _discrete_args(self, k, args, kwds)
        plain_shapes = [plain(s) for s in shapes]
        a, b = self._get_support(*plain_shapes)
        cond0 = _mask_of(self._argcheck(*plain_shapes))
        cond0, kp = np.broadcast_arrays(cond0, np.asarray(kp))
        cond = cond0 & (kp >= a) & (kp <= b)
        if not isinstance(self, infra.rv_sample):
            cond = cond & _mask_of(self._nonzero(kp, *plain_shapes))
        output = np.full(cond.shape, -np.inf if log else 0.0)
        output = np.where(~cond0 | np.isnan(kp), self.badvalue, output)
        if np.any(cond):
            good = _reduced(cond, k, *shapes)
            value = self._logpmf(*good) if log else np.clip(self._pmf(*good), 0, 1)
            output = _placed(cond, value, output)
        return _scalar(output)

    mass_impl.__name__ = mass_impl.__qualname__ = f"rv_discrete_{'log' if log else ''}pmf_impl"
    return mass_impl


def _discrete_tail(name, log, survival):
    def discrete_tail_impl(self, k, *args, **kwds):
        k, kp, shapes = _discrete_args(self, k, args, kwds)
        plain_shapes = [plain(s) for s in shapes]
        a, b = self._get_support(*plain_shapes)
        cond0 = _mask_of(self._argcheck(*plain_shapes))
        cond0, kp = np.broadcast_arrays(cond0, np.asarray(kp))
        cond = cond0 & (kp >= a) & (kp < b) & np.isfinite(kp)
        beyond = ((kp < a) | np.isneginf(kp)) if survival else (kp >= b)
        output = np.full(cond.shape, -np.inf if log else 0.0)
        output = np.where(beyond, 0.0 if log else 1.0, output)
        output = np.where(~cond0 | np.isnan(kp), self.badvalue, output)
        if np.any(cond):
            good = _reduced(cond, k, *shapes)
            value = getattr(self, name)(*good)
            output = _placed(cond, value if log else np.clip(value, 0, 1), output)
        return _scalar(output)

    discrete_tail_impl.__name__ = discrete_tail_impl.__qualname__ = \
        f"rv_discrete{name}_impl"
    return discrete_tail_impl


DISCRETE = {
    "pmf": _mass(False),
    "logpmf": _mass(True),
    "cdf": _discrete_tail("_cdf", False, False),
    "logcdf": _discrete_tail("_logcdf", True, False),
    "sf": _discrete_tail("_sf", False, True),
    "logsf": _discrete_tail("_logsf", True, True),
}


# the families whose densities run code pullback cannot follow, and why: refused by name
# before SciPy's code runs (kstwo's np.nditer crashes the interpreter on NumPy 1.26)
UNFOLLOWED = {
    "gausshyper": "hyp2f1's derivative in its parameters has no closed form",
    "genhyperbolic": "it integrates its density with quad (float() of a tracked value)",
    "geninvgauss": "it integrates its density with quad (float() of a tracked value)",
    "irwinhall": "its pdf is a compiled B-spline (BSpline), which needs plain arrays",
    "ksone": "its pdf calls _smirnovp, compiled, which has no rule",
    "kstwo": "its pdf writes through np.nditer into plain arrays",
    "kstwobign": "its pdf calls _kolmogp, compiled, which has no rule",
    "landau": "its pdf calls _landau_pdf, compiled, which has no rule",
    "levy_stable": "it integrates its density with quad (float() of a tracked value)",
    "ncf": "its pdf calls _ncf_pdf, compiled, which has no rule",
    "nchypergeom_fisher": "it loops in Python over int(n) of its parameters",
    "nchypergeom_wallenius": "it loops in Python over int(n) of its parameters",
    "nct": "its pdf calls _nct_pdf, compiled, which has no rule",
    "studentized_range": "it integrates with np.frompyfunc over object arrays",
    "zipfian": "its pmf calls _normalized_gen_harmonic, compiled, which has no rule",
}


_DENSITIES = ("pdf", "logpdf", "pmf", "logpmf")
# SciPy's generic logcdf and logsf switch tails at the median, ppf(0.5), which these families
# find by root finding on plain floats (brentq, compiled, calls back with tracked values)
_MEDIAN_BY_ROOT = {name: "SciPy finds its median, where logcdf and logsf switch tails, by "
                   "root finding (brentq, compiled) on plain floats" for name in (
                       "exponnorm", "foldcauchy", "foldnorm", "recipinvgauss",
                       "rel_breitwigner")}


def _followed(impl, method):
    refused = UNFOLLOWED if method in _DENSITIES else _MEDIAN_BY_ROOT

    def followed_impl(self, *args, **kwds):
        why = refused.get(getattr(self, "name", None))
        if why is not None:
            raise NoRuleError(
                f"pullback: scipy.stats.{self.name}.{method} of a tracked value has no "
                f"derivative here: {why}. Pass plain values (pb.stop_gradient(x)) where no "
                f"gradient should flow, or register a rule with pb.rrule")
        return impl(self, *args, **kwds)

    followed_impl.__name__ = followed_impl.__qualname__ = impl.__name__
    return followed_impl


def _intercept_method(cls, method, impl):
    prim = intercept(cls, method)
    display_names[prim] = f"scipy.stats.{cls.__name__}.{method}"
    composite(prim, _followed(impl, method) if method in _DENSITIES + ("logcdf", "logsf")
              else impl)
    return prim


def _intercept_constant(cls, method):
    prim = intercept(cls, method)
    display_names[prim] = f"scipy.stats.{cls.__name__}.{method}"
    nondifferentiable(prim)
    return prim


# a discrete quantile is an integer, piecewise constant in q and the shape parameters
DISCRETE_QUANTILES = [_intercept_constant(st.rv_discrete, m) for m in ("ppf", "isf")]

GENERIC = {
    **{(st.rv_continuous, m): _intercept_method(st.rv_continuous, m, impl)
       for m, impl in CONTINUOUS.items()},
    **{(st.rv_discrete, m): _intercept_method(st.rv_discrete, m, impl)
       for m, impl in DISCRETE.items()},
}

# the private methods of triang, trapezoid and kappa4 call _lazyselect, imported by name
LAZYSELECT = intercept_lazyselect(_continuous_distns)
