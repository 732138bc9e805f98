"""scipy.sparse matrices and arrays as constant linear operators: their products with
tracked dense arrays, and the solvers of scipy.sparse.linalg with a tracked right-hand side.

A product ``A @ x`` goes through SciPy's own dispatch (``A.dot(x)``, ``x @ A`` and ``A.T @
x`` too, as ``x @ A`` is ``A.__rmatmul__``: a tracked value leaves the operator to a sparse
operand, as NumPy's arrays do), which ends in one method per format: ``_matmul_vector`` for
a vector and ``_matmul_multivector`` for a matrix. Those are the primitives, one per class
that defines them (compressed csr/csc, coo, dia, bsr, dok, and the base class, which lil
uses): for ``y = A x`` the cotangent of ``x`` is ``A^H g``, computed by the same methods of
the adjoint, so that a pullback is differentiable again. The solvers are primitives too;
each pullback is the adjoint solve with the same operator (``A^H``, or ``A`` itself for
the symmetric solvers ``cg`` and ``minres``). The sparse matrix is a constant: a sparse
matrix holds plain numbers (``scipy.sparse`` from tracked nonzeros is refused, naming the
dense alternatives). ``splu(A)`` and ``spilu(A)`` return SciPy's factorization wrapped
(``SuperLU`` below), whose ``solve`` has a rule; ``factorized(A)`` returns that ``solve``.
"""

import math

import numpy as np
import scipy.sparse
import scipy.sparse._base
import scipy.sparse.linalg
import scipy.sparse.linalg._dsolve.linsolve

from ...extend import NoRuleError, not_implemented, primitive, rrule, shape_of
from .._util import conj_if_complex, intercept, replace_calls

_LinearOperator = scipy.sparse.linalg.LinearOperator
_ONE_DENSE = "the derivative in a dense matrix A (write np.linalg.solve or A @ x for one)"


def _classes(cls):
    yield cls
    for sub in cls.__subclasses__():
        yield from _classes(sub)


def _adjoint(A):
    """``A^H`` of a sparse matrix or array, a dense array or a LinearOperator."""
    if isinstance(A, _LinearOperator):
        return A.H
    if scipy.sparse.issparse(A) and A.ndim == 1:  # a 1-d sparse array: a row
        A = A.reshape((1, A.shape[0]))
    return (A.conj() if np.iscomplexobj(A) else A).T


def _columns(g, core_ndim, n):
    """``g`` (batch axes, then a vector of ``n`` or an ``(n, k)`` matrix) as one ``(n, m)``
    matrix whose columns are the vectors; ``_uncolumns`` undoes it."""
    if core_ndim == 1:
        return np.transpose(np.reshape(g, (-1, n)))
    return np.reshape(np.moveaxis(g, -2, 0), (n, -1))


def _uncolumns(y, batch, core):
    """The inverse of ``_columns``: ``y`` (an ``(n', m)`` matrix) back to ``batch + core``,
    ``core`` the shape of one right-hand side (a vector or an ``(n', k)`` matrix)."""
    if len(core) == 1:
        return np.reshape(np.transpose(y), batch + core)
    return np.moveaxis(np.reshape(y, (core[0],) + batch + core[1:]), 0, -2)


# ---------------------------------------------------------------------- products A @ x

def sparse_matmul_vector_rule(A, x):
    """``A._matmul_vector(x)``: A sparse (2-d, or a 1-d sparse array giving a scalar)."""
    ans = A._matmul_vector(x)

    def sparse_matmul_vector_pullback(g):
        batch = shape_of(g)[:len(shape_of(g)) - np.ndim(ans)]
        adjoint = _adjoint(A)
        cols = _columns(np.reshape(g, batch + (adjoint.shape[1],)), 1, adjoint.shape[1])
        return None, _uncolumns(adjoint._matmul_multivector(cols), batch, shape_of(x))

    return ans, sparse_matmul_vector_pullback


def sparse_matmul_multivector_rule(A, x):
    """``A._matmul_multivector(x)``: x an ``(n, k)`` matrix."""
    ans = A._matmul_multivector(x)

    def sparse_matmul_multivector_pullback(g):
        batch = shape_of(g)[:len(shape_of(g)) - np.ndim(ans)]
        adjoint = _adjoint(A)
        rows = (adjoint.shape[1], shape_of(x)[-1])
        cols = _columns(np.reshape(g, batch + rows), 2, rows[0])
        return None, _uncolumns(adjoint._matmul_multivector(cols), batch, shape_of(x))

    return ans, sparse_matmul_multivector_pullback


# every class of scipy.sparse that defines a product with a dense vector or matrix
PRODUCTS = {}
for _cls in _classes(scipy.sparse._base._spbase):
    for _name, _rule in (("_matmul_vector", sparse_matmul_vector_rule),
                         ("_matmul_multivector", sparse_matmul_multivector_rule)):
        if _name in vars(_cls) and (_cls, _name) not in PRODUCTS:
            PRODUCTS[_cls, _name] = intercept(_cls, _name)
            rrule(PRODUCTS[_cls, _name], batched=True)(_rule)


# ---------------------------------------------------------------------- direct solves

spsolve = intercept(scipy.sparse.linalg, "spsolve")


@rrule(spsolve, batched=True)
def spsolve_rule(A, b, permc_spec=None, use_umfpack=True):
    """With respect to the right-hand side b (a vector or a matrix), by the adjoint solve."""
    ans = spsolve(A, b, permc_spec, use_umfpack)

    def spsolve_pullback(g):
        core = shape_of(b)
        batch = shape_of(g)[:len(shape_of(g)) - np.ndim(ans)]
        adjoint = _adjoint(A).tocsc()
        cols = _columns(np.reshape(g, batch + core), len(core), core[0])
        solved = np.reshape(spsolve(adjoint, cols, permc_spec, use_umfpack), shape_of(cols))
        return not_implemented(_ONE_DENSE), _uncolumns(solved, batch, core), None, None

    return ans, spsolve_pullback


# splu(A) and spilu(A) return SciPy's SuperLU, whose compiled solve takes no tracked value;
# while they are intercepted they return a SuperLU whose solve is a primitive (factorized(A),
# which returns splu(A).solve, with it)

def _solve_with(lu, rhs, trans="N"):
    return lu.solve(rhs, trans)


superlu_solve = primitive(_solve_with)
superlu_solve.__qualname__ = superlu_solve.__name__ = "SuperLU.solve"


class SuperLU:
    """SciPy's ``SuperLU`` factorization (its attributes ``L``, ``U``, ``perm_r``, ``perm_c``,
    ``shape``, ``nnz``), whose ``solve`` differentiates in its right-hand side.

    A factorization made while nothing is differentiated is SciPy's own, whose compiled
    ``solve`` refuses tracked values: factor inside the function differentiated (or while a
    ``pb.param`` lives).

    >>> import scipy.sparse, scipy.sparse.linalg
    >>> A = scipy.sparse.csc_array([[2.0, 0.0], [1.0, 4.0]])
    >>> pb.grad(lambda b: np.sum(scipy.sparse.linalg.splu(A).solve(b)))(np.array([1.0, 1.0]))
    array([0.375, 0.25 ])
    """

    def __init__(self, lu):
        self.factors = lu  # SciPy's own object

    def __getattr__(self, name):
        return getattr(self.__dict__["factors"], name)

    def __repr__(self):
        return f"SuperLU({self.factors!r})"

    def solve(self, rhs, trans="N"):
        return superlu_solve(self.factors, rhs, trans)


def _returning_superlu(factorize):
    def factorization(A, *args, **kwargs):
        return SuperLU(factorize(A, *args, **kwargs))

    factorization.__name__ = factorization.__qualname__ = factorize.__name__
    factorization.__doc__ = factorize.__doc__
    factorization.__wrapped__ = factorize
    return factorization


for _name in ("splu", "spilu"):  # (scipy.sparse.linalg's and linsolve's: one function)
    replace_calls(scipy.sparse.linalg, _name, _returning_superlu)

# for op(A) x = b: the cotangent of b is op(A)^-H g
_ADJOINT_TRANS = {"N": "H", "H": "N", "T": "N"}


@rrule(superlu_solve, batched=True)
def superlu_solve_rule(lu, rhs, trans="N"):
    """With respect to the right-hand side (a vector or a matrix), by the adjoint solve."""
    ans = superlu_solve(lu, rhs, trans)

    def superlu_solve_pullback(g):
        core = shape_of(rhs)
        batch = shape_of(g)[:len(shape_of(g)) - np.ndim(ans)]
        cols = _columns(np.reshape(g, batch + core), len(core), core[0])
        if trans == "T":  # (A^T)^-H = conj(A)^-1
            solved = conj_if_complex(superlu_solve(lu, conj_if_complex(cols), "N"))
        else:
            solved = superlu_solve(lu, cols, _ADJOINT_TRANS[trans])
        return None, _uncolumns(solved, batch, core), None

    return ans, superlu_solve_pullback


# ---------------------------------------------------------------------- iterative solves

def _iterative(name, symmetric):
    """Intercept ``scipy.sparse.linalg.<name>`` (``x, info = name(A, b, x0, ...)``) and
    register its rule: the pullback solves with ``A^H`` (``A`` for a symmetric solver) and
    the same keywords, one batch slice at a time, as the solver takes one vector."""
    solver = intercept(scipy.sparse.linalg, name)

    def iterative_solve_rule(A, b, x0=None, **kwargs):
        ans = solver(A, b, x0, **kwargs)
        options = {k: v for k, v in kwargs.items() if k != "callback"}
        if not symmetric and options.get("M") is not None:
            options["M"] = _adjoint(scipy.sparse.linalg.aslinearoperator(options["M"]))
        adjoint = A if symmetric else _adjoint(scipy.sparse.linalg.aslinearoperator(A))

        def iterative_solve_pullback(g):
            gx = g[0] if isinstance(g, tuple) else g
            n = shape_of(ans[0])[-1]
            batch = shape_of(gx)[:-1]
            flat = np.reshape(gx, (math.prod(batch), n))
            try:
                solved = np.stack([solver(adjoint, flat[i], None, **options)[0]
                                   for i in range(math.prod(batch))])
            except (TypeError, NotImplementedError) as error:
                if symmetric or not isinstance(A, _LinearOperator):
                    raise
                raise NoRuleError(
                    f"pullback: the gradient of scipy.sparse.linalg.{name}(A, b) in b solves "
                    "with A's adjoint, and this LinearOperator A has none (SciPy: "
                    f"{error}); give it one: LinearOperator(shape, matvec, rmatvec=...)"
                ) from error
            return (not_implemented(_ONE_DENSE), np.reshape(solved, batch + shape_of(b)),
                    None)

        return ans, iterative_solve_pullback

    iterative_solve_rule.__name__ = iterative_solve_rule.__qualname__ = f"{name}_rule"
    rrule(solver, batched=True)(iterative_solve_rule)
    return solver


cg = _iterative("cg", symmetric=True)
minres = _iterative("minres", symmetric=True)
gmres = _iterative("gmres", symmetric=False)


# ---------------------------------------------------------------------- expm_multiply

expm_multiply = intercept(scipy.sparse.linalg, "expm_multiply")


@rrule(expm_multiply, batched=True)
def expm_multiply_rule(A, B, start=None, stop=None, num=None, endpoint=None, traceA=None):
    """``expm(t A) @ B`` with respect to B, at one time or on a grid of times (the output's
    first axis): the cotangent is ``sum_k expm(t_k A^H) g_k``."""
    ans = expm_multiply(A, B, start, stop, num, endpoint, traceA)
    grid = start is not None or stop is not None or num is not None or endpoint is not None

    def expm_multiply_pullback(g):
        core = shape_of(B)
        batch = shape_of(g)[:len(shape_of(g)) - np.ndim(ans)]
        adjoint = _adjoint(A)
        trace = None if traceA is None else np.conj(traceA)
        if not grid:
            cols = _columns(np.reshape(g, batch + core), len(core), core[0])
            out = expm_multiply(adjoint, cols, traceA=trace)
            return (not_implemented(_ONE_DENSE), _uncolumns(out, batch, core)) + (None,) * 5
        kwargs = {k: v for k, v in (("num", num), ("endpoint", endpoint)) if v is not None}
        times = np.linspace(0.0 if start is None else start, 1.0 if stop is None else stop,
                            **kwargs)
        total = None
        for k, t in enumerate(times):
            gk = np.reshape(g, batch + (len(times),) + core)[(Ellipsis, k) + (slice(None),)
                                                            * len(core)]
            cols = _columns(gk, len(core), core[0])
            out = expm_multiply(t * adjoint, cols,
                                 traceA=None if trace is None else t * trace)
            total = out if total is None else total + out
        return (not_implemented(_ONE_DENSE), _uncolumns(total, batch, core)) + (None,) * 5

    return ans, expm_multiply_pullback

