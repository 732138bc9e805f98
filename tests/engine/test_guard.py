"""The mutation guard: an array a recorded graph still needs is read-only, so writing into
it raises at the write, and it is writeable again once no graph needs it."""

import gc

import numpy as np
import pytest

import pullback as pb

READ_ONLY = "read-only"


def test_writing_into_a_params_value_between_forward_and_backward_raises():
    W = pb.param(np.ones(3))
    loss = np.sum(W * W)
    with pytest.raises(ValueError, match=READ_ONLY):
        W.value[...] = 10.0
    assert "np.multiply" in pb.held_by(W.value)
    loss.backward()
    np.testing.assert_array_equal(W.grad, [2.0, 2.0, 2.0])
    W.value[...] = 10.0  # backward freed the graph: writeable again
    assert pb.held_by(W.value) is None


def test_update_between_forward_and_backward_makes_that_backward_refuse():
    W = pb.param(np.ones(3))
    loss = np.sum(W * W)
    pb.update(W, np.ones(3))  # the sanctioned write works ...
    np.testing.assert_array_equal(W.value, [2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match="recorded before pb.update"):
        loss.backward()  # ... and the graph that used the old value refuses
    np.sum(W * W).backward()
    np.testing.assert_array_equal(W.grad, [4.0, 4.0, 4.0])


def test_a_training_loop_updates_params_in_place():
    W = pb.param(np.ones(3))
    value = W.value
    for _ in range(3):
        np.sum(np.tanh(W * 2.0)).backward()
        pb.update(W, -0.1 * W.grad)
    assert W.value is value and value.flags.writeable


def test_mutating_a_vjp_argument_or_a_captured_constant_before_the_pullback_raises():
    x, A = np.ones(3), np.arange(3.0)
    out, vjp_fn = pb.vjp(lambda x: np.sin(x) * A, x)
    with pytest.raises(ValueError, match=READ_ONLY):
        x[...] = 5.0
    with pytest.raises(ValueError, match=READ_ONLY):
        A *= 5.0
    (g,) = vjp_fn(np.ones(3))
    np.testing.assert_allclose(g, np.cos(1.0) * np.arange(3.0))
    del out, vjp_fn
    x[...] = 5.0
    A *= 5.0


def test_grad_leaves_its_arguments_writeable():
    x, A = np.ones(3), np.arange(3.0)
    pb.grad(lambda x: np.sum(x @ np.outer(A, A) * x))(x)
    assert x.flags.writeable and A.flags.writeable


def test_a_graph_dropped_without_backward_releases_its_arrays():
    W, c = pb.param(np.ones(3)), np.ones(3)
    loss = np.sum(W * c)
    assert not W.value.flags.writeable and not c.flags.writeable
    del loss
    assert W.value.flags.writeable and c.flags.writeable


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_an_interrupted_forward_pass_releases_its_arrays(error):
    A = np.ones(3)

    def f(x):
        y = np.sum(x * A)
        raise error("stop")
        return y

    with pytest.raises(error):
        pb.grad(f)(np.ones(3))
    gc.collect()
    assert A.flags.writeable


def test_two_graphs_hold_an_array_until_both_are_gone():
    W = pb.param(np.ones(2))
    first, second = np.sum(W * 2.0), np.sum(W * 3.0)
    first.backward()
    assert not W.value.flags.writeable
    second.backward()
    assert W.value.flags.writeable


def test_writing_through_the_base_of_a_held_view_raises():
    base = np.ones((2, 3))
    row = base[0]
    out, vjp_fn = pb.vjp(lambda x: x * row, np.ones(3))
    with pytest.raises(ValueError, match=READ_ONLY):
        base[0, 0] = 5.0
    del out, vjp_fn
    base[0, 0] = 5.0
    row[1] = 5.0


def test_views_taken_in_a_loop_are_held_and_freed_with_their_base():
    # each xs[t] is a new view of xs; the level holds xs once, and a view taken after that
    # is read-only already (bench/NOTES.md: the guard's cost on the RNN)
    xs, early = np.ones((4, 3)), None
    def f(w):
        nonlocal early
        early = xs[3]  # taken before xs is held: writeable, so held itself
        return sum(np.sum(xs[t] * w) for t in range(3)) + np.sum(early * w)
    out, vjp_fn = pb.vjp(f, np.ones(3))
    kept = xs[1]
    for write in (lambda: xs.__setitem__((1, 0), 5.0), lambda: kept.__setitem__(0, 5.0),
                  lambda: early.__setitem__(0, 5.0)):
        with pytest.raises(ValueError, match=READ_ONLY):
            write()
    np.testing.assert_array_equal(vjp_fn(1.0)[0], [4.0, 4.0, 4.0])
    del out, vjp_fn
    xs[1, 0] = early[0] = 5.0
    assert pb.held_by(xs) is None and pb.held_by(early) is None


def test_an_array_read_only_before_stays_read_only():
    c = np.ones(3)
    c.flags.writeable = False
    out, vjp_fn = pb.vjp(lambda x: x * c, np.ones(3))
    assert pb.held_by(c) is None
    del out, vjp_fn
    assert not c.flags.writeable


def test_the_gradient_is_right_for_the_values_recorded():
    # a constant cannot change under a recorded graph, so the pullback sees what forward saw
    A = np.array([1.0, 2.0, 3.0])
    out, vjp_fn = pb.vjp(lambda x: np.sum(x ** 2 * A), np.ones(3))
    np.testing.assert_array_equal(vjp_fn(1.0)[0], 2.0 * A)


def test_what_no_derivative_reads_stays_writeable():
    # np.add's and np.subtract's derivatives read no value, at any order: their constants
    # are not held, and a write into them changes no gradient (vjp's argument is held still)
    c, x = np.arange(3.0), np.ones(3)
    out, vjp_fn = pb.vjp(lambda x: (x + c) - c[::-1], x)
    assert pb.held_by(c) is None and pb.held_by(x) is not None
    c[...] = 7.0
    np.testing.assert_array_equal(vjp_fn(np.array([1.0, 2.0, 3.0]))[0], [1.0, 2.0, 3.0])
    out, vjp_fn = pb.vjp(lambda x: x * c, x)  # multiply's reads c: held
    assert "np.multiply" in pb.held_by(c)
