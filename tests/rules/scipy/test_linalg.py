import numpy as np
import pytest
import scipy.linalg as sl

import pullback as pb
from tests.conftest import central_differences

from ..numpy.test_linalg import csquare, spd, square
from ..numpy.test_linalg_decomp import hpd, sym
from ..spec import Spec, check_unreached

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


# decompositions and functions of values that numpy.linalg also computes
RECT = [(3, 3), (4, 3), (3, 4), (2, 4, 3)]
LSTSQ = [((4, 3), (4,)), ((4, 3), (4, 2)), ((3, 3), (3,)), ((3, 4), (3,)), ((3, 4), (3, 2))]


def _svd(a, **kw):
    u, s, vh = sl.svd(a, **kw)
    k = s.shape[-1]
    # a full u or vh: the columns (rows) past k span a complement that only moves as a
    # whole, so they are checked through their squared norm along each row (column)
    return (np.abs(u[..., :k]) ** 2, s, np.abs(vh[..., :k, :]) ** 2,
            np.sum(np.abs(u[..., k:]) ** 2, axis=-1), np.sum(np.abs(vh[..., k:, :]) ** 2, -2))


def _qr(a, mode="economic", pivoting=False):
    out = tuple(sl.qr(a, mode=mode, pivoting=pivoting))  # (a list for a stack)
    if mode == "full":  # the last m - n columns of a tall q are not determined by a
        out = (out[0][..., :a.shape[-1]],) + out[1:]
    return out


def _lstsq(a, b, **kw):
    x, residues, _, s = sl.lstsq(a, b, **kw)
    return (x, residues) if s is None else (x, residues, s)  # (gelsy gives no s)


SPECS += [
    Spec(sl.svd, RECT, kwargs={"full_matrices": [False, True],
                               "lapack_driver": ["gesdd", "gesvd"]}, call=_svd),
    Spec(sl.svd, [(4, 3), (3, 4)], domain="complex", kwargs={"full_matrices": [False]},
         call=_svd, name="svd(complex)"),
    Spec(sl.svd, RECT, kwargs={"compute_uv": [False]}, name="svd(compute_uv=False)"),
    Spec(sl.svdvals, RECT),
    Spec(sl.svdvals, [(3, 4)], domain="complex", name="svdvals(complex)"),
    Spec(sl.qr, RECT, kwargs={"mode": ["full", "economic", "r"], "pivoting": [False, True]},
         call=_qr),
    Spec(sl.qr, [(4, 3), (3, 4)], domain="complex", kwargs={"pivoting": [False, True]},
         call=_qr, name="qr(complex)"),
    Spec(sl.eigvalsh, SQUARE, domain=sym, kwargs={"lower": [True, False]}),
    Spec(sl.eigvalsh, [(3, 3)], domain=hpd, name="eigvalsh(complex)"),
    Spec(sl.eigvalsh, [((3, 3), (3, 3))], domain=(sym, spd), name="eigvalsh(generalized)"),
    Spec(sl.eigvalsh, [(4, 4)], domain=sym, kwargs={"subset_by_index": [(0, 1), (1, 3)]},
         name="eigvalsh(subset_by_index)"),
    Spec(sl.eigh, [(4, 4)], domain=sym,
         kwargs={"subset_by_index": [(2, 2)], "eigvals_only": [True]},
         name="eigh(eigvals_only, subset_by_index)"),
    Spec(sl.norm, [(3,), (2, 3, 2)]),
    Spec(sl.norm, [(3, 3), (2, 3)], kwargs={"ord": [None, "fro", "nuc", 2, -2, 1, np.inf]},
         name="norm(matrix)"),
    Spec(sl.norm, [(2, 3)], domain="nonzero",
         kwargs={"ord": [None, 1, 3], "axis": [0, -1], "keepdims": [False, True]},
         name="norm(vector, axis)"),
    Spec(sl.norm, [(3, 3)], domain="complex", kwargs={"ord": [None, 2]},
         name="norm(complex)"),
    Spec(sl.pinv, [(3, 3), (2, 3), (3, 2), (2, 3, 2)],
         kwargs={"atol": [None, 0.05], "rtol": [None, 1e-3]}),
    Spec(sl.pinv, [(2, 3)], domain="complex", name="pinv(complex)"),
    Spec(sl.lstsq, LSTSQ, call=_lstsq),
    Spec(sl.lstsq, LSTSQ[:2], kwargs={"lapack_driver": ["gelsy", "gelss"], "cond": [None, 1e-8]},
         call=_lstsq, name="lstsq(lapack_driver, cond)"),
    Spec(sl.lstsq, LSTSQ[:2], domain="complex", call=_lstsq, name="lstsq(complex)"),
    Spec(sl.lu, SQUARE, domain=square, kwargs={"permute_l": [False, True]}),
    Spec(sl.lu, [(3, 3)], domain=square, kwargs={"p_indices": [True]}, name="lu(p_indices)"),
    Spec(sl.lu, [(3, 3)], domain=csquare, name="lu(complex)"),
    Spec(sl.block_diag, [((2, 2), (3,)), ((2, 3), ()), ((1, 2), (2, 2), (3, 1))],
         call=lambda *blocks: sl.block_diag(*blocks)),
    Spec(sl.block_diag, [((2, 2), (2, 2))], domain=("real", "complex"),
         call=lambda *blocks: sl.block_diag(*blocks), name="block_diag(complex)"),
]

# empty inputs SciPy takes: a stack of no matrices, a matrix with no rows or no columns
SPECS += [
    Spec(sl.sqrtm, [(0, 3, 3)], name="sqrtm(an empty stack)"),
    Spec(sl.lu, [(0, 3, 3)], kwargs={"permute_l": [False, True], "p_indices": [False, True]},
         name="lu(an empty stack)"),
    # (batched=False: the engine's per-slice loop of an unbatched rule does not take an
    # empty cotangent yet)
    Spec(sl.solve_banded, [((3, 0), (0,)), ((3, 0), (0, 2))], call=_banded(1, 1),
         batched=False, name="solve_banded(empty)"),
    Spec(sl.eigvalsh, [(0, 0)], kwargs={"subset_by_index": [(0, 1)]},
         name="eigvalsh(subset_by_index, empty)"),
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


_TALL = np.array([[2.0, 0.3, -0.1], [0.4, 1.5, 0.2], [-0.3, 0.1, 1.8], [0.5, -0.6, 0.7]])
_SYM = _A + _A.T


@pytest.mark.parametrize("call,match", [
    (lambda a: sl.qr(a, mode="raw")[1], r"mode='raw'"),
    (lambda a: sl.qr(a)[0], r"last m - n columns of q .* mode='economic'"),
    (lambda a: sl.lu(a)[1], "square matrices only"),
    (lambda a: sl.eigh(a[:3] + _SYM, subset_by_value=[0.0, 9.0])[0], "subset_by_value"),
    (lambda a: sl.eigvalsh(a[:3] + _SYM, subset_by_value=[0.0, 9.0]), r"eigh \(and eigvalsh\)"),
    (lambda a: sl.eigh(a[:3] + _SYM, subset_by_index=[0, 1])[1], "eigenvectors of a subset"),
], ids=["qr-raw", "qr-full-q", "lu-rectangular",
        "eigh-subset-by-value", "eigvalsh-subset-by-value", "eigh-subset-vectors"])
def test_forms_without_a_rule_say_what_has_one(call, match):
    with pytest.raises(pb.NoRuleError, match=match):
        pb.grad(lambda a: np.sum(np.abs(call(a)) ** 2))(_TALL)


def test_r_of_a_tall_full_qr_has_derivatives():
    # scipy.linalg.qr's default mode='full': q's last m - n columns are not determined, but
    # r is (its last m - n rows are zeros), and so is a loss of q's first n columns
    pb.check_grads(lambda a: np.sum(np.abs(np.diag(sl.qr(a)[1]))), _TALL, order=2)
    pb.check_grads(lambda a: np.sum(sl.qr(a)[0][:, :3] ** 3) + np.sum(sl.qr(a)[1] ** 3), _TALL,
                   order=2)


def test_outputs_keep_scipys_forms():
    b = np.array([1.0, -2.0, 0.5, 0.3])
    cases = [
        (lambda a: sl.lstsq(a, b), _TALL),  # residues a float, rank an int
        (lambda a: sl.lstsq(a, b, lapack_driver="gelsy"), _TALL),  # no residues, no s
        # an empty a: SciPy answers before it picks a driver (residues and s arrays)
        (lambda a: sl.lstsq(a, np.zeros(0), lapack_driver="gelsy"), np.zeros((0, 3))),
        (lambda a: sl.lstsq(a, b, lapack_driver="gelsy"), np.zeros((4, 0))),
        (lambda a: sl.pinv(a, atol=1.0, return_rank=True), _TALL),
        (lambda a: sl.lu(a, p_indices=True), _A),
        (lambda a: sl.lu(a, permute_l=True), _A),
        (lambda a: sl.qr(a, mode="r"), _TALL),  # the tuple (r,)
        (lambda a: sl.qr(a, pivoting=True, mode="economic"), _TALL),
        (lambda a: sl.svd(a, lapack_driver="gesvd"), _TALL),
        (lambda a: sl.block_diag(a, 2.0, [1.0, 2.0], np.eye(2, dtype=np.float32)), _A),
    ]
    for f, a in cases:
        got, want = pb.vjp(f, a)[0], f(a)
        assert type(got) is type(want)
        got_leaves, want_leaves = pb.tree_flatten(got)[0], pb.tree_flatten(want)[0]
        assert len(got_leaves) == len(want_leaves)
        for g, w in zip(got_leaves, want_leaves):
            if w is None:  # gelsy's s
                assert g is None
                continue
            assert np.shape(g) == np.shape(w) and np.result_type(g) == np.result_type(w)
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda a: sl.det(a * 1.0, overwrite_a=True),
    lambda a: np.sum(sl.solve(a * 1.0, a[0] * 2.0, overwrite_a=True, overwrite_b=True)),
    lambda a: np.sum(sl.inv(a * 1.0, overwrite_a=True) ** 2),
    lambda a: np.sum(sl.cholesky(a @ a.T + 3.0 * np.eye(3), overwrite_a=True)),
    lambda a: np.sum(sl.lu_factor(a * 1.0, overwrite_a=True)[0]),
    lambda a: np.sum(sl.solve_triangular(a * 1.0, a[1] * 1.0, overwrite_b=True)),
], ids=["det", "solve", "inv", "cholesky", "lu_factor", "solve_triangular"])
def test_overwrite_flags_leave_the_graphs_arrays_alone(call):
    # SciPy may compute in place into a with overwrite_a=True: the array a node saved
    pb.check_grads(call, _A + 2.0 * np.eye(3), order=2)


_LIST = [[3.0, 0.5], [0.2, 2.0]]  # a plain list, as SciPy takes a matrix


@pytest.mark.parametrize("f", [
    lambda x: np.sum(sl.solve(_LIST, x, assume_a="sym") ** 2),
    lambda x: np.sum(sl.solve(_LIST, x, transposed=True) ** 2),
    lambda x: np.sum(sl.solve_banded((1, 0), [[0.5, 0.25], [3.0, 2.0]], x) ** 2),
    lambda x: np.sum(sl.lstsq([[1.0, 2.0], [3.0, 4.0], [0.5, 1.0]], np.append(x, 1.0))[0]),
    lambda x: np.sum(sl.lstsq(np.outer(np.append(x, 1.0), x), [1.0, 2.0, 0.5])[0] ** 2),
    lambda x: np.sum(sl.expm([[x[0], 1.0], [0.5, x[1]]])),
    lambda x: np.sum(sl.logm([[x[0] + 3.0, 1.0], [0.5, x[1] + 3.0]])),
    lambda x: np.sum(sl.qr([[x[0], 1.0, 0.3], [0.5, x[1], -0.2]])[1] ** 3),
    lambda x: np.sum(sl.lu([[x[0], 1.0], [0.5, x[1]]])[2] ** 3),
    lambda x: np.sum(sl.block_diag([[x[0], x[1]]], [x[1]]) ** 2),
], ids=["solve-sym", "solve-transposed", "solve_banded", "lstsq",
        "lstsq-list-b", "expm-list-of-tracked", "logm-list-of-tracked", "qr-wide-list-of-tracked",
        "lu-list-of-tracked", "block_diag-list-of-tracked"])
def test_a_list_operand_is_read_as_an_array(f):
    # SciPy reads a list as an array (a constant one, or one holding tracked values); so
    # do the rules, whose pullbacks slice it, transpose it and read its dtype
    x = np.array([1.5, -0.7])
    np.testing.assert_allclose(pb.grad(f)(x), central_differences(f, x), rtol=1e-6, atol=1e-9)
