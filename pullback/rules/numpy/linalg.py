"""Products (matmul, dot, multi_dot, matrix_power) and numpy.linalg's inverses,
determinants and solves; decompositions are in linalg_decomp, norms in linalg_norm.

Every pullback counts matrix axes from the end, so a cotangent with leading batch axes
(and stacked matrices, ``(..., m, n)``) goes through the same code. Complex matrices follow
the ChainRules convention: the cotangent of ``a @ b`` is ``g @ b^H``, not ``g @ b^T``.
np.matmul's ``axes=`` (the gufunc's keyword) is the product of the operands with their core
axes moved last, its own moved back (``array_api.core_axes`` reads the keyword).
"""

import math

import numpy as np

from ...extend import (
    NoRuleError,
    bilinear,
    is_foreign,
    nondifferentiable,
    on_backend,
    plain,
    rrule,
    shape_of,
)
from .._util import as_array, batch_shape, conj_if_complex, zero_of
from ._linalg import (
    H,
    columns,
    det_vjp,
    hermitian_adjoint,
    is_zero,
    matrices,
    mT,
    solve_vjp,
    svdvals_vjp,
    uncolumns,
)
from .array_api import core_axes, last, moved

nondifferentiable(np.linalg.matrix_rank)

# ---------------------------------------------------------------------------- products

_LISTS = (list, tuple)


def _matmul_vjp(g, a, b, a_nd, b_nd):
    """Cotangents of ``a @ b``: g times b transposed, and a transposed times g; 1-d
    operands are promoted as matmul promotes them. ``g`` may carry leading batch axes.
    Both are thunks, so that a constant operand (the data in x @ W) costs nothing."""

    def matmul_a():
        bc = conj_if_complex(b)
        if b_nd == 1:  # (..., m, k) @ (k,): g is (..., m)
            return np.expand_dims(g, -1) * bc
        if a_nd == 1 and b_nd == 2:  # (k,) @ (k, n): g is (..., n), one matrix product
            return np.matmul(g, mT(bc))
        if a_nd == 1:  # (k,) @ (..., k, n): g is (..., n)
            return np.matmul(np.expand_dims(g, -2), mT(bc))[..., 0, :]
        return np.matmul(g, mT(bc))

    def matmul_b():
        ac = conj_if_complex(a)
        if a_nd == 1 and b_nd == 1:
            return np.expand_dims(g, -1) * ac
        if a_nd == 1:
            return np.expand_dims(ac, -1) * np.expand_dims(g, -2)
        if b_nd == 1 and a_nd == 2:  # (m, k) @ (k,): g is (..., m), one matrix product
            return np.matmul(g, ac)
        if b_nd == 1:
            return np.matmul(np.expand_dims(g, -2), ac)[..., 0, :]
        return np.matmul(mT(ac), g)

    return matmul_a, matmul_b


def matmul_rule(a, b, **keywords):
    if type(a) in _LISTS or type(b) in _LISTS:  # np.linalg.matmul of a list: the pullback
        a, b = as_array(a), as_array(b)  # transposes it (a check, not a call: a hot rule)
    if keywords:  # the gufunc's axes=
        return _matmul_axes(a, b, keywords)
    a_nd, b_nd = len(shape_of(a)), len(shape_of(b))

    def matmul_pullback(g):
        return _matmul_vjp(g, a, b, a_nd, b_nd)

    return np.matmul(a, b), matmul_pullback


def _matmul_axes(a, b, keywords):
    """np.matmul(a, b, axes=...): the product of a and b with their core axes moved last,
    and its own moved where ``axes`` puts them; the pullback moves the cotangent's core
    axes last, and the cotangents' back (counted from the end: batch axes come first)."""
    (axes_a, axes_b), axes_out, _ = core_axes(np.matmul, "np.matmul", (a, b), keywords)
    from_a = tuple(k - len(shape_of(a)) for k in axes_a)
    from_b = tuple(k - len(shape_of(b)) for k in axes_b)
    product, pullback = matmul_rule(moved(a, from_a, last(len(from_a))),
                                    moved(b, from_b, last(len(from_b))))
    to = tuple(k - len(shape_of(product)) for k in axes_out)

    def matmul_axes_pullback(g):
        ga, gb = pullback(moved(g, to, last(len(to))))

        def matmul_axes_a():
            return moved(ga(), last(len(from_a)), from_a)

        def matmul_axes_b():
            return moved(gb(), last(len(from_b)), from_b)

        return matmul_axes_a, matmul_axes_b

    return moved(product, last(len(to)), to), matmul_axes_pullback


def _real_matrices(a, b):  # the common case: g @ b.T and a.T @ g, recorded as a row
    return (a.__class__ is np.ndarray and b.__class__ is np.ndarray and a.ndim == b.ndim == 2
            and a.dtype.kind in "fiub" and b.dtype.kind in "fiub")


def dot_rule(a, b):
    if type(a) in _LISTS or type(b) in _LISTS:  # np.dot of a list
        a, b = as_array(a), as_array(b)
    a_shape, b_shape = shape_of(a), shape_of(b)
    a_nd, b_nd = len(a_shape), len(b_shape)

    def dot_pullback(g):
        if a_nd == 0 or b_nd == 0:
            return g * conj_if_complex(b), g * conj_if_complex(a)
        if max(a_nd, b_nd) <= 2 or min(a_nd, b_nd) == 1:
            return _matmul_vjp(g, a, b, a_nd, b_nd)  # dot agrees with matmul here
        # dot(a, b)[i..., j..., m] = sum_k a[i..., k] b[j..., k, m]: one matrix product
        # of a as (P, K) and b with its axis k moved first, as (K, Q M)
        # (the sizes written out: a reshape to (-1, 0) is ambiguous for an empty axis k)
        k = a_shape[-1]
        a2 = np.reshape(a, (math.prod(a_shape[:-1]), k))
        b2 = np.reshape(np.moveaxis(b, -2, 0), (k, math.prod(b_shape[:-2] + b_shape[-1:])))
        g2 = np.reshape(g, batch_shape(g, a_nd + b_nd - 2) + (a2.shape[0], b2.shape[1]))
        ga = np.reshape(np.matmul(g2, H(b2)), shape_of(g2)[:-2] + a_shape)
        gb = np.reshape(np.matmul(H(a2), g2), shape_of(g2)[:-2] + (k,) + b_shape[:-2]
                        + b_shape[-1:])
        return ga, np.moveaxis(gb, -b_nd, -2)

    return np.dot(a, b), dot_pullback


# np.dot of matrices is their product too; NumPy 2 spells matmul np.linalg.matmul as well
for _product, _rule in ((np.matmul, matmul_rule), (np.dot, dot_rule),
                        (getattr(np.linalg, "matmul", None), matmul_rule)):
    if _product is not None:
        bilinear(_product, _rule, _real_matrices, lambda g, a, b: np.matmul(g, b.T),
                 lambda g, a, b: np.matmul(a.T, g), batched=True)


@rrule(np.linalg.multi_dot, batched=True)
def multi_dot_rule(arrays, *, out=None):
    ans = np.linalg.multi_dot(arrays)
    first_vector = len(shape_of(arrays[0])) == 1
    last_vector = len(shape_of(arrays[-1])) == 1

    def multi_dot_pullback(g):
        mats = list(arrays)  # vectors as a row and a column; g as a matrix to match
        if last_vector:
            mats[-1] = np.expand_dims(mats[-1], -1)
            g = np.expand_dims(g, -1)
        if first_vector:
            mats[0] = np.expand_dims(mats[0], 0)
            g = np.expand_dims(g, -2)
        # the cotangent of mats[i] is (mats[:i] product)^H g (mats[i+1:] product)^H
        left = [g]
        for m in mats[:-1]:
            left.append(np.matmul(H(m), left[-1]))
        cts = [None] * len(mats)
        right = None
        for i in range(len(mats) - 1, -1, -1):
            cts[i] = left[i] if right is None else np.matmul(left[i], right)
            if i:
                right = H(mats[i]) if right is None else np.matmul(right, H(mats[i]))
        if first_vector:
            cts[0] = cts[0][..., 0, :]
        if last_vector:
            cts[-1] = cts[-1][..., 0]
        return (cts,)

    return ans, multi_dot_pullback


@rrule(np.linalg.matrix_power, batched=True)
def matrix_power_rule(a, n):
    ans = np.linalg.matrix_power(a, n)

    def matrix_power_pullback(g):
        if n == 0:
            return None, None
        b = a if n > 0 else np.linalg.inv(a)
        # d b^m = sum_k b^k db b^(m-1-k): the cotangent of b is sum_k (b^H)^k g (b^H)^(m-1-k)
        bh = H(b)
        powers = [None, bh]
        for _ in range(abs(n) - 2):
            powers.append(np.matmul(powers[-1], bh))
        gb = g if abs(n) == 1 else np.matmul(g, powers[-1]) + np.matmul(powers[-1], g)
        for k in range(1, abs(n) - 1):
            gb = gb + np.matmul(np.matmul(powers[k], g), powers[abs(n) - 1 - k])
        if n > 0:
            return gb, None
        return -np.matmul(np.matmul(bh, gb), bh), None  # through the inverse

    return ans, matrix_power_pullback


# ---------------------------------------------------------------------------- inverses

@rrule(np.linalg.inv, batched=True)
def inv_rule(a):
    ans = np.linalg.inv(a)

    def inv_pullback(g):
        ah = H(ans)
        return (-np.matmul(np.matmul(ah, g), ah),)

    return ans, inv_pullback


def _pinv_vjp(a, x, g):
    """The cotangent of ``a`` for ``x = pinv(a)`` (Golub and Pereyra 1973; valid where
    the rank does not change): -x^H g x^H + (I - a x) g^H x x^H + x^H x g^H (I - x a)."""
    xh, gh = H(x), H(g)
    first = -np.matmul(np.matmul(xh, g), xh)
    left = np.matmul(gh, np.matmul(x, xh))
    right = np.matmul(np.matmul(xh, x), gh)
    return (first + left - np.matmul(a, np.matmul(x, left))
            + right - np.matmul(np.matmul(right, x), a))


@rrule(np.linalg.pinv, batched=True)
def pinv_rule(a, rcond=None, hermitian=False, **kwargs):
    if rcond is not None:  # NumPy 1.26 takes no None: its default is 1e-15
        kwargs["rcond"] = rcond
    ans = np.linalg.pinv(a, hermitian=hermitian, **kwargs)

    def pinv_pullback(g):
        if 0 in shape_of(a):  # (NumPy takes an empty a with hermitian=True, square or not)
            return None, None, None
        ga = _pinv_vjp(a, ans, g)
        if hermitian:  # computed by eigh, which reads the lower triangle
            ga = hermitian_adjoint(ga, lower=True)
        return ga, None, None

    return ans, pinv_pullback


@rrule(np.linalg.tensorinv, batched=True)
def tensorinv_rule(a, ind=2):
    ans = np.linalg.tensorinv(a, ind)
    shape = shape_of(a)
    n = math.prod(shape[:ind])

    def tensorinv_pullback(g):
        # the inverse of a seen as an (n, n) matrix, reshaped
        y = np.reshape(ans, (n, n))
        g2 = np.reshape(g, batch_shape(g, len(shape)) + (n, n))
        ga = -np.matmul(np.matmul(H(y), g2), H(y))
        return np.reshape(ga, shape_of(g2)[:-2] + shape), None

    return ans, tensorinv_pullback


# ---------------------------------------------------------------------------- determinants

@rrule(np.linalg.det, batched=True)
def det_rule(a):
    ans = np.linalg.det(a)

    def det_pullback(g):
        return (det_vjp(a, ans, g),)

    return ans, det_pullback


@rrule(np.linalg.slogdet, batched=True)
def slogdet_rule(a):
    ans = np.linalg.slogdet(a)

    def slogdet_pullback(g):
        g_sign, g_log = g
        # d logabsdet = Re t and d sign = i Im(t) sign, with t = tr(a^-1 da); the sign
        # of a real matrix is a constant
        c = g_log
        sign = plain(ans.sign)
        if np.iscomplexobj(sign):
            w = g_sign * np.conjugate(ans.sign)
            c = c + (w - np.conjugate(w)) / 2
        singular = None if is_foreign(sign) else sign == 0
        if singular is None or not np.any(singular):
            return (matrices(c) * H(np.linalg.inv(a)),)
        # a singular matrix (sign 0, logabsdet -inf): logabsdet's derivative is infinite
        # there, and so is the phase's of a complex one; a real sign alone is constant
        needed = plain(g_log) != 0
        if np.iscomplexobj(sign):
            needed = needed | (plain(g_sign) != 0)
        if np.any(singular & needed):
            raise NoRuleError(
                "pullback: np.linalg.slogdet has no derivative at a singular matrix (sign 0, "
                "logabsdet -inf): the derivative of logabsdet (and of a complex sign) is "
                "infinite there. Keep the matrix nonsingular (a + eps * I), or use "
                "np.linalg.det, whose derivative at a singular matrix is its adjugate."
            )
        eye = on_backend(np.eye(shape_of(a)[-1]), sign)
        safe = np.where(matrices(singular), eye, a)  # (their cotangent is 0)
        return (matrices(np.where(singular, zero_of(c), c)) * H(np.linalg.inv(safe)),)

    return ans, slogdet_pullback


# ---------------------------------------------------------------------------- solves

@rrule(np.linalg.solve, batched=True)
def solve_rule(a, b):
    ans = np.linalg.solve(a, b)
    # b was a (stack of) vector(s) where the solution lost a's last axis: NumPy 2 reads only
    # a 1-d b so, NumPy 1.26 any b with one axis fewer than a
    vector = len(shape_of(ans)) < len(shape_of(a))

    def solve_pullback(g):
        return solve_vjp(H(a), ans, g, vector)

    return ans, solve_pullback


@rrule(np.linalg.tensorsolve, batched=True)
def tensorsolve_rule(a, b, axes=None):
    a_shape = shape_of(a)
    nd = len(a_shape)
    moved = None
    if axes is not None:  # NumPy moves these axes of a to the end, in this order
        moved = [int(k) % nd for k in axes]
        a = np.moveaxis(a, moved, range(nd - len(moved), nd))
    ans = np.linalg.tensorsolve(a, b)
    b_shape = shape_of(b)
    n = math.prod(b_shape)

    def tensorsolve_pullback(g):
        # a solve with a as an (n, n) matrix
        nb = batch_shape(g, len(shape_of(ans)))
        a2 = np.reshape(a, (n, n))
        g2 = np.reshape(g, nb + (n,))
        ga, gb = solve_vjp(H(a2), np.reshape(ans, (n,)), g2, True)
        ga = np.reshape(ga, nb + shape_of(a))
        if moved is not None:
            ga = np.moveaxis(ga, range(-len(moved), 0), [k - nd for k in moved])
        return ga, np.reshape(gb, nb + b_shape), None

    return ans, tensorsolve_pullback


@rrule(np.linalg.lstsq, batched=True)
def lstsq_rule(a, b, *rcond, **kwargs):
    # rcond only where the caller gave it: NumPy 1.26 and 2 have different defaults
    ans = np.linalg.lstsq(a, b, *rcond, **kwargs)
    vector = len(shape_of(b)) == 1

    def lstsq_pullback(g):
        # x = pinv(a) b, differentiated where a has full rank
        g_x, g_res, _, g_sv = g
        x, b_cols = columns(ans[0], vector), columns(b, vector)
        p = np.linalg.pinv(a)
        gx = columns(g_x, vector)
        gb = np.matmul(H(p), gx)
        ga = _pinv_vjp(a, p, np.matmul(gx, H(b_cols)))
        if not is_zero(g_res) and shape_of(ans[1])[-1:] != (0,):
            # the residual |b - a x|^2 is stationary in x: only its explicit a and b move
            r = (b_cols - np.matmul(a, x)) * np.expand_dims(2 * g_res, -2)
            gb = gb + r
            ga = ga - np.matmul(r, H(x))
        if not is_zero(g_sv):
            ga = ga + svdvals_vjp(a, g_sv)
        return ga, uncolumns(gb, vector), None

    return ans, lstsq_pullback
