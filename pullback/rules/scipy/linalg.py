"""Rules for scipy.linalg. SciPy's functions are plain Python that NumPy's dispatch never
sees, so each one is intercepted (replaced in ``scipy.linalg`` by a
``pullback.primitive``) and its rule registered for the wrapper; rules call the wrappers,
so that their pullbacks are differentiable again.

Functions that read part of a matrix (a triangle, a diagonal, the factor in a
``cho_factor`` or ``lu_factor`` result) give cotangents on that part only, as in
numpy.linalg (see linalg_decomp).
"""

import functools
import math

import numpy as np
import scipy.linalg

from ...extend import NoRuleError, composite, plain, rrule, shape_of, zeros_on
from .._util import as_array, conj_if_complex, intercept, replace_when_tracked
from ..numpy._linalg import (
    H,
    cholesky_vjp,
    column_dots,
    columns,
    det_vjp,
    diag_embed,
    eigh_vjp,
    hermitian_adjoint,
    is_zero,
    masked,
    mT,
    real,
    sandwich,
    solve_vjp,
    svdvals_vjp,
    uncolumns,
    used_columns,
)
from ..numpy.linalg_decomp import _fold_complement, _qr_vjp, _qr_wide_vjp, _svd_vjp

solve_triangular = intercept(scipy.linalg, "solve_triangular")
cho_factor = intercept(scipy.linalg, "cho_factor")
cho_solve = intercept(scipy.linalg, "cho_solve")
lu_factor = intercept(scipy.linalg, "lu_factor")
lu_solve = intercept(scipy.linalg, "lu_solve")
expm = intercept(scipy.linalg, "expm")
sqrtm = intercept(scipy.linalg, "sqrtm")
logm = intercept(scipy.linalg, "logm")
solve_sylvester = intercept(scipy.linalg, "solve_sylvester")
eigh = intercept(scipy.linalg, "eigh")
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


@rrule(solve_triangular)
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

@rrule(cholesky)
def cholesky_rule(a, lower=False, *args, **kwargs):
    ans = cholesky(a, lower, *args, **_kept(kwargs))

    def cholesky_pullback(g):
        return (cholesky_vjp(ans, g, lower),) + (None,) * 3

    return ans, cholesky_pullback


@rrule(cho_factor)
def cho_factor_rule(a, lower=False, *args, **kwargs):
    ans = cho_factor(a, lower, *args, **_kept(kwargs))

    def cho_factor_pullback(g):
        # c holds the factor in one triangle and a's own entries in the other
        c, gc = ans[0], g[0]
        tri = _triangle(shape_of(c)[-1], lower)
        ga = cholesky_vjp(masked(c, tri), masked(gc, tri), lower) + masked(gc, 1 - tri)
        return (ga,) + (None,) * 3

    return ans, cho_factor_pullback


@rrule(cho_solve)
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


@rrule(lu_factor)
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


@rrule(lu_solve)
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


# ---------------------------------------------------------------------------- matrix functions

def _frechet_adjoint(f, a, g):
    """L_f(a^H, g), the adjoint of the Fréchet derivative of a matrix function f with real
    Taylor coefficients (exp, log, sqrt), from f([[x, e], [0, x]]) = [[f(x), L_f(x, e)],
    [0, f(x)]] (Higham, Functions of Matrices, 2008, Thm 3.6); differentiable again."""
    n = shape_of(a)[-1]
    gshape = shape_of(g)
    ah = np.broadcast_to(H(a), gshape)
    zero = np.zeros(gshape, dtype=np.result_type(plain(a), plain(g)))
    top = np.concatenate([ah, g], axis=-1)
    bottom = np.concatenate([zero, ah], axis=-1)
    return f(np.concatenate([top, bottom], axis=-2))[..., :n, n:]


@rrule(expm)
def expm_rule(A):
    A = as_array(A)  # (SciPy takes a list of numbers: the pullback reads A's dtype)

    def expm_pullback(g):
        return (_frechet_adjoint(expm, A, g),)

    return expm(A), expm_pullback


# SciPy computes the trigonometric and hyperbolic matrix functions from its own expm, which
# the interception does not reach (a tracked value there met SciPy's compiled helpers). So
# scipy.linalg.cosm and the rest are replaced by the same formulas written with the expm
# that has a rule, for tracked input (plain input goes to SciPy's function): no rule of
# their own, as a composite. For a real matrix, cos and sin are the real and imaginary
# parts of exp(iA); tan and tanh are the solves SciPy makes.
def cosm_impl(A):
    if np.iscomplexobj(plain(A)):
        return 0.5 * (expm(1j * A) + expm(-1j * A))
    return np.real(expm(1j * A))


def sinm_impl(A):
    if np.iscomplexobj(plain(A)):
        return -0.5j * (expm(1j * A) - expm(-1j * A))
    return np.imag(expm(1j * A))


def coshm_impl(A):
    return 0.5 * (expm(A) + expm(-A))


def sinhm_impl(A):
    return 0.5 * (expm(A) - expm(-A))


def _through_expm(name, impl):
    replace_when_tracked(scipy.linalg, name, impl)


for _name, _impl in (("cosm", cosm_impl), ("sinm", sinm_impl), ("coshm", coshm_impl),
                     ("sinhm", sinhm_impl),
                     ("tanm", lambda A: np.linalg.solve(cosm_impl(A), sinm_impl(A))),
                     ("tanhm", lambda A: np.linalg.solve(coshm_impl(A), sinhm_impl(A)))):
    _through_expm(_name, _impl)


@rrule(logm)
def logm_rule(A, *args, **kwargs):
    A = as_array(A)

    def logm_pullback(g):
        return (_frechet_adjoint(logm, A, g),) + (None,) * 2

    return logm(A, *args, **kwargs), logm_pullback


@rrule(sqrtm)
def sqrtm_rule(A, *args, **kwargs):
    ans = sqrtm(A, *args, **kwargs)

    def sqrtm_pullback(g):
        if _empty(g):  # no matrices (SciPy's solve_sylvester refuses an empty stack)
            return (None,) * 4
        # x x = a: x dx + dx x = da, so ga solves x^H ga + ga x^H = g
        xh = H(ans)
        return (solve_sylvester(xh, xh, g),) + (None,) * 3

    return ans, sqrtm_pullback


@rrule(solve_sylvester)
def solve_sylvester_rule(a, b, q):
    ans = solve_sylvester(a, b, q)

    def solve_sylvester_pullback(g):
        # a x + x b = q: gq solves a^H gq + gq b^H = g; ga = -gq x^H, gb = -x^H gq
        gq = solve_sylvester(H(a), H(b), g)
        return -np.matmul(gq, H(ans)), -np.matmul(H(ans), gq), gq

    return ans, solve_sylvester_pullback


# ---------------------------------------------------------------------------- eigh

@rrule(eigh)
def eigh_rule(a, b=None, *, lower=True, eigvals_only=False, type=1, subset_by_index=None,
              subset_by_value=None, **kwargs):
    if type != 1 or subset_by_value is not None or (
            subset_by_index is not None and not eigvals_only):
        raise NoRuleError(
            "pullback: scipy.linalg.eigh (and eigvalsh) has a rule for type=1 problems, "
            "with all eigenvalues, or a subset_by_index of the eigenvalues alone "
            "(eigvals_only=True, as eigvalsh computes); for subset_by_value or the "
            "eigenvectors of a subset, compute them all and select: w, v = eigh(a); "
            "v[:, lo:hi + 1]"
        )
    ans = eigh(a, b, lower=lower, eigvals_only=eigvals_only, subset_by_index=subset_by_index,
               **_kept(kwargs))

    def eigh_pullback(g):
        # a v = b v diag(w), v^H b v = I. With k = v^H da v - v^H db v diag(w): dw = diag(k)
        # and dv = v c, c = F * k - diag(v^H db v) / 2 (b = I: numpy.linalg.eigh's rule)
        if eigvals_only:
            (w, v), gw, gv = eigh(a, b, lower=lower), g, None
            n = shape_of(a)[-1]
            if subset_by_index is not None and n:  # eigenvalues lo .. hi of all n
                lo, hi = (int(i) for i in subset_by_index)
                gw = np.pad(g, [(0, 0)] * (len(shape_of(g)) - 1) + [(lo, n - 1 - hi)])
        else:
            (w, v), (gw, gv) = ans, g
        gk = eigh_vjp(w, v, gw, gv, "scipy.linalg.eigh")
        ga = hermitian_adjoint(sandwich(v, gk), lower)
        if b is None:
            return ga, None
        gkb = -gk * np.expand_dims(w, -2)
        if gv is not None and not is_zero(gv):
            gkb = gkb - diag_embed(real(column_dots(v, gv))) / 2
        return ga, hermitian_adjoint(sandwich(v, gkb), lower)

    return ans, eigh_pullback


# ---------------------------------------------------------------------------- det, inv, solve

@rrule(det)
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


@rrule(inv)
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


@rrule(solve)
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


# ---------------------------------------------------------------------------- decompositions
# scipy.linalg's svd, qr and eig compute what numpy.linalg's do, with their own keywords and
# output forms: their rules take SciPy's values (the signs and the order its LAPACK call
# picks) and numpy.linalg's pullbacks (linalg_decomp). The functions that return values
# alone (svdvals, eigvals, eigvalsh, norm, pinv, lstsq) are composites of those, and lu and
# block_diag of lu_factor and np.block.

svd = intercept(scipy.linalg, "svd")
svdvals = intercept(scipy.linalg, "svdvals")
qr = intercept(scipy.linalg, "qr")
eigvalsh = intercept(scipy.linalg, "eigvalsh")
norm = intercept(scipy.linalg, "norm")
pinv = intercept(scipy.linalg, "pinv")
lstsq = intercept(scipy.linalg, "lstsq")
lu = intercept(scipy.linalg, "lu")
block_diag = intercept(scipy.linalg, "block_diag")


@rrule(svd)
def svd_rule(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
             lapack_driver="gesdd"):
    ans = svd(a, full_matrices, compute_uv, check_finite=check_finite,
              lapack_driver=lapack_driver)
    m, n = shape_of(a)[-2:]

    def svd_pullback(g):
        if not compute_uv:
            return (svdvals_vjp(a, g),) + (None,) * 5
        (u, s, vh), (gu, gs, gvh) = ans, g
        if full_matrices and m != n:
            k = min(m, n)
            u, gu = _fold_complement(u, gu, k)
            v, gv = _fold_complement(H(vh), H(gvh), k)
            vh, gvh = H(v), H(gv)
        return (_svd_vjp(u, s, vh, gu, gs, gvh),) + (None,) * 5

    return ans, svd_pullback


def svdvals_impl(a, overwrite_a=False, check_finite=True):
    return np.linalg.svd(a, compute_uv=False)


def _column_permutation(p, n):
    """The matrix e with a[..., p] = a e, for SciPy's pivots ``p`` (plain)."""
    return mT(np.eye(n)[np.asarray(plain(p))])


@rrule(qr)
def qr_rule(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    a = as_array(a)  # (SciPy takes a list: the pullback slices and multiplies a)
    if mode not in ("full", "economic", "r"):
        raise NoRuleError(
            f"pullback: scipy.linalg.qr(mode={mode!r}) has no derivative rule (no rule for "
            "the Householder form); use mode='full', 'economic' or 'r'")
    ans = qr(a, mode=mode, pivoting=pivoting, check_finite=check_finite)
    m, n = shape_of(a)[-2:]
    k = min(m, n)

    def qr_pullback(g):
        if mode == "r":  # r alone, (m, n): q from the economic form, no cotangent
            q, r = qr(a, mode="economic", pivoting=pivoting)[:2]
            # (SciPy returns the tuple (r,) for a matrix, r itself for a stack of them)
            gr = g[0] if isinstance(ans, (tuple, list)) else g
            gq, gr = zeros_on(q, shape_of(q), float), gr[..., :k, :]
        else:
            (q, r), (gq, gr) = ans[:2], g[:2]
        if mode == "full" and m > n:
            # (the loss's use, from the plain cotangent, as for repeated eigenvalues)
            if np.any(used_columns(gq[..., n:], gq)):
                raise NoRuleError(
                    "pullback: scipy.linalg.qr(mode='full') has no derivative here: the last "
                    "m - n columns of q (a matrix with more rows than columns) are not "
                    "determined by a, and the loss uses them; use mode='economic' (as "
                    "np.linalg.qr's mode='reduced')")
            q, gq, r, gr = q[..., :n], gq[..., :n], r[..., :n, :], gr[..., :n, :]
        e = _column_permutation(ans[-1], n) if pivoting else None
        ap = a if e is None else np.matmul(a, e)  # q r = a[:, p]
        ga = _qr_vjp(q, r, gq, gr) if m >= n else _qr_wide_vjp(ap, q, r, gq, gr)
        return (ga if e is None else np.matmul(ga, mT(e)),) + (None,) * 5

    return ans, qr_pullback


def eigvalsh_impl(a, b=None, *, lower=True, overwrite_a=False, overwrite_b=False, type=1,
                  check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    return eigh(a, b, lower=lower, eigvals_only=True, type=type,
                subset_by_index=subset_by_index, subset_by_value=subset_by_value,
                driver=driver)


def norm_impl(a, ord=None, axis=None, keepdims=False, check_finite=True):
    return np.linalg.norm(a, ord, axis, keepdims)


def _cutoffs(a, atol, rtol):
    """SciPy's cutoff max(atol, rtol s_max) of pinv, as np.linalg.pinv's rcond (relative to
    s_max), from the plain singular values; with it, the rank."""
    s = np.linalg.svd(plain(a), compute_uv=False)
    top = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,))
    m, n = shape_of(a)[-2:]
    rtol = max(m, n) * np.finfo(s.dtype).eps if rtol is None else rtol
    cutoff = np.maximum(0.0 if atol is None else atol, rtol * top)
    rcond = np.where(top > 0, cutoff / np.where(top > 0, top, 1), rtol)[..., 0]
    return rcond, np.sum(s > cutoff, axis=-1)


def pinv_impl(a, *, atol=None, rtol=None, return_rank=False, check_finite=True):
    rcond, rank = _cutoffs(a, atol, rtol)
    ans = np.linalg.pinv(a, rcond)
    return (ans, rank) if return_rank else ans


def lstsq_impl(a, b, cond=None, overwrite_a=False, overwrite_b=False, check_finite=True,
               lapack_driver=None):
    a, b = as_array(a), as_array(b)  # (SciPy takes lists; a's dtype is read here)
    # every driver gives the minimum-norm solution; SciPy's default cutoff is the
    # machine precision, relative to the largest singular value (np.linalg's rcond)
    eps = np.finfo(np.result_type(plain(a), plain(b), np.float32)).eps
    x, residues, rank, s = np.linalg.lstsq(a, b, rcond=eps if cond is None else cond)
    # gelsy gives no residues and no singular values; SciPy answers an empty a (no rows
    # or no columns) before it picks a driver, as np.linalg does
    if lapack_driver == "gelsy" and not _empty(a):
        residues, s = zeros_on(x, (0,), plain(x).dtype), None  # (where x lives)
    elif _vector(b) and shape_of(residues) == (1,):
        residues = residues[0]  # SciPy's float for a vector b (np.linalg's (1,) array)
    return x, residues, int(rank), s


def lu_impl(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    a = as_array(a)
    m, n = shape_of(a)[-2:]
    if m != n:
        raise NoRuleError(
            "pullback: scipy.linalg.lu has a rule for square matrices only (through "
            "scipy.linalg.lu_factor's)")
    p = lu(plain(a), p_indices=p_indices)[0]  # SciPy's permutation, a constant
    if _empty(a):  # no matrices (lu_factor refuses an empty stack): empty factors
        low, up, _ = _lu_parts(a)
        return (low, up) if permute_l else (p, low, up)
    low, up, _ = _lu_parts(lu_factor(a)[0])  # a = p l u: the same factors as lu_factor's
    if permute_l:
        return np.matmul(_permutation(p, n) if p_indices else p, low), up
    return p, low, up


def _permutation(indices, n):
    """The matrix p of SciPy's row indices (p_indices=True): a = l[indices] u = p l u."""
    return np.eye(n)[indices]


def block_diag_impl(*arrs):
    arrs = [as_array(x) for x in arrs]  # (a block given as a list holding tracked values)
    # SciPy's call on the plain blocks first: its checks, its dtype and shape
    ans = block_diag(*(plain(x) for x in arrs))
    blocks = [np.atleast_2d(x) for x in arrs]
    rows = [shape_of(x)[0] for x in blocks]
    cols = [shape_of(x)[1] for x in blocks]
    grid = [[x.astype(ans.dtype) if i == j else np.zeros((r, c), ans.dtype)
             for j, c in enumerate(cols)] for i, (x, r) in enumerate(zip(blocks, rows))]
    return np.block(grid)


composite(svdvals, svdvals_impl)
composite(eigvalsh, eigvalsh_impl)
composite(norm, norm_impl)
composite(pinv, pinv_impl)
composite(lstsq, lstsq_impl)
composite(lu, lu_impl)
composite(block_diag, block_diag_impl)
