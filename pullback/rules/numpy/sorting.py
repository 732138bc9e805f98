"""Sorting and order statistics: sort, partition, median, quantile, percentile and their
nan-forms; unique, the set operations (union1d, intersect1d, setdiff1d, setxor1d) and
sort_complex.

Conventions: sort sends each output's cotangent to the element it came from, and tied
elements share the cotangents of their run of equal sorted values equally (as max and min
do; an inf or NaN cotangent stays in its run). partition follows the permutation
``np.argsort(kind='stable')`` gives. Order statistics (median, quantile, percentile) are
weighted sums of at most two sorted values; the weight of a sorted value is shared equally
among the elements equal to it (np.median of [1, 3, 3] sends [0, 1/2, 1/2]), and the other
elements get exactly 0. A tracked ``q`` raises NoRuleError; ``weights`` get no cotangent.
"""

import numpy as np

from ...extend import (
    composite,
    is_foreign,
    not_implemented,
    on_backend,
    plain,
    rrule,
    shape_of,
    zeros_on,
)
from .._util import normalize_axes, zero_of


def _unpermute(g, perm, ax):
    """The cotangent ``g`` of ``take_along_axis(x, perm, ax)`` sent back to ``x``: gathered
    by the inverse permutation (``g`` may carry leading batch axes)."""
    ndim = perm.ndim
    ax = ax % ndim - ndim
    inverse = np.argsort(perm, axis=ax)  # (out of place, so that pb.jit records it)
    nb = len(shape_of(g)) - ndim
    return np.take_along_axis(g, np.reshape(inverse, (1,) * nb + inverse.shape), axis=ax)


def _unflatten(ct, shape):
    return np.reshape(ct, shape_of(ct)[:len(shape_of(ct)) - 1] + shape)


def _share_ties(g, ordered):
    """``g`` (cotangents of sorted values along the last axis, maybe with leading batch
    axes) averaged over each run of equal values in ``ordered``: tied elements share."""
    n = ordered.shape[-1]
    lead = ordered.shape[:-1] + (1,)
    edge = on_backend(np.ones(lead, bool), ordered)
    starts = np.concatenate([edge, ordered[..., 1:] != ordered[..., :-1]], -1)
    ends = np.concatenate([starts[..., 1:], edge], -1)
    idx = on_backend(np.arange(n), ordered)
    first = np.maximum.accumulate(np.where(starts, idx, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, idx, n - 1), -1), axis=-1), -1)
    batch = (1,) * (len(shape_of(g)) - ordered.ndim)
    ahead, behind = np.reshape(last + 1, batch + last.shape), np.reshape(first, batch + first.shape)

    def run_sums(v):  # the sum of v over each run: a difference of its running sums
        running = np.cumsum(v, axis=-1)
        zeros = zeros_on(v, shape_of(v)[:-1] + (1,), plain(running).dtype)
        running = np.concatenate([zeros, running], axis=-1)
        return (np.take_along_axis(running, ahead, axis=-1)
                - np.take_along_axis(running, behind, axis=-1))

    pg = plain(g)  # (a complex cotangent: its runs are summed so in any case)
    if pg.dtype.kind == "c" or not is_foreign(pg) and np.isfinite(np.add.reduce(pg, axis=None)):
        return run_sums(g) / (last - first + 1)
    # an inf or NaN would leak into every later run through the differences (inf - inf):
    # the finite cotangents are summed so, and the non-finite ones are counted per run
    # (another library's array takes this way: asking would be a device sync)
    finite = np.isfinite(pg)
    total = run_sums(np.where(finite, g, zero_of(g)))
    up, down, nan = (run_sums(t) > 0 for t in (pg == np.inf, pg == -np.inf, np.isnan(pg)))
    total = np.where(up, np.inf, np.where(down, -np.inf, total))
    return np.where(nan | up & down, np.nan, total) / (last - first + 1)


@rrule(np.sort, batched=True)
def sort_rule(a, axis=-1, kind=None, order=None, *, stable=None):
    kw = {} if stable is None else {"stable": stable}  # NumPy 2's keyword
    ans = np.sort(a, axis=axis, kind=kind, **kw)

    def sort_pullback(g):
        x = np.ravel(plain(a)) if axis is None else plain(a)
        ax = -1 if axis is None else axis
        ordered = np.moveaxis(np.sort(x, axis=ax), ax, -1)
        # ties share the gradient (another library's array: always, with no branch)
        if is_foreign(ordered) or np.any(ordered[..., 1:] == ordered[..., :-1]):
            nd = ordered.ndim
            g = np.moveaxis(_share_ties(np.moveaxis(g, ax % nd - nd, -1), ordered), -1,
                            ax % nd - nd)
        ct = _unpermute(g, np.argsort(x, axis=ax, kind="stable"), ax)
        return (_unflatten(ct, shape_of(a)) if axis is None else ct), None, None, None

    return ans, sort_pullback


@rrule(np.partition, batched=True)
def partition_rule(a, kth, axis=-1, kind="introselect", order=None):
    ans = np.partition(a, kth, axis=axis, kind=kind)

    def partition_pullback(g):
        x = np.ravel(plain(a)) if axis is None else plain(a)
        ax = -1 if axis is None else axis
        # the permutation taking x to NumPy's arrangement: the k-th smallest input element
        # (stable order among ties) goes where the k-th smallest output is
        ins = np.argsort(x, axis=ax, kind="stable")
        outs = np.argsort(plain(ans), axis=ax, kind="stable")
        perm = np.take_along_axis(ins, np.argsort(outs, axis=ax), axis=ax)  # perm[outs] = ins
        ct = _unpermute(g, perm, ax)
        return (_unflatten(ct, shape_of(a)) if axis is None else ct), None, None, None, None

    return ans, partition_pullback


# ---------------------------------------------------------------------------- quantiles

NO_Q = not_implemented("the probabilities q: the order statistic is piecewise in q")

def _to_last(x, axis):
    """Plain ``x`` with the reduced axes moved to the end and flattened into one."""
    ndim = np.ndim(x)
    axes = normalize_axes(axis, ndim)
    k = len(axes)
    moved = np.moveaxis(x, axes, tuple(range(-k, 0))) if k else x
    rest = moved.shape[:ndim - k]
    return np.reshape(moved, rest + (-1,)), axes, rest


def _order_weights(x, q, axis, method, nan, weights):
    """The weight of each element of ``x`` in each quantile: an array of shape
    q.shape + (other axes) + (reduced elements,)."""
    flat, axes, rest = _to_last(x, axis)
    n = flat.shape[-1]
    if weights is not None:
        # inverted_cdf picks one element: the cotangent goes to the elements equal to it
        picked = np.quantile(x, q, axis=axis, method=method, weights=weights)
        hit = flat == np.reshape(picked, np.shape(q) + rest + (1,))
        return hit / np.maximum(hit.sum(-1, keepdims=True), 1)
    if nan:
        missing = np.isnan(flat)
        empty = missing.all(axis=-1, keepdims=True)  # all-NaN slices: no gradient
        ranks = np.where(missing & ~empty, np.nan, np.cumsum(~missing, axis=-1) - 1.0)
        where = np.nanquantile(ranks, on_backend(q, ranks), axis=-1, method=method)
        valid = ~empty[..., 0]
    else:
        ranks = np.broadcast_to(np.arange(n, dtype=float), flat.shape)
        where = np.quantile(ranks, q, axis=-1, method=method)
        valid = True
    # ``where`` is the virtual index of each quantile among the sorted elements
    lo = np.floor(where).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    frac = where - lo
    if nan:  # the positions differ between slices
        ordered = np.sort(flat, axis=-1)
    else:  # the same positions in every slice: partition at them
        kth = np.unique(np.concatenate([lo.ravel(), hi.ravel()]))
        ordered = np.partition(flat, tuple(int(k) for k in kth), axis=-1)
    ordered = np.broadcast_to(ordered, where.shape + (n,))
    total = 0.0
    for idx, weight in ((lo, 1 - frac), (hi, frac)):
        idx, weight = on_backend(idx, flat), on_backend(weight, flat)
        value = np.take_along_axis(ordered, idx[..., None], axis=-1)
        hit = flat == value  # ties share the weight of the sorted value
        total = total + weight[..., None] * hit / np.maximum(hit.sum(-1, keepdims=True), 1)
    return total if valid is True else total * np.expand_dims(valid, -1)


def _order_pullback(func, a, ans, q, axis, method, nan, weights=None):
    """The pullback of an order statistic ``ans`` of ``a`` at the plain probabilities
    ``q`` (in [0, 1]): the cotangent times each element's weight."""
    shape = shape_of(a)
    ndim = len(shape)
    out_ndim = len(shape_of(ans))

    def quantile_pullback(g):
        batch = shape_of(g)[:len(shape_of(g)) - out_ndim]
        if 0 in shape:  # no elements (np.median of an empty array is nan): nothing to send
            return zeros_on(a, batch + shape, plain(a).dtype), NO_Q, None, None, None, None, None
        w = _order_weights(plain(a), q, axis, method, nan,
                           None if weights is None else plain(weights))
        axes = normalize_axes(axis, ndim)
        rest = w.shape[q.ndim:-1]
        # exactly 0 for the elements an order statistic does not use, even where g is inf
        # or NaN (np.where first: no 0 * inf)
        ct = np.where(w != 0, np.reshape(g, batch + q.shape + rest + (1,)), zero_of(g)) * w
        if q.ndim:
            ct = np.sum(ct, axis=tuple(range(-q.ndim - len(rest) - 1, -len(rest) - 1)))
        ct = np.reshape(ct, batch + rest + tuple(shape[i] for i in axes))
        if axes:
            k = len(axes)
            ct = np.moveaxis(ct, tuple(range(-k, 0)), tuple(i - ndim for i in axes))
        return ct, NO_Q, None, None, None, None, None

    return quantile_pullback


def _quantile_rule(func, nan, scale=1.0):
    def quantile_rule(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                      keepdims=False, *, weights=None):
        kw = {} if weights is None else {"weights": weights}
        ans = func(a, q, axis=axis, method=method, keepdims=keepdims, **kw)
        q = np.asarray(q) / scale
        return ans, _order_pullback(func, a, ans, q, axis, method, nan, weights)

    return quantile_rule


def _median_rule(func, nan):
    def median_rule(a, axis=None, out=None, overwrite_input=False, keepdims=False):
        ans = func(a, axis=axis, keepdims=keepdims)
        return ans, _order_pullback(func, a, ans, np.asarray(0.5), axis, "linear", nan)

    return median_rule


rrule(np.quantile, batched=True)(_quantile_rule(np.quantile, nan=False))
rrule(np.nanquantile, batched=True)(_quantile_rule(np.nanquantile, nan=True))
rrule(np.percentile, batched=True)(_quantile_rule(np.percentile, nan=False, scale=100.0))
rrule(np.nanpercentile, batched=True)(_quantile_rule(np.nanpercentile, nan=True, scale=100.0))
rrule(np.median, batched=True)(_median_rule(np.median, nan=False))
rrule(np.nanmedian, batched=True)(_median_rule(np.nanmedian, nan=True))


# ---------------------------------------------------------------------------- unique

def unique_of_tracked(ar, return_index=False, return_inverse=False, return_counts=False,
                      axis=None, **kwargs):
    """np.unique on a tracked array: the unique values are a gather of ``ar`` at the first
    occurrence of each (return_index), so each value's cotangent goes to that element; the
    indices and counts are plain."""
    if axis is not None:  # (Dask's unique takes no axis=)
        kwargs["axis"] = axis
    found = np.unique(plain(ar), return_index=True, return_inverse=return_inverse,
                      return_counts=return_counts, **kwargs)
    index = found[1]
    values = np.ravel(ar)[index] if axis is None else np.take(ar, index, axis=axis)
    extras = ([index] if return_index else []) + list(found[2:])
    return (values, *extras) if extras else values


composite(np.unique, unique_of_tracked)


# ---------------------------------------------------------------------------- set operations
# Each result is a gather of input elements. Where NumPy keeps one of several equal values
# (np.unique, and the set operations built on it), its cotangent goes to the first
# occurrence, in the concatenation ``(ar1, ar2)`` of the flattened inputs: np.unique's
# convention. Which elements are kept is decided by the plain values, so an element that
# is only compared (every element of setdiff1d's ar2) gets no cotangent.

def _gather_first(pool, found):
    """The elements of the 1-d ``pool`` (maybe tracked) equal to the plain values
    ``found``, each taken at its first occurrence."""
    values, first = np.unique(plain(pool), return_index=True)
    return pool[first[np.searchsorted(values, found)]]


def _pool(ar1, ar2):
    return np.concatenate([np.ravel(ar1), np.ravel(ar2)])


def union1d_of_tracked(ar1, ar2):
    return _gather_first(_pool(ar1, ar2), np.union1d(plain(ar1), plain(ar2)))


def intersect1d_of_tracked(ar1, ar2, assume_unique=False, return_indices=False):
    found = np.intersect1d(plain(ar1), plain(ar2), assume_unique, return_indices)
    if return_indices:  # the indices are plain
        return (_gather_first(_pool(ar1, ar2), found[0]), *found[1:])
    return _gather_first(_pool(ar1, ar2), found)


def setxor1d_of_tracked(ar1, ar2, assume_unique=False):
    return _gather_first(_pool(ar1, ar2), np.setxor1d(plain(ar1), plain(ar2), assume_unique))


def setdiff1d_of_tracked(ar1, ar2, assume_unique=False):
    if assume_unique:  # NumPy keeps every element of ar1 not found in ar2, in order
        flat = np.ravel(ar1)
        return flat[np.isin(plain(flat), plain(ar2), assume_unique=True, invert=True)]
    return _gather_first(np.ravel(ar1), np.setdiff1d(plain(ar1), plain(ar2)))


def sort_complex_of_tracked(a):
    """np.sort_complex: np.sort (ties share, as sort's) cast to complex as NumPy casts."""
    ordered = np.sort(a)
    dtype = plain(ordered).dtype
    if dtype.kind == "c":
        return ordered
    return ordered.astype("F" if dtype.char in "bhBH" else "G" if dtype.char == "g" else "D")


composite(np.union1d, union1d_of_tracked)
composite(np.intersect1d, intersect1d_of_tracked)
composite(np.setxor1d, setxor1d_of_tracked)
composite(np.setdiff1d, setdiff1d_of_tracked)
composite(np.sort_complex, sort_complex_of_tracked)
