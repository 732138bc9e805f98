import warnings

import numpy as np
import pytest

import pullback as pb

from ..spec import NUMPY2, Spec

_FREQUENCIES = np.array([1, 2, 1, 3, 1])  # cov's fweights: integer constants
_LABELS = np.array([0, 3, 1, 3, 3, 0])  # bincount's bins
_SAMPLE = np.array([-1.7, -0.4, 0.05, 0.3, 0.9, 1.2, 2.6])  # a histogram's constant sample
_EDGES = np.array([-2.0, -0.5, 0.5, 1.5, 3.0])
# a constant sample in two and three dimensions, away from the edges of every row
_X = np.array([-0.77, 0.69, -0.96, 1.01, 2.27, 2.18, -1.11, 1.05])
_Y = np.array([0.44, 1.74, 0.14, 0.45, -1.0, 1.68, 2.09, -0.47])
_EDGES_Y = np.array([-1.5, -0.3, 0.6, 1.4, 2.5])
_SAMPLE_3D = np.stack([_X, _Y, np.array([-0.33, -1.45, -0.8, -0.84, 1.79, 1.04, 2.46, -0.88])],
                      axis=-1)


def _sorted_edges(rng, shape):
    # edges around _SAMPLE, away from its points
    return _EDGES + rng.uniform(-0.05, 0.05, shape)


def _sorted_edges_y(rng, shape):
    return _EDGES_Y + rng.uniform(-0.05, 0.05, shape)


def _near(points):
    def draw(rng, shape):  # the constant sample, moved less than its distance to any edge
        return points + rng.uniform(-0.01, 0.01, shape)

    return draw


_near_x, _near_y, _near_sample_3d = _near(_X), _near(_Y), _near(_SAMPLE_3D)


def _lower_end(rng, shape):
    return rng.uniform(-2.5, -2.0, shape)


def _upper_end(rng, shape):
    return rng.uniform(2.8, 3.2, shape)


SPECS = [
    # cov: rows or columns as variables, the normalization, a second array, complex data
    Spec(np.cov, [(3, 5), (5,)],
         kwargs={"rowvar": [True, False], "bias": [False, True], "ddof": [None, 0, 2]}),
    Spec(np.cov, [(1, 4)], kwargs={"rowvar": [True]}),
    Spec(np.cov, [((2, 5), (5,)), ((2, 5), (3, 5)), ((5,), (5,))],
         call=lambda m, y, rowvar: np.cov(m, y, rowvar), kwargs={"rowvar": [True]},
         name="np.cov(y)"),
    Spec(np.cov, [((5, 2), (5, 3))], call=lambda m, y: np.cov(m, y, rowvar=False),
         name="np.cov(y, rowvar=False)"),
    Spec(np.cov, [(2, 4), (4,)], domain="complex", kwargs={"bias": [False, True]},
         name="np.cov(complex)"),
    Spec(np.cov, [(2, 4)], call=lambda m: np.cov(m, dtype=np.complex128),
         name="np.cov(dtype)"),
    Spec(np.cov, [(3, 5)], kwargs={"ddof": [None, 0, 2]}, name="np.cov(fweights)",
         call=lambda m, ddof: np.cov(m, fweights=_FREQUENCIES, ddof=ddof)),
    # aweights, tracked: every branch of the normalization
    Spec(np.cov, [((3, 5), (5,))], domain=("real", "positive"),
         kwargs={"ddof": [None, 0, 2], "bias": [False, True]}, name="np.cov(aweights)",
         call=lambda m, w, ddof, bias: np.cov(m, aweights=w, ddof=ddof, bias=bias)),
    Spec(np.cov, [((3, 5), (5,))], domain=("real", "positive"), kwargs={"ddof": [None, 0]},
         name="np.cov(fweights, aweights)",
         call=lambda m, w, ddof: np.cov(m, fweights=_FREQUENCIES, aweights=w, ddof=ddof)),
    Spec(np.cov, [((2, 5), (5,))], domain=("complex", "positive"),
         call=lambda m, w: np.cov(m, aweights=w), name="np.cov(complex, aweights)"),
    # corrcoef: the clip to [-1, 1] is differentiated as the identity
    Spec(np.corrcoef, [(3, 5), (2, 4)], kwargs={"rowvar": [True, False]}),
    Spec(np.corrcoef, [((2, 5), (5,)), ((5,), (5,))], name="np.corrcoef(y)",
         call=lambda x, y: np.corrcoef(x, y)),
    Spec(np.corrcoef, [(5,)], name="np.corrcoef(one variable)"),
    Spec(np.corrcoef, [(2, 4)], domain="complex", name="np.corrcoef(complex)"),
    Spec(np.corrcoef, [(2, 4)], call=lambda x: np.corrcoef(x, dtype=np.complex128),
         name="np.corrcoef(dtype)"),
    # bincount: linear in the weights
    Spec(np.bincount, [(6,)], kwargs={"minlength": [0, 6]},
         call=lambda w, minlength: np.bincount(_LABELS, w, minlength)),
    # histogram: linear in the weights; with density, divided by their total and the widths
    Spec(np.histogram, [(7,)], name="np.histogram(weights)",
         kwargs={"bins": [3, _EDGES], "density": [None, True]},
         call=lambda w, bins, density: np.histogram(_SAMPLE, bins, weights=w,
                                                    density=density)),
    Spec(np.histogram, [(7,)], domain="complex", kwargs={"density": [None, True]},
         call=lambda w, density: np.histogram(_SAMPLE, 4, (-1.0, 2.0), density, w),
         name="np.histogram(complex weights, range)"),
    # the sample: edges derived from its min and max carry their gradient
    Spec(np.histogram, [(6,), (2, 3)], kwargs={"bins": [4, "auto"]},
         call=lambda a, bins: np.histogram(a, bins)[1], name="np.histogram(edges of a)"),
    Spec(np.histogram, [((7,), (7,))], kwargs={"density": [None, True]},
         call=lambda a, w, density: np.histogram(a, 3, weights=w, density=density),
         name="np.histogram(a, weights)"),
    # edges given as bins, or their ends as range, tracked
    Spec(np.histogram, [((7,), (5,))], domain=("positive", _sorted_edges),
         call=lambda w, b: np.histogram(_SAMPLE, b, weights=w, density=True),
         name="np.histogram(bins)"),
    Spec(np.histogram, [((7,), (), ())], domain=("positive", _lower_end, _upper_end),
         call=lambda w, lo, hi: np.histogram(_SAMPLE, 4, (lo, hi), True, w),
         name="np.histogram(range)"),
    Spec(np.histogram_bin_edges, [(6,), (2, 3)], kwargs={"bins": [4, "auto", "sturges"]}),
    Spec(np.histogram_bin_edges, [((), ())], domain=(_lower_end, _upper_end),
         call=lambda lo, hi: np.histogram_bin_edges(_SAMPLE, 5, range=(lo, hi)),
         name="np.histogram_bin_edges(range)"),
    # histogram2d and histogramdd: np.histogram's conventions along each dimension
    Spec(np.histogram2d, [(8,)], name="np.histogram2d(weights)",
         kwargs={"bins": [3, [2, 4], [_EDGES, _EDGES_Y]], "density": [None, True]},
         call=lambda w, bins, density: np.histogram2d(_X, _Y, bins, weights=w,
                                                      density=density)),
    Spec(np.histogram2d, [((8,), (8,))], kwargs={"bins": [4, [3, 5]]},
         call=lambda x, y, bins: np.histogram2d(x, y, bins)[1:],
         name="np.histogram2d(edges of x, y)"),
    Spec(np.histogram2d, [((8,), (8,), (8,))], domain=("real", "real", "positive"),
         kwargs={"density": [None, True]},
         call=lambda x, y, w, density: np.histogram2d(x, y, 3, None, density, w),
         name="np.histogram2d(x, y, weights)"),
    # edges given as bins, or their ends as range, tracked (and the sample, near constant)
    Spec(np.histogram2d, [((8,), (8,), (8,), (5,), (5,))],
         domain=(_near_x, _near_y, "positive", _sorted_edges, _sorted_edges_y),
         call=lambda x, y, w, bx, by: np.histogram2d(x, y, [bx, by], weights=w, density=True),
         name="np.histogram2d(bins)"),
    Spec(np.histogram2d, [((8,), (8,), (5,))], domain=(_near_x, "positive", _sorted_edges),
         call=lambda x, w, b: np.histogram2d(x, x[::-1], bins=b, weights=w, density=True),
         name="np.histogram2d(one array of edges)"),
    Spec(np.histogram2d, [((8,), (8,), (8,), (), (), (), ())],
         domain=(_near_x, _near_y, "positive", _lower_end, _upper_end, _lower_end, _upper_end),
         call=lambda x, y, w, x0, x1, y0, y1: np.histogram2d(x, y, [3, 4],
                                                             [(x0, x1), (y0, y1)], True, w),
         name="np.histogram2d(range)"),
    Spec(np.histogramdd, [(8,)], name="np.histogramdd(weights)",
         kwargs={"bins": [3, (2, 3, 4), [_EDGES, _EDGES_Y, _EDGES]], "density": [None, True]},
         call=lambda w, bins, density: np.histogramdd(_SAMPLE_3D, bins, weights=w,
                                                      density=density)),
    Spec(np.histogramdd, [(8,)], name="np.histogramdd(a sequence of arrays)",
         call=lambda w: np.histogramdd((_X, _Y), (3, 2), weights=w, density=True)),
    Spec(np.histogramdd, [(6, 2), (7, 3), (6,), (5, 1)], kwargs={"bins": [3]},
         call=lambda sample, bins: np.histogramdd(sample, bins)[1],
         name="np.histogramdd(edges of the sample)"),
    Spec(np.histogramdd, [((7, 2), (7,))], domain=("real", "positive"),
         kwargs={"density": [None, True]},
         call=lambda sample, w, density: np.histogramdd(sample, (2, 3), density=density,
                                                        weights=w),
         name="np.histogramdd(sample, weights)"),
    Spec(np.histogramdd, [((7, 2), (7,))], domain=("real", "positive"),
         kwargs={"density": [None, True]},
         call=lambda sample, w, density: np.histogramdd(sample, (2, 3), [(-3.0, 3.0),
                                                                         (-2.5, 2.5)],
                                                        density, w),
         name="np.histogramdd(sample, weights, range)"),
    Spec(np.histogramdd, [((8, 3), (8,), (5,), (5,), (5,))],
         domain=(_near_sample_3d, "positive", _sorted_edges, _sorted_edges_y, _sorted_edges),
         call=lambda sample, w, b0, b1, b2: np.histogramdd(sample, [b0, b1, b2], None, True, w),
         name="np.histogramdd(bins)"),
    Spec(np.histogramdd, [((8, 3), (8,), (), ())],
         domain=(_near_sample_3d, "positive", _lower_end, _upper_end),
         call=lambda sample, w, lo, hi: np.histogramdd(sample, 3, [(lo, hi), (-1.5, 2.5),
                                                                   (lo, hi)], True, w),
         name="np.histogramdd(range)"),
]


def test_bincount_weights_as_a_keyword():
    # np.bincount is a C function (binding.py reads its signature from NumPy 2's dispatcher,
    # or from its own table on NumPy 1.26): weights= and minlength= by keyword as a user
    # writes them, against finite differences of the same code
    def loss(w):
        return np.sum(np.bincount(_LABELS, weights=w, minlength=5) ** 2)

    pb.check_grads(loss, np.array([0.5, 2.0, -1.0, 1.5, 3.0, 0.25]), order=2)


def test_histogram_weights_outside_the_bins_get_nothing():
    w = np.arange(1.0, 8.0)
    g = pb.grad(lambda w: np.sum(np.histogram(_SAMPLE, 2, (0.0, 1.0), weights=w)[0]))(w)
    np.testing.assert_array_equal(g, [0, 0, 1, 1, 1, 0, 0])


def test_histogram_point_on_an_edge_counts_in_numpys_bin():
    # NumPy's bins are half open, the last one closed: each weight's cotangent is its bin's
    a = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    g_counts = np.array([1.0, 10.0, 100.0, 1000.0])
    g = pb.grad(lambda w: np.sum(g_counts * np.histogram(a, 4, weights=w)[0]))(np.ones(5))
    np.testing.assert_array_equal(g, [1, 10, 100, 1000, 1000])


def test_histogram_of_a_sample_alone_has_zero_gradient_in_the_counts():
    a = np.array([0.3, -1.0, 2.0, 0.7])
    g = pb.grad(lambda a: np.sum(np.histogram(a, 3, weights=np.ones(4))[0] ** 2))(a)
    np.testing.assert_array_equal(g, np.zeros(4))


def test_histogram_edges_of_tied_extremes_share_the_gradient():
    a = np.array([2.0, -1.0, 2.0, 0.5, -1.0])
    g = pb.grad(lambda a: np.histogram(a, 3)[1][0])(a)  # the first edge is min(a)
    np.testing.assert_array_equal(g, [0, 0.5, 0, 0, 0.5])
    g = pb.grad(lambda a: np.sum(np.histogram(a, 2)[1]))(np.full(3, 4.0))  # min = max
    np.testing.assert_allclose(g, np.full(3, 1.0))


def test_histogram_of_a_complex_sample_is_refused():
    with pytest.raises(pb.NoRuleError, match="derived from a complex sample 'a'"):
        pb.grad(lambda a: np.sum(np.histogram(a, 3)[1]).real)(np.array([1.0 + 1j, 2.0]))


def test_cov_tracked_fweights_are_refused():
    m = np.arange(10.0).reshape(2, 5) ** 2
    with pytest.raises(TypeError, match="np.cov: fweights are integer frequencies"):
        pb.grad(lambda f: np.sum(np.cov(m, fweights=f)))(np.ones(5))


def test_corrcoef_clip_is_differentiated_as_the_identity():
    # perfectly correlated rows: NumPy's clip can trim rounding off the ones, the gradient
    # is still that of the correlation (zero: it is at its maximum)
    x = np.array([0.1, 0.7, 1.9, 3.2])
    g = pb.grad(lambda x: np.sum(np.corrcoef(x, 3.0 * x + 1.0)))(x)
    np.testing.assert_allclose(g, np.zeros(4), atol=1e-12)


def test_cov_with_no_degrees_of_freedom_warns_as_numpy():
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        out, _ = pb.vjp(np.cov, np.array([1.0]))
    assert np.isnan(out)


@pytest.mark.skipif(NUMPY2, reason="NumPy 1.x's deprecated bias and ddof of corrcoef")
def test_corrcoef_deprecated_arguments_warn_as_numpy():
    with pytest.warns(DeprecationWarning):
        pb.grad(lambda x: np.sum(np.corrcoef(x, bias=1)))(np.arange(6.0).reshape(2, 3) ** 2)


def test_cov_and_corrcoef_as_users_write_them():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((4, 3))

    def loss(x):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return np.sum(np.cov(x, rowvar=False) ** 2) + np.trace(np.corrcoef(x.T) @ x.T @ x)

    pb.check_grads(loss, data, order=2)


def test_histogramdd_of_one_dimension_is_np_histogram():
    # histogramdd follows np.histogram's conventions: along one dimension the values and
    # the gradients (edges from a sample with a tied maximum, counts, density) are the same
    a = np.array([0.3, -1.0, 2.0, 0.7, 1.1, 2.0])
    w = np.array([0.5, 2.0, 1.0, 1.5, 0.25, 3.0])
    g_counts, g_edges = np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.5, 1.0, -1.0, 2.0, 0.3])
    for density in (None, True):
        def dd(a, w, density=density):
            counts, (edges,) = np.histogramdd(a, 4, density=density, weights=w)
            return np.sum(counts * g_counts) + np.sum(edges * g_edges)

        def one(a, w, density=density):
            counts, edges = np.histogram(a, 4, density=density, weights=w)
            return np.sum(counts * g_counts) + np.sum(edges * g_edges)

        np.testing.assert_allclose(dd(a, w), one(a, w), rtol=1e-14)
        got, want = pb.grad(dd, argnums=(0, 1))(a, w), pb.grad(one, argnums=(0, 1))(a, w)
        for g, g_want in zip(got, want):
            np.testing.assert_allclose(g, g_want, rtol=1e-12, atol=1e-14)


def test_histogram2d_counts_are_constant_in_the_sample():
    g = pb.grad(lambda x: np.sum(np.histogram2d(x, _Y, 3, weights=_Y ** 2)[0] ** 2))(_X)
    np.testing.assert_array_equal(g, np.zeros(8))


def test_histogram2d_edges_of_tied_extremes_share_the_gradient():
    x = np.array([2.0, -1.0, 2.0, 0.5, -1.0])
    g = pb.grad(lambda x: np.histogram2d(x, np.arange(5.0), 3)[1][0])(x)  # xedges[0]: min(x)
    np.testing.assert_array_equal(g, [0, 0.5, 0, 0, 0.5])


def test_histogram2d_and_histogramdd_of_a_complex_sample_are_refused():
    sample = np.array([[1.0 + 1j, 2.0], [0.5, 1.0 - 1j]])
    with pytest.raises(pb.NoRuleError, match="np.histogramdd's edges derived from a complex "
                                             r"sample: histogram its real part"):
        pb.grad(lambda s: np.histogramdd(s, 3)[1][0][0].real)(sample)
    with pytest.raises(pb.NoRuleError, match="np.histogram2d's edges derived from a complex"):
        pb.grad(lambda x: np.histogram2d(x, x, 3)[1][0].real)(sample[:, 0])


def test_histogramdd_errors_are_numpys():
    w = np.ones(8)
    for kwargs, error, match in [
        ({"bins": (2, 3)}, ValueError, "dimension of bins must be equal"),
        ({"bins": 2.5}, TypeError, "must be an integer, when a scalar"),
        ({"bins": 0}, ValueError, "must be positive"),
        ({"bins": [_EDGES[::-1]] * 3}, ValueError, "monotonically increasing"),
        ({"range": [(0.0, 1.0)]}, ValueError, "one entry per dimension"),
        ({"range": [(1.0, 0.0)] * 3}, ValueError, "max must be larger than min"),
    ]:
        for sample, weights in [(_SAMPLE_3D, w), (_SAMPLE_3D, pb.param(w)),
                                (pb.param(_SAMPLE_3D), w)]:  # NumPy's own, then the rule's
            with pytest.raises(error, match=match):
                np.histogramdd(sample, weights=weights, **kwargs)


def test_histogramdd_of_a_sequence_of_tracked_arrays():
    # NumPy reads a sequence as one array per dimension (histogramdd((X, Y))); stacked to a
    # (2, N) array it reads as 2 points in N dimensions
    def f(x, y):
        return np.histogramdd([x, y], 3, density=True)[0]

    out, _ = pb.vjp(f, _X, _Y)
    np.testing.assert_allclose(out, f(_X, _Y), rtol=1e-12)
    pb.check_grads(lambda x: f(x, _Y), _X, order=2)  # (the edges follow min and max)


def test_histogram2d_with_edges_of_different_lengths_tracked():
    pb.check_grads(lambda b: np.histogram2d(_X, _Y, [b, _EDGES_Y[:-1]], density=True)[0],
                   _EDGES, order=2)


def test_histogram2d_as_users_write_it():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal(50), rng.standard_normal(50)
    C = rng.standard_normal((4, 4))

    def loss(w):
        return np.sum(np.histogram2d(x, y, bins=4, weights=w)[0] * C)

    w0 = rng.uniform(0.5, 2.0, 50)
    eye = np.eye(50) * 1e-6
    fd = np.array([(loss(w0 + e) - loss(w0 - e)) / 2e-6 for e in eye])  # on plain arrays
    np.testing.assert_allclose(pb.grad(loss)(w0), fd, rtol=1e-6, atol=1e-8)

    def density(x, w):  # edges from x's min and max, normalized by the weights
        counts, xedges, yedges = np.histogram2d(x, y, [4, 3], density=True, weights=w)
        return np.sum(counts * C[:, :3]) + np.sum(xedges ** 2)

    pb.check_grads(density, x, w0, order=2)
