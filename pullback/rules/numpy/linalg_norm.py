"""Norms and condition numbers: np.linalg.norm, vector_norm, matrix_norm, cond.

Each pullback is the cotangent times the norm's direction, d norm / dx (as a cotangent:
d/dRe x + i d/dIm x), which has x's shape. Conventions: the norm at 0 has gradient 0 (the
zero vector is its minimum); |x|'s kink at 0 contributes 0; ties of the max/min in the
inf, -inf, 1 and -1 norms share the gradient equally; ord=0 counts nonzeros, so its
gradient is 0. The entries a norm selects away get exactly 0 (np.where), also where the
cotangent is inf or NaN. The spectral and nuclear norms need distinct singular values
where they are used.
"""

import numpy as np

from ...extend import plain, rrule, shape_of
from .._util import normalize_axes, rrule_if_present, unreduce, zero_of
from ._linalg import H, matrices, real

INF = np.inf


def _phase(x):
    """x / |x|, and 0 at 0."""
    if np.iscomplexobj(plain(x)):
        size = np.abs(x)
        return x / np.where(plain(size) == 0, 1, size)
    return np.sign(plain(x))


def _share_ties(hit, axes):
    """The places of a max or min along ``axes``, ties sharing equally."""
    return hit / np.sum(hit, axis=axes, keepdims=True)


def _vector_direction(x, n, ord, axes):
    """d ||x||_ord / dx over ``axes``; ``n`` is the norm with those axes kept."""
    if ord == 0:
        return None
    if ord in (np.inf, -np.inf):
        return _share_ties(np.abs(plain(x)) == plain(n), axes) * _phase(x)
    if ord == 1:
        return _phase(x)
    safe = np.where(plain(n) == 0, 1, n)  # the norm at 0 has gradient 0
    if ord == 2:
        return x / safe
    # (sum |x|^p)^(1/p): sign(x) (|x| / n)^(p - 1), and 0 where x is 0
    size = np.abs(x)
    zero = plain(size) == 0
    return np.where(zero, 0, _phase(x) * (np.where(zero, 1, size) / safe) ** (ord - 1))


def _matrix_direction(x, n, ord, row, col):
    """d ||x||_ord / dx for the matrix norm over axes ``(row, col)`` (non-negative)."""
    if ord in (None, "fro"):
        return _vector_direction(x, n, 2, (row, col))
    if ord in ("nuc", 2, -2):
        u, _, vh = np.linalg.svd(np.moveaxis(x, (row, col), (-2, -1)), full_matrices=False)
        if ord != "nuc":  # the largest (2) or smallest (-2) singular value
            i = 0 if ord == 2 else shape_of(vh)[-2] - 1
            u, vh = u[..., i:i + 1], vh[..., i:i + 1, :]
        return np.moveaxis(np.matmul(u, vh), (-2, -1), (row, col))
    # 1 and -1: the extreme column sum; inf and -inf: the extreme row sum
    summed, across = (row, col) if ord in (1, -1) else (col, row)
    sums = np.sum(np.abs(plain(x)), axis=summed, keepdims=True)
    return _share_ties(sums == plain(n), across) * _phase(x)


_SELECTING = {"vector": (INF, -INF, 1), "matrix": (INF, -INF, 1, -1)}


def _norm_pullback(x, ans, axes, keepdims, direction, selects=False):
    """The pullback of a norm whose direction (d norm / dx) is ``direction(norm)``;
    ``selects``: its zeros are selections (the entries that are not the max, |x|'s kink at
    0), as for the max and 1 norms, not only the zero vector's."""
    shape = shape_of(x)

    def norm_pullback(g):
        n = unreduce(ans, shape, axes, keepdims)
        d = direction(n)
        if d is None:
            return None, None, None, None
        # the entries the norm selects away, and every entry at the zero vector (the
        # minimum), get exactly 0, also where g is inf or NaN (np.where: no 0 * inf)
        off = plain(d) == 0 if selects else plain(n) == 0
        return np.where(off, zero_of(g), unreduce(g, shape, axes, keepdims)) * d, None, None, None

    return norm_pullback


@rrule(np.linalg.norm, batched=True)
def norm_rule(x, ord=None, axis=None, keepdims=False):
    ans = np.linalg.norm(x, ord, axis, keepdims)
    nd = len(shape_of(x))
    if axis is None and ord is not None:
        axis = tuple(range(nd))
    if axis is None:  # the 2-norm of x.ravel()
        pullback = _norm_pullback(x, ans, None, keepdims,
                                  lambda n: _vector_direction(x, n, 2, None))
    elif np.ndim(axis) == 0 or len(axis) == 1:
        axes = normalize_axes(axis, nd)
        pullback = _norm_pullback(x, ans, axes, keepdims, lambda n: _vector_direction(
            x, n, 2 if ord is None else ord, axes), ord in _SELECTING["vector"])
    else:
        row, col = (int(a) % nd for a in axis)
        pullback = _norm_pullback(x, ans, (row, col), keepdims,
                                  lambda n: _matrix_direction(x, n, ord, row, col),
                                  ord in _SELECTING["matrix"])
    return ans, pullback


@rrule_if_present(np.linalg, "vector_norm")
def vector_norm_rule(x, *, axis=None, keepdims=False, ord=2):
    ans = np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    ord = 2 if ord is None else ord  # (NumPy's None: the 2-norm)
    axes = normalize_axes(axis, len(shape_of(x)))
    return ans, _norm_pullback(x, ans, axes, keepdims,
                               lambda n: _vector_direction(x, n, ord, axes),
                               ord in _SELECTING["vector"])


@rrule_if_present(np.linalg, "matrix_norm")
def matrix_norm_rule(x, *, keepdims=False, ord="fro"):
    ans = np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)
    nd = len(shape_of(x))
    return ans, _norm_pullback(x, ans, (nd - 2, nd - 1), keepdims,
                               lambda n: _matrix_direction(x, n, ord, nd - 2, nd - 1),
                               ord in _SELECTING["matrix"])


@rrule(np.linalg.cond, batched=True)
def cond_rule(x, p=None):
    ans = np.linalg.cond(x, p)
    nd = len(shape_of(x))

    def cond_pullback(g):
        # NumPy 1.26 gives a complex x's condition number as a complex number (imaginary
        # part 0): the cotangent of that constant imaginary part reaches nothing
        g = real(g)
        c = matrices(ans)
        if p in (None, 2, -2):
            # s_max / s_min (or its inverse for p = -2)
            u, s, vh = np.linalg.svd(x, full_matrices=False)
            top, bottom = 0, shape_of(s)[-1] - 1
            if p == -2:
                top, bottom = bottom, top
            d_top = np.matmul(u[..., top:top + 1], vh[..., top:top + 1, :])
            d_bottom = np.matmul(u[..., bottom:bottom + 1], vh[..., bottom:bottom + 1, :])
            d = (d_top - c * d_bottom) / matrices(s[..., bottom])
            return matrices(g) * d, None
        # ||x|| ||x^-1||, through the inverse for the second factor
        y = np.linalg.inv(x)
        nx = np.linalg.norm(x, p, (-2, -1), keepdims=True)
        ny = np.linalg.norm(y, p, (-2, -1), keepdims=True)
        gy = matrices(g) * nx * _matrix_direction(y, ny, p, nd - 2, nd - 1)
        gx = matrices(g) * ny * _matrix_direction(x, nx, p, nd - 2, nd - 1)
        return gx - np.matmul(np.matmul(H(y), gy), H(y)), None

    return ans, cond_pullback
