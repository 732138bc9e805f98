"""numpy.linalg decompositions: cholesky, qr, eigh, eigvalsh, eig, eigvals, svd, svdvals.

Conventions. A function that reads one triangle of its input (cholesky, eigh, eigvalsh,
svd and pinv with ``hermitian=True``) gets a cotangent on that triangle only: it is the
derivative of what NumPy computes, and for an input built symmetric (``x + x.T``) it gives
the same gradient as the symmetric convention. Eigenvectors and singular vectors are
differentiated in the gauge where each one moves orthogonally to itself (their phases are
arbitrary), so only losses that do not depend on those phases have a meaningful gradient.
Repeated eigenvalues (singular values, equal to rounding) leave their vectors undetermined
(any basis of the eigenspace is one) and their derivative infinite, and no single finite
value is right (the limit depends on the loss): a loss that uses those vectors raises
NoRuleError, naming the call; a loss of the values alone, or of the vectors of distinct
values, skips those terms and keeps its gradient. So does a loss that uses the vector of a
zero singular value on the longer side of a rectangular matrix (or its phase in a complex
one), and eig of a defective matrix whose computed eigenvectors are singular.
"""

import numpy as np

from ...extend import NoRuleError, is_foreign, on_backend, plain, rrule, shape_of, zeros_on
from .._util import conj_if_complex, rrule_if_present, zero_of
from ._linalg import (
    H,
    cholesky_vjp,
    column_dots,
    diag_embed,
    eigh_vjp,
    gaps,
    hermitian_adjoint,
    inverse_gaps,
    is_zero,
    masked,
    real,
    refuse_repeated,
    refuse_unmoored,
    repeated,
    sandwich,
    svdvals_vjp,
    used_columns,
)

# ---------------------------------------------------------------------------- cholesky

@rrule(np.linalg.cholesky, batched=True)
def cholesky_rule(a, *, upper=False):
    # upper is NumPy 2's keyword: passed only where the caller asks for it
    ans = np.linalg.cholesky(a, upper=True) if upper else np.linalg.cholesky(a)

    def cholesky_pullback(g):
        return (cholesky_vjp(ans, g, lower=not upper),)

    return ans, cholesky_pullback


# ---------------------------------------------------------------------------- qr

def _qr_vjp(q, r, gq, gr):
    """The cotangent of ``a = q r`` (reduced) for m >= n:
    (gq + q copyltu(gr r^H - q^H gq)) r^-H, where copyltu copies the upper triangle onto
    the lower one as its conjugate (the diagonal real)."""
    n = shape_of(r)[-1]
    mid = np.matmul(gr, H(r)) - np.matmul(H(q), gq)
    half = masked(mid, np.triu(np.ones((n, n))) - 0.5 * np.eye(n))
    b = gq + np.matmul(q, half + H(half))
    return H(np.linalg.solve(r, H(b)))


def _qr_wide_vjp(a, q, r, gq, gr):
    """m < n: a = q [u v] with u square; v = q^H a[:, m:] moves with q too."""
    m = shape_of(q)[-1]
    gu, gv = gr[..., :m], gr[..., m:]
    ga1 = _qr_vjp(q, r[..., :m], gq + np.matmul(a[..., m:], H(gv)), gu)
    return np.concatenate([ga1, np.matmul(q, gv)], axis=-1)


@rrule(np.linalg.qr, batched=True)
def qr_rule(a, mode="reduced"):
    m, n = shape_of(a)[-2:]
    if mode == "raw" or (mode == "complete" and m > n):
        raise NoRuleError(
            f"pullback: np.linalg.qr(mode={mode!r}) has no derivative rule: "
            + ("no rule for the Householder form" if mode == "raw" else
               "the last m - n columns of q are not determined by a; use mode='reduced'")
        )
    ans = np.linalg.qr(a) if mode == "reduced" else np.linalg.qr(a, mode=mode)  # (Dask)

    def qr_pullback(g):
        if mode == "r":
            q, r = np.linalg.qr(a)
            gq, gr = zeros_on(q, shape_of(q), float), g
        else:
            (q, r), (gq, gr) = ans, g
        vjp = _qr_vjp(q, r, gq, gr) if m >= n else _qr_wide_vjp(a, q, r, gq, gr)
        return vjp, None

    return ans, qr_pullback


# ---------------------------------------------------------------------------- eigenproblems

@rrule(np.linalg.eigh, batched=True)
def eigh_rule(a, UPLO="L"):
    ans = np.linalg.eigh(a, UPLO)

    def eigh_pullback(g):
        s = sandwich(ans.eigenvectors, eigh_vjp(ans.eigenvalues, ans.eigenvectors, *g))
        return hermitian_adjoint(s, lower=UPLO.upper() == "L"), None

    return ans, eigh_pullback


@rrule(np.linalg.eigvalsh, batched=True)
def eigvalsh_rule(a, UPLO="L"):
    ans = np.linalg.eigvalsh(a, UPLO)

    def eigvalsh_pullback(g):
        v = np.linalg.eigh(a, UPLO).eigenvectors
        return hermitian_adjoint(sandwich(v, diag_embed(g)), lower=UPLO.upper() == "L"), None

    return ans, eigvalsh_pullback


def _eig_vjp(w, v, gw, gv):
    """The cotangent of ``a = v diag(w) v^-1`` with unit-norm columns of v:
    v^-H (diag(gw) + conj(F) * v^H (gv - v Re diag(v^H gv))) v^H."""
    inner = diag_embed(gw)
    if not is_zero(gv):
        close = repeated(w)
        if close is not None:
            refuse_repeated(close, "np.linalg.eig", w, used_columns(gv))
        # the columns keep unit norm: remove the part of gv along them
        gv = gv - v * np.expand_dims(real(column_dots(v, gv)), -2)
        inner = inner + conj_if_complex(gaps(w, close)) * np.matmul(H(v), gv)
    return _solve_eigenvectors(v, np.matmul(inner, H(v)), "np.linalg.eig")


def _solve_eigenvectors(v, b, what):
    """v^-H b; a singular v (a defective matrix, whose eigenvectors do not span) raises
    NoRuleError: the eigenvalues' derivative is infinite there."""
    try:
        return np.linalg.solve(H(v), b)
    except np.linalg.LinAlgError:
        raise NoRuleError(
            f"pullback: {what} has no derivative here: the matrix is defective (its "
            "eigenvectors do not span, so a repeated eigenvalue splits as a root of the "
            "perturbation) and its eigenvalues' derivative is infinite. Move the "
            "eigenvalues apart (perturb the matrix), or write a symmetric function of them "
            "without eig (their sum is np.trace(a))."
        ) from None


@rrule(np.linalg.eig, batched=True)
def eig_rule(a):
    ans = np.linalg.eig(a)

    def eig_pullback(g):
        return (_eig_vjp(ans.eigenvalues, ans.eigenvectors, *g),)

    return ans, eig_pullback


@rrule(np.linalg.eigvals, batched=True)
def eigvals_rule(a):
    ans = np.linalg.eigvals(a)

    def eigvals_pullback(g):
        v = np.linalg.eig(a).eigenvectors
        return (_solve_eigenvectors(v, np.expand_dims(g, -1) * H(v), "np.linalg.eigvals"),)

    return ans, eigvals_pullback


# ---------------------------------------------------------------------------- svd

def _square_gaps(row, col, skip):
    """F[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it and on ``skip``."""
    return inverse_gaps((col - row) * (col + row), skip)


def _svd_vjp(u, s, vh, gu, gs, gvh):
    """The cotangent of ``a = u diag(s) vh`` (reduced; Townsend 2016, with the diagonal
    term for complex matrices): u P vh plus the parts of gu and gvh outside the spans of
    u and v, where P = diag(gs) + (F * (Ju - Ju^H)) S + S (F * (Jv - Jv^H))
    + (I * (Ju - Ju^H)) S^-1 / 2, Ju = u^H gu, Jv = v^H gv, F[i, j] = 1 / (s_j^2 - s_i^2).
    Repeated singular values make F infinite, and a zero one S^-1: a loss that uses the
    vectors those terms move raises (``refuse_repeated``, ``refuse_unmoored``); else the
    terms are skipped."""
    m, n = shape_of(u)[-2], shape_of(vh)[-1]
    inner = diag_embed(gs)
    uses_u, uses_v = not is_zero(gu), not is_zero(gvh)
    if not (uses_u or uses_v):
        return np.matmul(np.matmul(u, inner), vh)
    row, col = np.expand_dims(s, -1), np.expand_dims(s, -2)
    v, gv = H(vh), H(gvh)
    ju = np.matmul(H(u), gu) if uses_u else None
    jv = np.matmul(H(v), gv) if uses_v else None
    outside_u = gu - np.matmul(u, ju) if uses_u and m > n else None
    outside_v = gv - np.matmul(v, jv) if uses_v and n > m else None
    complex_u = uses_u and np.iscomplexobj(plain(ju))
    close, zero, safe = repeated(s), _zero_singular(s), col
    if close is not None or zero is not None:
        # the singular vectors the loss uses
        used_u = [used_columns(gu)] if uses_u else []
        used_v = [used_columns(gv)] if uses_v else []
        if close is not None:
            refuse_repeated(close, "np.linalg.svd", s, *used_u, *used_v)
    if zero is not None:
        # a zero singular value leaves the vector on the longer side free, and in a complex
        # matrix the phase of each vector of the pair (the terms of Im diag(Ju), Im diag(Jv))
        free = used_u if m > n else used_v if n > m else []
        for j, like in ((ju, gu), (jv, gv)):
            if j is not None and np.iscomplexobj(plain(j)):
                phase = np.imag(np.diagonal(j, axis1=-2, axis2=-1))[..., None, :]
                free = free + [used_columns(phase, like)]
        refuse_unmoored(zero, "np.linalg.svd", *free)
        safe = np.where(on_backend(zero, s)[..., None, :], 1, col)  # (their terms are 0)
    f = _square_gaps(row, col, close)
    if uses_u:
        skew = ju - H(ju)
        inner = inner + f * skew * col
        if complex_u:
            eye = on_backend(np.eye(shape_of(s)[-1], dtype=bool), s)
            inner = inner + np.where(eye, skew / (2 * safe), zero_of(skew))
    if uses_v:
        inner = inner + row * (f * (jv - H(jv)))
    ga = np.matmul(np.matmul(u, inner), vh)
    if outside_u is not None:
        ga = ga + np.matmul(outside_u / safe, vh)
    if outside_v is not None:
        ga = ga + np.matmul(u, H(outside_v / safe))
    return ga


def _zero_singular(s):
    """Where the singular values ``s`` are 0 to rounding (plain); None where none is, and
    for another library's array, which is not asked (a device sync)."""
    ps = plain(s)
    if is_foreign(ps) or ps.shape[-1] == 0:
        return None
    tol = 8 * ps.shape[-1] * np.finfo(ps.dtype).eps * np.max(ps, axis=-1, keepdims=True)
    zero = ps <= tol
    return zero if zero.any() else None


def _fold_complement(x, gx, k):
    """Full u (m, m): its last m - k columns span the complement of the first k and move
    only with that span (gauge: orthogonally to themselves). Their cotangent folds onto
    the first k columns: gx_k - x_rest gx_rest^H x_k."""
    xk, xr, gk, gr = x[..., :k], x[..., k:], gx[..., :k], gx[..., k:]
    return xk, gk - np.matmul(xr, np.matmul(H(gr), xk))


@rrule(np.linalg.svd, batched=True)
def svd_rule(a, full_matrices=True, compute_uv=True, hermitian=False):
    # the defaults are not passed on: Dask's svd takes neither compute_uv= nor hermitian=
    kw = ({} if compute_uv else {"compute_uv": False}) | (
        {"hermitian": True} if hermitian else {})
    ans = np.linalg.svd(a, full_matrices=full_matrices, **kw)
    m, n = shape_of(a)[-2:]
    k = min(m, n)

    def svd_pullback(g):
        if compute_uv:
            (u, s, vh), (gu, gs, gvh) = ans, g
            if full_matrices and m != n:
                u, gu = _fold_complement(u, gu, k)
                v, gv = _fold_complement(H(vh), H(gvh), k)
                vh, gvh = H(v), H(gv)
            ga = _svd_vjp(u, s, vh, gu, gs, gvh)
        else:
            ga = svdvals_vjp(a, g, hermitian)
        if hermitian:  # computed by eigh, which reads the lower triangle
            ga = hermitian_adjoint(ga, lower=True)
        return ga, None, None, None

    return ans, svd_pullback


@rrule_if_present(np.linalg, "svdvals")
def svdvals_rule(x):
    ans = np.linalg.svdvals(x)

    def svdvals_pullback(g):
        return (svdvals_vjp(x, g),)

    return ans, svdvals_pullback

