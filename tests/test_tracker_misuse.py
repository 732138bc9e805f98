"""The Tracker face as people misuse it: values changed between the forward and the
backward pass, views kept across a step, params copied, made inside a transform, updated
inside one, and tracked values given where plain ones belong. Each gradient is checked
against central differences of the same code on plain arrays."""

import numpy as np
import pytest

import pullback as pb

from .conftest import central_differences

W0 = np.array([[0.5, 1.0], [-1.5, 2.0]])


def _value(y):
    return float(pb.stop_gradient(y))


# ---------------------------------------------------------------------------- values that change

def _sgd_step(W):
    pb.optim.SGD(0.25).step([W])


def _update(W):
    pb.update(W, -0.25 * W.grad)


def _no_grad_write(W):
    with pb.no_grad():
        W -= 0.25 * W.grad
    W.zero_grad()


def _assign(W):
    W.value = W.value - 0.25 * W.grad
    W.zero_grad()


@pytest.mark.parametrize("step", [_sgd_step, _update, _no_grad_write, _assign],
                         ids=["opt.step", "pb.update", "no_grad -=", ".value ="])
def test_views_taken_before_a_step_read_the_new_values(step):
    # a cached row or a tied W.T kept the old array after opt.step and pb.update, and a
    # loss of it backpropagated the gradient at values W no longer had into W.grad
    W = pb.param(W0)
    row, Wt = W[0], W.T
    np.sum(W ** 2).backward()  # (the graph of row and Wt still holds W's value)
    step(W)
    new = W.value.copy()
    loss = lambda v: np.sum(np.sin(v[0])) + np.sum(np.ones(2) @ v.T)
    (np.sum(np.sin(row)) + np.sum(np.ones(2) @ Wt)).backward()
    np.testing.assert_allclose(W.grad, central_differences(loss, new), rtol=1e-8)
    with pb.no_grad():
        np.testing.assert_array_equal(np.ones(2) @ Wt, np.ones(2) @ new.T)


@pytest.mark.filterwarnings("ignore:divide by zero")  # (np.max's pullback at new values)
@pytest.mark.parametrize("f", [lambda W: np.sum(np.sin(W) * W), np.max],
                         ids=["sin(W) * W", "np.max"])
def test_assigning_value_between_forward_and_backward_is_refused(f):
    # the gradient mixed the old and the new values (np.max's was exactly 0); pb.update in
    # the same place is refused
    W = pb.param(W0)
    loss = f(W)
    W.value = W0 + 0.1
    with pytest.raises(RuntimeError, match=r"recorded before pb.update .* changed the param"):
        loss.backward()
    f(W).backward()  # a loss computed again: the gradient at the new values
    np.testing.assert_allclose(W.grad, central_differences(f, W0 + 0.1), rtol=1e-6, atol=1e-9)


def test_a_param_of_a_param_is_an_independent_copy():
    # pb.param(W) made a param whose value was W itself: a target network followed the
    # online one through every step, and its .grad was tracked
    online = pb.param(W0)
    target = pb.param(online)
    np.sum(online ** 2).backward()
    pb.optim.SGD(0.5).step([online])
    np.testing.assert_array_equal(target.value, W0)
    assert type(target.value) is np.ndarray
    f = lambda v: np.sum(np.sin(v) * v)
    f(target).backward()
    assert type(target.grad) is np.ndarray
    np.testing.assert_allclose(target.grad, central_differences(f, W0), rtol=1e-8)
    V = pb.param(W0)  # of an intermediate: a new leaf, and V's own gradient stays plain
    h = V * 2.0
    P = pb.param(h)
    np.sum(np.sin(P) * h).backward()
    assert type(P.grad) is np.ndarray and type(V.grad) is np.ndarray
    np.testing.assert_allclose(P.grad, central_differences(lambda p: np.sum(np.sin(p) * 2 * W0),
                                                           2 * W0), rtol=1e-8)
    np.testing.assert_allclose(V.grad, central_differences(lambda v: np.sum(np.sin(2 * W0) * 2 * v),
                                                           W0), rtol=1e-8)


# -------------------------------------------------------------------------- params and transforms

X = np.random.default_rng(8).standard_normal((5, 2))


class _Dense:
    W = None

    def __call__(self, x):
        if self.W is None:  # built on its first call
            self.W = pb.param(np.full((2, 2), 0.3))
        return np.tanh(x @ self.W)


@pytest.mark.parametrize("use", [
    lambda m: pb.gradient(lambda: np.sum(m(X) ** 2), pb.Params([m.W])),
    lambda m: pb.gradient(lambda: np.sum(m(X) ** 2), [m.W]),
    lambda m: pb.optim.Adam(0.1).step([m.W]),
    lambda m: pb.update(m.W, np.ones((2, 2))),
], ids=["Params", "gradient", "step", "update"])
def test_a_param_made_inside_a_finished_transform_is_refused(use):
    # a layer built on its first call inside pb.grad: its param was a constant afterwards,
    # and pb.gradient gave zeros
    model = _Dense()
    pb.grad(lambda x: np.sum(model(x)))(X)
    with pytest.raises(RuntimeError, match=r"made while pb.grad .* has returned.*pb.param\(W\)"):
        use(model)
    model.W = pb.param(model.W)  # what the message says: a new param of its value
    gs = pb.gradient(lambda: np.sum(model(X) ** 2), [model.W])
    np.testing.assert_allclose(
        gs[model.W], central_differences(lambda v: np.sum(np.tanh(X @ v) ** 2),
                                         np.full((2, 2), 0.3)), rtol=1e-7)


def test_backward_inside_grad_reaches_params_made_outside():
    # only the params made inside got their .grad; W's stayed zero
    W = pb.param(W0[0])

    def step(x):
        P = pb.param(x * 2.0)
        np.sum(np.sin(P * W)).backward()
        return np.sum(P.grad)

    x0 = np.array([2.0, 3.0])
    pb.grad(step)(x0)
    want = central_differences(lambda w: np.sum(np.sin(2 * x0 * w)), W0[0])
    np.testing.assert_allclose(W.grad, want, rtol=1e-8)
    assert type(W.grad) is np.ndarray
    W.zero_grad()
    step(x0)  # the same at top level
    np.testing.assert_allclose(W.grad, want, rtol=1e-8)


def _train_then_evaluate(x, how):
    W = pb.param(x)  # made from the argument
    opt = {"SGD": pb.optim.SGD(0.1), "momentum": pb.optim.SGD(0.1, momentum=0.9,
                                                               nesterov=True),
           "Adam": pb.optim.Adam(0.1), "update": None}[how]
    for _ in range(3):
        if opt is None:
            gs = pb.gradient(lambda: np.sum(np.sin(W) * W), [W])
            pb.update(W, -0.1 * gs[W])
        else:
            np.sum(np.sin(W) * W).backward()
            opt.step([W])
    return np.sum(W ** 2)


@pytest.mark.parametrize("how", ["SGD", "momentum", "Adam", "update"])
def test_differentiating_through_training_steps(how):
    # pb.update and opt.step dropped the dependence on the argument: a zero gradient
    x0 = np.array([0.5, -1.0, 2.0])
    got = pb.grad(lambda x: _train_then_evaluate(x, how))(x0)
    want = central_differences(lambda x: _value(_train_then_evaluate(x, how)), x0)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_updating_an_outside_param_with_a_step_of_the_argument_is_refused():
    # the hyper-gradient of lr was 0, and V moved as a side effect of pb.grad
    V = pb.param(W0[0])

    def after_a_step(lr):
        gs = pb.gradient(lambda: np.sum(np.sin(V)), [V])
        pb.update(V, -lr * gs[V])
        return np.sum(V ** 2)

    with pytest.raises(TypeError, match=r"depends on the argument of pb.grad .* made outside"):
        pb.grad(after_a_step)(0.1)
    np.testing.assert_array_equal(V.value, W0[0])

    def optimizer_step(s):
        gs = pb.gradient(lambda: np.sum(np.sin(V) * s), [V])
        pb.optim.update(pb.optim.SGD(0.1), [V], gs)
        return np.sum(V ** 2)

    with pytest.raises(TypeError, match="made outside"):  # an optimizer's step too
        pb.grad(optimizer_step)(1.0)
    np.testing.assert_array_equal(V.value, W0[0])


# --------------------------------------------------------- tracked values where plain ones belong

def test_gradients_are_never_tracked_by_params():
    W = pb.param(W0[0])
    np.sin(W).backward(W * 1.0)  # a cotangent computed from params: a number here
    assert type(W.grad) is np.ndarray
    np.testing.assert_allclose(W.grad, np.cos(W0[0]) * W0[0])
    with pytest.raises(TypeError, match=r"\.grad is a plain array.*got a tracked value"):
        W.grad = W * 2.0
    with pytest.raises(TypeError, match=r"\.value is a plain array; got a pb.param"):
        W.value = pb.param(W0[1])
    with pytest.raises(TypeError, match=r"\.value is a plain array; got a tracked value"):
        W.value = W * 2.0
    np.testing.assert_array_equal(W.value, W0[0])


def test_a_value_assigned_from_the_argument_inside_a_transform_is_differentiated():
    # a param made inside pb.grad may hold a value of its argument, as pb.param(x) does
    def f(x):
        P = pb.param(np.zeros(2))
        P.value = x * 2.0
        return np.sum(np.sin(P) * P)

    x0 = np.array([0.3, -1.2])
    np.testing.assert_allclose(pb.grad(f)(x0), central_differences(lambda x: _value(f(x)), x0),
                               rtol=1e-7)


def test_a_gradient_of_a_loss_item_took_out_of_the_graph_is_refused():
    # pb.gradient gave zeros where pb.grad refuses (docs/guide/errors.md); inside a
    # transform, where the params are boxed at a level of their own
    W = pb.param(W0[0])
    loss = lambda: W[0].item() ** 2 + sum(W.tolist())
    with pytest.raises(ValueError, match=r"pb.gradient would give zeros; x.(item|tolist)\(\)"):
        pb.grad(lambda x: np.sum(x * pb.gradient(loss, [W])[W]))(np.ones(2))
    with pytest.raises(ValueError, match=r"pb.gradient would give zeros; x.(item|tolist)\(\)"):
        pb.gradient(loss, [W])  # at top level too
    mixed = lambda x: np.sum(x * pb.gradient(lambda: W[0].item() * np.sum(W), [W])[W])
    np.testing.assert_allclose(  # a loss with tracked terms: through those, as PyTorch
        pb.grad(mixed)(np.ones(2)), central_differences(mixed, np.ones(2)), rtol=1e-8)


def test_grads_have_no_arithmetic_and_say_what_to_write():
    W = pb.param(W0)
    gs = pb.gradient(lambda: np.sum(W ** 2), [W])
    for combine in (lambda: gs + gs, lambda: 2 * gs, lambda: gs * 0.5, lambda: -gs):
        with pytest.raises(TypeError, match=r"pullback: Grads has no arithmetic.*gs1\[p\]"):
            combine()


# ---------------------------------------------------------------------------- checkpoint

def test_a_checkpointed_functions_closed_over_array_is_held_until_backward():
    # the backward pass runs the function again: a write into an array it closes over used
    # to change the gradient silently where the output did not show it (h = 0)
    A = W0.copy()
    cell = pb.checkpoint(lambda h: np.tanh(A @ h))
    h0 = pb.param(np.zeros(2))
    loss = np.sum(cell(h0))
    with pytest.raises(ValueError, match="read-only"):
        A[...] = 5.0
    loss.backward()
    np.testing.assert_allclose(h0.grad, central_differences(lambda h: np.sum(np.tanh(W0 @ h)),
                                                            np.zeros(2)), rtol=1e-8)
    A[...] = 5.0  # writeable again once the graph is freed
    np.testing.assert_array_equal(A, 5.0)


def test_a_checkpointed_function_with_only_a_tracked_closure_is_refused():
    # with no tracked argument it ran unchecked (and kept its intermediates)
    W = pb.param(W0)
    with pytest.raises(TypeError, match="not one of its arguments"):
        pb.checkpoint(lambda h: np.tanh(W @ h))(np.ones(2))
    assert type(pb.checkpoint(lambda h: np.tanh(W0 @ h))(np.ones(2))) is np.ndarray


@pytest.mark.parametrize("save", [
    lambda f, W, b: np.savez(f, W=W, b=b), lambda f, W, b: np.savez_compressed(f, W=W, b=b),
    lambda f, W, b: np.savez(f, W, b), lambda f, W, b: np.save(f, W)])
def test_params_are_saved_as_their_values(save, tmp_path):
    W, b = pb.param(W0), pb.param(W0[0])
    path = tmp_path / "weights.npz"
    with open(path, "wb") as f:
        save(f, W, b)
    loaded = np.load(path)
    first = loaded if isinstance(loaded, np.ndarray) else loaded[loaded.files[0]]
    np.testing.assert_array_equal(first, W0)
