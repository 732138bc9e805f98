"""Linear-algebra helpers shared by the rule modules (linalg, linalg_decomp, linalg_norm,
scipy_linalg). Matrix axes are the last two, so leading batch axes pass through."""

import numpy as np

from ..extend import Tracked, is_foreign, on_backend, plain, shape_of
from ._util import conj_if_complex


def mT(x):
    return x.swapaxes(-1, -2)  # the method: plain arrays skip np.swapaxes' Python layer


def H(x):
    """The conjugate transpose of the last two axes."""
    return conj_if_complex(np.swapaxes(x, -1, -2))


def real(x):
    return np.real(x) if np.iscomplexobj(plain(x)) else x


def diag_embed(d):
    """Matrices with ``d`` (last axis) on the diagonal."""
    return np.expand_dims(d, -1) * on_backend(np.eye(shape_of(d)[-1]), d)


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
    return (s + (H(s) if conj else mT(s))) * on_backend(weight, s)


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
    phi = on_backend(np.tri(n) - 0.5 * np.eye(n), g)
    inv = np.linalg.inv(low)
    s = np.matmul(np.matmul(H(inv), np.matmul(H(low), glow) * phi), inv)
    return hermitian_adjoint(s, lower)


def inverse_gaps(d):
    """1 / d off the diagonal, 0 on it."""
    eye = on_backend(np.eye(shape_of(d)[-1]), d)
    return (1 - eye) / (d + eye)


def gaps(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it."""
    return inverse_gaps(np.expand_dims(w, -2) - np.expand_dims(w, -1))


def column_dots(v, gv):
    """diag(v^H gv): the inner products of matching columns."""
    return np.sum(conj_if_complex(v) * gv, axis=-2)


def eigh_vjp(w, v, gw, gv):
    """For a Hermitian ``a = v diag(w) v^H``: the cotangent of v^H da v,
    diag(gw) + F * (v^H gv)."""
    gk = diag_embed(gw)
    if gv is not None and not is_zero(gv):
        gk = gk + gaps(w) * np.matmul(H(v), gv)
    return gk


def sandwich(v, x):
    return np.matmul(np.matmul(v, x), H(v))
