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

from ..extend import NoRuleError, plain, rrule, shape_of
from ._util import conj_if_complex, rrule_if_present
from .linalg import _H, _diag_embed, _hermitian_adjoint, _is_zero, _real, _svdvals_vjp

# ---------------------------------------------------------------------------- cholesky

def _cholesky_vjp(factor, g, lower=True):
    """The cotangent of ``a`` for its Cholesky factor, ``a = l l^H`` read from the lower
    triangle, or ``a = u^H u`` read from the upper one (Murray 2016): with ``l`` the lower
    factor, s = l^-H phi(l^H gl) l^-1, phi keeping the lower triangle and half the
    diagonal, mapped onto the triangle that was read."""
    low, glow = (factor, g) if lower else (_H(factor), _H(g))
    n = shape_of(low)[-1]
    phi = np.tri(n) - 0.5 * np.eye(n)
    inv = np.linalg.inv(low)
    s = np.matmul(np.matmul(_H(inv), np.matmul(_H(low), glow) * phi), inv)
    return _hermitian_adjoint(s, lower)


@rrule(np.linalg.cholesky)
def cholesky_rule(a, *, upper=False):
    # upper is NumPy 2's keyword: passed only where the caller asks for it
    ans = np.linalg.cholesky(a, upper=True) if upper else np.linalg.cholesky(a)

    def cholesky_pullback(g):
        return (_cholesky_vjp(ans, g, lower=not upper),)

    return ans, cholesky_pullback


# ---------------------------------------------------------------------------- qr

def _qr_vjp(q, r, gq, gr):
    """The cotangent of ``a = q r`` (reduced) for m >= n:
    (gq + q copyltu(gr r^H - q^H gq)) r^-H, where copyltu copies the upper triangle onto
    the lower one as its conjugate (the diagonal real)."""
    n = shape_of(r)[-1]
    mid = np.matmul(gr, _H(r)) - np.matmul(_H(q), gq)
    half = mid * (np.triu(np.ones((n, n))) - 0.5 * np.eye(n))
    b = gq + np.matmul(q, half + _H(half))
    return _H(np.linalg.solve(r, _H(b)))


def _qr_wide_vjp(a, q, r, gq, gr):
    """m < n: a = q [u v] with u square; v = q^H a[:, m:] moves with q too."""
    m = shape_of(q)[-1]
    gu, gv = gr[..., :m], gr[..., m:]
    ga1 = _qr_vjp(q, r[..., :m], gq + np.matmul(a[..., m:], _H(gv)), gu)
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
    ans = np.linalg.qr(a, mode=mode)

    def qr_pullback(g):
        if mode == "r":
            q, r = np.linalg.qr(a)
            gq, gr = np.zeros(shape_of(q)), g
        else:
            (q, r), (gq, gr) = ans, g
        vjp = _qr_vjp(q, r, gq, gr) if m >= n else _qr_wide_vjp(a, q, r, gq, gr)
        return vjp, None

    return ans, qr_pullback


# ---------------------------------------------------------------------------- eigenproblems

def _inverse_gaps(gaps):
    """1 / gaps off the diagonal, 0 on it."""
    eye = np.eye(shape_of(gaps)[-1])
    return (1 - eye) / (gaps + eye)


def _gaps(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it."""
    return _inverse_gaps(np.expand_dims(w, -2) - np.expand_dims(w, -1))


def _column_dots(v, gv):
    """diag(v^H gv): the inner products of matching columns."""
    return np.sum(conj_if_complex(v) * gv, axis=-2)


def _eigh_vjp(w, v, gw, gv):
    """For a Hermitian ``a = v diag(w) v^H``: the cotangent of v^H da v,
    diag(gw) + F * (v^H gv)."""
    gk = _diag_embed(gw)
    if gv is not None and not _is_zero(gv):
        gk = gk + _gaps(w) * np.matmul(_H(v), gv)
    return gk


def _sandwich(v, x):
    return np.matmul(np.matmul(v, x), _H(v))


@rrule(np.linalg.eigh)
def eigh_rule(a, UPLO="L"):
    ans = np.linalg.eigh(a, UPLO)

    def eigh_pullback(g):
        s = _sandwich(ans.eigenvectors, _eigh_vjp(ans.eigenvalues, ans.eigenvectors, *g))
        return _hermitian_adjoint(s, lower=UPLO.upper() == "L"), None

    return ans, eigh_pullback


@rrule(np.linalg.eigvalsh)
def eigvalsh_rule(a, UPLO="L"):
    ans = np.linalg.eigvalsh(a, UPLO)

    def eigvalsh_pullback(g):
        v = np.linalg.eigh(a, UPLO).eigenvectors
        return _hermitian_adjoint(_sandwich(v, _diag_embed(g)), lower=UPLO.upper() == "L"), None

    return ans, eigvalsh_pullback


def _eig_vjp(w, v, gw, gv):
    """The cotangent of ``a = v diag(w) v^-1`` with unit-norm columns of v:
    v^-H (diag(gw) + conj(F) * v^H (gv - v Re diag(v^H gv))) v^H."""
    inner = _diag_embed(gw)
    if not _is_zero(gv):
        # the columns keep unit norm: remove the part of gv along them
        gv = gv - v * np.expand_dims(_real(_column_dots(v, gv)), -2)
        inner = inner + conj_if_complex(_gaps(w)) * np.matmul(_H(v), gv)
    return np.linalg.solve(_H(v), np.matmul(inner, _H(v)))


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
        return (np.linalg.solve(_H(v), np.expand_dims(g, -1) * _H(v)),)

    return ans, eigvals_pullback


# ---------------------------------------------------------------------------- svd

def _square_gaps(row, col):
    """F[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it."""
    return _inverse_gaps((col - row) * (col + row))


def _svd_vjp(u, s, vh, gu, gs, gvh):
    """The cotangent of ``a = u diag(s) vh`` (reduced; Townsend 2016, with the diagonal
    term for complex matrices): u P vh plus the parts of gu and gvh outside the spans of
    u and v, where P = diag(gs) + (F * (Ju - Ju^H)) S + S (F * (Jv - Jv^H))
    + (I * (Ju - Ju^H)) S^-1 / 2, Ju = u^H gu, Jv = v^H gv, F[i, j] = 1 / (s_j^2 - s_i^2)."""
    m, n = shape_of(u)[-2], shape_of(vh)[-1]
    inner = _diag_embed(gs)
    row, col = np.expand_dims(s, -1), np.expand_dims(s, -2)
    eye = np.eye(shape_of(s)[-1])
    v, gv = _H(vh), _H(gvh)
    if not (_is_zero(gu) and _is_zero(gvh)):
        f = _square_gaps(row, col)
    if not _is_zero(gu):
        ju = np.matmul(_H(u), gu)
        skew = ju - _H(ju)
        inner = inner + f * skew * col
        if np.iscomplexobj(plain(skew)):
            inner = inner + eye * skew / (2 * col)
    if not _is_zero(gvh):
        jv = np.matmul(_H(v), gv)
        inner = inner + row * (f * (jv - _H(jv)))
    ga = np.matmul(np.matmul(u, inner), vh)
    if m > n and not _is_zero(gu):
        ga = ga + np.matmul((gu - np.matmul(u, ju)) / col, vh)
    if n > m and not _is_zero(gvh):
        ga = ga + np.matmul(u, _H((gv - np.matmul(v, jv)) / col))
    return ga


def _fold_complement(x, gx, k):
    """Full u (m, m): its last m - k columns span the complement of the first k and move
    only with that span (gauge: orthogonally to themselves). Their cotangent folds onto
    the first k columns: gx_k - x_rest gx_rest^H x_k."""
    xk, xr, gk, gr = x[..., :k], x[..., k:], gx[..., :k], gx[..., k:]
    return xk, gk - np.matmul(xr, np.matmul(_H(gr), xk))


@rrule(np.linalg.svd)
def svd_rule(a, full_matrices=True, compute_uv=True, hermitian=False):
    ans = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                        hermitian=hermitian)
    m, n = shape_of(a)[-2:]
    k = min(m, n)

    def svd_pullback(g):
        if compute_uv:
            (u, s, vh), (gu, gs, gvh) = ans, g
            if full_matrices and m != n:
                u, gu = _fold_complement(u, gu, k)
                v, gv = _fold_complement(_H(vh), _H(gvh), k)
                vh, gvh = _H(v), _H(gv)
            ga = _svd_vjp(u, s, vh, gu, gs, gvh)
        else:
            ga = _svdvals_vjp(a, g, hermitian)
        if hermitian:  # computed by eigh, which reads the lower triangle
            ga = _hermitian_adjoint(ga, lower=True)
        return ga, None, None, None

    return ans, svd_pullback


@rrule_if_present(np.linalg, "svdvals")
def svdvals_rule(x):
    ans = np.linalg.svdvals(x)

    def svdvals_pullback(g):
        return (_svdvals_vjp(x, g),)

    return ans, svdvals_pullback

