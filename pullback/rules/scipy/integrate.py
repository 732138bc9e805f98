"""scipy.integrate.odeint, differentiated by the adjoint method (as HIPS autograd does):
the pullback integrates the state, its adjoint and the adjoints of the times and of the
arrays in ``args`` backwards in time, from each time to the one before, with odeint
itself. The vector-Jacobian products of the user's ``func`` inside that system come from
pullback's own backward pass (``pulled``), so ``func`` is plain NumPy code.

``args`` is a pytree, as SciPy passes it to ``func`` unchanged: ``odeint(f, y0, t,
args=(params,))`` with ``params`` a list of ``(W, b)`` tuples or a dict of arrays. While a
differentiation runs, a call of ``scipy.integrate.odeint`` with tracked values flattens
``args`` into its leaves and hands them to the rule positionally, so that tracked arrays
anywhere in ``args`` are seen; ``func`` (and ``Dfun``) get them rebuilt (a list of numbers
stays one leaf, differentiated as an array, as NumPy reads it). The pullback works on
plain values: it is first order only.

The helpers for ``args`` read as a pytree, and ``pulled``, serve the rules of quad and
quad_vec (integrate_quad.py) and solve_ivp (integrate_ivp.py) too.
"""

import inspect
import math
from collections import OrderedDict

import numpy as np
import scipy.integrate

from ..._engine.vjp import Linearized, strip
from ...extend import NoRuleError, Tracked, plain, rrule, shape_of
from ...tree import tree_flatten
from .._util import as_array, intercept

# ---------------------------------------------------------------------------- args, a pytree


def args_leaves(args):
    """The leaves of the tuple ``args``, each of its items a pytree, and the function that
    rebuilds the tuple from an iterator over them."""
    leaves = []
    return leaves, _flatten(args, leaves, top=True)


def _flatten(node, leaves, top=False):
    """Put the leaves of the pytree ``node`` in ``leaves`` and return the function that
    rebuilds it from an iterator over them. A list or tuple of numbers is one leaf (an
    array to the adjoint, as NumPy reads it), but for the tuple ``args`` itself (``top``)."""
    kind = type(node)
    if kind is dict or kind is OrderedDict:
        keys, parts = list(node), [_flatten(v, leaves) for v in node.values()]
        return lambda it: kind(zip(keys, [part(it) for part in parts]))
    sequence = kind is list or kind is tuple or isinstance(node, tuple) and hasattr(
        node, "_fields")  # (a namedtuple)
    if sequence and (top or not _numbers(node)):
        parts = [_flatten(v, leaves) for v in node]
        if kind is list or kind is tuple:
            return lambda it: kind([part(it) for part in parts])
        return lambda it: kind(*[part(it) for part in parts])  # a namedtuple
    leaves.append(node)
    return next


def _numbers(node):
    """Whether ``node``, a list or tuple, holds numbers (plain or tracked scalars) only."""
    return bool(node) and all(not isinstance(a, (list, tuple, dict)) and shape_of(a) == ()
                              for a in node)


def rebuilding(fn, rebuild, leading=2):
    """``fn`` called with its ``leading`` arguments (odeint's ``y, t``, quad's ``x``) and then
    the leaves of ``args`` in place of ``args``: the function SciPy is given."""
    def with_leaves(*given):
        return fn(*given[:leading], *rebuild(iter(given[leading:])))

    return with_leaves


def float_leaves(leaves):
    """The positions of the leaves holding floating or complex numbers: those differentiated
    (a list of numbers as one array)."""
    return [i for i, a in enumerate(leaves) if np.asarray(
        [plain(v) for v in a] if type(a) in (list, tuple) else plain(a)).dtype.kind in "fc"]


def with_arrays(leaves, which, arrays):
    """``leaves`` with ``arrays`` in the positions ``which``."""
    full = list(leaves)
    for i, array in zip(which, arrays):
        full[i] = array
    return full


def pulled(f, primals, g, batch=()):
    """``f(*primals)`` (one array) and the cotangents of the ``primals`` for its cotangent
    ``g`` (with leading axes ``batch``), each in its primal's form, zeros where ``f`` does
    not depend on it: one run of pullback's backward pass, differentiable again where the
    primals are tracked."""
    lin = Linearized(f, primals, {}, range(len(primals)))
    return strip(lin.out), lin.pull([lin.out], [g], batch)


def scipy_call(name, body, args, kwargs):
    """SciPy's own ``body`` of a call given no tracked values; a tracked value that its
    function reaches all the same (by a closure, a global) is refused, saying where to put
    it."""
    try:
        return body(*args, **kwargs)
    except TypeError as error:
        if not str(error).startswith("pullback:"):
            raise
        raise TypeError(
            f"pullback: the function given to {name} uses a tracked value that is not among "
            f"{name}'s arguments (a closure or a global): pass it in args=(...), which "
            f"{name} differentiates. The error: {error}") from error


def first_order(name, *values):
    """Refuse a second derivative of a rule whose pullback runs on plain values."""
    for v in values:
        # (a pb.jit trace's box: the trace records the plain run as it is)
        if any(isinstance(a, Tracked) and not a.traced for a in tree_flatten(v)[0]):
            raise NoRuleError(
                f"pullback: the rule of {name} is first order only (its pullback solves on "
                "plain values); differentiate it once")


# ---------------------------------------------------------------------------- odeint

# options of the forward solve that do not apply to the adjoint system
_FORWARD_ONLY = ("Dfun", "col_deriv", "ml", "mu", "full_output", "tfirst")
_SIGNATURE = inspect.signature(scipy.integrate.odeint)


def _with_leaves(func, y0, t, args=(), *rest, **kwargs):
    """odeint's arguments as its rule takes them: ``args`` flattened into its leaves, given
    positionally, and ``func`` (and ``Dfun``) taking the leaves."""
    bound = _SIGNATURE.bind(func, y0, t, args, *rest, **kwargs)
    given = bound.arguments.get("args", ())
    leaves, rebuild = args_leaves(given if isinstance(given, tuple) else (given,))
    bound.arguments["func"] = rebuilding(func, rebuild)
    bound.arguments["args"] = tuple(leaves)
    if bound.arguments.get("Dfun") is not None:
        bound.arguments["Dfun"] = rebuilding(bound.arguments["Dfun"], rebuild)
    return bound.args, bound.kwargs


_odeint = intercept(scipy.integrate, "odeint", _with_leaves)


@rrule(_odeint, batched=True)
def odeint_rule(func, y0, t, args=(), *rest, **kwargs):
    """With respect to y0, the times t and the arrays in ``args``. A cotangent's batch axes
    are taken one slice at a time: each is its own backward solve."""
    bound = _SIGNATURE.bind(func, y0, t, args, *rest, **kwargs).arguments
    if bound.get("full_output"):
        raise NoRuleError("pullback: scipy.integrate.odeint(..., full_output=True) has no "
                          "rule; differentiate the solution of a call without it")
    ans = _odeint(func, y0, t, args, *rest, **kwargs)
    tfirst = bool(bound.get("tfirst", False))
    options = {k: v for k, v in bound.items()
               if k not in _FORWARD_ONLY + ("func", "y0", "t", "args")}

    def f(y, s, *a):
        return func(s, y, *a) if tfirst else func(y, s, *a)

    times = np.asarray(t, dtype=float)
    T, D = np.shape(ans)
    which = float_leaves(args)
    # the arrays differentiated (a list of numbers among them as an array: func is
    # differentiated with respect to it)
    arrays = [as_array(args[i]) for i in which]
    shapes = [np.shape(a) for a in arrays]
    sizes = [int(np.prod(s)) for s in shapes]

    def odeint_pullback(g):
        first_order("scipy.integrate.odeint", g, y0, t, args)
        g = plain(g)
        if not np.size(g):  # no times or an empty state: nothing depends on the inputs
            return (None,) * (4 + len(rest))
        batch = np.shape(g)[:-2]
        slices = [adjoint_solve(gk) for gk in np.reshape(g, (math.prod(batch), T, D))]
        ct_y0, ct_t, ct_arrays = (np.reshape(np.stack(parts), batch + shape)
                                  for parts, shape in zip(zip(*slices), [
                                      np.shape(y0), np.shape(t), (sum(sizes),)]))
        parts = np.split(ct_arrays, np.cumsum(sizes)[:-1], axis=-1) if sizes else []
        ct_args = [None] * len(args)
        for i, part, shape in zip(which, parts, shapes):
            ct_args[i] = np.reshape(part, batch + shape)
        return (None, ct_y0, ct_t, tuple(ct_args)) + (None,) * len(rest)

    def augmented(state, s):
        # the state y, its adjoint a, the adjoint of the time and of the arrays in args:
        # y' = f, a' = -a^T df/dy, and the others integrate -a^T df/ds, -a^T df/dargs
        y, a = state[:D], state[D:2 * D]
        out, cts = pulled(lambda y, s, *ps: np.reshape(f(y, s, *with_arrays(args, which, ps)),
                                                        (D,)), [y, s, *arrays], -a)
        return np.concatenate([out, np.ravel(cts[0]), [float(cts[1])]]
                              + [np.ravel(c) for c in cts[2:]])

    def adjoint_solve(g):
        """The cotangents of y0, t and the arrays in args (flattened and joined) for one
        cotangent g of the solution."""
        ct_y = g[-1]
        ct_t0 = 0.0
        ct_args = np.zeros(sum(sizes))
        ct_times = np.zeros(T)
        for i in range(T - 1, 0, -1):
            # moving the time of an output moves it along the flow
            ct_times[i] = np.dot(np.ravel(f(ans[i], times[i], *args)), g[i])
            ct_t0 = ct_t0 - ct_times[i]
            state = np.concatenate([ans[i], ct_y, [ct_t0], ct_args])
            state = _odeint(augmented, state, times[[i, i - 1]], **options)[1]
            ct_y = state[D:2 * D] + g[i - 1]
            ct_t0, ct_args = state[2 * D], state[2 * D + 1:]
        ct_times[0] = ct_t0
        return ct_y, ct_times, ct_args

    return ans, odeint_pullback
