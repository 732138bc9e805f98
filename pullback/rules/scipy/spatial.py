"""scipy.spatial.distance's cdist and pdist for the euclidean, sqeuclidean and cityblock
metrics, as composites: the differences of the points, then the metric along the last axis.

At zero distance the euclidean metric has a kink (|d| at d = 0): its gradient there is 0,
as the norm's, not NaN; cityblock's is abs'(0) = 0 in each coordinate. Other metrics (and
the metrics' keyword arguments, ``w``, ``p`` ...) raise NoRuleError.

squareform, between the condensed vector and the square matrix, is a gather (linear): a
vector's entry k goes to (i, j) and (j, i), the matrix's diagonal is 0; a matrix gives its
upper triangle, row by row, which is all SciPy reads of it (checks=True first checks the
matrix is symmetric with a zero diagonal, as SciPy does).
"""

import numpy as np
import scipy.spatial.distance

from ...extend import NoRuleError, composite, is_foreign, on_backend, plain, shape_of, zeros_on
from .._util import as_array, intercept

cdist = intercept(scipy.spatial.distance, "cdist")
pdist = intercept(scipy.spatial.distance, "pdist")
squareform = intercept(scipy.spatial.distance, "squareform")


def _euclidean(d):
    squared = np.sum(d * d, axis=-1)
    # the 1 under the square root where the distance is 0 is never used: no NaN leaks there
    positive = plain(squared) > 0
    return np.where(positive, np.sqrt(np.where(positive, squared, 1.0)), 0.0)


_METRICS = {
    "euclidean": _euclidean,
    "sqeuclidean": lambda d: np.sum(d * d, axis=-1),
    "cityblock": lambda d: np.sum(np.abs(d), axis=-1),
}


def _metric(name, metric, kwargs):
    if kwargs or not isinstance(metric, str) or metric not in _METRICS:
        raise NoRuleError(
            f"pullback: scipy.spatial.distance.{name} has a derivative rule for the metrics "
            f"{', '.join(_METRICS)} without keyword arguments, not for metric={metric!r}"
            + (f" with {', '.join(kwargs)}" if kwargs else ""))
    return _METRICS[metric]


def _points(x, name):
    x = as_array(x)
    if len(shape_of(x)) != 2:
        raise ValueError(f"{name}: a 2-d array of points is required")
    return x


def cdist_impl(XA, XB, metric="euclidean", *, out=None, **kwargs):
    if out is not None:
        raise TypeError("pullback: cdist(..., out=...) writes into an existing array, which "
                        "cannot record a gradient; use the returned value instead")
    measure = _metric("cdist", metric, kwargs)
    XA, XB = _points(XA, "XA"), _points(XB, "XB")
    return measure(XA[:, None, :] - XB[None, :, :])


def pdist_impl(X, metric="euclidean", *, out=None, **kwargs):
    if out is not None:
        raise TypeError("pullback: pdist(..., out=...) writes into an existing array, which "
                        "cannot record a gradient; use the returned value instead")
    measure = _metric("pdist", metric, kwargs)
    X = _points(X, "X")
    first, second = np.triu_indices(shape_of(X)[0], 1)  # SciPy's condensed order
    return measure(X[on_backend(first, X)] - X[on_backend(second, X)])


def squareform_impl(X, force="no", checks=True):
    X = as_array(X)
    v = plain(X)
    if not is_foreign(v):  # SciPy's own call first: its checks and errors (the direction,
        squareform(v, force, checks)  # a vector's length, a distance matrix)
    shape = shape_of(X)
    if len(shape) == 2:  # the upper triangle, row by row (the condensed order)
        first, second = np.triu_indices(shape[0], 1)
        return X[on_backend(first, X), on_backend(second, X)]
    m = shape[0]
    n = int(np.ceil(np.sqrt(2 * m))) if m else 1  # m = n (n - 1) / 2
    first, second = np.triu_indices(n, 1)
    where = np.full((n, n), m)  # the diagonal reads the zero appended to X
    where[first, second] = where[second, first] = np.arange(m)
    padded = np.concatenate([X, zeros_on(X, (1,), v.dtype)])
    return padded[on_backend(where, X)]


composite(cdist, cdist_impl)
composite(pdist, pdist_impl)
composite(squareform, squareform_impl)
