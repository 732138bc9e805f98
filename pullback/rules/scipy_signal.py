"""scipy.signal.convolve and correlate, in every mode and by every method.

Each output is a centred window of the full output, so a pullback embeds the cotangent in
zeros of the full shape and then applies the transpose of the full operation, itself a
valid-mode correlation or convolution (cotangent shapes follow the complex convention):

    convolve(a, b):  ct_a = correlate(G, b, "valid"),  ct_b = correlate(G, a, "valid")
    correlate(a, b): ct_a = convolve(G, b, "valid"),   ct_b = flip(conj(correlate(G, a, "valid")))

The pullbacks use the caller's ``method``: direct and FFT evaluation are the same map.
"""

import numpy as np
import scipy.signal

from ..extend import rrule, shape_of
from ._util import conj_if_complex, intercept

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


@rrule(convolve)
def convolve_rule(in1, in2, mode="full", method="auto"):
    ans = convolve(in1, in2, mode, method)
    full = _full_shape(in1, in2)
    out_shape = shape_of(ans)

    def convolve_pullback(g):
        nb = len(shape_of(g)) - len(out_shape)
        big = _embed(g, out_shape, full)
        return (correlate(big, _batched(in2, nb), "valid", method),
                correlate(big, _batched(in1, nb), "valid", method), None, None)

    return ans, convolve_pullback


@rrule(correlate)
def correlate_rule(in1, in2, mode="full", method="auto"):
    ans = correlate(in1, in2, mode, method)
    full = _full_shape(in1, in2)
    out_shape = shape_of(ans)

    def correlate_pullback(g):
        nb = len(shape_of(g)) - len(out_shape)
        big = _embed(g, out_shape, full)
        flip = (Ellipsis,) + (slice(None, None, -1),) * len(full)
        ct2 = conj_if_complex(correlate(big, _batched(in1, nb), "valid", method))[flip]
        return (convolve(big, _batched(in2, nb), "valid", method), ct2, None, None)

    return ans, correlate_pullback
