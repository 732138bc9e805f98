"""Statistics: cov and corrcoef (composites of mean, dot and friends), histogram and
bincount (linear in their weights), histogramdd and histogram2d (composites of bincount,
linspace, min and max).

Conventions. Counts are piecewise constant in the sample: the sample gets no gradient
through them (as floor and round). The bin edges histogram derives from the sample (an
integer or string ``bins`` and no ``range``) are ``linspace(min(a), max(a), k + 1)``: they
carry the gradient of min and max (tied extremes share it, as in np.min and np.max), and so
does a density, which divides by the bins' widths. histogramdd and histogram2d follow the
same conventions along each dimension: edges derived from a column of the sample carry its
min's and max's gradient. Edges derived from a complex sample have no rule. corrcoef's clip
to [-1, 1] only undoes rounding (a correlation lies in [-1, 1]): it is differentiated as the
identity. cov's ``fweights`` are integer frequencies, constants; a tracked one raises
TypeError.
"""

import math
import operator
import warnings

import numpy as np

from ...extend import (
    NoRuleError,
    Tracked,
    composite,
    is_complex,
    is_foreign,
    not_implemented,
    on_backend,
    plain,
    rrule,
    shape_of,
    stop_gradient,
)
from .._util import as_array, batch_shape, conj_if_complex, zero_of

# ---------------------------------------------------------------------------- cov, corrcoef

def _live(x):
    """Whether ``x`` is tracked by a gradient computation (not a pb.jit trace's box)."""
    return isinstance(x, Tracked) and not x.traced


def _float_weights(v, like):
    """Weights as a float array on the array library of ``like`` (the data)."""
    v = as_array(v)
    v = v.astype(float) if isinstance(v, Tracked) or is_foreign(v) else np.asarray(v, float)
    return on_backend(v, like) if isinstance(v, np.ndarray) else v


def _as_rows(v, dtype, rowvar):
    """``v`` as a 2-d array of variables (rows) and observations, in ``dtype``."""
    x = np.atleast_2d(v)
    if x.dtype != dtype:
        x = x.astype(dtype)
    if not rowvar and x.shape[0] != 1:
        x = x.T
    return x


def cov_impl(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
             dtype=None):
    # NumPy's algorithm, step by step, on values that may be tracked
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    if _live(fweights):
        raise TypeError(
            "pullback: np.cov: fweights are integer frequencies, which have no derivative; "
            "pass them as a plain array (pb.stop_gradient), or differentiable weights as "
            "aweights"
        )
    m = as_array(m)
    if np.ndim(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = as_array(y)
        if np.ndim(y) > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(*(plain(v) for v in (m, y) if v is not None), np.float64)
    x = np.atleast_2d(m)
    x = x if x.dtype == dtype else x.astype(dtype)
    if not rowvar and np.ndim(m) != 1:
        x = x.T
    if x.shape[0] == 0:
        return on_backend(np.array([]).reshape(0, 0), x)
    if y is not None:
        x = np.concatenate((x, _as_rows(y, dtype, rowvar)), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0

    w = None
    n = x.shape[1]
    if fweights is not None:
        fweights = _float_weights(fweights, x)
        if not np.all(fweights == np.around(fweights)):
            raise TypeError("fweights must be integer")
        if fweights.ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if fweights.shape[0] != n:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if np.any(fweights < 0):
            raise ValueError("fweights cannot be negative")
        w = fweights
    if aweights is not None:
        aweights = _float_weights(aweights, x)
        if aweights.ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if aweights.shape[0] != n:
            raise RuntimeError("incompatible numbers of samples and aweights")
        if np.any(plain(aweights) < 0):
            raise ValueError("aweights cannot be negative")
        w = aweights if w is None else w * aweights

    avg, w_sum = np.average(x, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = n - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * np.sum(w * aweights) / w_sum
    if plain(fact) <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    x = x - avg[:, None]
    x_t = x.T if w is None else (x * w).T
    c = np.dot(x, np.conj(x_t)) * np.true_divide(1, fact)
    return np.squeeze(c)


composite(np.cov, cov_impl)


def corrcoef_impl(x, y=None, rowvar=True, *deprecated, dtype=None, **bias_ddof):
    if deprecated or bias_ddof:  # NumPy 1.x's bias and ddof (no effect; gone in 2.x):
        np.corrcoef(np.eye(2), None, True, *deprecated, **bias_ddof)  # NumPy's own answer
    c = np.cov(x, y, rowvar, dtype=dtype)
    if np.ndim(plain(c)) != 2:  # a single variable: nan for a zero variance, else 1
        return c / c
    stddev = np.sqrt(np.real(np.diagonal(c)))
    c = c / stddev[:, None] / stddev[None, :]
    # NumPy clips the real and imaginary parts to [-1, 1]; that corrects rounding only, so
    # the correction is a constant: the gradient is that of the unclipped ratio
    value = plain(c)
    clipped = np.clip(value.real, -1, 1)
    if np.iscomplexobj(value):
        clipped = clipped + 1j * np.clip(value.imag, -1, 1)
    return c + stop_gradient(clipped - value)


composite(np.corrcoef, corrcoef_impl)


# ---------------------------------------------------------------------------- bincount

@rrule(np.bincount, batched=True)
def bincount_rule(x, weights=None, minlength=0):
    # out[j] = sum of weights[i] over x[i] = j: linear in the weights
    ans = np.bincount(x, weights, minlength)

    def bincount_pullback(g):
        def bincount_weights():
            return g[..., as_array(plain(x))]

        return None, bincount_weights, None

    return ans, bincount_pullback


# ---------------------------------------------------------------------------- histogram

def _edges_source(a, bins, range):
    """Where histogram's bin edges come from: 'bins' (an array of edges), 'range' or
    'sample' (linspace between two ends, those of ``range`` or the sample's min and max)."""
    if not isinstance(bins, str) and np.ndim(plain(bins)) == 1:
        return "bins"
    return "sample" if range is None else "range"


NO_COMPLEX_SAMPLE = not_implemented(
    "np.histogram's edges derived from a complex sample 'a' (histogram its real part)")


@rrule(np.histogram, batched=True)
def histogram_rule(a, bins=10, range=None, density=None, weights=None):
    """Derivatives with respect to the weights (the counts are linear in them), the sample
    (through edges derived from it), ``bins`` given as edges, and ``range``."""
    ans = np.histogram(a, bins, range, density, weights)
    source = _edges_source(a, bins, range)
    edges = plain(ans[1])
    k = len(edges) - 1
    flat = np.ravel(plain(a))

    def bins_of_sample():
        # NumPy's bins: edges[j] <= x < edges[j + 1], the last one closed on the right
        inside = (flat >= edges[0]) & (flat <= edges[-1])
        index = np.clip(np.searchsorted(edges, flat, side="right") - 1, 0, k - 1)
        return inside, index

    def histogram_pullback(g):
        g_counts, g_edges = g
        widths = np.diff(ans[1])  # (the edges may be tracked one level down)
        if not np.issubdtype(plain(widths).dtype, np.inexact):
            widths = widths.astype(float)
        nb = batch_shape(g_edges, 1)

        def edges_cotangent():
            ct = g_edges
            if density:  # the density divides by the widths, diff(edges)
                ct_widths = -g_counts * conj_if_complex(ans[0]) / widths
                pad = [(0, 0)] * len(nb)
                ct = ct + np.pad(ct_widths, pad + [(1, 0)]) - np.pad(ct_widths, pad + [(0, 1)])
            return ct

        def ends_cotangent():
            # edges = linspace(lo, hi, k + 1): d edges[j] / d lo = 1 - j / k, / d hi = j / k
            ct = edges_cotangent()
            share = on_backend(np.arange(k + 1) / k, ct)
            return np.sum(ct * (1 - share), axis=-1), np.sum(ct * share, axis=-1)

        def histogram_a():
            ct_lo, ct_hi = ends_cotangent()
            lo, hi = flat == flat.min(), flat == flat.max()  # tied extremes share
            ct = (np.expand_dims(ct_lo, -1) * (lo / lo.sum())
                  + np.expand_dims(ct_hi, -1) * (hi / hi.sum()))
            return np.reshape(ct, nb + shape_of(a))

        def histogram_range():  # (the engine gives a range holding tracked ends as an array)
            return np.stack(ends_cotangent(), axis=-1)

        def histogram_weights():
            inside, index = bins_of_sample()
            if not density:
                ct = g_counts[..., index]
            else:
                # density = n / widths / s, s the weight inside the bins
                w = np.ravel(weights)
                total = np.sum(np.where(inside, w, zero_of(plain(w))))
                mean = np.sum(g_counts * conj_if_complex(ans[0]), axis=-1, keepdims=True)
                ct = ((g_counts / widths)[..., index] - mean) / conj_if_complex(total)
            ct = np.where(inside, ct, zero_of(g_counts))
            return np.reshape(ct, nb + shape_of(weights))

        if source == "sample" and is_complex(a):
            histogram_a = NO_COMPLEX_SAMPLE
        return (histogram_a if source == "sample" and flat.size else None,
                edges_cotangent if source == "bins" else None,
                histogram_range if source == "range" else None,
                None,
                None if weights is None else histogram_weights)

    return ans, histogram_pullback


def histogram_bin_edges_impl(a, bins=10, range=None, weights=None):
    # the edges np.histogram returns (NumPy computes both alike), with their gradient
    return np.histogram(a, bins, range, weights=weights)[1]


composite(np.histogram_bin_edges, histogram_bin_edges_impl)


# ---------------------------------------------------------------------------- histogramdd

def _outer_edges(column, range, name):
    """NumPy's outer edges of one dimension (its ``_get_outer_edges``), on values that may
    be tracked: the ends of ``range``, or the column's min and max (tied extremes share their
    gradient, as in np.min and np.max), half a unit apart either way where they are equal."""
    if range is not None:
        first, last = range
        if plain(first) > plain(last):
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(plain(first)) and np.isfinite(plain(last))):
            raise ValueError(f"supplied range of [{plain(first)}, {plain(last)}] is not finite")
    elif column.size == 0:  # no sample to derive them from: NumPy's 0 and 1
        first, last = 0, 1
    else:
        if _live(column) and is_complex(column):
            raise NoRuleError(
                f"pullback: no derivative rule for {name}'s edges derived from a complex "
                "sample: histogram its real part (np.real(sample)), or give the edges as "
                "bins or their ends as range")
        first, last = np.min(column), np.max(column)
        if not (np.isfinite(plain(first)) and np.isfinite(plain(last))):
            raise ValueError(
                f"autodetected range of [{plain(first)}, {plain(last)}] is not finite")
    if plain(first) == plain(last):
        first, last = first - 0.5, last + 0.5
    return first, last


def _histogramdd(sample, bins, range, density, weights, name):
    # NumPy's algorithm, step by step, on values that may be tracked: each point's bin comes
    # from the plain values (the counts are constant in the sample), the counts are
    # np.bincount of the weights, the edges np.linspace of their ends
    try:
        _, dims = sample.shape
    except (AttributeError, ValueError):  # a sequence of 1-d arrays, one per dimension
        sample = np.atleast_2d(as_array(sample)).T
        _, dims = sample.shape
    if weights is not None:
        weights = as_array(weights)
    try:
        if len(bins) != dims:
            raise ValueError(
                "The dimension of bins must be equal to the dimension of the sample x.")
    except TypeError:  # one number of bins for every dimension
        bins = dims * [bins]
    if range is None:
        range = (None,) * dims
    elif len(range) != dims:
        raise ValueError("range argument must have one entry per dimension")

    edges, index = [], []
    for i, (bins_i, range_i) in enumerate(zip(bins, range)):
        column = sample[:, i]
        if np.ndim(bins_i) == 0:
            if bins_i < 1:
                raise ValueError(f"`bins[{i}]` must be positive, when an integer")
            first, last = _outer_edges(column, range_i, name)
            try:
                n = operator.index(bins_i)
            except TypeError as e:
                raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from e
            edges_i = np.linspace(first, last, n + 1)
            if isinstance(edges_i, np.ndarray):  # from numbers: where the sample is
                edges_i = on_backend(edges_i, column)
        elif np.ndim(bins_i) == 1:
            edges_i = as_array(bins_i)
            if np.any(plain(edges_i)[:-1] > plain(edges_i)[1:]):
                raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an array")
        else:
            raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
        edges.append(edges_i)
        # NumPy's bins: edges[j] <= x < edges[j + 1], the last one closed on the right
        # (0 and len(edges) are the outliers on either side)
        at, values = plain(edges_i), plain(column)
        index.append(np.searchsorted(at, values, side="right") - (values == at[-1]))
    shape = tuple(len(e) + 1 for e in edges)
    hist = np.bincount(np.ravel_multi_index(tuple(index), shape), weights,
                       minlength=math.prod(shape))
    hist = np.reshape(hist, shape)
    if plain(hist).dtype != np.float64:  # plain counts
        hist = hist.astype(float, casting="safe")
    hist = hist[(slice(1, -1),) * dims]  # the outliers dropped
    if density:  # divided by the weight inside the bins and by the bins' volumes
        total = np.sum(hist)
        for i, edges_i in enumerate(edges):
            along = [1] * dims
            along[i] = -1  # the widths along dimension i
            hist = hist / np.reshape(np.diff(edges_i), along)
        hist = hist / total
    return hist, edges


def histogramdd_impl(sample, bins=10, range=None, density=None, weights=None):
    return _histogramdd(sample, bins, range, density, weights, "np.histogramdd")


def histogram2d_impl(x, y, bins=10, range=None, density=None, weights=None):
    # NumPy's: the edges for both dimensions, or one specification each, then histogramdd
    if len(x) != len(y):
        raise ValueError("x and y must have the same length.")
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in {1, 2}:  # one array of edges for both
        bins = [as_array(bins)] * 2
    hist, edges = _histogramdd([x, y], bins, range, density, weights, "np.histogram2d")
    return hist, edges[0], edges[1]


composite(np.histogramdd, histogramdd_impl)
composite(np.histogram2d, histogram2d_impl)
