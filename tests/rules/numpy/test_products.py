import contextlib
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.testing import check_batched

from ..spec import NUMPY2, Spec

TRAPEZOID = getattr(np, "trapezoid", None)  # NumPy 2 and later


def _einsum(subscripts, name=None, **options):
    return dict(call=lambda *ops, **kw: np.einsum(subscripts, *ops, **kw),
                name=name or f"np.einsum('{subscripts}')", **options)


_OPTIMIZE = {"optimize": [False, True, "greedy"]}


def _einsum_cast(subscripts, name):
    """``_einsum`` with NumPy's ComplexWarning of a complex operand cast to a real dtype
    silenced (the cast is what these rows check)."""
    def call(*ops, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            return np.einsum(subscripts, *ops, **kw)

    return dict(call=call, name=name)
_XP = np.array([0.0, 1.0, 1.5, 3.0, 4.0])  # interp's knots, constants
_PERIODIC_XP = np.array([5.5, 0.5, 2.0, 3.5])


def _query(rng, shape):
    return rng.uniform(-1.0, 5.0, shape)  # inside and outside the knots


SPECS = [
    # einsum: explicit and implicit outputs, traces, ellipses, several operands
    Spec(np.einsum, [((2, 3), (3, 4))], kwargs=_OPTIMIZE, **_einsum("ij,jk->ik")),
    Spec(np.einsum, [((2, 3), (3, 4))], domain="complex", **_einsum("ij,jk", "np.einsum(complex)")),
    Spec(np.einsum, [((3,), (3,))], **_einsum("i,i")),
    # a real dtype= under casting='unsafe': NumPy computes with the operands' real parts
    Spec(np.einsum, [((3,), (3,)), ((2, 3), (3,))], domain=("complex", "complex"),
         kwargs={"dtype": [float], "casting": ["unsafe"]},
         **_einsum_cast("...i,i", "np.einsum(complex, dtype=float)")),
    Spec(np.einsum, [((2, 3), (3, 4))], domain=("complex", "real"),
         kwargs={"dtype": [float], "casting": ["unsafe"]},
         **_einsum_cast("ij,jk", "np.einsum(complex and real, dtype=float)")),
    Spec(np.einsum, [((3,), (2,))], **_einsum("i,j->ij")),
    Spec(np.einsum, [((), (3,))], **_einsum(",i->i")),
    Spec(np.einsum, [(2, 3)], **_einsum("ij->ji")),
    Spec(np.einsum, [(2, 3)], **_einsum("bA")),
    Spec(np.einsum, [(2, 3)], **_einsum("ij->i")),
    Spec(np.einsum, [(2, 3)], **_einsum("ij->")),
    Spec(np.einsum, [(3, 3)], **_einsum("ii->i")),
    Spec(np.einsum, [(3, 3)], **_einsum("ii")),
    Spec(np.einsum, [(2, 2, 3)], **_einsum("iij->ji")),
    Spec(np.einsum, [(2, 2, 2)], **_einsum("iii")),
    Spec(np.einsum, [((2, 2, 3), (3,))], **_einsum("iij,j->i")),
    Spec(np.einsum, [((2, 2, 3), (3, 4)), ((2, 1, 2, 3), (4, 3, 2))], kwargs=_OPTIMIZE,
         **_einsum("...ij,...jk->...ik")),
    Spec(np.einsum, [((2, 3), (3,))], **_einsum("...i,...i")),
    Spec(np.einsum, [(3, 2)], **_einsum("i...->...")),
    Spec(np.einsum, [(2, 3, 3)], **_einsum("...ii->...i")),
    Spec(np.einsum, [((2, 3), (3, 4), (4, 2))], kwargs=_OPTIMIZE, **_einsum("ij,jk,kl->il")),
    Spec(np.einsum, [((2, 3), (2, 3), (2, 3))], **_einsum("ij,ij,ij->")),
    Spec(np.einsum, [((2, 3), (3, 4))], name="np.einsum(sublists)",
         call=lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2])),
    Spec(np.einsum, [((2, 2, 3), (3,))], name="np.einsum(sublists, ellipsis)",
         call=lambda a, b: np.einsum(a, [Ellipsis, 1], b, [1])),
    # the products that are einsums
    Spec(np.tensordot, [((2, 3), (3, 4))], kwargs={"axes": [1]}),
    Spec(np.tensordot, [((2, 3, 4), (3, 4, 2))], kwargs={"axes": [2]}),
    Spec(np.tensordot, [((2,), (3,))], kwargs={"axes": [0]}),
    Spec(np.tensordot, [((2, 3, 4), (4, 3))], kwargs={"axes": [([1, 2], [1, 0])]}),
    Spec(np.tensordot, [((3, 2), (4, 3))], kwargs={"axes": [(0, 1)]}),
    Spec(np.inner, [((), ()), ((3,), (3,)), ((2, 3), (4, 3)), ((3,), ()), ((2, 3), (3,))]),
    Spec(np.inner, [((2, 3), (3,))], domain="complex", name="np.inner(complex)"),
    Spec(np.outer, [((3,), (2,)), ((2, 2), (3,)), ((), (3,))]),
    Spec(np.kron, [((2,), (3,)), ((2, 2), (3, 2)), ((2,), (2, 3)), ((), (3,))]),
    Spec(np.vdot, [((3,), (3,)), ((2, 3), (6,))]),
    Spec(np.vdot, [((3,), (3,)), ((2, 3), (3, 2))], domain="complex", name="np.vdot(complex)"),
    Spec(np.cross, [((3,), (3,)), ((2, 3), (3,)), ((4, 1, 3), (2, 3))]),
    Spec(np.cross, [((3, 2), (2, 3))], kwargs={"axisa": [0], "axisc": [0, -1]}),
    Spec(np.cross, [((3, 2), (2, 3, 1))], kwargs={"axis": [0]}, call=lambda a, b, axis: np.cross(
        a, np.moveaxis(b, 1, 0), axis=axis), name="np.cross(axis)"),
    Spec(np.cross, [((2, 3), (3,))], domain="complex", name="np.cross(complex)"),
    # the rule's own call differentiated again: the product's value feeds on into the loss
    Spec(np.cross, [((3,), (3,)), ((2, 3), (2, 3))], kwargs={"axis": [None, -1]},
         call=lambda a, b, axis: np.cross(a, b, axis=axis) * a, name="np.cross(times a)"),
    # convolution (1-d): holomorphic in both; correlate conjugates its second argument
    Spec(np.convolve, [((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((1,), (3,))],
         kwargs={"mode": ["full", "same", "valid"]}),
    Spec(np.convolve, [((5,), (2,))], domain="complex", name="np.convolve(complex)"),
    Spec(np.correlate, [((5,), (3,)), ((3,), (5,)), ((4,), (4,))],
         kwargs={"mode": ["full", "same", "valid"]}),
    Spec(np.correlate, [((5,), (2,)), ((2,), (5,))], domain="complex", kwargs={"mode": ["full"]},
         name="np.correlate(complex)"),
    # integration: with respect to y, and the sample points x or the spacing dx
    Spec(TRAPEZOID, [(5,), (2, 5)]),
    Spec(TRAPEZOID, [(5, 3)], kwargs={"axis": [0]}),
    Spec(TRAPEZOID, [(0,), (2, 0), (0, 3)], name="np.trapezoid(empty)"),  # (the empty sum)
    Spec(TRAPEZOID, [((5,), (5,)), ((2, 5), (5,)), ((2, 5), (2, 5))],
         call=lambda y, x: np.trapezoid(y, x), name="np.trapezoid(x)"),
    Spec(TRAPEZOID, [((5, 3), (5,))], call=lambda y, x: np.trapezoid(y, x, axis=0),
         name="np.trapezoid(x, axis=0)"),
    Spec(TRAPEZOID, [((5,), ()), ((2, 5), ())], call=lambda y, dx: np.trapezoid(y, dx=dx),
         name="np.trapezoid(dx)"),
    Spec(TRAPEZOID, [((2, 5), (5,))], domain="complex", name="np.trapezoid(complex)",
         call=lambda y, x: np.trapezoid(y, x.real)),
    # interp: derivatives in fp, in x (the slope), left and right; the knots xp are constants
    Spec(np.interp, [(5,)], call=lambda fp: np.interp(np.array([-0.5, 0.3, 1.2, 3.9, 7.0]), _XP,
                                                      fp), name="np.interp(fp)"),
    Spec(np.interp, [((6,), (5,)), ((2, 3), (5,))], domain=(_query, "real"),
         call=lambda x, fp: np.interp(x, _XP, fp), name="np.interp(x, fp)",
         why="piecewise linear in x: the slope jumps at the knots (random x avoids them)"),
    Spec(np.interp, [((8,), (5,), (), ())], domain=(_query, "real", "real", "real"),
         call=lambda x, fp, lo, hi: np.interp(x, _XP, fp, left=lo, right=hi),
         name="np.interp(left, right)", why="piecewise linear in x"),
    Spec(np.interp, [((6,), (4,))], domain=(lambda rng, s: rng.uniform(-10, 10, s), "complex"),
         call=lambda x, fp: np.interp(x, _PERIODIC_XP, fp, period=6.0),
         name="np.interp(period, complex)", why="piecewise linear in x"),
    # polyval: in the coefficients and the point
    Spec(np.polyval, [((4,), (3,)), ((1,), ()), ((3,), (2, 3)), ((2,), ())]),
    Spec(np.polyval, [((3,), (2,))], domain="complex", name="np.polyval(complex)"),
    Spec(np.polyval, [(2, 3)], call=lambda x: np.polyval(np.array([1.0, -2.0, 3.0]), x),
         name="np.polyval(x)"),
]




@contextlib.contextmanager
def _warns_as_numpy_does():
    """NumPy 2 deprecates 2-vectors in np.cross (NumPy 1.26 takes them silently): the
    rule warns where NumPy does, and adds no warning of its own."""
    if NUMPY2:
        with pytest.warns(DeprecationWarning):
            yield
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            yield


def test_cross_of_planar_vectors():
    # the cross product of 2-vectors is the z component
    a, b = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([3.0, -1.5, 2.0])
    for x, y in [(a, a[::-1] + 1), (a, b)]:
        def f(x, y):
            return np.cross(x, y)

        with _warns_as_numpy_does():
            pb.check_grads(f, x, y, order=2)
            check_batched(f, x, y)


def test_einsum_cotangent_of_a_trace_lies_on_the_diagonal():
    g = pb.grad(lambda a: np.einsum("ii", a))(np.arange(9.0).reshape(3, 3))
    np.testing.assert_array_equal(g, np.eye(3))


def test_interp_slope_at_the_knots_and_outside_them():
    fp = np.array([0.0, 2.0, 3.0, 1.0, 5.0])
    x = np.array([-1.0, 1.0, 4.0, 9.0])
    g = pb.grad(lambda x: np.sum(np.interp(x, _XP, fp)))(x)
    np.testing.assert_allclose(g, [0.0, 2.0, 4.0, 0.0])  # x = 1: the slope of [1, 1.5]


def test_interp_sample_points_have_no_rule():
    x, fp = np.linspace(0.0, 1.0, 5), np.array([1.0, -1.0, 2.0, 0.5])
    with pytest.raises(pb.NoRuleError, match="the sample points xp"):
        pb.grad(lambda xp: np.sum(np.interp(x, xp, fp)))(np.linspace(0.0, 1.0, 4))


def test_polyval_of_a_poly1d():
    # len(np.poly1d) is its order, one less than its number of coefficients
    p = np.poly1d([1.0, -2.0, 3.0, 0.5])
    pb.check_grads(lambda x: np.polyval(p, x), np.array([0.3, -1.2, 2.0]), order=2)
