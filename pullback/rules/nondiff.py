"""Functions whose outputs do not depend differentiably on their inputs: their results
are constants (plain arrays), never errors."""

import numpy as np

from ..core import nondifferentiable

nondifferentiable(
    # introspection
    np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj, np.iscomplex, np.isreal,
    np.result_type, np.can_cast, np.min_scalar_type,
    # positions and order
    np.argmax, np.argmin, np.argsort, np.argwhere, np.flatnonzero, np.nonzero,
    np.searchsorted, np.unique, np.count_nonzero, np.all, np.any,
    np.allclose, np.isclose, np.array_equal, np.array_equiv,
    # new arrays shaped like the input
    np.zeros_like, np.ones_like, np.empty_like, np.full_like,
)
