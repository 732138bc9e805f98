"""The Tracker face: param, backward, .grad, Params/Grads, gradient, update, no_grad."""

import numpy as np
import pytest

import pullback as pb

from .conftest import layer_loss as loss


def test_backward_adds_into_grad_and_matches_grad(data):
    W0, b0, x, y = data
    W, b = pb.param(W0), pb.param(b0)
    assert type(W.value) is np.ndarray and W.value is not W0  # param copies
    loss(W, b, x, y).backward()
    gW, gb = pb.grad(loss, argnums=(0, 1))(W0, b0, x, y)
    np.testing.assert_allclose(W.grad, gW)
    np.testing.assert_allclose(b.grad, gb)
    loss(W, b, x, y).backward()  # a second loss accumulates
    np.testing.assert_allclose(W.grad, 2 * gW)
    W.zero_grad()
    np.testing.assert_array_equal(W.grad, np.zeros_like(W0))


def test_gradient_with_params_is_out_of_place(data):
    W0, b0, x, y = data
    W, b = pb.param(W0), pb.param(b0)
    gs = pb.gradient(lambda: loss(W, b, x, y), pb.Params([W, b]))
    assert isinstance(gs, pb.Grads) and len(gs) == 2 and W in gs
    gW, gb = pb.grad(loss, argnums=(0, 1))(W0, b0, x, y)
    np.testing.assert_allclose(gs[W], gW)
    np.testing.assert_allclose(gs[b], gb)
    np.testing.assert_array_equal(W.grad, 0 * W0)  # .grad untouched
    unused = pb.param(np.ones(2))
    gs2 = pb.gradient(lambda: loss(W, b, x, y), pb.Params([W, unused]))
    np.testing.assert_array_equal(gs2[unused], np.zeros(2))
    with pytest.raises(KeyError, match="not one of the Params"):
        gs2[b]


def test_update_steps_in_place_and_resets_grad(data):
    W0, b0, x, y = data
    W, b = pb.param(W0), pb.param(b0)
    before = loss(W0, b0, x, y)
    value = W.value
    for _ in range(20):
        loss(W, b, x, y).backward()
        step = -0.5 * W.grad
        pb.update(W, step)
        pb.update(b, -0.5 * b.grad)
    assert W.value is value  # in place
    np.testing.assert_array_equal(W.grad, np.zeros_like(W0))
    assert loss(W.value, b.value, x, y) < before
    with pytest.raises(TypeError, match="pb.param"):
        pb.update(W0, W0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the NaN loss is the point
def test_backward_errors():
    W = pb.param(np.ones(3))
    y = W * 2.0
    with pytest.raises(TypeError, match="shape \\(3,\\) needs a cotangent"):
        y.backward()
    y.backward(np.ones(3))  # an explicit cotangent lifts it
    np.testing.assert_array_equal(W.grad, np.full(3, 2.0))
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward(np.ones(3))
    with pytest.raises(pb.LossError, match="nan"):
        np.sum(np.log(W - 2.0)).backward()
    z = np.sum(W * W)
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_array_equal(W.grad, np.full(3, 2.0) + 2 * 2 * np.ones(3))
    with pytest.raises(AttributeError, match="pb.param"):
        _ = (W * 2.0).grad


def test_param_of_integers_becomes_float():
    p = pb.param([1, 2, 3])
    assert p.value.dtype == np.float64
    np.sum(p ** 2).backward()
    np.testing.assert_array_equal(p.grad, [2.0, 4.0, 6.0])


def test_float32_params_keep_float32_grads():
    p = pb.param(np.ones(3, np.float32))
    np.sum(np.tanh(p) * 3.0).backward()
    assert p.grad.dtype == np.float32


def test_no_grad_records_nothing():
    W = pb.param(np.ones(3))
    with pb.no_grad():
        y = np.sin(W) * 2.0
    assert type(y) is np.ndarray

    @pb.no_grad()
    def f(w):
        return np.exp(w)

    assert type(f(W)) is np.ndarray
    assert isinstance(np.exp(W), pb.Tracked)  # recording is back after the block
