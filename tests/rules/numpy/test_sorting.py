import numpy as np
import pytest

import pullback as pb

from ..spec import NUMPY2, Spec, check_unreached
from .test_reductions import with_nan

AXES = {"axis": [None, 0, -1], "keepdims": [False, True]}
SHAPES = [(3,), (2, 3)]

# Sorting and order statistics are piecewise linear: random inputs have no ties, and the
# pullback is locally constant in x, so the order-2 check holds.
SPECS = [
    Spec(np.sort, [(3,), (2, 3)], kwargs={"axis": [None, 0, -1]}),
    Spec(np.sort, [(2, 3)], kwargs={"kind": ["stable"]}),
    Spec(np.sort, [(4,)], domain="complex", name="np.sort(complex)"),
    Spec(np.partition, [(5,), (3, 5)], call=lambda x, **kw: np.partition(x, 2, **kw),
         kwargs={"axis": [None, -1]}),
    Spec(np.partition, [(5, 4)], call=lambda x: np.partition(x, (0, 3), axis=0),
         name="np.partition(several kth)"),
    Spec(np.median, [()]),
    Spec(np.median, [(3,), (2, 4)], kwargs=AXES),
    Spec(np.median, [(2, 3, 4)], kwargs={"axis": [(0, 2)]}),
    Spec(np.nanmedian, [(4,), (3, 4)], domain=with_nan, kwargs=AXES),
    Spec(np.quantile, SHAPES, call=lambda x, **kw: np.quantile(x, 0.3, **kw), kwargs=AXES),
    Spec(np.quantile, [(2, 5)], call=lambda x, **kw: np.quantile(x, [[0.1, 0.5, 1.0]], **kw),
         kwargs={"axis": [None, 0, -1], "keepdims": [True],
                 "method": ["linear", "midpoint", "nearest", "hazen", "weibull"]},
         name="np.quantile(array q, methods)"),
    Spec(np.quantile, [(2, 3, 4)], call=lambda x: np.quantile(x, [0.2, 0.9], axis=(2, 0)),
         name="np.quantile(two axes)"),
    *([Spec(np.quantile, [(6,)], name="np.quantile(weights)",  # weights= came in NumPy 2
            call=lambda x: np.quantile(x, [0.4, 0.7], method="inverted_cdf",
                                       weights=np.arange(1.0, 7.0)))] if NUMPY2 else []),
    Spec(np.nanquantile, [(4,), (3, 4)], domain=with_nan, kwargs=AXES,
         call=lambda x, **kw: np.nanquantile(x, [0.25, 0.6], **kw)),
    Spec(np.percentile, SHAPES, call=lambda x, **kw: np.percentile(x, [10, 75], **kw),
         kwargs=AXES),
    Spec(np.nanpercentile, [(4,), (3, 4)], domain=with_nan, kwargs=AXES,
         call=lambda x, **kw: np.nanpercentile(x, 40, **kw)),
    # random inputs have no repeated values: the unique values are the sorted values
    Spec(np.unique, [(4,), (2, 3)]),
    Spec(np.unique, [(4,)], call=lambda x: np.unique(x, return_counts=True)[0] * 2.0,
         name="np.unique(return_counts)"),
    Spec(np.unique, [(3, 2)], call=lambda x: np.unique(x, axis=0), name="np.unique(axis=0)"),
    # set operations: random inputs share no values; the rows "(shared values)" build
    # inputs that do, from the same tracked elements (so that finite differences move
    # equal values together)
    Spec(np.union1d, [((4,), (3,)), ((2, 3), ()), ((), (2, 2))]),
    Spec(np.union1d, [((4,), (3,)), ((2, 2), (2,))], call=lambda x, y: np.union1d(
        np.concatenate([np.ravel(x), np.ravel(x)[:1]]), np.concatenate([y, np.ravel(x)[1:3]])),
         name="np.union1d(shared values)"),
    Spec(np.intersect1d, [((4,), (3,))], kwargs={"assume_unique": [False, True]}),
    Spec(np.intersect1d, [((4,), (3,)), ((2, 3), (2,))], kwargs={"assume_unique": [False, True]},
         call=lambda x, y, **kw: np.intersect1d(x, np.concatenate([y, np.ravel(x)[::2]]), **kw),
         name="np.intersect1d(shared values)"),
    Spec(np.intersect1d, [((4,), (3,))], name="np.intersect1d(repeated, return_indices)",
         call=lambda x, y: np.intersect1d(np.concatenate([x, x[:2]]),
                                          np.concatenate([y, x[1:3], x[1:2]]),
                                          return_indices=True)[0]),
    Spec(np.setdiff1d, [((4,), (3,)), ((2, 3), ()), ((), (2,))],
         kwargs={"assume_unique": [False, True]}),
    Spec(np.setdiff1d, [((4,), (3,)), ((2, 2), (2,))], kwargs={"assume_unique": [False, True]},
         call=lambda x, y, **kw: np.setdiff1d(x, np.concatenate([y, np.ravel(x)[::2]]), **kw),
         name="np.setdiff1d(shared values)"),
    Spec(np.setdiff1d, [((4,), (3,))], name="np.setdiff1d(repeated)",
         call=lambda x, y: np.setdiff1d(np.concatenate([x, x[:2]]), np.concatenate([y, x[1:2]]))),
    Spec(np.setxor1d, [((4,), (3,)), ((2, 3), (2,))]),
    # (1-d: with assume_unique, NumPy 1.26 does not flatten)
    Spec(np.setxor1d, [((4,), (3,))], kwargs={"assume_unique": [True]}),
    Spec(np.setxor1d, [((4,), (3,))], kwargs={"assume_unique": [False, True]},
         call=lambda x, y, **kw: np.setxor1d(x, np.concatenate([y, x[::2]]), **kw),
         name="np.setxor1d(shared values)"),
    Spec(np.setxor1d, [((4,), (3,))], name="np.setxor1d(repeated)",
         call=lambda x, y: np.setxor1d(np.concatenate([x, x[:2]]), np.concatenate([y, y, x[1:2]]))),
    Spec(np.sort_complex, [(4,), (2, 3)]),
    Spec(np.sort_complex, [(4,), (2, 3)], domain="complex", name="np.sort_complex(complex)"),
]



def test_order_statistics_share_ties():
    x = np.array([1.0, 3.0, 3.0])
    np.testing.assert_allclose(pb.grad(np.median)(x), [0, 0.5, 0.5])
    np.testing.assert_allclose(pb.grad(np.nanmedian)(np.append(x, np.nan)), [0, 0.5, 0.5, 0])
    np.testing.assert_allclose(pb.grad(lambda x: np.quantile(x, 1.0))(x), [0, 0.5, 0.5])
    # sorted [1, 2, 3, 3]: the 0.5 quantile is half 2 and half 3 (the 3 shared)
    np.testing.assert_allclose(pb.grad(lambda x: np.percentile(x, 50))(
        np.array([3.0, 1.0, 3.0, 2.0])), [0.25, 0, 0.25, 0.5])


def test_sort_ties_share_the_gradient():
    # sorted [0, 1, 2, 2]: the two 2s share the weights 3 and 4 of their positions
    x = np.array([2.0, 1.0, 2.0, 0.0])
    g = pb.grad(lambda x: np.sum(np.sort(x) * np.array([1.0, 2.0, 3.0, 4.0])))(x)
    np.testing.assert_array_equal(g, [3.5, 2.0, 3.5, 1.0])
    # along an axis, with a stack of cotangents, and to second order
    x = np.array([[1.0, 1.0, 0.5], [2.0, -1.0, 2.0]])
    out, vjp_fn = pb.vjp(lambda x: np.sort(x, axis=1), x)
    ct = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(vjp_fn(ct)[0], [[1.5, 1.5, 0.0], [4.5, 3.0, 4.5]])
    from pullback.testing import check_batched
    check_batched(lambda x: np.sort(x, axis=0), x.T)
    h = pb.grad(lambda x: np.sum(pb.grad(lambda y: np.sum(np.sort(y) ** 3))(x)))(x[0])
    assert np.all(np.isfinite(h))


# pairs of ties (in a run of three the middle value is flat in each tied element alone,
# where the convention shares the run's cotangent)
_TIED = np.array([[2.0, 1.0, 2.0, 3.5, 1.0], [0.5, -1.0, 4.0, 0.5, 2.5]])


@pytest.mark.parametrize("f", [
    np.sort, lambda x: np.sort(x, axis=0), lambda x: np.sort(x, axis=None),
    lambda x: np.partition(x, 2), np.median, lambda x: np.median(x, axis=1),
    lambda x: np.quantile(x, [0.2, 0.7], axis=1),
    lambda x: np.percentile(x, 40, axis=1, method="nearest"),
    lambda x: np.nanmedian(np.where(x > 3, np.nan, x), axis=1),
], ids=["sort", "sort-axis0", "sort-flat", "partition", "median", "median-axis",
        "quantile", "percentile-nearest", "nanmedian"])
def test_an_infinite_cotangent_reaches_only_what_the_output_depends_on(f):
    # with ties (their runs of equal sorted values share by differences of running sums,
    # where an inf of one run would leak into every later one as inf - inf), and the
    # elements an order statistic does not use: exactly 0, not NaN
    with np.errstate(invalid="ignore"):
        assert check_unreached(f, _TIED) > 0


@pytest.mark.filterwarnings("ignore:All-NaN slice")
def test_all_nan_slice_sends_nothing():
    x = np.array([[np.nan, np.nan], [1.0, 2.0]])
    g = pb.vjp(lambda x: np.nanmedian(x, axis=1), x)[1](np.ones(2))[0]
    np.testing.assert_array_equal(g, [[0, 0], [0.5, 0.5]])


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value")
@pytest.mark.parametrize("median", [np.median, np.nanmedian])
@pytest.mark.parametrize("shape, axis", [((0,), None), ((0, 2), 0), ((2, 0), 1)])
def test_the_median_of_no_elements_sends_an_empty_cotangent(median, shape, axis):
    # NumPy gives nan there; its cotangent has the input's (empty) shape, in a batch too
    def f(x):
        return median(x, axis=axis) * np.ones(2)

    out, vjp_fn = pb.vjp(f, np.ones(shape))
    (g,) = vjp_fn(np.ones(np.shape(out)))
    assert g.shape == shape
    jac = pb.jacobian(f)(np.ones(shape))  # (a batch of cotangents)
    assert jac.shape == np.shape(out) + shape


def test_quantile_probabilities_have_no_rule():
    a = np.array([1.0, 4.0, 2.0, 3.0])
    with pytest.raises(pb.NoRuleError, match="the probabilities q"):
        pb.grad(lambda q: np.sum(np.quantile(a, q)))(0.3)


def test_unique_sends_each_value_to_its_first_occurrence():
    x = np.array([3.0, 1.0, 3.0])
    g = pb.grad(lambda x: np.sum(np.unique(x) ** 2))(x)
    np.testing.assert_array_equal(g, [6.0, 2.0, 0.0])
    values, index, counts = np.unique(pb.param(x), return_index=True, return_counts=True)
    np.testing.assert_array_equal(index, [1, 0])
    np.testing.assert_array_equal(counts, [1, 2])
    assert type(index) is np.ndarray and isinstance(values, pb.Tracked)


# np.unique's convention: of equal values, the first in (ar1, ar2) gets the cotangent
@pytest.mark.parametrize("func, gx, gy", [
    (np.union1d, [3, 1, 0], [0, 2]),      # [1, 2, 3]: 1 from x, 2 from y, 3 from x[0]
    (np.intersect1d, [0, 1, 0], [0, 0]),  # [1]: from x
    (np.setxor1d, [2, 0, 0], [0, 1]),     # [2, 3]: 2 from y, 3 from x[0]
    (np.setdiff1d, [1, 0, 0], [0, 0])])   # [3]: y is only compared
def test_set_operations_send_equal_values_to_the_first_occurrence(func, gx, gy):
    x, y = np.array([3.0, 1.0, 3.0]), np.array([1.0, 2.0])
    weights = np.arange(1.0, func(x, y).size + 1.0)
    g = pb.grad(lambda x, y: np.sum(func(x, y) * weights), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(g[0], gx)
    np.testing.assert_array_equal(g[1], gy)


def test_setdiff1d_assume_unique_keeps_each_element():
    # NumPy keeps each element of ar1 not in ar2, repeats included, in order
    x, y = np.array([3.0, 1.0, 3.0]), np.array([1.0, 2.0])
    g = pb.grad(lambda x: np.sum(np.setdiff1d(x, y, assume_unique=True) * np.array([1., 2.])))(x)
    np.testing.assert_array_equal(g, [1, 0, 2])


def test_intersect1d_return_indices_are_numpy_s():
    x, y = np.array([3.0, 1.0, 3.0, 5.0]), np.array([5.0, 3.0, 0.0])
    values, i, j = np.intersect1d(pb.param(x), y, return_indices=True)
    want = np.intersect1d(x, y, return_indices=True)
    assert isinstance(values, pb.Tracked) and type(i) is type(j) is np.ndarray
    for got, expected in zip((values.value, i, j), want):
        np.testing.assert_array_equal(got, expected)


def test_sort_complex_casts_as_numpy_does():
    for dtype in (np.float32, np.float64, np.complex64):
        x = np.array([2.0, 1.0], dtype=dtype)
        out, vjp_fn = pb.vjp(np.sort_complex, x)
        assert out.dtype == np.sort_complex(x).dtype
        # sorted [1, 2]: the real part of each cotangent for a real input
        want = [2.0j, 1.0] if dtype is np.complex64 else [0.0, 1.0]
        np.testing.assert_array_equal(vjp_fn(np.array([1.0, 2.0j], out.dtype))[0], want)
