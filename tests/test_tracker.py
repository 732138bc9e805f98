"""The Tracker face: param, backward, .grad, Params/Grads, gradient, update, no_grad."""

import copy
import pickle
import traceback

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


def test_gradient_of_a_gradient_penalty_over_params(data):
    # pb.grad of a closure over params inside pb.gradient's loss: its result depends on
    # the params, and used to come back plain, so the penalty's gradient was zero
    W0, b0, x, y = data

    def penalty(W, b):
        gx = pb.grad(lambda x: loss(W, b, x, y))(x)
        return loss(W, b, x, y) + np.sum(gx ** 2)

    W, b = pb.param(W0), pb.param(b0)
    gs = pb.gradient(lambda: penalty(W, b), pb.Params([W, b]))
    pb.check_grads(lambda W0: penalty(W0, b0), W0, order=1)  # the functional form
    gW = pb.grad(penalty)(W0, b0)
    np.testing.assert_allclose(gs[W], gW, rtol=1e-10)
    e = 1e-6 * np.eye(W0.size).reshape((W0.size,) + W0.shape)
    numeric = [(penalty(W0 + d, b0) - penalty(W0 - d, b0)) / 2e-6 for d in e]
    np.testing.assert_allclose(gs[W].ravel(), numeric, rtol=1e-5, atol=1e-8)
    # outside pb.gradient a top-level gradient stays a plain array
    assert type(pb.grad(lambda x: loss(W, b, x, y))(x)) is np.ndarray


@pytest.mark.parametrize("change", [
    lambda p: p.__isub__(0.1), lambda p: p.__imul__(2.0), lambda p: p.__setitem__(0, 9.0),
    lambda p: pb.update(p, -0.1 * np.ones(2)),
], ids=["-=", "*=", "p[0] =", "update"])
def test_a_param_changed_inside_no_grad_before_backward_is_refused(change):
    # the graph computed with the old values: its gradient would mix old and new ones
    p = pb.param(np.array([1.0, 2.0]))
    loss = np.sum(p ** 2)
    with pb.no_grad():
        change(p)
    with pytest.raises(RuntimeError, match=r"before pb.update \(or a write inside "
                                           r"pb.no_grad\(\)\) changed the param"):
        loss.backward()
    np.sum(p ** 2).backward()  # a loss computed again is fine
    np.testing.assert_allclose(p.grad, 2 * p.value)
    with pb.no_grad():  # and so is a step after backward, as an optimizer takes it
        p -= 0.5 * p.grad
    np.testing.assert_allclose(p.value, 0.0 * p.value)


def test_a_write_inside_no_grad_through_a_view_of_a_param_is_refused():
    p = pb.param(np.array([1.0, 2.0, 3.0]))
    v = p[1:]
    with pb.no_grad(), pytest.raises(TypeError, match=r"through a view.*p\[1:\] \*= 2"):
        v *= 2.0  # it used to leave p as it was
    del v  # (its graph held p's value read-only)
    with pb.no_grad():
        p[1:] *= 2.0
    np.testing.assert_array_equal(p.value, [1.0, 4.0, 6.0])


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


def test_update_keeps_the_params_dtype_and_form_whether_or_not_a_graph_holds_it():
    # with a graph holding the value, update writes a new array: it must be the same
    # dtype (float32 stays float32, as in place) and a 0-d param stays a 0-d array
    for held in (False, True):
        W = pb.param(np.ones(2, np.float32))
        graph = np.sum(W ** 2) if held else None
        pb.update(W, np.array([0.1, 0.2]))
        assert W.value.dtype == np.float32 and W.grad.dtype == np.float32
        np.testing.assert_allclose(W.value, [1.1, 1.2], rtol=1e-6)
        s = pb.param(np.float32(2.0))
        graph = s * s if held else None
        pb.update(s, np.array(0.5))
        assert type(s.value) is np.ndarray and s.value.shape == () and s.value.dtype == np.float32
        s3 = lambda v: v ** 3
        s3(s).backward()
        np.testing.assert_allclose(s.grad, (s3(2.5 + 1e-3) - s3(2.5 - 1e-3)) / 2e-3, rtol=1e-6)
        with pytest.raises(TypeError, match=r"param \(dtype float32, shape \(2,\)\) with a comp"):
            pb.update(W, np.array([1j, 0.0]))
    del graph
    z = pb.param(np.ones(2, complex))
    pb.update(z, np.array([1j, 0.0]))
    np.testing.assert_array_equal(z.value, [1 + 1j, 1])


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


def _central(F, v, h=1e-6):
    """Central differences of the plain scalar function ``F`` at ``v``, entry by entry."""
    e = np.eye(v.size).reshape((v.size,) + v.shape) * h
    return np.array([(F(v + d) - F(v - d)) / (2 * h) for d in e]).reshape(v.shape)


def test_gradient_inside_grad_over_params_made_outside_depends_on_x():
    # W is made outside the transform: its gradient used to be a constant there, so the
    # outer derivative through it was silently zero
    W = pb.param(np.array([1.0, 2.0]))
    x = np.array([0.5, -1.0])

    def f(x):
        gs = pb.gradient(lambda: np.sum(np.sin(W) * x ** 3), pb.Params([W]))
        return np.sum(gs[W] * x)

    pb.check_grads(f, x, order=2)
    assert np.all(pb.grad(f)(x) != 0)
    def g(x):
        return pb.gradient(lambda: np.sum(W * x ** 2), pb.Params([W]))[W]

    J = pb.jacobian(g)(x)
    numeric = np.stack([_central(lambda v, i=i: g(v)[i], x) for i in range(2)])
    np.testing.assert_allclose(J, numeric, rtol=1e-6)
    before = W.value
    with pytest.raises(ZeroDivisionError):  # the params are themselves again, also after
        pb.grad(lambda x: pb.gradient(lambda: 1 / 0, [W])[W])(x)  # an error inside
    assert W.value is before and type(W.value) is np.ndarray and W.level == 0
    np.sum(W ** 2).backward()
    np.testing.assert_allclose(W.grad, 2 * W.value)


def test_gradient_of_a_gradient_over_the_same_params():
    def outer(V, b):  # the inner Grads depend on the params: the outer gradient sees that
        gs = pb.gradient(lambda: np.sum(V ** 3 * np.sin(b)), pb.Params([V, b]))
        return np.sum(V * gs[V]) + np.sum(gs[b] ** 2)

    v0, w0 = np.array([0.5, -1.0, 2.0]), np.array([0.3, 0.1, -0.4])
    V, b = pb.param(v0), pb.param(w0)
    gs = pb.gradient(lambda: outer(V, b), pb.Params([V, b]))

    def at(v, w):  # the same code on fresh params of plain values
        with pb.no_grad():
            return outer(pb.param(v), pb.param(w))

    np.testing.assert_allclose(gs[V], _central(lambda v: at(v, w0), v0), rtol=1e-6)
    np.testing.assert_allclose(gs[b], _central(lambda w: at(v0, w), w0), rtol=1e-6)


def test_gradient_computes_inside_no_grad():
    W = pb.param(np.array([0.5, -1.0, 2.0]))
    expected = pb.gradient(lambda: np.sum(np.sin(W) * W), pb.Params([W]))[W]
    with pb.no_grad():  # a gradient asked for explicitly is always recorded
        gs = pb.gradient(lambda: np.sum(np.sin(W) * W), pb.Params([W]))
        assert type(np.sin(W)) is np.ndarray  # and no_grad holds again after it
    np.testing.assert_array_equal(gs[W], expected)
    assert np.all(expected != 0)


def test_grads_of_different_params_are_arrays_of_their_own():
    W, b = pb.param(np.array([0.3, -1.2])), pb.param(np.array([1.0, 0.5]))
    gs = pb.gradient(lambda: np.sum(np.sin(W + b)), pb.Params([W, b]))  # one cotangent
    assert gs[W] is not gs[b] and not np.shares_memory(gs[W], gs[b])
    expected = gs[b].copy()
    g = gs[W]
    g *= -0.5  # an in-place step on one leaves the other as it was
    np.testing.assert_array_equal(gs[b], expected)


def test_grad_set_to_none_counts_as_zero():
    W = pb.param(np.ones(3))
    W.grad = None  # (PyTorch's set_to_none)
    np.sum(W * 2.0).backward()
    np.testing.assert_array_equal(W.grad, np.full(3, 2.0))
    W.grad = None
    W.zero_grad()
    np.testing.assert_array_equal(W.grad, np.zeros(3))


@pytest.mark.parametrize("value", [np.array(3.0), 3.0, np.float64(3.0)])
def test_a_0d_params_grad_is_a_0d_array_as_grad_gives(value):
    p = pb.param(value)
    for grad in (p.grad, None):
        p.grad = grad
        (p * 2.0).backward()
        (p * p).backward()
        want = pb.grad(lambda a: a * 2.0 + a * a)(np.asarray(value, dtype=float))
        assert type(p.grad) is np.ndarray and p.grad.shape == () and p.grad == want
        p.grad[...] = 0.0  # (in place, as clipping does)
        assert p.grad == 0.0


@pytest.mark.parametrize("call, error, message", [
    (lambda W: setattr(W, "grad", "abc"), TypeError, r"\.grad must be a floating-point "
     r"array of the param's shape \(3,\), or None; got a str"),
    (lambda W: setattr(W, "grad", np.ones(2)), ValueError, r"shape \(3,\).*got shape \(2,\)"),
    (lambda W: setattr(W, "value", np.ones(5)), ValueError,
     r"\.value must keep its shape \(3,\).*got shape \(5,\)"),
    (lambda W: setattr(W, "value", "abc"), TypeError, r"\.value must keep.*got a str"),
    (lambda W: (W * 2).backward("a"), TypeError, r"backward\(\) got a str as its cotangent"),
    (lambda W: np.sum(W).backward(cotangent="a"), TypeError, r"got a str as its cotangent"),
    (lambda W: pb.Params(None), TypeError, "Params takes a list of params.*got None"),
    (lambda W: pb.Params(W.value), TypeError, r"got an ndarray.*pb\.Params\(\[W\]\)"),
    (lambda W: pb.Grads(None), TypeError, r"Grads takes \(param, gradient\) pairs, got None"),
    (lambda W: pb.Grads([1, 2]), TypeError, "pairs, one per pb.param; got an entry that is an "
     "int"),
    (lambda W: pb.gradient(None, []), TypeError,
     "pb.gradient takes a function of no arguments first.*got None"),
    (lambda W: pb.gradient(np.sum(W), pb.Params([W])), TypeError,
     r"got a tracked value\): wrap the loss, pb\.gradient\(lambda: "),
    (lambda W: pb.gradient(lambda: np.sum(W), None), TypeError,
     r"pb.gradient's params must be a pb.Params or a list of pb.param values, got None"),
    (lambda W: pb.gradient(lambda W: np.sum(W), pb.Params([W])), TypeError,
     r"calls its function with no arguments.*missing 1 required.*close over the params"),
    (lambda W: pb.gradient(lambda: None, pb.Params([W])), TypeError,
     r"function given to pb.gradient \(.*<lambda>\) returned None.*the scalar loss"),
    (lambda W: pb.gradient(lambda: [np.sum(W)], pb.Params([W])), TypeError,
     r"returned a list; it must return the scalar loss"),
    (lambda W: pb.Param(W.value, "a"), TypeError, r"Param's level must be.*pb\.param\(x\)"),
    (lambda W: pb.param(np.ma.array(W.value, mask=[0, 1, 0])), TypeError,
     r"masked array would ignore its mask.*x\.filled\(0\.0\)"),
], ids=["grad=str", "grad shape", "value shape", "value=str", "backward(str)",
        "cotangent=str", "Params(None)", "Params(array)", "Grads(None)", "Grads(ints)",
        "gradient(None)", "gradient(loss)", "params=None", "fn(W)", "fn returns None",
        "fn returns list", "Param level", "masked param"])
def test_misuses_of_the_tracker_api_say_what_to_write(call, error, message):
    W = pb.param(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(error, match=r"^pullback: .*" + message):
        call(W)
    assert type(W.value) is np.ndarray and W.value.shape == (3,)  # left as it was


# ---------------------------------------------------------------------------- first contact

def test_params_and_grads_show_names_shapes_and_dtypes():
    W = pb.param(np.ones((3, 2)), name="W")
    b = pb.param(np.zeros(2, np.float32))
    ps = pb.Params([W, b])
    assert repr(ps) == "Params(W: (3, 2) float64, #1: (2,) float32)"
    gs = pb.gradient(lambda: np.sum(np.ones((4, 3)) @ W * b), ps)
    assert repr(gs) == "Grads(W: (3, 2) float64, #1: (2,) float32)"
    assert repr(W).endswith(", name='W')") and W.name == "W" and b.name is None
    with pytest.raises(TypeError, match="name must be a str, got an int"):
        pb.param(1.0, name=3)


def test_the_public_classes_and_errors_show_their_public_names():
    for cls in (pb.Param, pb.Params, pb.Grads, pb.LossError, pb.NoRuleError,
                pb.NestedDifferentiationError):
        assert cls.__module__ == "pullback" and getattr(pb, cls.__name__) is cls
    with pytest.raises(pb.LossError) as info:
        pb.grad(lambda x: x * np.inf)(1.0)
    last = traceback.format_exception_only(info.type, info.value)[-1]
    assert last.startswith("pullback.LossError: pullback: the loss of ") and " is inf" in last


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_a_param_pickles_with_its_value_grad_and_name(protocol):
    W = pb.param(np.array([1.0, -2.0], np.float32), name="W")
    np.sum(W * 3.0).backward()
    V = pickle.loads(pickle.dumps(W, protocol=protocol))
    assert isinstance(V, pb.Param) and V is not W and V.name == "W"
    np.testing.assert_array_equal(V.value, W.value)
    np.testing.assert_array_equal(V.grad, [3.0, 3.0])
    assert V.value.dtype == np.float32 and V.grad.dtype == np.float32
    np.sum(V ** 2).backward()                    # a live param of its own: .grad accumulates
    np.testing.assert_array_equal(V.grad, [5.0, -1.0])
    np.testing.assert_array_equal(W.grad, [3.0, 3.0])
    W.grad = None
    assert pickle.loads(pickle.dumps(W)).grad is None
    C = copy.deepcopy(W)
    assert C.name == "W" and C.grad is None
    # an intermediate value still refuses, naming the fix
    with pytest.raises(TypeError, match="cannot be pickled"):
        pb.grad(lambda x: np.sum(pickle.loads(pickle.dumps(x * 2))))(np.ones(2))


def test_pytorchs_spellings_get_an_answer():
    W = pb.param(np.array([1.0, 2.0]))
    for got in (W.detach(), W.numpy(), W.data):
        assert type(got) is np.ndarray and got is W.value
    assert W.requires_grad is True
    W.data = np.array([5.0, 6.0])             # as W.value = ...
    np.testing.assert_array_equal(W.value, [5.0, 6.0])
    with pytest.raises(AttributeError, match=r"always tracked.*W\.value.*pb\.stop_gradient"):
        W.requires_grad = False
    W.requires_grad = True
    # detach() inside a loss is a constant there, as in PyTorch
    loss = np.sum(W * W.detach())
    loss.backward()
    np.testing.assert_array_equal(W.grad, [5.0, 6.0])
