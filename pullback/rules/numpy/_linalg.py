"""Linear-algebra helpers shared by the rule modules (linalg, linalg_decomp, linalg_norm,
scipy_linalg). Matrix axes are the last two, so leading batch axes pass through."""

import numpy as np

from ...extend import NoRuleError, Tracked, is_foreign, on_backend, plain, shape_of
from .._util import conj_if_complex, zero_of


def mT(x):
    return x.swapaxes(-1, -2)  # the method: plain arrays skip np.swapaxes' Python layer


def H(x):
    """The conjugate transpose of the last two axes."""
    return conj_if_complex(np.swapaxes(x, -1, -2))


def real(x):
    return np.real(x) if np.iscomplexobj(plain(x)) else x


def masked(x, weight):
    """``x`` times ``weight``, a constant host array (0/1 or other weights), and exactly 0
    where the weight is 0, also where ``x`` is inf or NaN: the entries a function does not
    read get no cotangent (np.where first: a product alone would give NaN, 0 * inf)."""
    return np.where(on_backend(weight != 0, x), x, zero_of(x)) * on_backend(weight, x)


def diag_embed(d):
    """Matrices with ``d`` (last axis) on the diagonal, exactly 0 off it."""
    eye = on_backend(np.eye(shape_of(d)[-1], dtype=bool), d)
    return np.where(eye, np.expand_dims(d, -1), zero_of(d))


def matrices(g):
    """A cotangent of a 0-d-per-matrix output (det, norm ...) broadcast against matrices."""
    return np.expand_dims(g, (-2, -1))


def is_zero(g):
    """A cotangent the engine filled with zeros for an unused output: it may be skipped.
    (A tracked cotangent is never skipped: its derivative may be wanted.)"""
    # (another library's array is never skipped: asking would be a device sync)
    return not isinstance(g, Tracked) and not is_foreign(g) and not np.any(g)


def hermitian_adjoint(s, lower, conj=True):
    """The cotangent of ``a`` when a function reads only one triangle of ``a`` and takes the
    other from it by (conjugate) symmetry, given the cotangent ``s`` of the full Hermitian
    matrix it uses: the strict triangle gets ``s + s^H``, the diagonal its real part."""
    n = shape_of(s)[-1]
    weight = np.tri(n) - 0.5 * np.eye(n)
    if not lower:
        weight = weight.T
    return masked(s + (H(s) if conj else mT(s)), weight)


def svdvals_vjp(a, g, hermitian=False):
    """The cotangent of ``a`` for its singular values: u diag(g) v^H."""
    u, _, vh = np.linalg.svd(a, full_matrices=False, hermitian=hermitian)
    return np.matmul(u * np.expand_dims(g, -2), vh)


def columns(x, vector):
    """A right-hand side as columns: a vector ``(..., n)`` becomes ``(..., n, 1)``."""
    return np.expand_dims(x, -1) if vector else x


def uncolumns(x, vector):
    return x[..., 0] if vector else x


def adjugate(a):
    """adj(a) = det(a) a^-1, also where a is singular: with a = u s v^H,
    adj(a) = det(v^H) det(u) v adj(s) u^H, adj(s) holding the products of the other
    singular values."""
    u, s, vh = np.linalg.svd(a)
    eye = on_backend(np.eye(shape_of(s)[-1], dtype=bool), s)
    others = np.prod(np.where(eye, 1, np.expand_dims(s, -2)), axis=-1)
    scale = matrices(np.linalg.det(u) * np.linalg.det(vh))
    return scale * np.matmul(H(vh) * np.expand_dims(others, -2), H(u))


def det_vjp(a, ans, g):
    # d det = tr(adj(a) da) = det tr(a^-1 da)
    v = plain(ans)  # (another library's array: the adjugate, exact with no branch)
    if not is_foreign(v) and np.all(v != 0):
        return matrices(g * conj_if_complex(ans)) * H(np.linalg.inv(a))
    return matrices(g) * H(adjugate(a))


def solve_vjp(a_h, x, g, vector, solve=np.linalg.solve):
    """Cotangents ``(ga, gb)`` of ``x = a^-1 b`` given ``a^H``: gb = a^-H g, ga = -gb x^H."""
    gb = solve(a_h, columns(g, vector))
    ga = -np.matmul(gb, H(columns(x, vector)))
    return ga, uncolumns(gb, vector)


def cholesky_vjp(factor, g, lower=True):
    """The cotangent of ``a`` for its Cholesky factor, ``a = l l^H`` read from the lower
    triangle, or ``a = u^H u`` read from the upper one (Murray 2016): with ``l`` the lower
    factor, s = l^-H phi(l^H gl) l^-1, phi keeping the lower triangle and half the
    diagonal, mapped onto the triangle that was read."""
    low, glow = (factor, g) if lower else (H(factor), H(g))
    n = shape_of(low)[-1]
    inv = np.linalg.inv(low)
    phi = masked(np.matmul(H(low), glow), np.tri(n) - 0.5 * np.eye(n))
    s = np.matmul(np.matmul(H(inv), phi), inv)
    return hermitian_adjoint(s, lower)


def inverse_gaps(d, skip=None):
    """1 / d off the diagonal, 0 on it and on the pairs ``skip`` (a plain mask) holds."""
    eye = on_backend(np.eye(shape_of(d)[-1]), d)
    if skip is not None:
        eye = eye + on_backend(skip, d)
    return (1 - eye) / (d + eye)


def gaps(w, skip=None):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it (and on ``skip``)."""
    return inverse_gaps(np.expand_dims(w, -2) - np.expand_dims(w, -1), skip)


def repeated(w):
    """The pairs (i, j), i != j, of the values ``w`` (last axis) that are equal to rounding
    (within 8 n eps of the largest in magnitude), as a plain boolean mask; None where
    there is none, and for another library's array, which is not asked (a device sync)."""
    pw = plain(w)
    if is_foreign(pw) or pw.shape[-1] < 2:
        return None
    n = pw.shape[-1]
    tol = 8 * n * np.finfo(pw.dtype).eps * np.max(np.abs(pw), axis=-1)
    close = np.abs(pw[..., :, None] - pw[..., None, :]) <= tol[..., None, None]
    close &= ~np.eye(n, dtype=bool)
    return close if close.any() else None


def above_rounding(x, like=None):
    """Where the plain matrices ``x`` (last two axes, batch axes allowed) are above the
    rounding of the largest entry of ``like`` (``x`` itself by default), per matrix."""
    px = np.abs(plain(x))
    ref = px if like is None else np.abs(plain(like))
    scale = np.max(ref, axis=(-2, -1), keepdims=True)
    return px > 64 * max(ref.shape[-2:]) * np.finfo(ref.dtype).eps * scale


def used_columns(x, like=None):
    """Which columns of the plain matrices ``x`` (a cotangent of vectors, or a part of
    one) hold an entry above rounding (of ``like``'s scale): the vectors a loss uses."""
    return np.any(above_rounding(x, like), axis=-2)


def refuse_repeated(close, what, values, *used):
    """Raise where a vector that ``used`` (plain masks of the columns, from
    ``used_columns``) says the loss uses has a repeated value (``close``). Such a vector
    is not determined by the matrix (any orthonormal basis of its eigenspace is one), so
    a loss that uses it has no derivative there, but one invariant within the eigenspace
    (``v diag(w) v^H``): that one cannot be told, from its cotangent, from one whose
    gradient only happens to vanish in the basis NumPy picked (``v[:, 0] ** 2 @ [1, 2]``
    at the identity), nor its limit computed (it depends on the loss beyond the
    cotangent). Repeated values whose vectors the loss does not use contribute nothing,
    and are skipped."""
    shared = np.any(close, axis=-2)
    for u in used:
        hit = np.argwhere(shared & u)
        if len(hit):
            j = hit[0][-1]
            item = tuple(hit[0][len(hit[0]) - shared.ndim:-1])
            i = np.flatnonzero(close[item + (slice(None), j)])[0]
            kind = "singular " if what == "np.linalg.svd" else "eigen"
            raise NoRuleError(
                f"pullback: {what} has no derivative here: its {kind}values {min(i, j)} and "
                f"{max(i, j)} are repeated ({plain(values)[item + (j,)]:.6g}, equal to "
                f"rounding), so their {kind}vectors are not determined by the matrix (any "
                "orthonormal basis of their span is one), and the loss uses them. "
                f"Differentiate a function of the {kind}values alone, or of the matrix "
                f"itself, or move the repeated {kind}values apart (perturb the matrix)."
            )


def refuse_unmoored(zero, what, *used):
    """Raise where a singular vector that ``used`` (plain masks of the columns) says the
    loss uses has the singular value 0 (``zero``, plain) and is not determined by the
    matrix: in a rectangular matrix, the vector on the longer side (any unit vector
    orthogonal to the others); in a complex one, its phase relative to its partner's."""
    for u in used:
        if np.any(zero & u):
            raise NoRuleError(
                f"pullback: {what} has no derivative here: a singular value is 0 (to "
                "rounding), where its singular vector (on the longer side of a rectangular "
                "matrix, or its phase in a complex one) is not determined by the matrix, "
                "and the loss uses it. Differentiate a function of the singular values "
                "alone, or of the matrix itself, or keep the matrix of full rank."
            )


def column_dots(v, gv):
    """diag(v^H gv): the inner products of matching columns."""
    return np.sum(conj_if_complex(v) * gv, axis=-2)


def eigh_vjp(w, v, gw, gv, what="np.linalg.eigh"):
    """For a Hermitian ``a = v diag(w) v^H``: the cotangent of v^H da v,
    diag(gw) + F * (v^H gv). At repeated eigenvalues the terms of F are infinite: a loss
    that uses their vectors raises (``refuse_repeated``); else those terms are skipped."""
    gk = diag_embed(gw)
    if gv is not None and not is_zero(gv):
        m = np.matmul(H(v), gv)
        close = repeated(w)
        if close is not None:
            refuse_repeated(close, what, w, used_columns(gv))
        gk = gk + gaps(w, close) * m
    return gk


def sandwich(v, x):
    return np.matmul(np.matmul(v, x), H(v))
