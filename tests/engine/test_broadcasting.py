"""Property tests: any broadcasting pair of shapes differentiates correctly, with the
engine (not the rules) reducing cotangents to each input's shape."""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import pullback as pb

SHAPES = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)


@settings(max_examples=30, deadline=None)
@given(SHAPES, st.integers(0, 2**16))
def test_binary_expressions_on_broadcast_shapes(shapes, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shapes.input_shapes[0])
    y = rng.uniform(0.5, 2.0, shapes.input_shapes[1])
    assume(np.all(np.abs(x - 0.1 * y) > 1e-3))  # no finite difference across maximum's kink

    def f(x, y):
        return np.tanh(x * y) + x / y - np.maximum(x, 0.1 * y) ** 2

    pb.check_grads(f, x, y, order=2)
    gx, gy = pb.grad(lambda x, y: np.sum(f(x, y)), argnums=(0, 1))(x, y)
    assert gx.shape == x.shape and gy.shape == y.shape


@settings(max_examples=20, deadline=None)
@given(SHAPES, st.integers(0, 2**16))
def test_stacks_of_cotangents_on_broadcast_shapes(shapes, seed):
    from pullback.testing import check_batched

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shapes.input_shapes[0])
    y = rng.standard_normal(shapes.input_shapes[1])
    check_batched(lambda x, y: np.exp(x) * y + np.sin(y), x, y)
