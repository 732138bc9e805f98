import numpy as np
import pytest
import scipy.spatial.distance as distance

import pullback as pb
from pullback.rules.scipy import spatial as scipy_spatial

from ..spec import Spec

METRICS = {"metric": ["euclidean", "sqeuclidean", "cityblock"]}

SPECS = [
    Spec(scipy_spatial.cdist, [((4, 3), (2, 3)), ((1, 2), (3, 2))], kwargs=METRICS,
         call=distance.cdist),
    Spec(scipy_spatial.cdist, [((3, 2), (2, 2))], call=lambda a, b: distance.cdist(a, b),
         name="scipy.spatial.distance.cdist(default metric)"),
    Spec(scipy_spatial.pdist, [(4, 3), (2, 1), (5, 2)], kwargs=METRICS, call=distance.pdist),
    Spec(scipy_spatial.pdist, [(3, 2)], call=lambda x: distance.pdist(x, "euclidean"),
         name="scipy.spatial.distance.pdist(positional metric)"),
]


def _hollow(a):
    """A symmetric matrix with a zero diagonal, exactly (what squareform's checks ask)."""
    return (a + a.T) * (1.0 - np.eye(len(a)))


SPECS += [
    # vector to matrix: n (n - 1) / 2 entries (none: SciPy's 1 x 1 zero matrix)
    Spec(scipy_spatial.squareform, [(0,), (1,), (3,), (6,)],
         kwargs={"force": ["no", "tomatrix"], "checks": [True, False]},
         call=distance.squareform, name="squareform(vector)"),
    # matrix to vector: a distance matrix, checked; any square matrix, its upper triangle
    Spec(scipy_spatial.squareform, [(1, 1), (2, 2), (4, 4)],
         kwargs={"force": ["no", "tovector"]},
         call=lambda a, **kw: distance.squareform(_hollow(a), **kw),
         name="squareform(distance matrix)"),
    Spec(scipy_spatial.squareform, [(0, 0), (2, 2), (4, 4)],
         kwargs={"force": ["no", "tovector"], "checks": [False]},
         call=distance.squareform, name="squareform(matrix, checks=False)"),
    Spec(scipy_spatial.squareform, [(4, 2)],
         call=lambda x: distance.squareform(distance.pdist(x)),
         name="squareform(pdist(x))"),
    Spec(scipy_spatial.squareform, [(3,)], domain="complex",
         call=distance.squareform, name="squareform(complex)"),
]


def test_squareform_refuses_what_scipy_refuses():
    # SciPy's own checks, on the plain values: the same errors for tracked input
    cases = [(np.ones(4), {}), (np.ones((3, 3)), {}), (np.ones(3), {"force": "tovector"}),
             (np.ones((2, 3)), {"checks": False})]
    for x, kw in cases:
        with pytest.raises(ValueError) as plain:
            distance.squareform(x, **kw)
        with pytest.raises(ValueError) as tracked:
            pb.grad(lambda x, kw=kw: np.sum(distance.squareform(x, **kw)))(x)
        assert str(tracked.value) == str(plain.value)


def test_zero_distance_has_zero_gradient():
    # the kink of |d| at d = 0: the convention is a zero gradient, not NaN
    x = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]])
    for metric in ("euclidean", "cityblock"):
        grads = pb.grad(lambda a, b, m=metric: np.sum(distance.cdist(a, b, m)[:2, :1]),
                        argnums=(0, 1))(x, x)
        for g in grads:
            assert np.all(np.isfinite(g))
        np.testing.assert_array_equal(grads[0][:2], 0.0)
        g = pb.grad(lambda x, m=metric: distance.pdist(x, m)[0])(x)
        np.testing.assert_array_equal(g, 0.0)
    # second order, too
    h = pb.hessian(lambda x: np.sum(distance.pdist(x)))(x)
    assert np.all(np.isfinite(h))


def test_other_metrics_have_no_rule():
    x = np.ones((3, 2))
    with pytest.raises(pb.NoRuleError, match="metric='cosine'"):
        pb.grad(lambda x: np.sum(distance.pdist(x, "cosine")))(x)
    with pytest.raises(pb.NoRuleError, match="with w"):
        pb.grad(lambda x: np.sum(distance.cdist(x, x, "euclidean", w=np.ones(2))))(x)
