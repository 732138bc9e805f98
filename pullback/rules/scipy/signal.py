"""scipy.signal.convolve and correlate, in every mode and by every method.

Each output is a centred window of the full output, so a pullback embeds the cotangent in
zeros of the full shape and then applies the transpose of the full operation, itself a
valid-mode correlation or convolution (cotangent shapes follow the complex convention):

    convolve(a, b):  ct_a = correlate(G, b, "valid"),  ct_b = correlate(G, a, "valid")
    correlate(a, b): ct_a = convolve(G, b, "valid"),   ct_b = flip(conj(correlate(G, a, "valid")))

The pullbacks use the caller's ``method``: direct and FFT evaluation are the same map.
Where an input is empty, every output entry is an empty sum (0) whatever the other input
holds: both cotangents are zero (the full shape there may have an axis of length -1).

``convolve2d`` and ``correlate2d`` (SciPy's compiled 2-D routines, with boundary
conditions) have no rule of their own: for tracked input they are replaced by the same map
written with np.pad and ``convolve``, as a composite.

``lfilter(b, a, x)``, y = (B / A) x along ``axis``, with respect to b, a and x: its
transpose in x is the same filter run backwards (lfilter of the flipped cotangent), and
with u = x / A and v = y / A (lfilter with numerator [1]), dy[n] / db[k] = u[n - k] and
dy[n] / da[k] = -v[n - k]. Initial conditions (``zi``) have no rule: differentiating a
call with ``zi`` raises NoRuleError.
"""


import numpy as np
import scipy.signal

from ...extend import NoRuleError, rrule, shape_of
from .._util import as_array, batch_shape, conj_if_complex, intercept, replace_when_tracked

convolve = intercept(scipy.signal, "convolve")
correlate = intercept(scipy.signal, "correlate")


def _embed(g, out_shape, full_shape):
    """``g`` (with any leading batch axes) in zeros of ``full_shape``, centred as SciPy
    centres a ``same`` or ``valid`` output in the full one."""
    ndim = len(full_shape)
    for i, (n, m) in enumerate(zip(out_shape, full_shape)):
        if n == m:
            continue
        ax = i - ndim
        before = (m - n) // 2
        shape = list(shape_of(g))
        parts = []
        for width in (before, m - n - before):
            shape[ax] = width
            parts.append(np.zeros(shape, dtype=np.result_type(g)))
        g = np.concatenate([parts[0], g, parts[1]], axis=ax)
    return g


def _batched(x, nb):
    """``x`` with ``nb`` leading axes of length 1, so that a valid-mode operation with a
    cotangent carrying ``nb`` batch axes keeps them."""
    return np.reshape(x, (1,) * nb + shape_of(x)) if nb else x


def _full_shape(in1, in2):
    return tuple(n + m - 1 for n, m in zip(shape_of(in1), shape_of(in2)))


def _empty(in1, in2):
    return 0 in shape_of(in1) or 0 in shape_of(in2)


@rrule(convolve, batched=True)
def convolve_rule(in1, in2, mode="full", method="auto"):
    ans = convolve(in1, in2, mode, method)
    out_shape = shape_of(ans)

    def convolve_pullback(g):
        if _empty(in1, in2):
            return None, None, None, None
        nb = len(shape_of(g)) - len(out_shape)
        full = _full_shape(in1, in2)
        big = _embed(g, out_shape, full)
        return (correlate(big, _batched(in2, nb), "valid", method),
                correlate(big, _batched(in1, nb), "valid", method), None, None)

    return ans, convolve_pullback


@rrule(correlate, batched=True)
def correlate_rule(in1, in2, mode="full", method="auto"):
    ans = correlate(in1, in2, mode, method)
    out_shape = shape_of(ans)

    def correlate_pullback(g):
        if _empty(in1, in2):
            return None, None, None, None
        nb = len(shape_of(g)) - len(out_shape)
        full = _full_shape(in1, in2)
        big = _embed(g, out_shape, full)
        flip = (Ellipsis,) + (slice(None, None, -1),) * len(full)
        ct2 = conj_if_complex(correlate(big, _batched(in1, nb), "valid", method))[flip]
        return (convolve(big, _batched(in2, nb), "valid", method), ct2, None, None)

    return ans, correlate_pullback


# ---------------------------------------------------------------------------- 2-D, with
# boundaries: the input extended by the boundary condition (np.pad), then a valid-mode
# convolution gives SciPy's full output, which "same" crops as SciPy centres it

_PAD_MODES = {"symm": "symmetric", "symmetric": "symmetric", "wrap": "wrap", "circular": "wrap"}


def _full_2d(in1, in2, boundary, fillvalue):
    pad = [(n - 1, n - 1) for n in shape_of(in2)]
    if boundary in ("fill", "pad"):
        extended = np.pad(in1, pad, constant_values=fillvalue)
    else:
        extended = np.pad(in1, pad, mode=_PAD_MODES[boundary])
    return convolve(extended, in2, "valid")


def _same_2d(full, shape, ceil):
    start = [(f - n + ceil) // 2 for f, n in zip(shape_of(full), shape)]
    return full[start[0]:start[0] + shape[0], start[1]:start[1] + shape[1]]


def convolve2d_impl(in1, in2, mode="full", boundary="fill", fillvalue=0):
    in1, in2 = as_array(in1), as_array(in2)  # (SciPy takes lists: in2 is sliced here)
    if mode == "valid":  # no boundary reached (SciPy swaps inputs as convolve does)
        return convolve(in1, in2, "valid")
    full = _full_2d(in1, in2, boundary, fillvalue)
    return full if mode == "full" else _same_2d(full, shape_of(in1), 0)


def correlate2d_impl(in1, in2, mode="full", boundary="fill", fillvalue=0):
    in1, in2 = as_array(in1), as_array(in2)
    if mode == "valid":
        ans = correlate(in1, in2, "valid")
        swapped = any(n < m for n, m in zip(shape_of(in1), shape_of(in2)))
        # SciPy's correlate2d of swapped inputs conjugates where correlate does not
        return np.conj(ans) if swapped and np.iscomplexobj(ans) else ans
    full = _full_2d(in1, conj_if_complex(in2[::-1, ::-1]), boundary, fillvalue)
    return full if mode == "full" else _same_2d(full, shape_of(in1), 1)


def _two_d(in1, in2, *args, **kwargs):
    return len(shape_of(in1)) == 2 == len(shape_of(in2))


def _replace_2d(name, impl):
    replace_when_tracked(scipy.signal, name, impl, _two_d)


_replace_2d("convolve2d", convolve2d_impl)
_replace_2d("correlate2d", correlate2d_impl)


# ---------------------------------------------------------------------------- lfilter

lfilter = intercept(scipy.signal, "lfilter")


def _lagged_products(g, u, taps, nb):
    """sum over n and every other axis of g[..., n] conj(u[..., n - k]), for k < taps, along
    the last axis: the cotangent of a filter coefficient (keeping ``nb`` batch axes)."""
    n = shape_of(u)[-1]
    axes = tuple(range(nb, nb + len(shape_of(u))))
    u = conj_if_complex(u)
    return np.stack([np.sum(g[..., k:] * u[..., :n - k], axis=axes) for k in range(taps)], -1)


@rrule(lfilter, batched=True)
def lfilter_rule(b, a, x, axis=-1, zi=None):
    if zi is not None:
        raise NoRuleError(
            "pullback: scipy.signal.lfilter with initial conditions (zi) has no derivative "
            "rule; filter without zi (or prepend the past input to x and drop its outputs)")
    ans = lfilter(b, a, x, axis)

    def lfilter_pullback(g):
        nb = len(batch_shape(g, len(shape_of(ans))))
        ax = axis % len(shape_of(x)) - len(shape_of(x))
        gm = np.moveaxis(g, ax, -1)
        def ct_x():  # the transpose: the conjugate filter, run from the end
            back = lfilter(conj_if_complex(b), conj_if_complex(a), np.flip(gm, -1))
            return np.moveaxis(np.flip(back, -1), -1, ax)

        def ct_b():
            u = lfilter(np.ones(1), a, np.moveaxis(x, ax, -1))
            return _lagged_products(gm, u, shape_of(b)[0], nb)

        def ct_a():
            v = lfilter(np.ones(1), a, np.moveaxis(ans, ax, -1))
            return -_lagged_products(gm, v, shape_of(a)[0], nb)

        return ct_b, ct_a, ct_x, None, None

    return ans, lfilter_pullback
