import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences

from ..spec import NUMPY2, Spec


def square(rng, shape):
    """Well-conditioned square matrices, I + 0.3 M."""
    return np.eye(shape[-1]) + 0.3 * rng.standard_normal(shape)


def csquare(rng, shape):
    return square(rng, shape) + 0.3j * rng.standard_normal(shape)


def spd(rng, shape):
    """Symmetric positive definite matrices, M M^T + n I."""
    m = rng.standard_normal(shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def reshaped_square(rng, shape):
    """A well-conditioned square matrix reshaped to ``shape`` (for tensorinv/tensorsolve)."""
    n = int(round(np.sqrt(np.prod(shape))))
    return np.reshape(square(rng, (n, n)), shape)


MATMUL = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
          ((2, 2, 3), (2, 3, 4)), ((2, 1, 2, 3), (3, 3, 4)), ((3,), (2, 3, 4)),
          ((2, 2, 3), (3,))]
DOT = [((), (3,)), ((3,), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 4)),
       ((2, 2, 3), (3, 4)), ((2, 3), (4, 3, 2)), ((2, 2, 3), (2, 3, 2)), ((3,), (2, 3, 4)),
       ((2, 2, 3), (3,))]
SOLVE = [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2)),
         # NumPy 2 reads only a 1-d b as a vector, NumPy 1.26 any b with one axis fewer than a
         *([((2, 1, 3, 3), (4, 3, 2)), ((2, 3, 3), (3,))] if NUMPY2 else
           [((2, 1, 3, 3), (1, 4, 3, 2)), ((2, 3, 3), (2, 3))])]
LSTSQ = [((4, 3), (4,)), ((4, 3), (4, 2)), ((3, 3), (3,)), ((3, 4), (3,)), ((3, 4), (3, 2))]


def _lstsq(a, b):
    x, residuals, _, sv = np.linalg.lstsq(a, b, rcond=None)
    return x, residuals, sv


SPECS = [
    Spec(np.matmul, MATMUL),
    Spec(np.matmul, MATMUL[3:6], domain="complex", name="np.matmul(complex)"),
    Spec(getattr(np.linalg, "matmul", None), MATMUL[:4]),
    # the gufunc's axes=: the core axes (n, k), (k, m) and (n, m) of a, b and the result,
    # each counted in its own axes; a vector has one
    Spec(np.matmul, [((3, 2, 4), (4, 2, 5))], kwargs={"axes": [
        [(0, 2), (0, 2), (0, 2)], [(0, 2), (0, 2), (2, 0)], [(-3, -1), (0, -1), (-1, -3)]]},
        name="np.matmul(axes)"),
    Spec(np.matmul, MATMUL[3:6], kwargs={"axes": [[(-2, -1), (-2, -1), (-2, -1)]]},
         name="np.matmul(axes, the last two)"),
    Spec(np.matmul, [((4, 3), (4, 2))], kwargs={"axes": [[(1, 0), (0, 1), (1, 0)]]},
         name="np.matmul(axes, transposed)"),
    Spec(np.matmul, [((4,), (4, 2, 5))], kwargs={"axes": [[0, (0, 2), 1], [(0,), (0, 2), (0,)]]},
         name="np.matmul(axes, a vector first)"),
    Spec(np.matmul, [((2, 4, 3), (4,))], kwargs={"axes": [[(0, 1), 0, 0]]},
         name="np.matmul(axes, a vector second)"),
    Spec(np.matmul, [((4,), (4,))], kwargs={"axes": [[0, 0, ()]]},
         name="np.matmul(axes, two vectors)"),
    Spec(np.matmul, [((3, 2, 4), (4, 2, 5))], domain="complex",
         kwargs={"axes": [[(0, 2), (0, 2), (0, 2)]]}, name="np.matmul(axes, complex)"),
    Spec(np.dot, DOT),
    Spec(np.dot, DOT[4:8], domain="complex", name="np.dot(complex)"),
    Spec(np.dot, [((2, 0), (4, 0, 2)), ((0, 3), (2, 3, 0)), ((2, 0), (0,))],
         name="np.dot(an empty axis)"),
    Spec(np.linalg.multi_dot, [((3,), (3, 2), (2, 4)), ((2, 3), (3, 3), (3,)),
                               ((3,), (3, 2), (2,)), ((2, 3), (3, 4), (4, 2), (2, 2))],
         call=lambda *xs: np.linalg.multi_dot(list(xs))),
    Spec(np.linalg.multi_dot, [((2, 3), (3, 4), (4, 2))], domain="complex",
         call=lambda *xs: np.linalg.multi_dot(list(xs)), name="multi_dot(complex)"),
    Spec(np.linalg.matrix_power, [(3, 3), (2, 3, 3)], domain=square,
         kwargs={"n": [-2, -1, 0, 1, 2, 3]}),
    Spec(np.linalg.matrix_power, [(3, 3)], domain=csquare, kwargs={"n": [-2, 3]},
         name="matrix_power(complex)"),
    Spec(np.linalg.inv, [(3, 3), (2, 3, 3)], domain=square),
    Spec(np.linalg.inv, [(3, 3)], domain=csquare, name="inv(complex)"),
    Spec(np.linalg.pinv, [(3, 3), (2, 3), (3, 2), (2, 3, 2)], domain="real"),
    Spec(np.linalg.pinv, [(2, 3)], domain="complex", name="pinv(complex)"),
    Spec(np.linalg.pinv, [(3, 3)], domain=spd, kwargs={"hermitian": [True]},
         name="pinv(hermitian)"),
    # (NumPy takes an empty matrix with hermitian=True, square or not)
    Spec(np.linalg.pinv, [(0, 3), (3, 0), (2, 0, 0)], kwargs={"hermitian": [False, True]},
         name="pinv(empty)"),
    Spec(np.linalg.tensorinv, [(2, 3, 6)], domain=reshaped_square),
    Spec(np.linalg.tensorinv, [(4, 2, 2)], domain=reshaped_square, kwargs={"ind": [1]},
         name="tensorinv(ind=1)"),
    Spec(np.linalg.det, [(3, 3), (2, 3, 3)], domain=square),
    Spec(np.linalg.det, [(3, 3)], domain=csquare, name="det(complex)"),
    Spec(np.linalg.slogdet, [(3, 3), (2, 3, 3)], domain=square),
    Spec(np.linalg.slogdet, [(3, 3), (2, 3, 3)], domain=csquare, name="slogdet(complex)"),
    Spec(np.linalg.solve, SOLVE, domain=(square, "real")),
    Spec(np.linalg.solve, SOLVE[:3], domain=(csquare, "complex"), name="solve(complex)"),
    Spec(np.linalg.tensorsolve, [((2, 3, 6), (2, 3)), ((6, 2, 3), (6,))],
         domain=(reshaped_square, "real")),
    Spec(np.linalg.tensorsolve, [((6, 2, 3), (2, 3))], domain=(reshaped_square, "real"),
         kwargs={"axes": [(0,)]}, name="tensorsolve(axes)"),
    Spec(np.linalg.lstsq, LSTSQ, call=_lstsq),
    Spec(np.linalg.lstsq, LSTSQ[:2], domain="complex", call=_lstsq, name="lstsq(complex)"),
]

NONDIFF = {np.linalg.matrix_rank: (np.eye(3),)}



def test_det_of_a_singular_matrix_has_the_adjugate_gradient():
    for a in (np.ones((3, 3)), np.array([[1.0, 2.0], [2.0, 4.0]]),
              np.array([[1.0, 1j], [1j, -1.0]])):
        # first order: the adjugate's own derivative at a singular matrix is not built
        pb.check_grads(np.linalg.det, a, order=1)
        pb.check_grads(np.linalg.det, np.stack([a, np.eye(len(a))]), order=1)


def test_slogdet_of_a_singular_matrix():
    # NumPy's sign 0 and logabsdet -inf: the sign of a real matrix is piecewise constant
    # (gradient 0, the cotangent inverts nothing); logabsdet's derivative is infinite there
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    stack = np.stack([singular, 2.0 * np.eye(2)])
    g = pb.grad(lambda a: np.sum(np.linalg.slogdet(a)[0]) + np.sum(a))(stack)
    np.testing.assert_array_equal(g, np.ones((2, 2, 2)))
    with pytest.raises(pb.NoRuleError, match="slogdet has no derivative at a singular"):
        pb.grad(lambda a: np.linalg.slogdet(a)[1], losscheck=False)(singular)
    with pytest.raises(pb.NoRuleError, match="singular"):  # a complex one's phase
        pb.grad(lambda a: np.real(np.linalg.slogdet(a)[0]))(singular * (1 + 1j))
    # the other matrices of a stack keep theirs (finite differences, by check_grads)
    pb.check_grads(lambda a: np.linalg.slogdet(a)[1] * np.array([0.0, 1.0]), stack, order=1)


_M = [[1.0, 2.0], [3.0, -4.0]]  # a plain list, as users write a constant matrix
_LINALG_MATMUL = pytest.mark.skipif(not hasattr(np.linalg, "matmul"),
                                    reason="np.linalg.matmul is NumPy 2's")


@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.dot(x, _M) ** 2),
    lambda x: np.sum(np.dot(_M, x) ** 2),
    lambda x: np.sum(np.dot(np.outer(x, x), _M) ** 2),
    pytest.param(lambda x: np.sum(np.linalg.matmul(x, _M) ** 2), marks=_LINALG_MATMUL),
    pytest.param(lambda x: np.sum(np.linalg.matmul(_M, np.outer(x, x)) ** 2),
                 marks=_LINALG_MATMUL),
], ids=["dot-vector-list", "dot-list-vector", "dot-matrix-list", "linalg.matmul-vector-list",
        "linalg.matmul-list-matrix"])
def test_a_list_operand_is_read_as_an_array(f):
    # NumPy reads the list as an array; the pullback transposes it
    x = np.array([0.5, -1.5])
    np.testing.assert_allclose(pb.grad(f)(x), central_differences(f, x), rtol=1e-6)
