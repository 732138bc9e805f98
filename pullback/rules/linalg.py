"""Products and numpy.linalg."""

import numpy as np

from ..core import NoRuleError, rrule
from ._util import conj_if_complex, shape_of


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _matmul_vjp(g, a, b, a_nd, b_nd):
    """Cotangents of ``a @ b``: g times b transposed, and a transposed times g; 1-d
    operands are promoted as matmul promotes them. ``g`` may carry leading batch axes."""
    a, b = conj_if_complex(a), conj_if_complex(b)
    if a_nd == 1 and b_nd == 1:
        g1 = np.expand_dims(g, -1)
        return g1 * b, g1 * a
    if a_nd == 1:  # (k,) @ (..., k, n): g is (..., n)
        return (np.matmul(np.expand_dims(g, -2), _mT(b))[..., 0, :],
                np.expand_dims(a, -1) * np.expand_dims(g, -2))
    if b_nd == 1:  # (..., m, k) @ (k,): g is (..., m)
        return (np.expand_dims(g, -1) * b,
                np.matmul(np.expand_dims(g, -2), a)[..., 0, :])
    return np.matmul(g, _mT(b)), np.matmul(_mT(a), g)


@rrule(np.matmul)
def matmul_rule(a, b):
    a_nd, b_nd = len(shape_of(a)), len(shape_of(b))

    def matmul_pullback(g):
        return _matmul_vjp(g, a, b, a_nd, b_nd)

    return np.matmul(a, b), matmul_pullback


@rrule(np.dot)
def dot_rule(a, b):
    a_nd, b_nd = len(shape_of(a)), len(shape_of(b))
    if a_nd > 2 or b_nd > 2:
        raise NoRuleError(
            f"pullback: np.dot of arrays with {a_nd} and {b_nd} axes has no rule; "
            "use np.matmul, np.tensordot or np.einsum"
        )

    def dot_pullback(g):
        if a_nd == 0 or b_nd == 0:
            return g * conj_if_complex(b), g * conj_if_complex(a)
        return _matmul_vjp(g, a, b, a_nd, b_nd)

    return (np.multiply(a, b) if a_nd == 0 or b_nd == 0 else np.matmul(a, b)), dot_pullback
