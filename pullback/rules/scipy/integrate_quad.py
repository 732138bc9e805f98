"""scipy.integrate.quad and quad_vec, differentiated in their limits and in the floating
leaves of ``args``: d/db = f(b), d/da = -f(a), and the derivative in the leaves is the
integral of the pullback of ``f`` over [a, b], computed with quad_vec. That quad_vec call
has this rule too, so the pullbacks are differentiable again, to every order.

``args`` is a pytree, as SciPy passes it to ``f`` unchanged (``quad(f, a, b,
args=(params,))`` with ``params`` a dict or a list of ``(W, b)`` tuples). While a
differentiation runs, a call with a tracked limit or tracked values in ``args`` integrates
through a ``pullback.primitive`` (``quad_integral``, ``quad_vec_integral``) that returns the
integral alone: SciPy's other outputs (the error estimate, full_output's report) stay the
plain values SciPy gives. The integrals of the pullback use the call's ``epsabs``,
``epsrel`` and ``points``, with quad_vec's ``norm='max'`` (each entry to that tolerance).
"""

import inspect

import numpy as np
import scipy.integrate

from ..._engine.registry import display_names
from ...extend import NoRuleError, Tracked, plain, primitive, rrule, shape_of
from ...tree import tree_map
from .._util import as_array, conj_if_complex, live, replace_calls
from .integrate import (
    args_leaves,
    float_leaves,
    pulled,
    rebuilding,
    scipy_call,
    with_arrays,
)

_QUAD = inspect.signature(scipy.integrate.quad)
_QUAD_VEC = inspect.signature(scipy.integrate.quad_vec)
# quad_vec's options that the integrals of its pullback take too
_QUAD_VEC_OPTIONS = ("epsabs", "epsrel", "points", "limit", "quadrature", "cache_size")


def _integrate_quad(func, a, b, leaves, *, found, **options):
    found["result"] = result = scipy.integrate.quad(func, a, b, leaves, **options)
    return np.float64(result[0])  # (a float has no dtype, which a tracked value needs)


def _integrate_quad_vec(f, a, b, leaves, *, found, **options):
    found["result"] = result = scipy.integrate.quad_vec(f, a, b, args=leaves, **options)
    return result[0]


# the integral of a call: ``found["result"]`` gets all that SciPy returned
quad_integral = primitive(_integrate_quad)
quad_vec_integral = primitive(_integrate_quad_vec)
display_names[quad_integral] = "scipy.integrate.quad"
display_names[quad_vec_integral] = "scipy.integrate.quad_vec"


def _refuse(name, a, b, options):
    """Refuse, naming it, what the rule does not differentiate."""
    for limit, value in (("a", a), ("b", b)):
        if isinstance(value, Tracked) and not np.isfinite(plain(value)):
            raise NoRuleError(
                f"pullback: {name} with the tracked limit {limit} = {plain(value)}: an "
                "infinite limit has no derivative; pass it as a plain number (np.inf)")
    if options.get("weight") is not None:
        raise NoRuleError(
            f"pullback: {name}(..., weight={options['weight']!r}) has no rule; write the "
            "weight into the integrand (f(x) * np.cos(w * x)) and integrate that")
    if options.get("complex_func"):
        raise NoRuleError(
            f"pullback: {name}(..., complex_func=True) has no rule; integrate the real and "
            "imaginary parts of the integrand in two calls")


def _calls(name, signature, integral, empty_args_is_none):
    """``make(body)`` for ``replace_calls``: scipy.integrate's ``name`` (quad, quad_vec)
    while a differentiation runs, through ``integral`` when a limit or ``args`` holds
    tracked values, SciPy's own body otherwise. ``args`` is read as SciPy reads it: one
    argument unless a tuple, and for quad_vec an empty one is none."""
    integrand = next(iter(signature.parameters))  # (quad's func, quad_vec's f)

    def make(body):
        def integral_call(*args, **kwargs):
            try:
                options = signature.bind(*args, **kwargs).arguments
            except TypeError:  # (arguments SciPy refuses: its own error)
                return body(*args, **kwargs)
            f, a, b = options.pop(integrand), options.pop("a"), options.pop("b")
            given = options.pop("args", ())
            if not isinstance(given, tuple):
                given = () if empty_args_is_none and not given else (given,)
            leaves, rebuild = args_leaves(given)
            if not live((a, b, leaves), {}):
                return scipy_call(name, body, args, kwargs)
            _refuse(name, a, b, options)
            found = {}
            options.pop("workers", None)  # (quad_vec's pool would pickle the integrand)
            value = integral(rebuilding(f, rebuild, 1), a, b, tuple(leaves), found=found,
                             **tree_map(plain, options))
            return (value,) + tuple(found["result"][1:])

        return integral_call

    return make


replace_calls(scipy.integrate, "quad",
              _calls("scipy.integrate.quad", _QUAD, quad_integral, empty_args_is_none=False))
replace_calls(scipy.integrate, "quad_vec",
              _calls("scipy.integrate.quad_vec", _QUAD_VEC, quad_vec_integral,
                     empty_args_is_none=True))


def _pullback_integrals(f, a, b, leaves, which, g, ndim, options):
    """The integrals over [a, b] of the cotangents of the floating leaves ``which`` of
    ``f(x, *leaves)``, a value of ``ndim`` axes, for its cotangent ``g`` (with leading batch
    axes where it has more): one array per leaf in ``which``, batch axes first. quad_vec
    integrates them, with ``options`` and each entry to the tolerances."""
    arrays = [as_array(leaves[i]) for i in which]
    shapes = [shape_of(x) for x in arrays]
    sizes = [int(np.prod(s)) for s in shapes]
    batch = shape_of(g)[:len(shape_of(g)) - ndim]

    def pullback_integrand(x, *given):
        *arrays, g = given
        _, cts = pulled(lambda *ps: f(x, *with_arrays(leaves, which, ps)), arrays, g, batch)
        return np.concatenate([np.reshape(c, batch + (-1,)) for c in cts], axis=-1)

    flat = quad_vec_integral(pullback_integrand, a, b, (*arrays, g), found={}, norm="max",
                             **options)
    ends = np.cumsum(sizes)  # (slices, not np.split: Dask's arrays have no split)
    return [np.reshape(flat[..., end - size:end], batch + shape)
            for end, size, shape in zip(ends, sizes, shapes)]


def _leaf_cotangents(leaves, which, cts):
    """A tuple with the cotangent of each leaf: ``cts`` in the positions ``which``."""
    full = [None] * len(leaves)
    for i, ct in zip(which, cts):
        full[i] = ct
    return tuple(full)


def _times(g, ct):
    """``g`` (a scalar's cotangent, with its batch axes) times ``ct``, a leaf's cotangent."""
    return np.reshape(g, shape_of(g) + (1,) * len(shape_of(ct))) * ct


@rrule(quad_integral, batched=True)
def quad_rule(func, a, b, leaves, *, found, **options):
    """The integral of the pullback is taken once, for the cotangent 1: the integral is a
    scalar, so the cotangent of a leaf is ``g`` times it (for every batch slice)."""
    y = quad_integral(func, a, b, leaves, found=found, **options)
    which = float_leaves(leaves)
    # quad's tolerances (its own where the call gave none) and break points
    kept = {k: options.get(k, _QUAD.parameters[k].default) for k in ("epsabs", "epsrel",
                                                                      "points")}

    def quad_pullback(g):
        def ct_a():
            return -g * func(a, *leaves)

        def ct_b():
            return g * func(b, *leaves)

        def ct_leaves():
            integrals = _pullback_integrals(func, a, b, leaves, which, 1.0, 0, kept)
            return _leaf_cotangents(leaves, which, [_times(g, c) for c in integrals])

        return None, ct_a, ct_b, ct_leaves if which else None

    return y, quad_pullback


def _dot(v, g):
    """The cotangent of a real limit where ``f`` has the value ``v``: sum(conj(v) g) over
    ``v``'s axes (``g`` may carry batch axes in front)."""
    v = as_array(v)
    return np.sum(conj_if_complex(v) * g, axis=tuple(range(-len(shape_of(v)), 0)))


@rrule(quad_vec_integral, batched=True)
def quad_vec_rule(f, a, b, leaves, *, found, **options):
    res = quad_vec_integral(f, a, b, leaves, found=found, **options)
    which = float_leaves(leaves)
    kept = {k: v for k, v in options.items() if k in _QUAD_VEC_OPTIONS}

    def quad_vec_pullback(g):
        def ct_a():
            return -_dot(f(a, *leaves), g)

        def ct_b():
            return _dot(f(b, *leaves), g)

        def ct_leaves():
            integrals = _pullback_integrals(f, a, b, leaves, which, g, len(shape_of(res)),
                                            kept)
            return _leaf_cotangents(leaves, which, integrals)

        return None, ct_a, ct_b, ct_leaves if which else None

    return res, quad_vec_pullback
