"""scipy.integrate.solve_ivp, differentiated in ``y0`` and in the floating leaves of
``args`` by the adjoint method: the forward solve keeps its dense output, and the pullback
integrates the adjoint ``a' = -(df/dy)^H a`` and the parameters' adjoint
``a_p' = -(df/dp)^H a`` backwards with solve_ivp itself (the same method, ``rtol``, ``atol``
and ``max_step``), from each time of the solution to the one before and on to ``t_span[0]``,
the state read off the dense output. The vector-Jacobian products of ``fun`` come from
pullback's own backward pass, so ``fun`` is plain NumPy code.

``args`` is a pytree, as SciPy passes it to ``fun`` (and ``jac``) unchanged. While a
differentiation runs, a call with tracked values in ``y0`` or ``args`` solves through a
``pullback.primitive`` (``ivp_solution``) that returns the solution ``y`` alone; the call
returns SciPy's ``OdeResult`` with that ``y`` (tracked) and SciPy's plain ``t``, ``status``,
``message`` and counts. The times are constants: with ``t_eval``, the solution at them;
without it, at the steps the solver took. The pullback works on plain values: it is first
order only.
"""

import copy
import inspect
import math

import numpy as np
import scipy.integrate

from ..._engine.registry import display_names
from ...extend import NoRuleError, on_backend, plain, primitive, rrule, shape_of
from .._util import as_array, live, replace_calls
from .integrate import (
    args_leaves,
    first_order,
    float_leaves,
    pulled,
    rebuilding,
    scipy_call,
    with_arrays,
)

_SIGNATURE = inspect.signature(scipy.integrate.solve_ivp)
# options of the forward solve that the adjoint solves take
_ADJOINT_OPTIONS = ("method", "rtol", "atol", "max_step")


def _solve(fun, y0, leaves, *, found, **options):
    found["result"] = result = scipy.integrate.solve_ivp(fun, y0=y0, args=leaves or None,
                                                         **options)
    return result.y


# the solution y of a call: ``found["result"]`` gets SciPy's OdeResult
ivp_solution = primitive(_solve)
display_names[ivp_solution] = "scipy.integrate.solve_ivp"


def _refuse(options):
    """Refuse, naming it, what the rule does not differentiate."""
    name = "pullback: scipy.integrate.solve_ivp"
    for times in ("t_span", "t_eval"):
        if live((options.get(times),), {}):
            raise NoRuleError(
                f"{name} with a tracked {times} has no rule (the times are constants); to "
                "differentiate in the final time T, solve on (0, 1) the system "
                "fun(s, y, T) = T * f(T * s, y), T in args")
    if options.get("dense_output"):
        raise NoRuleError(
            f"{name}(..., dense_output=True) has no rule: the interpolant is plain; give "
            "the times to differentiate the solution at as t_eval=")
    if options.get("events") is not None:
        raise NoRuleError(
            f"{name}(..., events=...) has no rule (the event times move with y0 and args); "
            "solve without events, up to a time given in t_span")


def _solve_ivp_calls(body):
    """scipy.integrate.solve_ivp while a differentiation runs: through ``ivp_solution`` when
    ``y0`` or ``args`` holds tracked values, SciPy's own body otherwise."""

    def solve_ivp(*args, **kwargs):
        try:
            options = _SIGNATURE.bind(*args, **kwargs).arguments
        except TypeError:  # (arguments SciPy refuses: its own error)
            return body(*args, **kwargs)
        options.update(options.pop("options", {}))  # (solve_ivp's **options: rtol, atol ...)
        fun, y0, given = options.pop("fun"), options.pop("y0"), options.pop("args", None)
        try:
            leaves, rebuild = args_leaves(() if given is None else tuple([*given]))
        except TypeError:  # (SciPy's error for args that do not unpack)
            return body(*args, **kwargs)
        if not live((y0, leaves, options.get("t_span"), options.get("t_eval")), {}):
            return scipy_call("scipy.integrate.solve_ivp", body, args, kwargs)
        _refuse(options)
        if callable(options.get("jac")):
            options["jac"] = rebuilding(options["jac"], rebuild)
        found = {}
        y = ivp_solution(rebuilding(fun, rebuild), y0, tuple(leaves), found=found,
                         **{**options, "dense_output": True})
        result = copy.copy(found["result"])
        result["y"], result["sol"] = y, None
        return result

    return solve_ivp


replace_calls(scipy.integrate, "solve_ivp", _solve_ivp_calls)


@rrule(ivp_solution, batched=True)
def solve_ivp_rule(fun, y0, leaves, *, found, **options):
    """With respect to y0 and the floating leaves of ``args``. A cotangent's batch axes are
    taken one slice at a time: each is its own backward solve."""
    ans = ivp_solution(fun, y0, leaves, found=found, **options)
    result = found["result"]
    times, dense = result.t, result.sol
    start = float(options["t_span"][0])
    which = float_leaves(leaves)
    n = shape_of(ans)[0]
    adjoint = {k: options[k] for k in _ADJOINT_OPTIONS if k in options}
    if np.ndim(adjoint.get("atol", 0.0)):  # (one per state variable: their smallest)
        adjoint["atol"] = float(np.min(adjoint["atol"]))

    def solve_ivp_pullback(g):
        first_order("scipy.integrate.solve_ivp", g, y0, leaves)
        # the adjoint solves on NumPy arrays (Dask's computed); the cotangents go back to
        # the library of each input
        g = np.asarray(plain(g))
        arrays = [np.asarray(plain(as_array(leaves[i]))) for i in which]
        sizes = [x.size for x in arrays]
        batch = np.shape(g)[:-2]
        slices = [adjoint_solve(gk, arrays)
                  for gk in np.reshape(g, (math.prod(batch),) + np.shape(g)[-2:])]
        ct_y0 = np.reshape(np.stack([s[0] for s in slices]), batch + shape_of(y0))
        flat = np.reshape(np.stack([s[1] for s in slices]), batch + (sum(sizes),))
        parts = np.split(flat, np.cumsum(sizes)[:-1], axis=-1) if sizes else []
        ct_leaves = [None] * len(leaves)
        for i, part, x in zip(which, parts, arrays):
            ct_leaves[i] = on_backend(np.reshape(part, batch + x.shape), leaves[i])
        return None, on_backend(ct_y0, y0), tuple(ct_leaves)

    def adjoint_solve(g, arrays):
        """The cotangents of y0 and of the leaves (flattened and joined) for one cotangent
        g of the solution (one column per time)."""

        def augmented(t, state):
            # the adjoint a of the state and that of the leaves: a' = -a^H df/dy and
            # a_p' = -a^H df/dp, at the state y(t) of the dense output
            _, cts = pulled(lambda y, *ps: np.reshape(
                fun(t, y, *with_arrays(leaves, which, ps)), (n,)), [dense(t), *arrays],
                -state[:n])
            return np.concatenate([np.ravel(c) for c in cts])

        state = np.zeros(n + sum(x.size for x in arrays), np.result_type(g, *arrays, 0.0))
        for i in range(len(times) - 1, -1, -1):
            state[:n] += g[:, i]
            end = times[i - 1] if i else start
            if end != times[i]:
                state = scipy.integrate.solve_ivp(augmented, (times[i], end), state,
                                                  **adjoint).y[:, -1]
        return state[:n], state[n:]

    return ans, solve_ivp_pullback
