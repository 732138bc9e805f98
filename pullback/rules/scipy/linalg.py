"""Rules for scipy.linalg. SciPy's functions are plain Python that NumPy's dispatch never
sees, so each one is intercepted (replaced in ``scipy.linalg`` by a
``pullback.primitive``) and its rule registered for the wrapper; rules call the wrappers,
so that their pullbacks are differentiable again.

Functions that read part of a matrix (a triangle, a diagonal, the factor in a
``cho_factor`` or ``lu_factor`` result) give cotangents on that part only, as in
numpy.linalg (see linalg_decomp). This module holds the solves and factorizations
(solve_triangular, cholesky, cho_factor/cho_solve, lu_factor/lu_solve, det, inv, solve,
solve_banded); the matrix functions (expm, logm, sqrtm, cosm ..., solve_sylvester) are in
linalg_functions.py, and eigh and the decompositions (svd, qr, lu, ...) in linalg_decomp.py.
"""

import functools
import math

import numpy as np
import scipy.linalg

from ...extend import NoRuleError, plain, rrule, shape_of
from .._util import as_array, conj_if_complex, intercept
from ..numpy._linalg import (
    H,
    cholesky_vjp,
    columns,
    det_vjp,
    hermitian_adjoint,
    masked,
    mT,
    real,
    solve_vjp,
    uncolumns,
)

solve_triangular = intercept(scipy.linalg, "solve_triangular")
cho_factor = intercept(scipy.linalg, "cho_factor")
cho_solve = intercept(scipy.linalg, "cho_solve")
lu_factor = intercept(scipy.linalg, "lu_factor")
lu_solve = intercept(scipy.linalg, "lu_solve")
det = intercept(scipy.linalg, "det")
inv = intercept(scipy.linalg, "inv")
solve = intercept(scipy.linalg, "solve")
cholesky = intercept(scipy.linalg, "cholesky")
solve_banded = intercept(scipy.linalg, "solve_banded")


def _vector(b):
    return len(shape_of(b)) == 1


def _empty(a):
    """Whether ``a`` holds no entries (a stack of no matrices, a matrix with no rows):
    SciPy refuses some of these (lu_factor, solve_sylvester of a zero-size batch), and
    their cotangents are empty."""
    return 0 in shape_of(a)


def _triangle(n, lower, strict=False):
    """The mask of the lower (or upper) triangle, without the diagonal if ``strict``."""
    mask = np.tri(n, k=-1 if strict else 0)
    return mask if lower else mask.T


# ---------------------------------------------------------------------------- op(a) solves

_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def _adjoint_solve(solve_with, g, trans):
    """op(a)^-H g, where ``solve_with(rhs, t)`` solves op_t(a) x = rhs (0: a, 1: a^T,
    2: a^H)."""
    if trans == 0:
        return solve_with(g, 2)
    if trans == 2:
        return solve_with(g, 0)
    return conj_if_complex(solve_with(conj_if_complex(g), 0))  # (a^T)^-H = conj(a)^-1


def _op_solve_vjp(solve_with, x, g, trans, vector):
    """Cotangents ``(ga, gb)`` of ``x = op(a)^-1 b`` (ga for a itself, not op(a))."""
    gb = _adjoint_solve(solve_with, columns(g, vector), trans)
    gm = -np.matmul(gb, H(columns(x, vector)))
    ga = gm if trans == 0 else mT(gm) if trans == 1 else H(gm)
    return ga, uncolumns(gb, vector)


def _kept(kwargs):
    """A rule's keywords for SciPy's call with ``overwrite_a`` and ``overwrite_b`` off: the
    arrays are the recorded graph's (a pullback may read them), which SciPy must not
    overwrite; the result is the same."""
    return {k: False if k.startswith("overwrite_") else v for k, v in kwargs.items()}


@rrule(solve_triangular, batched=True)
def solve_triangular_rule(a, b, trans=0, lower=False, unit_diagonal=False, *args, **kwargs):
    ans = solve_triangular(a, b, trans, lower, unit_diagonal, *args, **_kept(kwargs))

    def solve_with(rhs, t):
        return solve_triangular(a, rhs, t, lower, unit_diagonal)

    def solve_triangular_pullback(g):
        ga, gb = _op_solve_vjp(solve_with, ans, g, _TRANS[trans], _vector(b))
        # only the triangle is read (and not the diagonal if it is taken as ones)
        return (masked(ga, _triangle(shape_of(a)[-1], lower, unit_diagonal)), gb) + (None,) * 5

    return ans, solve_triangular_pullback


# ---------------------------------------------------------------------------- cholesky

@rrule(cholesky, batched=True)
def cholesky_rule(a, lower=False, *args, **kwargs):
    ans = cholesky(a, lower, *args, **_kept(kwargs))

    def cholesky_pullback(g):
        return (cholesky_vjp(ans, g, lower),) + (None,) * 3

    return ans, cholesky_pullback


@rrule(cho_factor, batched=True)
def cho_factor_rule(a, lower=False, *args, **kwargs):
    ans = cho_factor(a, lower, *args, **_kept(kwargs))

    def cho_factor_pullback(g):
        # c holds the factor in one triangle and a's own entries in the other
        c, gc = ans[0], g[0]
        tri = _triangle(shape_of(c)[-1], lower)
        ga = cholesky_vjp(masked(c, tri), masked(gc, tri), lower) + masked(gc, 1 - tri)
        return (ga,) + (None,) * 3

    return ans, cho_factor_pullback


@rrule(cho_solve, batched=True)
def cho_solve_rule(c_and_lower, b, *args, **kwargs):
    c, lower = c_and_lower
    ans = cho_solve(c_and_lower, b, *args, **_kept(kwargs))
    lower = bool(np.all(lower))  # cho_factor of a stack gives one flag per matrix

    def cho_solve_pullback(g):
        # x = (l l^H)^-1 b, or (u^H u)^-1 b, with the factor read from c's triangle
        ga, gb = solve_vjp((c, lower), ans, g, _vector(b), solve=cho_solve)
        ga = ga + H(ga)
        tri = _triangle(shape_of(c)[-1], lower)
        factor = masked(c, tri)
        gc = masked(np.matmul(ga, factor) if lower else np.matmul(factor, ga), tri)
        return ((gc, None), gb) + (None,) * 2

    return ans, cho_solve_pullback


# ---------------------------------------------------------------------------- lu

def _row_permutation(piv):
    """P with P a = l u, from LAPACK's pivots (row i swapped with row piv[i], in turn)."""
    piv = np.asarray(plain(piv))
    n = piv.shape[-1]
    perm = np.broadcast_to(np.arange(n), piv.shape).copy()
    for idx in np.ndindex(piv.shape[:-1]):
        p = perm[idx]
        for i, j in enumerate(piv[idx]):
            p[i], p[j] = p[j], p[i]
    return np.eye(n)[perm]


def _lu_parts(lu):
    n = shape_of(lu)[-1]
    strict = np.tri(n, k=-1)
    return masked(lu, strict) + np.eye(n), masked(lu, 1 - strict), strict


@rrule(lu_factor, batched=True)
def lu_factor_rule(a, *args, **kwargs):
    m, n = shape_of(a)[-2:]
    if m != n:
        raise NoRuleError("pullback: scipy.linalg.lu_factor has a rule for square matrices only")
    ans = lu_factor(a, *args, **_kept(kwargs))

    def lu_factor_pullback(g):
        # P a = l u; with x = l^-1 P da u^-1: dl = l tril(x, -1), du = triu(x) u
        (lu, piv), glu = ans, g[0]
        low, up, strict = _lu_parts(lu)
        gx = (masked(np.matmul(H(low), masked(glu, strict)), strict)
              + masked(np.matmul(masked(glu, 1 - strict), H(up)), 1 - strict))
        gpa = np.matmul(np.matmul(H(np.linalg.inv(low)), gx), H(np.linalg.inv(up)))
        return (np.matmul(mT(_row_permutation(piv)), gpa),) + (None,) * 2

    return ans, lu_factor_pullback


@rrule(lu_solve, batched=True)
def lu_solve_rule(lu_and_piv, b, trans=0, *args, **kwargs):
    lu, piv = lu_and_piv
    ans = lu_solve(lu_and_piv, b, trans, *args, **_kept(kwargs))

    def solve_with(rhs, t):
        return lu_solve((lu, piv), rhs, t)

    def lu_solve_pullback(g):
        ga, gb = _op_solve_vjp(solve_with, ans, g, _TRANS[trans], _vector(b))
        # a = P^T l u
        low, up, strict = _lu_parts(lu)
        gpa = np.matmul(_row_permutation(piv), ga)
        glu = masked(np.matmul(gpa, H(up)), strict) + masked(np.matmul(H(low), gpa), 1 - strict)
        return ((glu, None), gb) + (None,) * 3

    return ans, lu_solve_pullback


# ---------------------------------------------------------------------------- det, inv, solve

@rrule(det, batched=True)
def det_rule(a, overwrite_a=False, check_finite=True):
    ans = det(a, False, check_finite)  # (overwrite_a=True: SciPy's LU wrote into a)

    def det_pullback(g):
        return (det_vjp(a, ans, g),) + (None,) * 2

    return ans, det_pullback


def _structured(a, assume_a, lower):
    """The matrix a solver with ``assume_a`` works with: the part of ``a`` it reads, with
    the other triangle filled in by symmetry."""
    n = shape_of(a)[-1]
    kind = _STRUCTURES[assume_a]
    if kind == "general":
        return a
    if kind in ("symmetric", "hermitian"):
        t = masked(a, _triangle(n, lower, strict=True))
        d = masked(a, np.eye(n))
        if kind == "hermitian":
            return t + H(t) + real(d)
        return t + mT(t) + d
    return masked(a, _MASKS[kind](n))


def _structure_adjoint(s, assume_a, lower):
    """The adjoint of ``_structured``: the cotangent of ``a`` from that of the matrix
    the solver works with."""
    kind = _STRUCTURES[assume_a]
    if kind == "general":
        return s
    if kind in ("symmetric", "hermitian"):
        return hermitian_adjoint(s, lower, conj=kind == "hermitian")
    return masked(s, _MASKS[kind](shape_of(s)[-1]))


# assume_a=None detects the structure from a's values, and a perturbation of a makes it
# general again; 'banded' detects the band from a's nonzeros: both are general here
_STRUCTURES = {
    None: "general", "general": "general", "gen": "general", "banded": "general",
    "diagonal": "diagonal", "tridiagonal": "tridiagonal",
    "upper triangular": "upper", "lower triangular": "lower",
    "sym": "symmetric", "symmetric": "symmetric",
    "her": "hermitian", "hermitian": "hermitian",
    "pos": "hermitian", "positive definite": "hermitian",
}
_MASKS = {
    "diagonal": np.eye,
    "tridiagonal": lambda n: np.tri(n, k=1) * np.tri(n, k=1).T,
    "upper": lambda n: np.tri(n).T,
    "lower": np.tri,
}


@functools.cache
def _inv_diagonal_keeps_the_rest():
    """Whether scipy.linalg.inv(a, assume_a='diagonal') returns a's off-diagonal entries
    unchanged (SciPy 1.17 does) rather than zeros."""
    return bool(inv(np.ones((2, 2)) + np.eye(2), assume_a="diagonal")[0, 1])


@rrule(inv, batched=True)
def inv_rule(a, *args, assume_a=None, lower=False, **kwargs):
    ans = inv(a, *args, assume_a=assume_a, lower=lower, **_kept(kwargs))

    def inv_pullback(g):
        y, rest = ans, None
        if assume_a == "diagonal" and _inv_diagonal_keeps_the_rest():
            eye = np.eye(shape_of(a)[-1])
            y, rest = masked(ans, eye), masked(g, 1 - eye)
        yh = H(y)
        ga = _structure_adjoint(-np.matmul(np.matmul(yh, g), yh), assume_a, lower)
        return (ga if rest is None else ga + rest), None, None

    return ans, inv_pullback


@rrule(solve, batched=True)
def solve_rule(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
               assume_a=None, transposed=False):
    a, b = as_array(a), as_array(b)  # (SciPy takes lists: the pullback reads a's dtype)
    ans = solve(a, b, lower, False, False, check_finite, assume_a, transposed)

    def solve_pullback(g):
        m = _structured(a, assume_a, lower)
        ga, gb = solve_vjp(H(mT(m) if transposed else m), ans, g, _vector(b))
        ga = _structure_adjoint(mT(ga) if transposed else ga, assume_a, lower)
        return (ga, gb) + (None,) * 6

    return ans, solve_pullback


# ---------------------------------------------------------------------------- banded solves

def _shift(v, d, axis):
    """``v`` moved by ``d`` along ``axis`` (counted from the end): out[j] = v[j + d], zero
    where j + d is outside."""
    n = shape_of(v)[axis]
    d = max(-n, min(n, d))
    tail = (slice(None),) * (-axis - 1)
    kept = v[(Ellipsis, slice(max(d, 0), n + min(d, 0))) + tail]
    widths = [(0, 0)] * len(shape_of(v))
    widths[axis] = (max(-d, 0), max(d, 0))
    return np.pad(kept, widths)


def _band_transpose(ab, lower, upper):
    """The banded storage of A^T from that of A: ab[u + i - j, j] = A[i, j] becomes
    abT[l + j - i, i], so row r of abT is row l + u - r of ab moved by r - l."""
    rows = [_shift(ab[lower + upper - r], r - lower, -1) for r in range(lower + upper + 1)]
    return np.stack(rows)


@rrule(solve_banded, batched=False)
def solve_banded_rule(l_and_u, ab, b, *args, **kwargs):
    """Derivatives with respect to the band ab (the entries inside the matrix) and b."""
    ab, b = as_array(ab), as_array(b)  # (SciPy takes lists: the pullback slices ab)
    ans = solve_banded(l_and_u, ab, b, *args, **kwargs)
    lower, upper = (int(k) for k in l_and_u)

    def solve_banded_pullback(g):
        # b = A x: gb = A^-H g and gA = -gb x^H, read on the band
        gb = solve_banded((upper, lower), conj_if_complex(_band_transpose(ab, lower, upper)),
                          g, *args, **kwargs)

        def solve_banded_ab():
            # (the sizes written out: a reshape to (0, -1) is ambiguous for an empty b)
            n, k = shape_of(ans)[0], math.prod(shape_of(ans)[1:])
            x = np.reshape(ans, (n, k))
            gbc = np.reshape(gb, (n, k))
            xc = conj_if_complex(x)
            # row r holds A[j + r - u, j]
            rows = [-np.sum(_shift(gbc, r - upper, -2) * xc, axis=-1)
                    for r in range(lower + upper + 1)]
            return np.stack(rows)

        return (None, solve_banded_ab, gb) + (None,) * len(args)

    return ans, solve_banded_pullback
