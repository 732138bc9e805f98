"""scipy.linalg's eigh and decompositions: eigh (with eigvalsh), svd, qr, and the
composites of them (svdvals, eigvalsh, norm, pinv, lstsq, lu, block_diag). Each is
intercepted in ``scipy.linalg`` as in linalg.py.
"""

import numpy as np
import scipy.linalg

from ...extend import NoRuleError, composite, plain, rrule, shape_of, zeros_on
from .._util import as_array, intercept
from ..numpy._linalg import (
    H,
    column_dots,
    diag_embed,
    eigh_vjp,
    hermitian_adjoint,
    is_zero,
    mT,
    real,
    sandwich,
    svdvals_vjp,
    used_columns,
)
from ..numpy.linalg_decomp import _fold_complement, _qr_vjp, _qr_wide_vjp, _svd_vjp
from .linalg import _empty, _kept, _lu_parts, _vector, lu_factor

eigh = intercept(scipy.linalg, "eigh")


# ---------------------------------------------------------------------------- eigh

@rrule(eigh, batched=True)
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


@rrule(svd, batched=True)
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


@rrule(qr, batched=True)
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
