"""numpy.linalg decompositions: cholesky, qr, eigh, eigvalsh, eig, eigvals, svd, svdvals.

Conventions. A function that reads one triangle of its input (cholesky, eigh, eigvalsh,
svd and pinv with ``hermitian=True``) gets a cotangent on that triangle only: it is the
derivative of what NumPy computes, and for an input built symmetric (``x + x.T``) it gives
the same gradient as the symmetric convention. Eigenvectors and singular vectors are
differentiated in the gauge where each one moves orthogonally to itself (their phases are
arbitrary), so only losses that do not depend on those phases have a meaningful gradient.
Repeated eigenvalues (singular values) make the vectors' derivative infinite, so a loss
that uses the vectors there gets NaN (no single finite value is right: the limit depends
on the loss); a loss of the values alone skips those terms and stays finite.
"""

import numpy as np

from ..extend import NoRuleError, on_backend, plain, rrule, shape_of, zeros_on
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
    real,
    sandwich,
    svdvals_vjp,
)
from ._util import conj_if_complex, rrule_if_present

# ---------------------------------------------------------------------------- cholesky

@rrule(np.linalg.cholesky)
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
    half = mid * on_backend(np.triu(np.ones((n, n))) - 0.5 * np.eye(n), mid)
    b = gq + np.matmul(q, half + H(half))
    return H(np.linalg.solve(r, H(b)))


def _qr_wide_vjp(a, q, r, gq, gr):
    """m < n: a = q [u v] with u square; v = q^H a[:, m:] moves with q too."""
    m = shape_of(q)[-1]
    gu, gv = gr[..., :m], gr[..., m:]
    ga1 = _qr_vjp(q, r[..., :m], gq + np.matmul(a[..., m:], H(gv)), gu)
    return np.concatenate([ga1, np.matmul(q, gv)], axis=-1)


@rrule(np.linalg.qr)
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

@rrule(np.linalg.eigh)
def eigh_rule(a, UPLO="L"):
    ans = np.linalg.eigh(a, UPLO)

    def eigh_pullback(g):
        s = sandwich(ans.eigenvectors, eigh_vjp(ans.eigenvalues, ans.eigenvectors, *g))
        return hermitian_adjoint(s, lower=UPLO.upper() == "L"), None

    return ans, eigh_pullback


@rrule(np.linalg.eigvalsh)
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
        # the columns keep unit norm: remove the part of gv along them
        gv = gv - v * np.expand_dims(real(column_dots(v, gv)), -2)
        inner = inner + conj_if_complex(gaps(w)) * np.matmul(H(v), gv)
    return np.linalg.solve(H(v), np.matmul(inner, H(v)))


@rrule(np.linalg.eig)
def eig_rule(a):
    ans = np.linalg.eig(a)

    def eig_pullback(g):
        return (_eig_vjp(ans.eigenvalues, ans.eigenvectors, *g),)

    return ans, eig_pullback


@rrule(np.linalg.eigvals)
def eigvals_rule(a):
    ans = np.linalg.eigvals(a)

    def eigvals_pullback(g):
        v = np.linalg.eig(a).eigenvectors
        return (np.linalg.solve(H(v), np.expand_dims(g, -1) * H(v)),)

    return ans, eigvals_pullback


# ---------------------------------------------------------------------------- svd

def _square_gaps(row, col):
    """F[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it."""
    return inverse_gaps((col - row) * (col + row))


def _svd_vjp(u, s, vh, gu, gs, gvh):
    """The cotangent of ``a = u diag(s) vh`` (reduced; Townsend 2016, with the diagonal
    term for complex matrices): u P vh plus the parts of gu and gvh outside the spans of
    u and v, where P = diag(gs) + (F * (Ju - Ju^H)) S + S (F * (Jv - Jv^H))
    + (I * (Ju - Ju^H)) S^-1 / 2, Ju = u^H gu, Jv = v^H gv, F[i, j] = 1 / (s_j^2 - s_i^2)."""
    m, n = shape_of(u)[-2], shape_of(vh)[-1]
    inner = diag_embed(gs)
    row, col = np.expand_dims(s, -1), np.expand_dims(s, -2)
    eye = on_backend(np.eye(shape_of(s)[-1]), s)
    v, gv = H(vh), H(gvh)
    if not (is_zero(gu) and is_zero(gvh)):
        f = _square_gaps(row, col)
    if not is_zero(gu):
        ju = np.matmul(H(u), gu)
        skew = ju - H(ju)
        inner = inner + f * skew * col
        if np.iscomplexobj(plain(skew)):
            inner = inner + eye * skew / (2 * col)
    if not is_zero(gvh):
        jv = np.matmul(H(v), gv)
        inner = inner + row * (f * (jv - H(jv)))
    ga = np.matmul(np.matmul(u, inner), vh)
    if m > n and not is_zero(gu):
        ga = ga + np.matmul((gu - np.matmul(u, ju)) / col, vh)
    if n > m and not is_zero(gvh):
        ga = ga + np.matmul(u, H((gv - np.matmul(v, jv)) / col))
    return ga


def _fold_complement(x, gx, k):
    """Full u (m, m): its last m - k columns span the complement of the first k and move
    only with that span (gauge: orthogonally to themselves). Their cotangent folds onto
    the first k columns: gx_k - x_rest gx_rest^H x_k."""
    xk, xr, gk, gr = x[..., :k], x[..., k:], gx[..., :k], gx[..., k:]
    return xk, gk - np.matmul(xr, np.matmul(H(gr), xk))


@rrule(np.linalg.svd)
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

