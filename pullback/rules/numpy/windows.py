"""NumPy's window functions: ``np.kaiser(M, beta)`` in its shape parameter ``beta``. The
others (bartlett, blackman, hamming, hanning) take the length M alone: their windows are
constants.

kaiser is a composite, NumPy's formula on a tracked ``beta``: w_n = I0(beta sqrt(1 - ((n
- alpha) / alpha)^2)) / I0(beta), alpha = (M - 1) / 2 (NumPy converts beta with the
length to one float array, which a tracked beta cannot join). np.kaiser is a plain Python
function outside NumPy's dispatch: it is intercepted in ``numpy``.
"""

import numpy as np

from ...extend import composite, plain
from .._util import intercept

# np.kaiser is a plain Python function, outside NumPy's dispatch
kaiser = intercept(np, "kaiser")


def kaiser_impl(M, beta):
    M = np.array([0.0, plain(M)])[1]  # (at least float64, as NumPy's)
    if M < 1:
        return np.array([])
    if M == 1:
        return np.ones(1)
    n = np.arange(0, M)
    alpha = (M - 1) / 2.0
    return np.i0(beta * np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / np.i0(beta)


composite(kaiser, kaiser_impl)
