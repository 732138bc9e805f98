"""NumPy 2's array-API functions (rules/array_api.py): the rows are dropped on NumPy 1.26,
which has none of them, and so are the separate tests (but those of np.matmul's keywords,
which rules/numpy/linalg.py reads with array_api's ``core_axes``)."""

import warnings

import numpy as np
import pytest

import pullback as pb

from ..spec import Spec

VECDOT, MATVEC, VECMAT = (getattr(np, n, None) for n in ("vecdot", "matvec", "vecmat"))
LINALG_VECDOT, OUTER, TENSORDOT, CROSS, DIAGONAL, TRACE, LINALG_MATRIX_TRANSPOSE = (
    getattr(np.linalg, n, None) for n in (
        "vecdot", "outer", "tensordot", "cross", "diagonal", "trace", "matrix_transpose"))
MATRIX_TRANSPOSE, ASTYPE, UNSTACK = (
    getattr(np, n, None) for n in ("matrix_transpose", "astype", "unstack"))
UNIQUE_ALL, UNIQUE_COUNTS, UNIQUE_INVERSE, UNIQUE_VALUES = (
    getattr(np, n, None) for n in ("unique_all", "unique_counts", "unique_inverse",
                                   "unique_values"))

# the gufuncs broadcast their leading (loop) axes; the core axes must agree
_VECTORS = [((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1, 3), (4, 3)),
            ((3,), (2, 3))]
_MATRICES = [(3, 3), (2, 3), (4, 2), (2, 3, 4)]
_OFFSETS = {"offset": [0, 1, -1]}
_UNIQUE = [(), (4,), (2, 3)]  # random values: no ties (ties: the separate tests)


def _astype(x, dtype, copy):
    return np.astype(x, dtype, copy=copy)


SPECS = [
    # vecdot(x1, x2) = sum(conj(x1) x2) over the last axis
    Spec(VECDOT, _VECTORS),
    Spec(VECDOT, [((3,), (3,)), ((2, 3), (3,))], domain="complex", name="np.vecdot(complex)"),
    Spec(VECDOT, [((2, 3), (3,))], domain=("complex", "real"), name="np.vecdot(complex, real)"),
    Spec(VECDOT, [((2, 3), (3,))], domain=("real", "complex"), name="np.vecdot(real, complex)"),
    Spec(VECDOT, [((3,), (3,))], call=lambda a, b: np.vecdot(a, b) * a,
         name="np.vecdot(times a)"),
    Spec(LINALG_VECDOT, _VECTORS, kwargs={"axis": [-1]}),
    # axis= counts in each operand's own axes, as the gufunc's axis= does
    Spec(LINALG_VECDOT, [((3, 2), (3, 2)), ((3, 4), (3,)), ((3, 1), (3, 4))],
         kwargs={"axis": [0]}, name="np.linalg.vecdot(axis=0)"),
    Spec(LINALG_VECDOT, [((2, 3, 4), (3, 4)), ((2, 3, 4), (1, 3, 1))],
         kwargs={"axis": [-2]}, name="np.linalg.vecdot(axis=-2)"),
    Spec(LINALG_VECDOT, [((2, 3, 4), (1, 3, 4))], kwargs={"axis": [1]},
         name="np.linalg.vecdot(axis=1)"),
    Spec(LINALG_VECDOT, [((3, 2), (3,)), ((3, 2), (3, 2))], kwargs={"axis": [0]},
         domain="complex", name="np.linalg.vecdot(complex)"),
    # matvec(A, x)_i = sum_j A_ij x_j; vecmat(x, A)_j = sum_i conj(x_i) A_ij
    Spec(MATVEC, [((2, 3), (3,)), ((4, 2, 3), (3,)), ((2, 3), (4, 3)), ((1, 2, 3), (4, 1, 3))]),
    Spec(MATVEC, [((2, 3), (3,)), ((2, 2, 3), (3,))], domain="complex",
         name="np.matvec(complex)"),
    Spec(VECMAT, [((2,), (2, 3)), ((4, 2), (2, 3)), ((2,), (4, 2, 3)), ((4, 1, 2), (3, 2, 3))]),
    Spec(VECMAT, [((2,), (2, 3)), ((4, 2), (2, 3))], domain="complex",
         name="np.vecmat(complex)"),
    Spec(VECMAT, [((2,), (2, 3))], domain=("complex", "real"), name="np.vecmat(complex, real)"),
    # the gufuncs' keywords: axis= (and keepdims=) for the one core axis of each operand,
    # axes= the core axes of each operand and of the output, counted in each one's own axes
    Spec(VECDOT, [((3, 2), (3, 2)), ((3, 4), (3, 1)), ((3, 3, 4), (3, 4))],
         kwargs={"axis": [0, -2], "keepdims": [False, True]}, name="np.vecdot(axis)"),
    Spec(VECDOT, [((3, 2), (2, 3))], kwargs={"axes": [[(0,), (1,)], [(0,), (1,), ()]]},
         name="np.vecdot(axes)"),
    Spec(MATVEC, [((3, 2, 4), (4,))], kwargs={"axes": [[(0, 2), (0,), (1,)]]},
         name="np.matvec(axes)"),
    Spec(VECMAT, [((3,), (4, 3, 2))], kwargs={"axes": [[(0,), (1, 0), (0,)], [0, (1, 0), -1]]},
         name="np.vecmat(axes)"),
    # keepdims=: the contracted axis kept where the output's entry (or axis=) puts it, else
    # last; an integer for a tuple of one axis
    Spec(VECDOT, [((3, 2), (2, 3))],
         kwargs={"axes": [[0, 1], [0, 1, 0], [(0,), (1,), (-1,)]], "keepdims": [True]},
         name="np.vecdot(axes, keepdims)"),
    Spec(MATVEC, [((3, 2, 4), (4,))], kwargs={"axes": [[(0, 2), 0, 1], [(0, -1), (0,), 0]]},
         name="np.matvec(axes, integers)"),
    # the numpy.linalg spellings
    Spec(OUTER, [((3,), (2,)), ((1,), (3,))]),
    Spec(OUTER, [((3,), (2,))], domain="complex", name="np.linalg.outer(complex)"),
    Spec(TENSORDOT, [((2, 3, 4), (3, 4, 2)), ((3, 2), (3, 2))]),
    Spec(TENSORDOT, [((2, 3), (3, 4))], kwargs={"axes": [1, ([1], [0])]},
         name="np.linalg.tensordot(axes)"),
    Spec(TENSORDOT, [((2, 3, 4), (4, 3))], kwargs={"axes": [([1, 2], [1, 0]), 0]},
         name="np.linalg.tensordot(axes pairs)"),
    Spec(TENSORDOT, [((2, 3), (3, 2))], kwargs={"axes": [1]}, domain="complex",
         name="np.linalg.tensordot(complex)"),
    Spec(CROSS, [((3,), (3,)), ((2, 3), (3,)), ((4, 1, 3), (2, 3))]),
    Spec(CROSS, [((3, 2), (3, 2)), ((3, 1), (3, 4))], kwargs={"axis": [0, -2]},
         name="np.linalg.cross(axis)"),
    Spec(CROSS, [((2, 3), (3,))], domain="complex", name="np.linalg.cross(complex)"),
    Spec(DIAGONAL, _MATRICES, kwargs=_OFFSETS),
    Spec(DIAGONAL, [(2, 3)], domain="complex", name="np.linalg.diagonal(complex)"),
    Spec(TRACE, _MATRICES, kwargs=_OFFSETS),
    Spec(TRACE, [(2, 3, 3)], kwargs={"dtype": [None, np.complex128]},
         name="np.linalg.trace(dtype)"),
    Spec(TRACE, [(3, 3), (2, 3, 3)], domain="complex", name="np.linalg.trace(complex)"),
    Spec(MATRIX_TRANSPOSE, [(2, 3), (4, 2, 3), (1, 2, 1, 3)]),
    Spec(MATRIX_TRANSPOSE, [(2, 3)], domain="complex", name="np.matrix_transpose(complex)"),
    Spec(LINALG_MATRIX_TRANSPOSE, [(2, 3), (4, 2, 3)]),
    Spec(LINALG_MATRIX_TRANSPOSE, [(2, 3)], domain="complex",
         name="np.linalg.matrix_transpose(complex)"),
    # the method as a function; copy=False to its own dtype is x itself
    Spec(ASTYPE, [(), (3,), (2, 3)], call=_astype,
         kwargs={"dtype": [np.float64, np.complex128], "copy": [True, False]}),
    Spec(ASTYPE, [(2, 3)], call=_astype, domain="complex",
         kwargs={"dtype": [np.complex128], "copy": [True, False]}, name="np.astype(complex)"),
    Spec(UNSTACK, [(3,), (2, 3), (2, 3, 4)], kwargs={"axis": [0, -1]}),
    Spec(UNSTACK, [(2, 3, 4)], kwargs={"axis": [1]},
         call=lambda x, axis: np.unstack(x, axis=axis)[0], name="np.unstack(one piece used)"),
    Spec(UNSTACK, [(2, 3)], domain="complex", name="np.unstack(complex)"),
    # the unique values, gathered; indices, inverse and counts are plain integers
    Spec(UNIQUE_ALL, _UNIQUE),
    Spec(UNIQUE_COUNTS, _UNIQUE),
    Spec(UNIQUE_INVERSE, _UNIQUE),
    # unique_values need not sort (NumPy 2.4 hashes complex values): the order then jumps
    # as the values move, so the rows sort it (NumPy's order: the separate tests)
    Spec(UNIQUE_VALUES, _UNIQUE, call=lambda x: np.sort(np.unique_values(x))),
    Spec(UNIQUE_VALUES, [(5,), (2, 3)], domain="complex",
         call=lambda x: np.sort(np.unique_values(x)), name="np.unique_values(complex)"),
    Spec(UNIQUE_ALL, [(5,)], domain="complex", name="np.unique_all(complex)"),
]

needs_numpy2 = pytest.mark.skipif(VECDOT is None, reason="NumPy 2's array-API functions")
needs_matvec = pytest.mark.skipif(MATVEC is None, reason="np.matvec and np.vecmat: NumPy 2.2")


def _check_like_user(f, *args):
    """``f`` on tracked values: NumPy's value, and derivatives against finite differences
    of the same code on plain arrays."""
    out, _ = pb.vjp(f, *args)
    for got, want in zip(pb.tree_flatten(out)[0], pb.tree_flatten(f(*args))[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    pb.check_grads(f, *args, order=2)


# ---------------------------------------------------------------------------- the gufuncs

@needs_numpy2
def test_vecdot_dtype_keyword_raises_a_clear_error():
    x = np.arange(6.0).reshape(3, 2)
    np.vecdot(x, x, dtype=np.complex128)  # NumPy takes it
    with pytest.raises(TypeError, match=r"np\.vecdot on a tracked value .*'dtype'"):
        pb.grad(lambda x: np.sum(np.vecdot(x, x, dtype=np.complex128)))(x)


@needs_numpy2
def test_gufunc_axes_keywords_pass_numpys_errors_on():
    x = np.arange(6.0).reshape(3, 2)
    with pytest.raises(TypeError, match="cannot specify both"):
        pb.grad(lambda x: np.sum(np.vecdot(x, x, axis=0, axes=[(0,), (0,)])))(x)
    with pytest.raises(ValueError, match="core dimension"):
        pb.grad(lambda x: np.sum(np.vecdot(x, x[:2], axis=0)))(x)


def test_matmul_dtype_keyword_raises_a_clear_error():
    a = np.arange(6.0).reshape(3, 2)
    np.matmul(a, a.T, dtype=np.complex128)  # NumPy takes it
    with pytest.raises(TypeError, match=r"np\.matmul on a tracked value .*'dtype'"):
        pb.grad(lambda a: np.sum(np.matmul(a, a.T, dtype=np.complex128)))(a)


# the gufuncs' keyword spellings, valid and not: (name, shapes, keywords)
_SPELLINGS = [
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": [(0, 1), (1, 0), (0, 1)]}),
    ("matmul", ((3, 4, 2), (4, 3, 2)), {"axes": [(0, 1), (0, 1), (1, 0)]}),
    ("matmul", ((4,), (4, 5)), {"axes": [0, (0, 1), 0]}),
    ("matmul", ((4,), (4,)), {"axes": [(0,), (0,), ()]}),
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": [(np.int64(0), 1), (1, 0), (0, 1)]}),
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": ((0, 1), (1, 0), (0, 1))}),  # not a list
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": [(0, 1), (1, 0)]}),  # the output's missing
    ("matmul", ((4,), (4,)), {"axes": [0, 0]}),
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": [0, (1, 0), (0, 1)]}),
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": [[0, 1], (1, 0), (0, 1)]}),
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": [(0, 3), (1, 0), (0, 1)]}),
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": [(0, 0), (1, 0), (0, 1)]}),
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": [(0, 1), (1, 0), (1, 1)]}),
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": [(0.0, 1), (1, 0), (0, 1)]}),
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": None}),
    ("matmul", ((3, 4, 2), (3, 4, 2)), {"axes": [(0, 1), (0, 1), (0, 1)]}),  # sizes 3, 4
    ("matmul", ((3, 4, 2), (5, 2, 4)), {"axes": [(1, 2), (1, 2), (1, 2)]}),  # loops 3, 5
    ("matmul", ((4,), (4,)), {"axis": 0}),
    ("matmul", ((2, 3), (3, 2)), {"keepdims": False}),
    ("matmul", ((), (3,)), {"axes": [(0, 1), 0, 0]}),
    ("vecdot", ((3, 2), (3, 2)), {"axis": 0}),
    ("vecdot", ((3, 2), (3, 2)), {"axis": np.int64(-2), "keepdims": True}),
    ("vecdot", ((3, 2), (3, 2)), {"axes": [0, 0, 1], "keepdims": True}),
    ("vecdot", ((3, 2), (3, 2)), {"axes": [(0,), (0,), ()]}),
    ("vecdot", ((3, 2), (3, 2)), {"keepdims": True}),
    ("vecdot", ((3, 2), (3, 2)), {"axes": [0, 0, ()], "keepdims": True}),
    ("vecdot", ((3, 2), (3, 2)), {"axes": [0, 0, (0,)]}),
    ("vecdot", ((3, 2), (3, 2)), {"axes": [(0,)]}),
    ("vecdot", ((3, 2), (3, 2)), {"axis": 0.0}),
    ("vecdot", ((3, 2), (3, 2)), {"axis": (0,)}),
    ("vecdot", ((3, 2), (3, 2)), {"axis": 2}),
    ("vecdot", ((3, 2), (3, 2)), {"axis": None}),
    ("vecdot", ((3, 2), (3, 2)), {"keepdims": None}),
    ("vecdot", ((3, 2), (3, 2)), {"axis": 0, "axes": [0, 0]}),
    ("vecdot", ((3, 2), (2, 3)), {"axis": 0}),  # sizes 3, 2
    ("matvec", ((3, 2, 4), (4,)), {"axes": [(0, 2), (0,), (1,)]}),
    ("matvec", ((3, 2, 4), (4,)), {"axes": [(0, 2), 0, -1]}),
    ("matvec", ((3, 2, 4), (4,)), {"axes": [(0, 2), (0,)]}),
    ("matvec", ((3, 2, 4), (4,)), {"axis": 0}),
    ("matvec", ((3, 2, 4), (4,)), {"keepdims": True}),
    ("vecmat", ((3,), (4, 3, 2)), {"axes": [0, (1, 0), 0]}),
    ("vecmat", ((3,), (4, 3, 2)), {"axes": [0, (1, 0), (0, 1)]}),
]


@pytest.mark.parametrize("name, shapes, kw", _SPELLINGS,
                         ids=[f"{n}-{k}" for k, (n, _, _) in enumerate(_SPELLINGS)])
def test_gufunc_keywords_are_numpys(name, shapes, kw):
    """Every spelling NumPy takes gives NumPy's value and derivatives; one NumPy refuses
    raises NumPy's error: for a keyword NumPy refuses whatever the sizes, with pullback's
    sentence first and NumPy's words after it."""
    func = getattr(np, name, None)
    if func is None:
        pytest.skip(f"np.{name} is a later NumPy's")
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s) for s in shapes]
    try:
        func(*args, **kw)
    except (TypeError, ValueError) as error:
        with pytest.raises(type(error)) as raised:
            func(pb.param(args[0]), *args[1:], **kw)
        try:  # (the same keywords on operands of size 1: NumPy refuses the keywords)
            func(*[np.ones((1,) * len(s)) for s in shapes], **kw)
        except (TypeError, ValueError):
            said = str(raised.value)  # (axis= and axes= both: NumPy's, before dispatch)
            assert said == str(error) or said.startswith(f"pullback: np.{name}(..., ")
            assert str(error) in said
        return
    _check_like_user(lambda *xs: func(*xs, **kw), *args)


@needs_numpy2
def test_vecdot_out_into_a_tracked_array_is_recorded():
    def f(a, b):
        out = np.zeros_like(a[..., 0])
        np.vecdot(a, b, out=out)
        return out * 2.0

    rng = np.random.default_rng(0)
    _check_like_user(f, rng.standard_normal((2, 3)), rng.standard_normal((2, 3)))
    with pytest.raises(TypeError, match=r"np\.vecdot\(\.\.\., out=\.\.\.\) writes into"):
        pb.grad(lambda a: np.sum(np.vecdot(a, a, out=np.zeros(2))))(np.ones((2, 3)))


@needs_numpy2
def test_vecdot_of_a_list_conjugates_it():
    # a list of complex numbers as the first operand: conjugated, as NumPy does
    x = np.array([1.0 - 0.5j, 2.0 + 1.0j, -0.3j])
    _check_like_user(lambda x: np.vecdot([1j, 2.0, 1.0 + 1j], x) * x, x)
    _check_like_user(lambda x: np.vecdot(x, [1j, 2.0, 1.0 + 1j]), x)


@needs_numpy2
def test_core_dimensions_are_checked_as_numpy_checks_them():
    cases = [(VECDOT, (np.ones(3), np.ones(2)), r"np\.vecdot"),
             (VECDOT, (np.ones(3), 2.0), r"np\.vecdot: input operand 1"),
             (LINALG_VECDOT, (np.ones((2, 3)), np.ones((3, 3))), r"np\.linalg\.vecdot"),
             (OUTER, (np.ones((2, 2)), np.ones(2)), r"np\.linalg\.outer.*one-dimensional"),
             (CROSS, (np.ones(2), np.ones(2)), r"np\.linalg\.cross.*3-dimensional"),
             (MATRIX_TRANSPOSE, (np.ones(3),), r"np\.matrix_transpose.*2-dimensional"),
             (LINALG_MATRIX_TRANSPOSE, (np.ones(3),), r"np\.linalg\.matrix_transpose")]
    if MATVEC is not None:
        cases += [(MATVEC, (np.ones(3), np.ones(3)), r"np\.matvec: input operand 0"),
                  (MATVEC, (np.ones((2, 3)), np.ones(2)), r"np\.matvec"),
                  (VECMAT, (np.ones(3), np.ones((2, 3))), r"np\.vecmat")]
    for func, args, message in cases:
        kw = {"axis": 0} if func is LINALG_VECDOT else {}
        with pytest.raises(ValueError):
            func(*args, **kw)  # NumPy refuses these too
        with pytest.raises(ValueError, match=message):
            func(pb.param(args[0]), *args[1:], **kw)


# ---------------------------------------------------------------------------- astype

@needs_numpy2
def test_astype_to_integers_is_a_constant():
    x = np.array([0.5, 1.7, -2.2])
    got = np.astype(pb.param(x), np.int64)
    assert type(got) is np.ndarray and got.dtype == np.int64
    np.testing.assert_array_equal(got, np.astype(x, np.int64))
    assert np.astype(pb.param(x), bool).dtype == bool
    # the cast's steps are constants: the gradient flows through the other factor
    pb.check_grads(lambda x: np.astype(x, np.int64) * x, x, order=2)


@needs_numpy2
def test_astype_copy_and_device():
    p = pb.param(np.ones(3))
    assert np.astype(p, np.float64, copy=False) is p  # as NumPy returns x itself
    assert np.astype(p, np.float64) is not p
    _check_like_user(lambda x: np.astype(x, np.float64, device="cpu") * x, np.ones(3))
    with pytest.raises(ValueError, match=r"np\.astype: device='gpu'"):
        np.astype(p, np.float64, device="gpu")


@needs_numpy2
def test_astype_of_complex_to_real_keeps_the_real_part():
    z = np.array([1.0 + 2.0j, -0.5 + 0.1j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        _check_like_user(lambda z: np.astype(z, np.float64) ** 2, z)


# ---------------------------------------------------------------------------- unstack

@needs_numpy2
def test_unstack_of_an_empty_axis_and_of_0d():
    pieces = np.unstack(pb.param(np.ones((0, 2))))
    assert pieces == ()
    with pytest.raises(ValueError):
        np.unstack(pb.param(np.array(1.0)))
    # pieces nothing depends on get zero cotangents; a list of them stacks back
    _check_like_user(lambda x: np.stack(np.unstack(x, axis=1)[::2], axis=-1) * 2.0,
                     np.arange(12.0).reshape(3, 4))


# ---------------------------------------------------------------------------- unique_*

_UNIQUE_NAMES = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]


def _values(name, x):
    found = getattr(np, name)(x)
    return found if name == "unique_values" else found.values


@needs_numpy2
@pytest.mark.parametrize("name", _UNIQUE_NAMES)
def test_unique_values_go_to_their_first_occurrence(name):
    x = np.array([3.0, 1.0, 3.0, 2.0, 1.0, 0.5])
    weights = np.arange(1.0, 5.0)
    g = pb.grad(lambda x: np.sum(_values(name, x) ** 2 * weights))(x)
    want = np.zeros_like(x)
    for w, v in zip(weights, _values(name, x)):  # each weight to its value's first element
        want[np.flatnonzero(x == v)[0]] = 2 * v * w
    np.testing.assert_array_equal(g, want)


@needs_numpy2
@pytest.mark.parametrize("name", _UNIQUE_NAMES)
@pytest.mark.parametrize("x", [np.array([[3.0, 1.0, np.nan], [3.0, -0.0, np.nan]]),
                               np.array([5.0, 3.0, 1.0, 3.0, 7.0 + 1j, np.nan, 0.5j])])
def test_unique_outputs_are_numpys(name, x):
    # the values in NumPy's order (unique_values of complex values: a hash's order), the
    # integer outputs NumPy's plain arrays
    func = getattr(np, name)
    got, want = func(pb.param(x)), func(x)
    if name != "unique_values":  # NumPy's namedtuple
        assert type(got) is type(want)
    for g, w in zip(pb.tree_flatten(got)[0], pb.tree_flatten(want)[0]):
        assert isinstance(g, pb.Tracked) == (w.dtype.kind in "fc")
        assert np.shape(g) == w.shape
        np.testing.assert_array_equal(pb.stop_gradient(g), w)


@needs_numpy2
@pytest.mark.parametrize("name", ["unique_all", "unique_values"])
def test_unique_nans_are_values_of_their_own(name):
    # equal_nan=False: each NaN is a unique value, sent back to the NaN elements in turn
    x = np.array([np.nan, 2.0, np.nan, 2.0])  # the unique values are [2, nan, nan]
    (g,) = pb.vjp(lambda x: _values(name, x), x)[1](np.array([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(g, [10.0, 1.0, 100.0, 0.0])


@needs_numpy2
@pytest.mark.parametrize("name", ["unique_all", "unique_values"])
def test_unique_complex_nans_go_to_elements_of_their_form(name):
    nan = np.nan
    x = np.array([complex(1, nan), complex(nan, 1), complex(nan, 0), 2.0, 2.0,
                  complex(nan, 0), complex(nan, 1)])
    out, vjp_fn = pb.vjp(lambda x: _values(name, x), x)
    values = pb.stop_gradient(out)
    (g,) = vjp_fn(np.arange(1.0, len(values) + 1))
    for k, v in enumerate(values):  # value k's weight lies on one element of its form
        (i,) = np.flatnonzero(g == k + 1)
        assert np.array_equal(x[i], v, equal_nan=True), (k, v, x[i])
