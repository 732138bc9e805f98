import numpy as np
import pytest

import pullback as pb

from ..spec import Spec, check_unreached
from .test_linalg import csquare, square

VECTOR_NORM = getattr(np.linalg, "vector_norm", None)  # NumPy 2 and later

MATRIX_NORM = getattr(np.linalg, "matrix_norm", None)  # NumPy 2 and later

INF = np.inf
VECTOR_ORDS = [None, 2, 1, -1, INF, -INF, 0, 3, 0.5, -2]
MATRIX_ORDS = [None, "fro", "nuc", INF, -INF, 1, -1, 2, -2]

SPECS = [
    Spec(np.linalg.norm, [(2, 3, 2)], name="norm(ravel)"),
    Spec(np.linalg.norm, [(3,)], domain="nonzero", kwargs={"ord": VECTOR_ORDS}),
    Spec(np.linalg.norm, [(2, 3)], domain="nonzero",
         kwargs={"ord": [None, 1, INF, 3], "axis": [0, -1], "keepdims": [False, True]},
         name="norm(vector, axis)"),
    Spec(np.linalg.norm, [(3, 3), (2, 3)], kwargs={"ord": MATRIX_ORDS}, name="norm(matrix)"),
    Spec(np.linalg.norm, [(2, 3, 4)],
         kwargs={"ord": ["fro", "nuc", INF, 1, -2], "axis": [(0, 2), (-1, 0)],
                 "keepdims": [False, True]},
         name="norm(matrix, axis)"),
    Spec(np.linalg.norm, [(3,)], domain="complex", kwargs={"ord": [None, 1, INF, 3]},
         name="norm(complex vector)"),
    Spec(np.linalg.norm, [(3, 3)], domain="complex", kwargs={"ord": MATRIX_ORDS},
         name="norm(complex matrix)"),
    Spec(VECTOR_NORM, [(2, 3)], domain="nonzero",
         kwargs={"ord": [None, 2, 1, -1, INF, -INF, 0, 3]}),
    Spec(VECTOR_NORM, [(2, 3, 2)], domain="nonzero",
         kwargs={"ord": [2, INF], "axis": [-1, (0, 2)], "keepdims": [False, True]},
         name="vector_norm(axis)"),
    Spec(MATRIX_NORM, [(3, 3), (2, 3, 4)], kwargs={"ord": MATRIX_ORDS[1:]}),
    Spec(MATRIX_NORM, [(2, 3, 4)], kwargs={"ord": ["fro", "nuc", 1],
                                                      "keepdims": [True]},
         name="matrix_norm(keepdims)"),
    Spec(np.linalg.cond, [(3, 3), (2, 3, 3)], domain=square, kwargs={"p": MATRIX_ORDS}),
    Spec(np.linalg.cond, [(3, 4)], kwargs={"p": [None, 2, -2]}, name="cond(wide)"),
    Spec(np.linalg.cond, [(3, 3)], domain=csquare, kwargs={"p": [None, -2, "fro", 1]},
         name="cond(complex)"),
]



@pytest.mark.parametrize("ord", [None, 2, 1, INF, 3, 0.5])
def test_norm_at_zero_has_gradient_zero(ord):
    for x in (np.zeros(3), np.zeros(3, complex)):
        grad = pb.grad(lambda x: np.linalg.norm(x, ord))(x)
        np.testing.assert_array_equal(grad, np.zeros_like(x))
    if hasattr(np.linalg, "vector_norm"):  # NumPy 2
        grad = pb.grad(lambda x: np.linalg.vector_norm(x, ord=ord))(np.zeros((2, 2)))
        np.testing.assert_array_equal(grad, np.zeros((2, 2)))


def test_frobenius_norm_at_zero_has_gradient_zero():
    grad = pb.grad(lambda x: np.linalg.norm(x, "fro"))(np.zeros((2, 3)))
    np.testing.assert_array_equal(grad, np.zeros((2, 3)))


def test_zero_norm_counts_and_has_gradient_zero():
    x = np.array([1.5, 0.0, -2.0])
    value, grad = pb.value_and_grad(lambda x: np.linalg.norm(x, 0))(x)
    assert value == 2.0
    np.testing.assert_array_equal(grad, np.zeros(3))


def test_ties_of_the_max_norm_share_the_gradient():
    grad = pb.grad(lambda x: np.linalg.norm(x, INF))(np.array([2.0, -2.0, 1.0]))
    np.testing.assert_array_equal(grad, [0.5, -0.5, 0.0])


@pytest.mark.parametrize("f", [
    lambda x: np.linalg.norm(x.ravel(), INF), lambda x: np.linalg.norm(x.ravel(), -INF),
    lambda x: np.linalg.norm(x, INF, axis=0), lambda x: np.linalg.norm(x, 1),
    lambda x: np.linalg.norm(x, -1), lambda x: np.linalg.norm(x, INF),
], ids=["vector-inf", "vector--inf", "vector-inf-axis", "matrix-1", "matrix--1",
        "matrix-inf"])
def test_an_infinite_cotangent_reaches_only_the_entries_the_norm_selects(f):
    # the max and 1 norms select (a max entry, a max row or column sum): the others get
    # exactly 0, even from an inf or NaN cotangent
    x = np.array([[0.5, -1.0, 2.0], [3.0, 1.5, -0.25]])
    with np.errstate(invalid="ignore"):
        assert check_unreached(f, x) > 0


@pytest.mark.parametrize("ord", [None, 2, 1, INF, 3, 0.5, "fro", "nuc", -2])
def test_norm_at_zero_has_gradient_zero_for_any_cotangent(ord):
    # the norm at 0 is its minimum (gradient 0): so it stays for an inf or NaN cotangent,
    # as sqrt(norm(x)) at 0 sends (not 0 * inf, nor the singular vectors of the zero matrix)
    x = np.zeros((2, 2)) if ord in ("fro", "nuc", -2) else np.zeros(3)
    _, pullback = pb.vjp(lambda x: np.linalg.norm(x, ord), x)
    for g in (np.inf, np.nan, 1.0):
        np.testing.assert_array_equal(pullback(g)[0], np.zeros_like(x))
