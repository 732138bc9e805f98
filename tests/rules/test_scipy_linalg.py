import numpy as np
import pytest
import scipy.linalg as sl

import pullback as pb

from .spec import Spec, check_unreached
from .test_linalg import csquare, spd, square
from .test_linalg_decomp import hpd, sym

SOLVE = [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2))]
SQUARE = [(3, 3), (2, 3, 3)]


def _cho(a, b, lower=False):
    return sl.cho_solve(sl.cho_factor(a, lower=lower), b)


def _lu(a, b, trans=0):
    return sl.lu_solve(sl.lu_factor(a), b, trans=trans)


def _eigh(a, **kw):
    w, v = sl.eigh(a, **kw)
    return w, np.abs(v) ** 2


def _eigh_generalized(a, b):
    w, v = sl.eigh(a, b)
    return w, np.abs(v) ** 2


def _band(upper, imag=0.0):
    """Banded storage of a diagonally dominant matrix: the diagonal is row ``upper``."""
    def draw(rng, shape):
        ab = 0.3 * rng.standard_normal(shape) + imag * 1j * rng.standard_normal(shape)
        ab[upper] += 2.0
        return ab

    return draw


def _banded(lower, upper):
    return lambda ab, b: sl.solve_banded((lower, upper), ab, b)


SPECS = [
    Spec(sl.solve_triangular, SOLVE, domain=(square, "real"),
         kwargs={"lower": [False, True], "trans": [0, 1, 2]}),
    Spec(sl.solve_triangular, SOLVE[:2], domain=(square, "real"),
         kwargs={"unit_diagonal": [True], "trans": ["N", "T"]},
         name="solve_triangular(unit_diagonal)"),
    Spec(sl.solve_triangular, SOLVE[:2], domain=(csquare, "complex"),
         kwargs={"lower": [True], "trans": [0, 1, 2]}, name="solve_triangular(complex)"),
    Spec(sl.cho_factor, SQUARE, domain=spd, kwargs={"lower": [False, True]},
         call=lambda a, lower: sl.cho_factor(a, lower=lower)[0]),
    Spec(sl.cho_factor, [(3, 3)], domain=hpd, kwargs={"lower": [False, True]},
         call=lambda a, lower: sl.cho_factor(a, lower=lower)[0], name="cho_factor(complex)"),
    Spec(sl.cho_solve, SOLVE, domain=(spd, "real"), kwargs={"lower": [False, True]},
         call=_cho),
    Spec(sl.cho_solve, SOLVE[:2], domain=(hpd, "complex"), call=_cho,
         name="cho_solve(complex)"),
    Spec(sl.lu_factor, SQUARE, domain=square, call=lambda a: sl.lu_factor(a)[0]),
    Spec(sl.lu_factor, [(3, 3)], domain=csquare, call=lambda a: sl.lu_factor(a)[0],
         name="lu_factor(complex)"),
    Spec(sl.lu_solve, SOLVE, domain=(square, "real"), kwargs={"trans": [0, 1, 2]}, call=_lu),
    Spec(sl.lu_solve, SOLVE[:2], domain=(csquare, "complex"), kwargs={"trans": [0, 1, 2]},
         call=_lu, name="lu_solve(complex)"),
    Spec(sl.expm, SQUARE),
    Spec(sl.expm, [(3, 3)], domain="complex", name="expm(complex)"),
    Spec(sl.logm, [(2, 2), (2, 2, 2)], domain=square),  # logm is slow: small matrices
    Spec(sl.logm, [(2, 2)], domain=csquare, name="logm(complex)"),
    Spec(sl.sqrtm, SQUARE, domain=square),
    Spec(sl.sqrtm, [(3, 3)], domain=csquare, name="sqrtm(complex)"),
    Spec(sl.solve_sylvester, [((3, 3), (2, 2), (3, 2)), ((2, 3, 3), (2, 2), (3, 2))],
         domain=(square, square, "real")),
    Spec(sl.solve_sylvester, [((2, 2), (3, 3), (2, 3))], domain=(csquare, csquare, "complex"),
         name="solve_sylvester(complex)"),
    Spec(sl.eigh, SQUARE, domain=sym, kwargs={"lower": [True, False]}, call=_eigh),
    Spec(sl.eigh, [(3, 3)], domain=hpd, call=_eigh, name="eigh(complex)"),
    Spec(sl.eigh, [(3, 3)], domain=sym, kwargs={"eigvals_only": [True]},
         name="eigh(eigvals_only)"),
    Spec(sl.eigh, [((3, 3), (3, 3))], domain=(sym, spd), call=_eigh_generalized,
         name="eigh(generalized)"),
    Spec(sl.eigh, [((3, 3), (3, 3))], domain=(hpd, hpd), call=_eigh_generalized,
         name="eigh(generalized, complex)"),
    Spec(sl.det, SQUARE, domain=square),
    Spec(sl.det, [(3, 3)], domain=csquare, name="det(complex)"),
    Spec(sl.inv, SQUARE, domain=square),
    Spec(sl.inv, [(3, 3)], domain=spd,
         kwargs={"assume_a": ["pos", "sym", "diagonal", "upper triangular"],
                 "lower": [False, True]}, name="inv(assume_a)"),
    Spec(sl.inv, [(3, 3)], domain=csquare, name="inv(complex)"),
    Spec(sl.solve, SOLVE, domain=(square, "real")),
    Spec(sl.solve, SOLVE[:2], domain=(spd, "real"),
         kwargs={"assume_a": ["pos", "sym", "her", "diagonal", "tridiagonal", "banded",
                              "lower triangular"], "lower": [True]},
         name="solve(assume_a)"),
    Spec(sl.solve, SOLVE[:2], domain=(spd, "real"), kwargs={"assume_a": ["pos"],
                                                            "lower": [False]},
         name="solve(upper)"),
    Spec(sl.solve, SOLVE[:2], domain=(square, "real"), kwargs={"transposed": [True]},
         name="solve(transposed)"),
    Spec(sl.solve, SOLVE[:2], domain=(hpd, "complex"), kwargs={"assume_a": [None, "her"]},
         name="solve(complex)"),
    Spec(sl.cholesky, SQUARE, domain=spd, kwargs={"lower": [False, True]}),
    *[Spec(sl.solve_banded, [((lower + upper + 1, 5), (5,)), ((lower + upper + 1, 5), (5, 2))],
           domain=(_band(upper), "real"), call=_banded(lower, upper),
           name=f"solve_banded(l={lower}, u={upper})")
      for lower, upper in [(1, 1), (2, 1), (0, 2), (1, 0), (0, 0)]],
    Spec(sl.solve_banded, [((3, 4), (4, 2))], domain=(_band(1, imag=0.3), "complex"),
         call=_banded(1, 1), name="solve_banded(complex)"),
    Spec(sl.cholesky, [(3, 3)], domain=hpd, kwargs={"lower": [False, True]},
         name="cholesky(complex)"),
]



def test_eigh_of_a_subset_raises():
    with pytest.raises(pb.NoRuleError):
        pb.grad(lambda a: np.sum(sl.eigh(a, subset_by_index=[0, 1])[0]))(np.eye(3))


def test_solve_banded_corners_outside_the_matrix_get_zero():
    # ab[0, 0] and ab[2, -1] lie outside a tridiagonal matrix
    ab = np.array([[9.0, 0.5, 0.2, 0.1], [2.0, 3.0, 2.5, 2.0], [0.3, 0.4, 0.2, 9.0]])
    g = pb.grad(lambda ab: np.sum(sl.solve_banded((1, 1), ab, np.ones(4)) ** 2))(ab)
    assert g[0, 0] == 0.0 and g[2, -1] == 0.0
    assert np.all(g[1] != 0.0)


_A = np.array([[4.0, 1.0, 0.5], [1.2, 3.0, -0.2], [0.4, -0.3, 2.0]])
_B = np.array([1.0, -2.0, 0.5])


@pytest.mark.parametrize("f", [
    lambda a: sl.cho_factor(a, lower=True)[0][np.tril_indices(3)],
    lambda a: sl.inv(a, assume_a="lower triangular"),
    lambda a: sl.solve(a, _B, assume_a="sym", lower=True),
    lambda a: sl.solve(a, _B, assume_a="diagonal"),
    lambda a: sl.cholesky(a, lower=False),
], ids=["cho_factor", "inv-triangular", "solve-sym", "solve-diagonal", "cholesky"])
def test_an_infinite_cotangent_reaches_only_the_part_read(f):
    # these read part of a (a triangle, the diagonal): the rest gets exactly 0, even from an
    # inf or NaN cotangent (not 0 * inf through a mask's zeros). (solve_triangular and
    # cho_solve solve with the cotangent, which SciPy refuses when it is not finite.)
    with np.errstate(invalid="ignore"):
        assert check_unreached(f, _A, whole=True) > 0
