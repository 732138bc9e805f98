"""Functions whose outputs do not depend differentiably on their inputs: their results
are constants (plain arrays), never errors. (Elementwise ones, isnan and the like, are
listed in elementwise.py.)

Random number generation (np.random.*, Generator methods) is not dispatched by NumPy at
all: with plain arguments it gives plain samples, and a tracked argument such as
``np.random.normal(loc=x)`` raises the engine's TypeError (a tracked value cannot become a
plain array). Write ``loc + scale * np.random.standard_normal(shape)`` to differentiate
through the parameters.
"""

import numpy as np

from ...extend import nondifferentiable

nondifferentiable(
    # introspection
    np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj, np.iscomplex, np.isreal,
    np.result_type, np.can_cast, np.min_scalar_type, np.shares_memory,
    np.may_share_memory,
    # positions and order
    np.argmax, np.argmin, np.nanargmax, np.nanargmin, np.argsort, np.argpartition,
    np.lexsort, np.argwhere, np.flatnonzero, np.nonzero, np.searchsorted, np.digitize,
    np.isin, np.count_nonzero, np.all, np.any, np.isneginf, np.isposinf,
    np.diag_indices_from, np.tril_indices_from, np.triu_indices_from,
    np.allclose, np.isclose, np.array_equal, np.array_equiv,
    # text, types, plans and files made of the values: printing, np.common_type,
    # np.einsum_path, or saving inside a differentiated function keeps its gradient whole
    np.array2string, np.array_repr, np.array_str, np.common_type, np.einsum_path,
    np.save, np.savez, np.savez_compressed, np.savetxt,
)
