"""NumPy's window functions (rules/windows.py)."""

import numpy as np

from pullback.rules.numpy.windows import kaiser

from ..spec import SCALAR, Spec

SPECS = [
    Spec(kaiser, SCALAR, domain="positive", kwargs={"M": [1, 2, 6, 7]},
         call=lambda beta, M: np.kaiser(M, beta), name="np.kaiser"),
]
