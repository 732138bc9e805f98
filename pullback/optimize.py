"""``minimize``: ``scipy.optimize.minimize`` with pullback's derivatives, over pytrees.

The objective's value and gradient come from one pass (``value_and_grad``, handed to SciPy
with ``jac=True``); Hessian-vector products (``hvp``) or the Hessian (``hessian``) go to the
methods that use second derivatives; constraints without a ``jac`` get theirs from
``jacobian``. SciPy is imported when ``minimize`` is called: it is an optional extra.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ._engine.arguments import fname_of
from ._engine.core import Tracked, plain
from .api import value_and_grad
from .tracker import Param
from .transforms import hessian, hvp, jacobian
from .tree import (
    LEAF,
    StructureMismatch,
    labels_of,
    leaves_by,
    tree_flatten,
    tree_unflatten,
)

if TYPE_CHECKING:
    from scipy.optimize import OptimizeResult

__all__ = ["minimize"]

# the methods that take a Hessian-vector product, and those that need the whole Hessian
HESSP_METHODS = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
HESS_METHODS = {"trust-exact", "dogleg"}
# the methods that use no derivatives at all
DERIVATIVE_FREE_METHODS = {"nelder-mead", "powell", "cobyla", "cobyqa"}
FINITE_DIFFERENCES = ("2-point", "3-point", "cs")  # SciPy's schemes for jac


def leaf_paths(treedef, path=""):
    """Where each leaf of ``treedef`` sits, in its order, as ``"['w'][0]"`` ("" for a leaf)."""
    if treedef is LEAF:
        return [path]
    return [p for label, child in zip(labels_of(treedef), treedef[1])
            for p in leaf_paths(child, path + label)]


def refuse_tracked(leaf, name):
    """A param or a tracked value in ``x0`` (plain values only: minimize is not
    differentiated through, and hands back plain values)."""
    if isinstance(leaf, Param):
        raise TypeError(f"pullback: {name} is a pb.param; minimize works on plain values: pass "
                        "the param's .value, and assign result.x back to .value after")
    if isinstance(leaf, Tracked) and not leaf.traced:
        raise TypeError(f"pullback: {name} is a tracked value (minimize was called inside "
                        "pb.grad or another transform), but minimize is not differentiated "
                        "through; start it from pb.stop_gradient(x0)")


class Flat:
    """The map between ``x0``'s structure and the float64 vector SciPy works on: the leaves
    of ``tree_flatten(x0)`` in order, each raveled in C order."""

    def __init__(self, x0):
        leaves, self.treedef = tree_flatten(x0)
        self.paths = leaf_paths(self.treedef)
        for leaf, path in zip(leaves, self.paths):
            refuse_tracked(leaf, f"x0{path}")
        if isinstance(x0, (list, tuple)) and not any(isinstance(x, np.ndarray) for x in leaves):
            try:
                leaves = [np.asarray(x0)]  # array_like, as SciPy
            except ValueError:
                raise ValueError(
                    f"pullback: x0 is a ragged {type(x0).__name__} (its rows differ in "
                    "length), neither an array nor a pytree of arrays; pass np.array(...) of "
                    "equal rows, or make each row an array ([np.array(row) for row in x0]) "
                    "for a pytree"
                ) from None
            self.treedef, self.paths = LEAF, [""]
        self.shapes, self.dtypes, self.arrays, self.stops = [], [], [], []
        self.scalars = [isinstance(leaf, np.generic) for leaf in leaves]  # NumPy scalars
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
            self.arrays.append(isinstance(leaf, (np.ndarray, np.generic)))
            stop += x.size
            self.stops.append(stop)
        self.size = stop
        if not stop:
            raise ValueError("pullback: minimize needs an x0 with at least one number in it "
                             "(an array, or a pytree of arrays); this x0 has none")
        parts = [np.ravel(np.asarray(plain(x), dtype=np.float64)) for x in leaves]
        self.x0 = parts[0] if len(parts) == 1 else np.concatenate(parts)
        self.single = len(leaves) == 1

    def ravel(self, tree, value):
        """A user's ``tree`` of ``x0``'s structure and shapes (a gradient, say) as one float64
        vector; ``value`` names it in messages ("the gradient jac returned")."""
        if tree is None:
            raise TypeError(f"pullback: {value} is None (is a return statement missing?); it "
                            "must have x0's structure and shapes")
        parts = []
        for leaf, path, shape in zip(self.match(tree, value), self.paths, self.shapes):
            try:
                x = np.asarray(plain(leaf))
            except (TypeError, ValueError):  # a ragged list, say
                x = np.array(None)
            if x.dtype.kind not in "biuf":
                got = (f"complex ({x.dtype})" if x.dtype.kind == "c" else
                       f"an array of dtype {x.dtype}" if isinstance(plain(leaf), np.ndarray)
                       else f"a {type(plain(leaf)).__name__}")
                raise TypeError(f"pullback: {value} is {got} at x0{path}; it must hold real "
                                f"numbers of x0{path}'s shape {shape}")
            x = x.astype(np.float64, copy=False)
            if x.shape != shape and not (x.size == 1 and math.prod(shape) == 1):
                raise ValueError(f"pullback: {value} has shape {x.shape} at x0{path}; x0{path} "
                                 f"has shape {shape}")
            parts.append(np.ravel(x))
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
        Python number comes back as a Python float, a NumPy scalar as a NumPy scalar of its
        floating-point dtype (np.float32(0.0) as an np.float32)."""
        z = np.array(z, dtype=np.float64)
        leaves, start = [], 0
        for scalar, shape, dtype, array, stop in zip(self.scalars, self.shapes, self.dtypes,
                                                     self.arrays, self.stops):
            x = z[start:stop].reshape(shape).astype(dtype)
            leaves.append(float(x) if not array else x[()] if scalar else x)
            start = stop
        return tree_unflatten(self.treedef, leaves)

    def match(self, tree, what):
        """The entries of ``tree``, a pytree of ``x0``'s structure whose leaves may be
        pairs, one per leaf of ``x0``."""
        try:
            return leaves_by(self.treedef, tree)
        except StructureMismatch as m:
            raise ValueError(f"pullback: {what} must have x0's structure; at x0{m.path} x0 "
                             f"has {m.want}, {what} " + ("is " if m.got.startswith("a ")
                                                         else "has ") + f"{m.got}") from None


def chosen_method(method, bounds, constraints):
    """The method SciPy will run (its own choice when ``method`` is None), lower case."""
    if callable(method):
        return None
    if isinstance(method, str):
        return method.lower()
    if method is not None:
        raise TypeError(f"pullback: minimize's method must be the name of a SciPy method (a "
                        f"str such as 'BFGS') or a callable, got {type(method).__name__}")
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
            return scalar(plain(value)), flat.ravel(g, "the gradient fun returned (jac=True)")

        return fun_and_user_grad, True

    def fun_flat(z, *args):
        return fun(flat.unravel(z), *args)

    if callable(jac):
        def user_jac(z, *args):
            return flat.ravel(jac(flat.unravel(z), *args), "the gradient jac returned")

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
                return flat.ravel(user_hessp(flat.unravel(z), flat.unravel(p), *args),
                                  "the product hessp returned")

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


def checked_jac(jac):
    """``jac`` as given, after refusing what SciPy would ignore without a word ('yes', 5)."""
    if isinstance(jac, np.bool_):
        return bool(jac)
    if (jac is None or isinstance(jac, bool) or callable(jac)
            or isinstance(jac, str) and jac in FINITE_DIFFERENCES):
        return jac
    raise (ValueError if isinstance(jac, str) else TypeError)(
        f"pullback: minimize's jac must be None (pullback computes the gradient), a callable "
        "returning the gradient in x0's structure, True (fun returns (value, gradient)), False, "
        f"or a finite-difference scheme '2-point', '3-point' or 'cs'; got {jac!r}")


def scipy_form_bounds(bounds):
    """Bounds for an ``x0`` of one array, in SciPy's form: one ``(lo, hi)`` pair per
    variable."""
    form = ("one (lo, hi) pair per variable. For the same bounds on every variable write "
            "scipy.optimize.Bounds(lo, hi), or [(lo, hi)] * x0.size")
    if isinstance(bounds, dict):
        raise TypeError("pullback: bounds is a dict, but x0 is an array: for an array x0, "
                        f"bounds are SciPy's, {form}")
    if not isinstance(bounds, (tuple, list, np.ndarray)) or np.ndim(bounds) == 0:
        raise TypeError(f"pullback: bounds={bounds!r} is not SciPy's form: it takes {form}")
    if len(bounds) and all(b is None or np.ndim(b) == 0 for b in bounds):
        raise ValueError(
            f"pullback: bounds={tuple(bounds)!r} is not SciPy's form: it takes {form}")
    for i, entry in enumerate(bounds):
        if not isinstance(entry, (tuple, list, np.ndarray)) or len(entry) != 2:
            raise ValueError(f"pullback: bounds hold one (lo, hi) pair per variable (None for "
                             f"no bound); entry {i} is {entry!r}")
    return bounds


def flat_bounds(bounds, flat, Bounds):
    """``bounds`` as SciPy takes them: in SciPy's form for an ``x0`` of one array, or a
    ``Bounds``; from a pytree of ``(lo, hi)`` pairs (or ``Bounds``) otherwise."""
    if bounds is None or isinstance(bounds, Bounds):
        return bounds
    if flat.treedef is LEAF:
        return scipy_form_bounds(bounds)
    lower, upper = [], []
    entries = flat.match(bounds, "bounds")
    for entry, path, shape in zip(entries, flat.paths, flat.shapes):
        if entry is None:
            entry = (None, None)
        elif hasattr(entry, "lb") and hasattr(entry, "ub"):
            entry = (entry.lb, entry.ub)
        if not isinstance(entry, (tuple, list)) or len(entry) != 2:
            raise ValueError(
                f"pullback: bounds for a pytree x0 hold a (lo, hi) pair for each leaf "
                f"(None for no bound); x0{path} got {entry!r}"
            )
        for name, side, fill, out in (("lower", entry[0], -np.inf, lower),
                                      ("upper", entry[1], np.inf, upper)):
            try:
                side = np.asarray(fill if side is None else side, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"pullback: the {name} bound for x0{path} is {side!r}; a "
                                "bound is a number, an array that broadcasts to the leaf, or "
                                "None") from None
            if side.size == 1:  # Bounds(0.0, 1.0) holds its scalars in arrays of shape (1,)
                side = side.reshape(())
            try:
                out.append(np.broadcast_to(side, shape).ravel())
            except ValueError:
                raise ValueError(f"pullback: the {name} bound for x0{path} has shape "
                                 f"{side.shape}, which does not broadcast to the leaf's shape "
                                 f"{shape}") from None
    return Bounds(np.concatenate(lower), np.concatenate(upper))


def constraint_vector(out, label, i):
    """A constraint's value (a pytree, possibly tracked) as one vector, after checking it
    holds real numbers (None, a str, an object array would reach SciPy as NaNs)."""
    leaves = tree_flatten(out)[0]
    for leaf in leaves:
        x = plain(leaf)
        if isinstance(x, Tracked):  # a pb.jit trace's: its values come later
            continue
        kind = np.asarray(x).dtype.kind if isinstance(x, (np.ndarray, np.generic, float, int)) \
            else "O"
        if kind not in "biuf":
            got = ("None (is a return statement missing?)" if x is None else "complex values"
                   if kind == "c" else f"an array of dtype {x.dtype}"
                   if isinstance(x, np.ndarray) else f"a {type(x).__name__}")
            raise TypeError(f"pullback: constraint {i}'s fun ({label}) returned {got}; it must "
                            "return a real number, an array of them, or a pytree of arrays")
    if not leaves:
        raise TypeError(f"pullback: constraint {i}'s fun ({label}) returned an empty "
                        f"{type(out).__name__}; it must return the constraint's values")
    parts = [np.reshape(x, -1) for x in leaves]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def constraint_jacobian(cfun, flat, i):
    label = fname_of(cfun)

    def jac_from_pullback(z, *args):
        def values(v):
            return constraint_vector(cfun(flat.unravel(v), *args), label, i)

        values.__qualname__ = f"constraint {i}'s fun ({label})"  # (jacobian's errors name it)
        return np.asarray(jacobian(values)(z), dtype=np.float64)

    return jac_from_pullback


def flat_constraint(c, i, flat, optimize):
    """Constraint ``i`` with its functions on the flat vector; its ``jac`` from pullback
    when it has none (for a ``NonlinearConstraint``: when it has the default '2-point')."""
    if isinstance(c, optimize.LinearConstraint):
        return c  # it acts on the flat vector already
    if not isinstance(c, (dict, optimize.NonlinearConstraint)):
        raise TypeError(f"pullback: constraint {i} is a {type(c).__name__}; a constraint is a "
                        "dict {'type': 'eq' or 'ineq', 'fun': ...}, a NonlinearConstraint or a "
                        "LinearConstraint (scipy.optimize's)")
    if isinstance(c, dict) and "fun" not in c:
        raise ValueError(f"pullback: constraint {i}, a dict, needs a 'fun' (and a 'type')")
    cfun, cjac = (c["fun"], c.get("jac")) if isinstance(c, dict) else (c.fun, c.jac)
    for key, given in (("fun", cfun), ("jac", cjac)):
        # (a NonlinearConstraint's jac may also be '2-point', ...: SciPy checks those)
        if not callable(given) and (key == "fun" or isinstance(c, dict) and given is not None):
            raise TypeError(
                f"pullback: constraint {i}'s {key} must be a function of x (in x0's structure), "
                f"got {type(given).__name__}"
                + ("; leave it out, and pullback computes it" if key == "jac" else ""))
    label = fname_of(cfun)

    def values(z, *args):
        return constraint_vector(cfun(flat.unravel(z), *args), label, i)

    if isinstance(c, dict):
        return dict(c, fun=values, jac=constraint_jacobian(cfun, flat, i) if cjac is None
                    else lambda z, *args: cjac(flat.unravel(z), *args))
    chess, c = c.hess, copy.copy(c)
    c.fun = values
    if cjac is None or (isinstance(cjac, str) and cjac == "2-point"):
        c.jac = constraint_jacobian(cfun, flat, i)
    elif callable(cjac):
        c.jac = lambda z: cjac(flat.unravel(z))
    if callable(chess) and not isinstance(chess, optimize.HessianUpdateStrategy):
        c.hess = lambda z, v: chess(flat.unravel(z), v)
    return c


def flat_constraints(constraints, flat, optimize):
    """``constraints`` (one or a list) as a list SciPy takes."""
    kinds = (dict, optimize.NonlinearConstraint, optimize.LinearConstraint)
    if isinstance(constraints, kinds):
        constraints = (constraints,)
    elif constraints is None:
        constraints = ()
    elif not isinstance(constraints, (tuple, list)):
        raise TypeError("pullback: minimize's constraints must be a constraint (a dict, a "
                        "NonlinearConstraint or a LinearConstraint) or a list of them, got "
                        f"{type(constraints).__name__}")
    return [flat_constraint(c, i, flat, optimize) for i, c in enumerate(constraints)]


def flat_callback(callback, flat, method):
    """``callback`` seeing ``x`` in ``x0``'s structure, with SciPy's two signatures:
    ``callback(intermediate_result)`` (by that name), or ``callback(x)`` (trust-constr:
    ``callback(x, state)``)."""
    if callback is None:
        return None
    if not callable(callback):
        raise TypeError("pullback: minimize's callback must be a function, called with x (in "
                        f"x0's structure) after each iteration; got {type(callback).__name__}")
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):
        signature = None
    if signature is not None and set(signature.parameters) == {"intermediate_result"}:
        def callback_result(intermediate_result):
            result = copy.copy(intermediate_result)
            result.x = flat.result(intermediate_result.x)
            return callback(intermediate_result=result)

        return callback_result
    takes = ("x", "state") if method == "trust-constr" else ("x",)
    try:
        if signature is not None:
            signature.bind(*takes)
    except TypeError:
        raise TypeError(
            f"pullback: minimize calls callback({', '.join(takes)}) after each iteration, x in "
            f"x0's structure (or callback(intermediate_result=...) when that is its one "
            f"parameter's name), but {fname_of(callback)} takes {signature}") from None

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
    arguments and returns SciPy's ``OptimizeResult``; ``method``, ``tol`` (the tolerance
    for termination), ``options`` (the method's own settings, a dict such as
    ``{"maxiter": 100}``) and ``callback`` are passed to SciPy as they are.

    - ``fun(x, *args)`` is plain NumPy code returning a real scalar; ``args`` pass through
      and are not differentiated.
    - ``x0`` is an array, a number, a list of numbers (an array, as in SciPy) or a pytree
      of arrays (dicts, tuples, lists); plain values, not a ``pb.param`` (pass its
      ``.value``). SciPy works on one float64 vector: the leaves of
      ``pb.tree_flatten(x0)``, each raveled. ``fun``, ``callback``, user ``jac``/``hess``/
      ``hessp`` and constraint functions see ``x`` in ``x0``'s structure and dtypes;
      ``result.x`` has them too, and ``result.x_flat`` is the vector. The rest of the
      result (``jac``, ``hess_inv``, ...) is SciPy's, on the vector.
    - ``jac=None``: value and gradient in one pass (``pb.value_and_grad``, passed with
      SciPy's ``jac=True``). A callable ``jac``, ``jac=True`` (``fun`` returns ``(value,
      gradient)``, the gradient in ``x0``'s structure) or a finite-difference scheme
      ('2-point', '3-point', 'cs') is used as given; anything else is refused. A gradient
      (or a ``hessp`` product) given in ``x0``'s structure is matched to it by key and
      position, and must have each leaf's shape.
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
    if not callable(fun):
        raise TypeError("pullback: minimize takes the objective function first, then x0 (got "
                        f"{type(fun).__name__})")
    flat = Flat(x0)
    if not isinstance(args, tuple):
        args = (args,)
    jac = checked_jac(jac)
    constraints = flat_constraints(constraints, flat, optimize)
    method_name = chosen_method(method, bounds, constraints)
    scipy_bounds = flat_bounds(bounds, flat, optimize.Bounds)
    scipy_callback = flat_callback(callback, flat, method_name)
    if method_name in DERIVATIVE_FREE_METHODS and jac is None:
        jac = False  # the method uses no gradient: none to supply
    scipy_fun, scipy_jac = objective(fun, flat, jac)
    scipy_hess, scipy_hessp = second_derivatives(fun, flat, method_name, jac, hess, hessp,
                                                 optimize.HessianUpdateStrategy)
    result = optimize.minimize(
        scipy_fun, flat.x0, args=args, method=method, jac=scipy_jac, hess=scipy_hess,
        hessp=scipy_hessp, bounds=scipy_bounds, constraints=constraints, tol=tol,
        callback=scipy_callback, options=options,
    )
    result.x_flat = result.x
    result.x = flat.result(result.x)
    return result
