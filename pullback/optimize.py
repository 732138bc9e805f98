"""``minimize``: ``scipy.optimize.minimize`` with pullback's derivatives, over pytrees.

The objective's value and gradient come from one pass (``value_and_grad``, handed to SciPy
with ``jac=True``); Hessian-vector products (``hvp``) or the Hessian (``hessian``) go to the
methods that use second derivatives; constraints without a ``jac`` get theirs from
``jacobian``. SciPy is imported when ``minimize`` is called: it is an optional extra.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .api import value_and_grad
from .core import plain
from .transforms import hessian, hvp, jacobian
from .tree import StructureMismatch, leaves_by, tree_flatten, tree_unflatten

if TYPE_CHECKING:
    from scipy.optimize import OptimizeResult

__all__ = ["minimize"]

# the methods that take a Hessian-vector product, and those that need the whole Hessian
HESSP_METHODS = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
HESS_METHODS = {"trust-exact", "dogleg"}
# the methods that use no derivatives at all
DERIVATIVE_FREE_METHODS = {"nelder-mead", "powell", "cobyla", "cobyqa"}


class Flat:
    """The map between ``x0``'s structure and the float64 vector SciPy works on: the leaves
    of ``tree_flatten(x0)`` in order, each raveled in C order."""

    def __init__(self, x0):
        leaves, self.treedef = tree_flatten(x0)
        if isinstance(x0, (list, tuple)) and not any(isinstance(x, np.ndarray) for x in leaves):
            leaves, self.treedef = [np.asarray(x0)], tree_flatten(0)[1]  # array_like, as SciPy
        if not leaves:
            raise ValueError("pullback: minimize needs an x0 with at least one array in it")
        self.shapes, self.dtypes, self.arrays, self.stops = [], [], [], []
        stop = 0
        for i, leaf in enumerate(leaves):
            x = np.asarray(plain(leaf))
            if x.dtype.kind not in "biuf":
                raise TypeError(
                    f"pullback: minimize works on real numbers; leaf {i} of x0 has dtype "
                    f"{x.dtype}" + (". Split a complex value into its real and imaginary parts"
                                    if x.dtype.kind == "c" else f" ({type(leaf).__name__}): "
                                    "pass the starting point as an array of floats")
                )
            self.shapes.append(x.shape)
            self.dtypes.append(x.dtype if x.dtype.kind == "f" else np.dtype(np.float64))
            self.arrays.append(isinstance(leaf, np.ndarray))
            stop += x.size
            self.stops.append(stop)
        self.size = stop
        self.x0 = self.ravel(leaves, flat=True)
        self.single = len(leaves) == 1

    def ravel(self, tree, flat=False):
        """A plain pytree of ``x0``'s structure as one float64 vector."""
        leaves = tree if flat else tree_flatten(tree)[0]
        if len(leaves) != len(self.shapes):
            raise ValueError(
                f"pullback: expected a value with x0's structure ({len(self.shapes)} "
                f"leaves), got {len(leaves)} leaves"
            )
        parts = [np.ravel(np.asarray(plain(x), dtype=np.float64)) for x in leaves]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def unravel(self, z):
        """The vector ``z`` (plain or tracked) in ``x0``'s structure, shapes and dtypes."""
        leaves, start = [], 0
        for shape, dtype, stop in zip(self.shapes, self.dtypes, self.stops):
            x = z if self.single else z[start:stop]
            if len(shape) != 1 or not self.single:
                x = x.reshape(shape)
            if dtype != np.float64:
                x = x.astype(dtype)
            leaves.append(x)
            start = stop
        return tree_unflatten(self.treedef, leaves)

    def result(self, z):
        """The plain vector ``z`` as a fresh value of ``x0``'s structure; a leaf that was a
        Python number comes back as a Python float."""
        z = np.array(z, dtype=np.float64)
        leaves, start = [], 0
        for shape, dtype, array, stop in zip(self.shapes, self.dtypes, self.arrays, self.stops):
            x = z[start:stop].reshape(shape).astype(dtype)
            leaves.append(x if array else float(x))
            start = stop
        return tree_unflatten(self.treedef, leaves)

    def match(self, tree, what):
        """The entries of ``tree``, a pytree of ``x0``'s structure whose leaves may be
        pairs, one per leaf of ``x0``."""
        try:
            return leaves_by(self.treedef, tree)
        except StructureMismatch as m:
            raise ValueError(f"pullback: {what} must have x0's structure; at x0{m.path} x0 "
                             f"has {m.want}, {what} has {m.got}") from None


def ravel_output(out):
    """A constraint's value (a pytree, possibly tracked) as one vector."""
    parts = [np.reshape(x, -1) for x in tree_flatten(out)[0]]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def chosen_method(method, bounds, constraints):
    """The method SciPy will run (its own choice when ``method`` is None), lower case."""
    if callable(method):
        return None
    if method is not None:
        return method.lower()
    if constraints:
        return "slsqp"
    return "bfgs" if bounds is None else "l-bfgs-b"


# ---------------------------------------------------------------------------- the pieces

def scalar(value):
    """The objective's value as a Python float: a one-element array (shape ``(1,)``)
    counts as a scalar, as it does for ``pb.grad`` (NumPy 2 refuses ``float`` of it)."""
    if np.size(value) != 1:
        raise TypeError(
            f"pullback: minimize needs an objective returning a real scalar; it returned a "
            f"value of shape {np.shape(value)}. Reduce it (np.sum, np.mean) first"
        )
    return float(np.reshape(value, ()))


def value_only(fun, jac):
    """``fun`` as a function of the value alone: with ``jac=True`` it returns ``(value,
    gradient)``, and the second derivatives differentiate the value."""
    if jac is not True:
        return fun

    def value_of(*args):
        return fun(*args)[0]

    return value_of


def objective(fun, flat, jac):
    """SciPy's ``fun`` and ``jac``: value and gradient in one pass when ``jac`` is None,
    else the user's own, seeing ``x`` in ``x0``'s structure."""
    if jac is None:
        def flat_fun(z, *args):
            return fun(flat.unravel(z), *args)

        flat_fun.__qualname__ = getattr(fun, "__qualname__", "fun")  # (errors name fun)
        value_and_gradient = value_and_grad(flat_fun, losscheck=False)

        def fun_and_grad(z, *args):
            try:
                value, g = value_and_gradient(z, *args)
            except TypeError as error:
                if "needs a scalar output" not in str(error):
                    raise
                raise TypeError(f"{error} For a sum of squares of residuals r(x), minimize "
                                "np.sum(r(x) ** 2), or use scipy.optimize.least_squares.") from None
            return scalar(value), np.asarray(g, dtype=np.float64)

        return fun_and_grad, True
    if jac is True:
        def fun_and_user_grad(z, *args):
            result = fun(flat.unravel(z), *args)
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise TypeError(
                    "pullback: minimize with jac=True needs fun to return (value, gradient); "
                    f"it returned {type(result).__name__}. Leave jac out, and pullback "
                    "computes the gradient.")
            value, g = result
            return scalar(plain(value)), flat.ravel(g)

        return fun_and_user_grad, True

    def fun_flat(z, *args):
        return fun(flat.unravel(z), *args)

    if callable(jac):
        def user_jac(z, *args):
            return flat.ravel(jac(flat.unravel(z), *args))

        return fun_flat, user_jac
    return fun_flat, (None if jac is False else jac)  # a finite-difference scheme: SciPy's


def second_derivatives(fun, flat, method, jac, hess, hessp, HessianUpdateStrategy):
    """SciPy's ``hess`` and ``hessp``: the user's (seeing ``x`` and ``p`` in ``x0``'s
    structure), else pullback's for the methods that use them."""
    if hess is not None or hessp is not None:
        if callable(hess) and not isinstance(hess, HessianUpdateStrategy):
            user_hess = hess

            def hess(z, *args):
                H = user_hess(flat.unravel(z), *args)
                return np.reshape(H, (flat.size, flat.size)) if isinstance(H, np.ndarray) else H

        if callable(hessp):
            user_hessp = hessp

            def hessp(z, p, *args):
                return flat.ravel(user_hessp(flat.unravel(z), flat.unravel(p), *args))

        return hess, hessp
    if isinstance(jac, str) or jac is False:  # finite differences asked for: none of ours
        return None, None
    fun = value_only(fun, jac)
    if method in HESSP_METHODS:
        def hessp_from_pullback(z, p, *args):
            (Hp,) = hvp(lambda v: fun(flat.unravel(v), *args), (z,), (p,))
            return np.asarray(Hp, dtype=np.float64)

        return None, hessp_from_pullback
    if method in HESS_METHODS:
        def hess_from_pullback(z, *args):
            return np.asarray(hessian(lambda v: fun(flat.unravel(v), *args))(z),
                              dtype=np.float64)

        return hess_from_pullback, None
    return None, None


def flat_bounds(bounds, flat, Bounds):
    """``bounds`` as SciPy takes them: as given for an ``x0`` of one array or a ``Bounds``;
    from a pytree of ``(lo, hi)`` pairs (or ``Bounds``) otherwise."""
    if (flat.single and isinstance(bounds, (tuple, list)) and bounds
            and all(b is None or np.ndim(b) == 0 for b in bounds)):
        raise ValueError(
            f"pullback: bounds={tuple(bounds)!r} is not SciPy's form: it takes one (lo, hi) pair "
            "per variable. For the same bounds on every variable write "
            "scipy.optimize.Bounds(lo, hi), or [(lo, hi)] * x0.size")
    if bounds is None or flat.single or isinstance(bounds, Bounds):
        return bounds
    lower, upper = [], []
    for i, entry in enumerate(flat.match(bounds, "bounds")):
        if entry is None:
            entry = (None, None)
        elif hasattr(entry, "lb") and hasattr(entry, "ub"):
            entry = (entry.lb, entry.ub)
        if not isinstance(entry, (tuple, list)) or len(entry) != 2:
            raise ValueError(
                f"pullback: bounds for a pytree x0 hold a (lo, hi) pair for each leaf "
                f"(None for no bound); leaf {i} got {entry!r}"
            )
        for side, fill, out in ((entry[0], -np.inf, lower), (entry[1], np.inf, upper)):
            side = np.asarray(fill if side is None else side, dtype=np.float64)
            if side.size == 1:  # Bounds(0.0, 1.0) holds its scalars in arrays of shape (1,)
                side = side.reshape(())
            out.append(np.broadcast_to(side, flat.shapes[i]).ravel())
    return Bounds(np.concatenate(lower), np.concatenate(upper))


def constraint_jacobian(cfun, flat):
    def jac_from_pullback(z, *args):
        J = jacobian(lambda v: ravel_output(cfun(flat.unravel(v), *args)))(z)
        return np.asarray(J, dtype=np.float64)

    return jac_from_pullback


def flat_constraint(c, flat, optimize):
    """One constraint with its functions on the flat vector; its ``jac`` from pullback
    when it has none (for a ``NonlinearConstraint``: when it has the default '2-point')."""
    if isinstance(c, dict):
        if "fun" not in c:
            raise ValueError("pullback: a constraint dict needs a 'fun' (and a 'type')")
        c = dict(c)
        cfun, cjac = c["fun"], c.get("jac")
        c["fun"] = lambda z, *args: np.asarray(ravel_output(cfun(flat.unravel(z), *args)))
        if cjac is None:
            c["jac"] = constraint_jacobian(cfun, flat)
        else:
            c["jac"] = lambda z, *args: cjac(flat.unravel(z), *args)
        return c
    if isinstance(c, optimize.NonlinearConstraint):
        cfun, cjac, chess = c.fun, c.jac, c.hess
        c = copy.copy(c)
        c.fun = lambda z: np.asarray(ravel_output(cfun(flat.unravel(z))))
        if cjac is None or (isinstance(cjac, str) and cjac == "2-point"):
            c.jac = constraint_jacobian(cfun, flat)
        elif callable(cjac):
            c.jac = lambda z: cjac(flat.unravel(z))
        if callable(chess) and not isinstance(chess, optimize.HessianUpdateStrategy):
            c.hess = lambda z, v: chess(flat.unravel(z), v)
        return c
    return c  # LinearConstraint and the rest act on the flat vector already


def flat_callback(callback, flat):
    """``callback`` seeing ``x`` in ``x0``'s structure, with SciPy's two signatures."""
    if callback is None:
        return None
    try:
        names = set(inspect.signature(callback).parameters)
    except (TypeError, ValueError):
        names = set()
    if names == {"intermediate_result"}:
        def callback_result(intermediate_result):
            result = copy.copy(intermediate_result)
            result.x = flat.result(intermediate_result.x)
            return callback(intermediate_result=result)

        return callback_result

    def callback_x(xk, *rest):
        return callback(flat.result(xk), *rest)

    return callback_x


# ---------------------------------------------------------------------------- minimize

def minimize(fun: Callable[..., Any], x0: Any, args: Any = (),
             method: str | Callable[..., Any] | None = None,
             jac: Callable[..., Any] | str | bool | None = None, hess: Any = None,
             hessp: Callable[..., Any] | None = None, bounds: Any = None,
             constraints: Any = (), tol: float | None = None,
             callback: Callable[..., Any] | None = None,
             options: dict[str, Any] | None = None) -> OptimizeResult:
    """``scipy.optimize.minimize`` with exact derivatives from pullback. It takes SciPy's
    arguments and returns SciPy's ``OptimizeResult``.

    - ``fun(x, *args)`` is plain NumPy code returning a real scalar; ``args`` pass through
      and are not differentiated.
    - ``x0`` is an array, a number, a list of numbers (an array, as in SciPy) or a pytree
      of arrays (dicts, tuples, lists). SciPy works on one float64 vector: the leaves of
      ``pb.tree_flatten(x0)``, each raveled. ``fun``, ``callback``, user ``jac``/``hess``/
      ``hessp`` and constraint functions see ``x`` in ``x0``'s structure and dtypes;
      ``result.x`` has them too, and ``result.x_flat`` is the vector. The rest of the
      result (``jac``, ``hess_inv``, ...) is SciPy's, on the vector.
    - ``jac=None``: value and gradient in one pass (``pb.value_and_grad``, passed with
      SciPy's ``jac=True``). A callable ``jac``, ``jac=True`` (``fun`` returns ``(value,
      gradient)``, the gradient in ``x0``'s structure) or a finite-difference scheme
      ('2-point', ...) is used as given.
    - Second derivatives, unless ``hess`` or ``hessp`` is given (or ``jac`` asks for finite
      differences): ``hessp`` from ``pb.hvp`` for Newton-CG, trust-ncg, trust-krylov and
      trust-constr (``H`` is never formed), ``hess`` from ``pb.hessian`` for trust-exact
      and dogleg, which need the matrix. A user ``hess`` returns the matrix on the vector.
    - ``bounds``: as in SciPy for an ``x0`` of one array. For a pytree ``x0``: a
      ``scipy.optimize.Bounds`` on the vector, or a pytree of ``x0``'s structure holding a
      ``(lo, hi)`` pair at each leaf (``None`` for no bound; scalars or arrays that
      broadcast to the leaf).
    - ``constraints``: dicts and ``NonlinearConstraint`` s whose ``fun`` takes ``x`` in
      ``x0``'s structure (any output pytree, raveled into one vector); one with no
      ``jac`` (a ``NonlinearConstraint`` with its default '2-point') gets its Jacobian
      from ``pb.jacobian``. A given constraint ``jac`` returns the matrix on the vector.
      ``LinearConstraint`` s act on the vector.

    >>> rosen = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    >>> result = pb.minimize(rosen, np.array([-1.2, 1.0]), method="BFGS")
    >>> print(np.round(result.x, 6))
    [1. 1.]
    >>> result = pb.minimize(lambda p: np.sum((p["w"] - 3.0) ** 2) + p["b"] ** 2,
    ...                      {"w": np.zeros(2), "b": 1.0}, method="trust-exact")
    >>> print(np.round(result.x["w"], 6), round(result.x["b"], 6))
    [3. 3.] 0.0
    """
    try:
        from scipy import optimize
    except ImportError:
        raise ImportError(
            "pullback: minimize needs SciPy; install it with pip install pullback[scipy]"
        ) from None
    flat = Flat(x0)
    if not isinstance(args, tuple):
        args = (args,)
    if isinstance(constraints, (dict, optimize.NonlinearConstraint, optimize.LinearConstraint)):
        constraints = (constraints,)
    method_name = chosen_method(method, bounds, constraints)
    if method_name in DERIVATIVE_FREE_METHODS and jac is None:
        jac = False  # the method uses no gradient: none to supply
    scipy_fun, scipy_jac = objective(fun, flat, jac)
    scipy_hess, scipy_hessp = second_derivatives(fun, flat, method_name, jac, hess, hessp,
                                                 optimize.HessianUpdateStrategy)
    result = optimize.minimize(
        scipy_fun, flat.x0, args=args, method=method, jac=scipy_jac, hess=scipy_hess,
        hessp=scipy_hessp, bounds=flat_bounds(bounds, flat, optimize.Bounds),
        constraints=[flat_constraint(c, flat, optimize) for c in constraints], tol=tol,
        callback=flat_callback(callback, flat), options=options,
    )
    result.x_flat = result.x
    result.x = flat.result(result.x)
    return result
