import io

import numpy as np
import pytest

import pullback as pb

from ..spec import Args

X = np.array([[1.5, -2.5, 0.0], [3.0, 1.5, -1.0]])
V = np.array([0.5, -1.0, 2.0, 0.5])
INF = np.array([np.inf, -np.inf, 1.0, np.nan])

# each non-differentiable function with arguments to call it on (floats get tracked)
CALLS = {
    np.shape: (X,), np.ndim: (X,), np.size: (X,), np.iscomplexobj: (X,),
    np.isrealobj: (X,), np.iscomplex: (X,), np.isreal: (X,), np.result_type: (X, V),
    np.can_cast: (X, np.float32), np.min_scalar_type: (V,), np.shares_memory: (X, V),
    np.may_share_memory: (X, V),
    np.argmax: (X,), np.argmin: (X,), np.nanargmax: (V,), np.nanargmin: (V,),
    np.argsort: (V,), np.argpartition: (V, 1), np.lexsort: (X,), np.argwhere: (X,),
    np.flatnonzero: (X,), np.nonzero: (X,), np.searchsorted: (np.sort(V), V),
    np.digitize: (V, np.sort(V)), np.isin: (V, X), np.count_nonzero: (X,),
    np.all: (X,), np.any: (X,), np.isneginf: (INF,), np.isposinf: (INF,),
    np.diag_indices_from: (X[:, :2],), np.tril_indices_from: (X,), np.triu_indices_from: (X,),
    np.allclose: (X, X), np.isclose: (X, X), np.array_equal: (X, X), np.array_equiv: (X, V),
    np.array2string: (X,), np.array_repr: (X,), np.array_str: (V,), np.common_type: (X, V),
    np.einsum_path: ("ij,jk->ik", X, X.T), np.save: (io.BytesIO(), X),
    np.savez: (io.BytesIO(), X, V), np.savez_compressed: (io.BytesIO(), X),
    np.savetxt: (io.BytesIO(), X),
}
# (function, arguments) pairs: a function may be listed with several calls
NONDIFF = [
    *CALLS.items(),
    (np.argmax, Args((X,), {"axis": 1, "keepdims": True})),
    (np.count_nonzero, Args((X,), {"axis": 0})),
    (np.any, Args((X > 0,), {"axis": -1})),
]


def test_random_generation_is_not_dispatched():
    # plain parameters give plain samples; a tracked parameter cannot be converted
    assert type(np.random.default_rng(0).normal(0.0, 1.0, 3)) is np.ndarray
    with pytest.raises(TypeError, match="tracked value cannot become a plain"):
        np.random.normal(loc=pb.param(X))
    with pytest.raises(TypeError, match="tracked value cannot become a plain"):
        np.random.default_rng(0).normal(pb.param(V), 1.0)


def test_saved_values_are_the_plain_values():
    # saving a tracked value inside a differentiated function writes its values
    buffer = io.BytesIO()

    def f(x):
        np.save(buffer, x * 2.0)
        return np.sum(x * x)

    np.testing.assert_allclose(pb.grad(f)(V), 2 * V)
    buffer.seek(0)
    np.testing.assert_array_equal(np.load(buffer), 2 * V)
