"""What a realistic user gets wrong: each misuse gives the right numbers or an error that
names the function, the argument and the fix, never a silently wrong gradient."""

import copy
import threading

import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences

from .test_transforms import close, fd_hessian, fd_jacobian

M = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]])


# ---------------------------------------------------------------------------- user rules

@pb.primitive
def apply_m(x):
    return M @ x


@pb.rrule(apply_m)  # a pullback written for one cotangent, as most users write it
def apply_m_rule(x):
    def apply_m_pullback(g):
        return (M.T @ g,)

    return apply_m(x), apply_m_pullback


@pb.primitive
def apply_m_declared(x):
    return M @ x


@pb.rrule(apply_m_declared, batched=True)  # the same pullback, wrongly declared batched
def apply_m_declared_rule(x):
    def apply_m_declared_pullback(g):
        return (M.T @ g,)

    return apply_m_declared(x), apply_m_declared_pullback


@pb.primitive
def scaled_sum(x):
    return np.sum(x * np.arange(1.0, 4.0))


@pb.rrule(scaled_sum, batched=True)
def scaled_sum_rule(x):
    def scaled_sum_pullback(g):
        return (g * np.arange(1.0, 4.0),)  # g (batch,) meets x's (3,): the batch is lost

    return scaled_sum(x), scaled_sum_pullback


def test_a_user_rule_is_applied_per_slice_unless_declared_batched():
    x = np.array([0.5, -1.0, 2.0])
    close(pb.jacobian(apply_m)(x), M)
    f = lambda x: np.sum(apply_m(x) ** 3)  # noqa: E731
    H = pb.hessian(f)(x)
    close(H, H.T)
    close(H, fd_hessian(f, x), rtol=1e-5, atol=1e-5)


def test_a_rule_that_loses_the_batch_axes_is_an_error_naming_it():
    x = np.array([0.5, -1.0, 2.0])
    close(pb.grad(scaled_sum)(x), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="scaled_sum_pullback.*dropped the leading batch"):
        pb.hessian(lambda x: scaled_sum(x) * np.sum(x))(x)


def test_a_wrongly_declared_square_rule_still_agrees_with_finite_differences_per_slice():
    # a square Jacobian cannot be caught by shapes: the default (per slice) is what saves it
    x = np.array([0.5, -1.0, 2.0])
    assert not np.allclose(pb.jacobian(apply_m_declared)(x), fd_jacobian(apply_m, x))
    close(pb.jacobian(apply_m)(x), fd_jacobian(apply_m, x))


@pb.primitive
def doubled(x):
    return 2.0 * x


def test_a_rule_returning_no_pullback_or_no_pair_is_refused():
    @pb.rrule(doubled)
    def doubled_rule(x):
        return doubled(x), None

    with pytest.raises(TypeError, match="doubled_rule for .*doubled returned a pair whose "
                                        "pullback is NoneType"):
        pb.grad(lambda x: np.sum(doubled(x)))(np.ones(2))

    @pb.rrule(doubled)
    def doubled_rule_no_pair(x):
        return doubled(x)

    with pytest.raises(TypeError, match="doubled_rule_no_pair .*returned ndarray"):
        pb.grad(lambda x: np.sum(doubled(x)))(np.ones(2))


def test_a_logging_hook_returning_none_leaves_the_gradient_unchanged():
    seen = []
    g = pb.grad(lambda x: np.sum(pb.hook(seen.append, x) * 3.0))(np.ones(2))
    np.testing.assert_array_equal(g, [3.0, 3.0])
    np.testing.assert_array_equal(seen[0], [3.0, 3.0])


# ---------------------------------------------------------------------------- arguments

def test_argnums_naming_one_argument_twice_gives_its_gradient_twice():
    gx, gx2, gy = pb.grad(lambda x, y: np.sum(x * x * y), argnums=(0, 0, 1))(np.ones(2), 3.0)
    np.testing.assert_array_equal(gx, [6.0, 6.0])
    np.testing.assert_array_equal(gx2, gx)
    assert gy == 2.0


def test_argnums_may_be_a_numpy_integer_and_a_float_is_refused():
    f = lambda x: np.sum(x ** 2)  # noqa: E731
    np.testing.assert_array_equal(pb.grad(f, argnums=np.int64(0))(np.ones(2)), [2.0, 2.0])
    with pytest.raises(TypeError, match=r"argnums=0.0 for .*lambda.*integer position"):
        pb.grad(f, argnums=0.0)(np.ones(2))


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_masked_arrays_and_matrices_are_refused_at_the_boundary():
    masked = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(TypeError, match=r"argument 0 of .*lambda.* is a masked array.*filled"):
        pb.grad(lambda x: np.sum(x))(masked)
    with pytest.raises(TypeError, match=r"argument 0 of .*lambda.* is an np.matrix.*asarray"):
        pb.grad(lambda x: np.sum(x * 2.0))(np.matrix([[1.0, 2.0]]))


_MASKED = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
@pytest.mark.parametrize("loss", [
    lambda x: np.sum(x * _MASKED),  # the mask hid x[1] from np.sum: its gradient was 1
    lambda x: np.sum(_MASKED + x),
    lambda x: np.sum(_MASKED * x),
    lambda x: np.ma.sum(np.multiply(x, _MASKED)),
    lambda x: np.sum(np.dot(x, _MASKED)),
    lambda x: np.sum(x - np.matrix([[1.0, 2.0, 3.0]])),
    lambda x: np.sum(np.matrix([[1.0], [2.0], [3.0]]) * x),
    lambda x: np.sum(np.dot(x, np.matrix(np.eye(3)))),
    lambda x: np.sum(np.maximum(x, _MASKED)),
], ids=["tracked * masked", "masked + tracked", "masked * tracked", "np.ma.sum",
        "np.dot masked", "tracked - matrix", "matrix * tracked", "np.dot matrix", "maximum"])
def test_masked_arrays_and_matrices_met_inside_are_refused(loss):
    x = np.array([1.0, 2.0, 3.0])
    for transform in (pb.grad, pb.jacobian):
        with pytest.raises(TypeError, match=r"met (a masked array|an np\.matrix).*would be "
                                            r"wrong.*(filled|asarray)"):
            transform(loss)(x)
    p = pb.param(x)  # the Tracker face too
    with pytest.raises(TypeError, match=r"met (a masked array|an np\.matrix)"):
        loss(p)


def test_a_view_of_a_tracked_value_is_itself_and_a_reinterpreting_view_is_refused():
    x = np.array([1.0, 2.0])
    g = pb.grad(lambda x: np.sum(x.view() * x.view(np.ndarray) * x.view(np.float64)))(x)
    np.testing.assert_array_equal(g, 3 * x ** 2)
    with pytest.raises(TypeError, match=r"x\.view\(int64\) reinterprets the bytes.*astype"):
        pb.grad(lambda x: np.sum(x.view(np.int64) * 1.0))(x)
    with pytest.raises(TypeError, match=r"met a masked array"):
        pb.grad(lambda x: np.sum(x.view(np.ma.MaskedArray)))(x)


def test_np_frompyfunc_points_to_np_vectorize():
    squared = np.frompyfunc(lambda t: t * t, 1, 1)
    with pytest.raises(pb.NoRuleError, match="np.frompyfunc's.*np.vectorize"):
        pb.grad(lambda x: np.sum(squared(x)))(np.ones(2))


def test_pickling_or_reshaping_a_tracked_value_in_place_is_refused():
    import pickle

    with pytest.raises(TypeError, match="cannot be pickled.*without its gradient"):
        pb.grad(lambda x: np.sum(pickle.loads(pickle.dumps(x))))(np.ones(2))  # it was 0
    with pytest.raises(TypeError, match=r"x\.shape = \(2, 1\).*x\.reshape"):
        pb.grad(lambda x: (setattr(x, "shape", (2, 1)), np.sum(x))[1])(np.ones(2))


def test_an_ndarray_subclass_constant_is_held_read_only_like_an_ndarray(tmp_path):
    # a memmap (an ndarray subclass) a node needs: a write into it used to go unnoticed
    m = np.memmap(tmp_path / "m.dat", dtype=np.float64, mode="w+", shape=(2,))
    m[:] = [1.0, 2.0]

    def loss(x):
        y = x * m
        with pytest.raises(ValueError, match="read-only"):
            m[0] = 5.0
        return np.sum(y)

    np.testing.assert_array_equal(pb.grad(loss)(np.ones(2)), [1.0, 2.0])
    p = pb.param(np.ones(2))
    loss(p).backward()
    np.testing.assert_array_equal(p.grad, [1.0, 2.0])
    m[0] = 5.0  # writeable again once the graphs are gone


@pytest.mark.parametrize("to_objects", [
    lambda x: x.astype(object),
    lambda x: np.asarray(x, dtype=object),
    lambda x: np.array([x[0], x[1]], dtype=object),
], ids=["astype", "asarray", "array of a list"])
def test_object_arrays_of_tracked_values_are_refused(to_objects):
    # an object array holds plain Python numbers: its sum had a gradient of zero
    with pytest.raises(TypeError, match=r"object array \(dtype=object\).*np.vectorize"):
        pb.grad(lambda x: np.sum(to_objects(x) ** 2))(np.array([1.0, 2.0]))


@pytest.mark.parametrize("loss", [
    lambda x: sum(v ** 2 for v in x.tolist()),
    lambda x: x[0].item() ** 2 + 1.0,
    lambda x: np.float64(np.asarray(x)[1].item()) * 3.0,
], ids=["tolist", "item", "asarray item"])
def test_a_loss_computed_from_item_or_tolist_is_an_error_not_a_zero_gradient(loss):
    from pullback._engine.methods import escapes

    x = np.array([1.0, 2.0])
    for transform in (pb.grad, pb.jacobian):
        with pytest.raises(ValueError, match=r"derivative would be zero.*x\.(item|tolist)"):
            transform(loss)(x)
    assert not escapes  # nothing is kept once the transform ends


def test_a_zero_derivative_without_an_escape_is_zero():
    x = np.array([1.0, 2.0])
    for loss in (lambda x: 3.0, lambda x: np.sum(pb.stop_gradient(x) ** 2),
                 lambda x: np.sum(np.floor(x))):
        np.testing.assert_array_equal(pb.grad(loss)(x), [0.0, 0.0])
    # item() for control flow or logging, with the loss on the graph: as before
    np.testing.assert_array_equal(
        pb.grad(lambda x: np.sum(x ** 2) if x[0].item() > 0 else np.sum(x))(x), 2 * x)


def test_copies_inside_the_loss_keep_the_gradient():
    x = np.array([1.0, -2.0])
    np.testing.assert_array_equal(pb.grad(lambda x: np.sum(copy.copy(x) ** 2))(x), 2 * x)
    np.testing.assert_array_equal(
        pb.grad(lambda x: np.sum(copy.deepcopy(x * 1.0) ** 2))(x), 2 * x)


def test_deepcopy_of_a_param_is_an_independent_param():
    W = pb.param(np.ones(2))
    W2 = copy.deepcopy(W)
    np.sum(W2 * 3.0).backward()
    np.testing.assert_array_equal(W2.grad, [3.0, 3.0])
    np.testing.assert_array_equal(W.grad, [0.0, 0.0])


def test_param_of_none_or_text_is_refused():
    for bad in (None, "abc", {"a": 1}):
        with pytest.raises(TypeError, match="pb.param needs numbers"):
            pb.param(bad)


def test_a_loss_that_is_not_a_scalar_value_says_what_was_returned():
    with pytest.raises(TypeError, match=r"returned a list of 1 item. Return the loss itself"):
        pb.grad(lambda x: [np.sum(x)])(np.ones(2))
    with pytest.raises(TypeError, match=r"returned None \(is a return statement missing"):
        pb.grad(lambda x: None)(np.ones(2))


def test_jvp_with_arrays_instead_of_tuples_is_refused():
    for x in (np.ones(3), np.ones(1), 1.0):
        with pytest.raises(TypeError, match=r"jvp of sin takes primals as a tuple.*\(x,\)"):
            pb.jvp(np.sin, x, x)


def test_update_with_a_step_of_the_wrong_shape_names_both_shapes():
    W = pb.param(np.ones(3))
    with pytest.raises(ValueError, match=r"shape \(3,\) with a step of shape \(4,\)"):
        pb.update(W, np.ones(4))


# ---------------------------------------------------------------------------- escaped values

def _escaped():
    found = []
    pb.grad(lambda x: (found.append(np.sum(x * 2.0)), np.sum(x))[1])(np.ones(2))
    return found[0]


def test_backward_of_a_value_that_escaped_a_finished_grad_raises():
    with pytest.raises(RuntimeError, match="escaped a finished pb.grad"):
        _escaped().backward()
    with pytest.raises(RuntimeError, match="depends on no pb.param"):
        pb.grad(lambda x: (np.sum(x).backward(), np.sum(x))[1])(np.ones(2))


def test_an_escaped_value_is_a_constant_for_numpy_too():
    y = _escaped()
    assert np.asarray(y) == 4.0 and float(y) == 4.0
    out = np.empty(2)
    out[0] = y
    assert out[0] == 4.0


def test_storing_a_tracked_value_into_a_plain_array_is_caused_by_pullbacks_error():
    def f(x):
        out = np.empty(3)
        out[0] = x[0]
        return np.sum(out)

    # NumPy replaces the error of a sequence-like value by its own, chained to pullback's;
    # the transform adds pullback's refusal to NumPy's message
    with pytest.raises(ValueError, match="float\\(\\) of a tracked value was refused") as info:
        pb.grad(f)(np.ones(3))
    numpys = info.value.__cause__
    assert isinstance(numpys, ValueError) and isinstance(numpys.__cause__, TypeError)
    assert "float() of a tracked value would drop its gradient" in str(numpys.__cause__)


# ---------------------------------------------------------------------------- unique, full_like

def test_unique_values_carry_the_gradient():
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_array_equal(pb.grad(lambda x: np.sum(np.unique(x) ** 2))(x), 2 * x)


def test_full_like_carries_the_gradient_of_a_tracked_fill_value():
    g = pb.grad(lambda a: np.sum(np.full_like(a, a[0])))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [3.0, 0.0, 0.0])


# ---------------------------------------------------------------------------- threads

def test_concurrent_backward_into_a_shared_param_adds_up_exactly():
    W = pb.param(np.zeros(200_000))

    def work():
        for _ in range(100):
            np.sum(W * 1.0).backward()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert W.grad.min() == 400.0 and W.grad.max() == 400.0


# ---------------------------------------------------------------------------- a user rule's slips

@pb.primitive
def _doubled(x):
    return 2 * x


@pb.rrule(_doubled)
def _doubled_rule(x):
    def doubled_pullback(g):
        return (2 * np.reshape(g, (-1, 1)),)  # a column for a vector: not a broadcast

    return 2 * x, doubled_pullback


def test_a_cotangent_that_is_no_broadcast_of_its_input_is_refused():
    # (3, 1) and (3,) broadcast to (3, 3), neither of them: summing it down would give
    # every entry the sum of all
    with pytest.raises(ValueError, match=r"doubled_pullback returned a cotangent of shape "
                                         r"\(3, 1\) for an input of shape \(3,\)"):
        pb.grad(lambda x: np.sum(_doubled(x) * np.array([1.0, 10.0, 100.0])))(np.ones(3))


def test_reading_a_tracked_values_memory_says_why_it_cannot():
    x = pb.param(np.ones(3))
    assert not hasattr(x, "__array_interface__")  # NumPy and libraries read it as absent
    with pytest.raises(AttributeError, match="pullback: a tracked value has no "
                                             "__array_interface__"):
        x.__array_interface__  # noqa: B018


def test_a_copy_of_a_tracked_array_is_written_into_alone_and_a_scalar_rebinds():
    # NumPy: copy.copy(y) is a new array; a NumPy scalar is immutable, so += rebinds the name
    def copies(x):
        y = x * 1.0
        z, w = copy.deepcopy(y), copy.copy([y])[0]
        z[0] = 100.0
        w *= 3.0  # the list's shallow copy holds y itself: y is tripled, as in NumPy
        return np.sum(y * x) + np.sum(z)

    def rebinds(x):
        loss = np.sum(x ** 2)
        data, t = loss, x[0]
        loss += 10.0 * np.sum(x)
        t0 = t
        t += 1.0
        return data + loss * t * t0

    x = np.array([1.0, 2.0])
    for f in (copies, rebinds):
        np.testing.assert_allclose(pb.value_and_grad(f)(x)[0], f(x.copy()), rtol=1e-12)
        pb.check_grads(f, x, order=2)
    W = pb.param(np.array([1.0, 2.0]))
    W2 = copy.copy(W)
    assert isinstance(W2, pb.Param) and W2 is not W


def test_stop_gradient_of_a_tracked_array_is_read_only():
    # a write into it would change the value the graph recorded for y
    def writes_into_the_constant(x):
        y = x * 1.0
        s = pb.stop_gradient(y)
        s[0] = 5.0
        return np.sum(y * x)

    x = np.array([0.3, 1.2])
    with pytest.raises(ValueError, match="read-only"):
        pb.grad(writes_into_the_constant)(x)
    s = pb.stop_gradient(pb.param(x) * 2.0)
    np.testing.assert_array_equal(s, 2 * x)
    s.copy()[0] = 1.0  # a copy is the user's own
    plain = np.ones(2)
    assert pb.stop_gradient(plain) is plain  # a plain array is left as it is


# ---------------------------------------------------------------------------- API misuse

def test_an_integer_or_boolean_output_is_refused_not_differentiated_as_zero():
    x = np.array([1.0, -2.0, 3.0])
    for call in (lambda: pb.grad(lambda x: np.sum(x) > 0)(x),
                 lambda: pb.grad(lambda x: np.argmax(x))(x),
                 lambda: pb.grad(lambda x: 3)(x),
                 lambda: pb.hessian(lambda x: np.sum(x > 0))(x)):
        with pytest.raises(TypeError, match="needs a floating-point output"):
            call()
    with pytest.raises(TypeError, match="output of dtype bool"):
        pb.jacobian(lambda x: x > 0)(x)
    with pytest.raises(TypeError, match="returned None"):
        pb.jacobian(lambda x: None)(x)
    with pytest.raises(TypeError, match="returned None"):
        pb.jvp(lambda x: None, (x,), (x,))
    assert np.array_equal(pb.grad(lambda x: 0.0)(x), np.zeros(3))  # a float constant: zero


def test_a_dict_cotangent_is_matched_by_key_and_its_structure_checked():
    x = np.array([1.0, 2.0, 3.0])
    _, vjp_fn = pb.vjp(lambda x: {"a": x, "b": 10.0 * x}, x)
    (g,) = vjp_fn({"b": np.ones(3), "a": np.zeros(3)})
    np.testing.assert_array_equal(g, np.full(3, 10.0))
    with pytest.raises(TypeError, match=r"at out the output has keys \['a', 'b'\], the "
                                        r"cotangent keys \['b'\]"):
        vjp_fn({"b": np.ones(3)})
    _, vjp_fn = pb.vjp(lambda x: {"a": (x, x)}, x)
    with pytest.raises(TypeError, match=r"at out\['a'\] the output has 2 items, the "
                                        "cotangent 3 items"):
        vjp_fn({"a": (x, x, x)})
    with pytest.raises(TypeError, match="is None"):
        pb.vjp(np.sum, x)[1](None)
    (hv,) = pb.hvp(lambda d: np.sum(d["a"] ** 2 + 10 * d["b"] ** 2), ({"a": x, "b": x},),
                   ({"b": np.ones(3), "a": np.zeros(3)},))
    np.testing.assert_array_equal(hv["a"], np.zeros(3))
    np.testing.assert_array_equal(hv["b"], np.full(3, 20.0))


def test_backward_refuses_a_complex_cotangent_for_a_real_value():
    p = pb.param(np.ones(3))
    with pytest.raises(TypeError, match="imaginary part would be dropped"):
        (p * 2.0).backward(np.ones(3) * 1j)


def test_nondifferentiable_refuses_what_it_cannot_intercept_or_a_rule_of_the_library():
    def twice(x):
        return 2 * x

    with pytest.raises(TypeError, match="neither a NumPy function nor a (pb|pullback).primitive"):
        pb.nondifferentiable(twice)
    with pytest.raises(TypeError, match="np.sinh has a derivative rule"):
        pb.nondifferentiable(np.sinh)
    np.testing.assert_allclose(pb.grad(lambda x: np.sinh(x))(0.0), 1.0)  # still its rule


def test_check_grads_tree_unflatten_and_schedules_refuse_what_would_pass_silently():
    with pytest.raises(ValueError, match="no floating-point argument"):
        pb.check_grads(lambda x: x ** 2, np.array([1, 2]))
    with pytest.raises(ValueError, match="order 1 or 2"):
        pb.check_grads(lambda x: x ** 2, np.ones(2), order=0)
    _, treedef = pb.tree_flatten((1, 2, 3))
    for leaves in ([1, 2, 3, 4], [1, 2]):
        with pytest.raises(ValueError, match="leaves than the structure holds"):
            pb.tree_unflatten(treedef, leaves)
    with pytest.raises(TypeError, match="at least 0"):
        pb.optim.SGD(lambda count: -1.0).step([pb.param(np.ones(2))])


@pb.primitive
def _total(x):
    return np.sum(x)


@pb.rrule(_total)
def _total_rule(x):
    return _total(x), lambda g: (np.sum(2 * g),)  # a scalar for an input of shape (3,)


def test_a_users_cotangent_smaller_than_its_input_is_refused_not_broadcast():
    # as PyTorch and JAX: broadcasting it up would give every entry the same gradient
    x = np.ones(3)
    with pytest.raises(ValueError, match=r"returned a cotangent of shape \(\) for an input "
                                         r"of shape \(3,\)"):
        pb.grad(lambda x: _total(x) * 1.0)(x)
    with pytest.raises(ValueError, match=r"the hook .*<lambda> returned a cotangent of shape"):
        pb.grad(lambda x: np.sum(pb.hook(lambda g: 7.0, x)))(x)
    with pytest.raises(TypeError, match="takes the function first"):
        pb.grad(lambda x: np.sum(pb.hook(x, lambda g: g)))(x)


def test_common_misuses_of_the_faces_say_what_to_write():
    W = pb.param(np.ones(2))
    for call, message in (
            (lambda: pb.Params(W), r"pb\.Params\(\[W\]\)"),
            (lambda: pb.gradient(lambda: np.sum(W), W), r"pb\.Params\(\[W\]\)"),
            (lambda: pb.optim.SGD(0.1).step({"w": W}), r"list\(d\.values\(\)\)"),
            (lambda: pb.vjp(lambda x: x, np.ones(2), has_aux=True), "must return a pair"),
            (lambda: pb.minimize(lambda x: x ** 2, np.ones(2)), "least_squares"),
            (lambda: pb.minimize(lambda x: np.sum(x ** 2), np.ones(2), jac=True),
             r"return \(value, gradient\)")):
        with pytest.raises(TypeError, match=message):
            call()


@pytest.mark.parametrize("transform", [pb.grad, pb.value_and_grad, pb.jacobian, pb.jacfwd,
                                       pb.hessian, pb.jit, pb.checkpoint])
def test_a_transform_given_no_function_says_so_at_once(transform):
    with pytest.raises(TypeError, match="takes the function to .* first"):
        transform(np.ones(2))


def test_registrations_and_settings_are_checked_where_they_are_given():
    for call in (lambda: pb.ufunc_method(np.sin, "redcue"),
                 lambda: pb.ufunc_method(np.sum, "reduce"),
                 lambda: pb.elementwise(np.hypot, lambda ans, x, y: x / ans),
                 lambda: pb.elementwise(np.hypot, 1.0, 2.0),
                 lambda: pb.update(pb.param(np.ones(2)), "a")):
        with pytest.raises(TypeError, match="pullback"):
            call()
    for call in (lambda: pb.optim.SGD(np.inf), lambda: pb.jacobian(np.sin, chunk_size=0)):
        with pytest.raises(ValueError, match="pullback"):
            call()
    np.testing.assert_array_equal(pb.index_add(np.ones(2), [0, 0], 3), [2.0, 0.0, 0.0])


def test_detect_anomaly_without_parentheses_and_tree_map_of_several_trees():
    with pytest.raises(TypeError, match=r"@pb\.detect_anomaly\(\) with parentheses"):
        pb.detect_anomaly(lambda x: x)
    step = pb.tree_map(lambda p, g: p - 0.5 * g, {"W": np.ones(2)}, {"W": np.ones(2)})
    np.testing.assert_array_equal(step["W"], [0.5, 0.5])
    with pytest.raises(ValueError, match="another structure"):
        pb.tree_map(lambda a, b: a, (1.0, 2.0), [1.0, 2.0])


def test_more_misuses_of_vjp_and_check_grads_name_the_problem():
    x = np.ones(3)
    _, vjp_fn = pb.vjp(lambda x: x * 2.0, x)
    for call, error, message in (
            (lambda: vjp_fn(x, x), TypeError, "as one tuple"),
            (lambda: vjp_fn("abc"), TypeError, "is a str"),
            (lambda: pb.check_grads(lambda x: None, x), TypeError, "returned None"),
            (lambda: pb.check_grads(lambda x: x, x, eps=0), ValueError, "eps > 0"),
            (lambda: pb.jacobian(lambda x: "s")(x), TypeError, "returned a str")):
        with pytest.raises(error, match=message):
            call()


X3 = np.array([1.0, 2.0, 3.0])


def _square_sum(x):
    return np.sum(x ** 2)


def _dot(x, y):
    return np.sum(x * y)


@pytest.mark.parametrize("call, error, match", [
    (lambda: pb.grad(np.sum, argnums=())(X3), TypeError, r"argnums=\(\) for sum selects no arg"),
    (lambda: pb.value_and_grad(np.sum, argnums=())(X3), TypeError, "selects no argument"),
    (lambda: pb.jacobian(np.sin, argnums=[])(X3), TypeError, r"argnums=\[\] .* selects no"),
    (lambda: pb.hvp(_dot, (X3, X3), (), argnums=()), TypeError, "selects no argument"),
    (lambda: pb.grad(np.sum, has_aux="yes"), TypeError,
     "grad's has_aux must be True or False, got 'yes'"),
    (lambda: pb.grad(np.sum, losscheck="no"), TypeError,
     "grad's losscheck must be True or False, got 'no'"),
    (lambda: pb.value_and_grad(np.sum, losscheck=None), TypeError,
     "value_and_grad's losscheck must be True or False, got None"),
    (lambda: pb.vjp(np.sin, X3, has_aux=1), TypeError, "vjp's has_aux must be True or False"),
    (lambda: pb.grad(np.sum, has_aux=True)(X3), TypeError,
     r"pair \(loss, aux\); it returned a float64 scalar$"),
    (lambda: pb.vjp(np.sin, X3, has_aux=True), TypeError,
     r"pair \(out, aux\); it returned a float64 array of shape \(3,\)$"),
    (lambda: pb.vjp(None, X3), TypeError, r"pb\.vjp takes the function to differentiate first"),
    (lambda: pb.vjp(lambda x: None, X3), TypeError, r"returned None \(is a return statement"),
    (lambda: pb.vjp(lambda x: "abc", X3), TypeError, "<lambda> returned a str; its derivative"),
    (lambda: pb.vjp(lambda x: (x, "a"), X3), TypeError, "returned a str inside its output"),
    (lambda: pb.vjp(lambda x: (None, None), X3), TypeError, "returned None inside its output"),
    (lambda: pb.vjp(lambda x: 3, X3), TypeError, "output of dtype int64: .* no derivative"),
    (lambda: pb.vjp(lambda x: x > 1, X3), TypeError, "output of dtype bool"),
], ids=["grad-argnums-empty", "value_and_grad-argnums-empty", "jacobian-argnums-empty",
        "hvp-argnums-empty", "has_aux-str", "losscheck-str", "losscheck-none", "vjp-has_aux-int",
        "grad-aux-not-pair", "vjp-aux-not-pair", "vjp-no-function", "vjp-returns-none",
        "vjp-returns-str", "vjp-returns-str-inside", "vjp-returns-only-none", "vjp-returns-int",
        "vjp-returns-bool"])
def test_grad_and_vjp_misuse_is_refused_where_it_comes_in(call, error, match):
    # each of these used to return (), a zero cotangent, or a check turned on by a string
    with pytest.raises(error, match="^pullback: .*" + match):
        call()


def test_vjp_of_a_float_output_beside_an_integer_one_pulls_back_the_float_one():
    out, vjp_fn = pb.vjp(lambda x: (x * 2.0, np.argmax(x)), X3)
    assert out[1] == 2
    np.testing.assert_array_equal(vjp_fn((np.ones(3), 0))[0], [2.0, 2.0, 2.0])


@pytest.mark.parametrize("call, error, match", [
    (lambda: pb.jvp(np.sin, (X3,), (None,)), TypeError,
     r"tangent 0 for jvp of sin is None; pass an array of primal 0's shape \(3,\)"),
    (lambda: pb.jvp(np.sin, (X3,), ("a",)), TypeError, "tangent 0 for jvp of sin is a str"),
    (lambda: pb.jvp(np.sin, (X3,), ([1.0, 2.0, 3.0],)), TypeError, "is a list of 3 items"),
    (lambda: pb.jvp(np.sin, None, None), TypeError,
     "jvp of sin takes primals as a tuple.*got None"),
    (lambda: pb.jvp(np.sin, (X3,), ()), TypeError,
     "jvp of sin takes one tangent per primal: 1 primal, got 0 tangents"),
    (lambda: pb.jvp(lambda d: np.sum(d["a"]), ({"a": X3},), ({"b": X3},)), TypeError,
     r"tangent 0 .* must have primal 0's structure: .* keys \['a'\], the tangent keys \['b'\]"),
    (lambda: pb.jvp(lambda d: np.sum(d["a"]), ({"a": X3},), ({"a": X3, "b": X3},)), TypeError,
     r"keys \['a'\], the tangent keys \['a', 'b'\]"),
    (lambda: pb.jvp(lambda d: np.sum(d["a"]), ({"a": X3},), ({"a": X3[:2]},)), ValueError,
     r"tangent 0\['a'\] for jvp .* has shape \(2,\), but primal 0\['a'\] has shape \(3,\)"),
    (lambda: pb.hvp(_square_sum, (X3,), (np.ones(2),)), ValueError,
     r"tangent 0 for hvp of _square_sum has shape \(2,\), but primal 0 has shape \(3,\)"),
    (lambda: pb.hvp(_square_sum, (X3,), ()), TypeError,
     "hvp of _square_sum takes one tangent per primal: 1 primal, got 0 tangents"),
    (lambda: pb.hvp(_square_sum, (X3,), (None,)), TypeError,
     r"tangent 0 for hvp of _square_sum is None; pass an array of primal 0's shape \(3,\)"),
    (lambda: pb.hvp(_square_sum, (X3,), ("a",)), TypeError, "tangent 0 for hvp .* is a str"),
    (lambda: pb.hvp(_square_sum, (X3,), (X3 * 1j,)), TypeError,
     "tangent 0 for hvp of _square_sum is complex but primal 0 is real"),
    (lambda: pb.hvp(_dot, (X3, X3), (X3,)), TypeError, "2 primals, got 1 tangent$"),
    (lambda: pb.hvp(_dot, (X3, X3), (X3, X3), argnums=0), TypeError,
     r"per differentiated primal \(argnums=0\): 1 primal, got 2 tangents"),
    (lambda: pb.hvp(_dot, (X3, X3), (X3, X3, X3), argnums=0), TypeError, "got 3 tangents"),
    (lambda: pb.hvp(_dot, (X3, X3), (X3[:2],), argnums=1), ValueError,
     r"tangent 0 for hvp of _dot has shape \(2,\), but primal 1 has shape \(3,\)"),
    (lambda: pb.hvp(_square_sum, None, None), TypeError, "takes primals as a tuple.*got None"),
], ids=["jvp-none", "jvp-str", "jvp-list", "jvp-primals-none", "jvp-no-tangent",
        "jvp-other-key", "jvp-extra-key", "jvp-shape-at-key", "hvp-shape", "hvp-no-tangent",
        "hvp-none", "hvp-str", "hvp-complex", "hvp-too-few", "hvp-extra", "hvp-extras",
        "hvp-argnums-shape", "hvp-primals-none"])
def test_a_tangent_mistake_names_the_tangent_and_its_primal(call, error, match):
    # hvp is the pullback of the gradient: these used to be worded as a cotangent's or the
    # output's, or (extra tangents) ignored
    with pytest.raises(error, match="^pullback: .*" + match):
        call()


@pytest.mark.parametrize("call, error, match", [
    *[(lambda size=size: pb.jacfwd(np.sin, chunk_size=size), ValueError,
       f"jacfwd's chunk_size must be a positive integer .* got {size!r}")
      for size in (0, -1, 1.5, "2", True)],
    (lambda: pb.hessian(None), TypeError, r"pb\.hessian takes the function to differentiate"),
    (lambda: pb.hessian(np.sin, chunk_size=0), ValueError, "hessian's chunk_size must be"),
    (lambda: pb.hessian(lambda x: None)(X3), TypeError,
     r"hessian of .*<lambda> needs a real scalar output, but .*<lambda> returned None .*"
     r"pb\.jacobian\(pb\.jacobian\(f\)\)"),
    (lambda: pb.hessian(np.sin)(X3), TypeError,
     r"hessian of sin needs a scalar output, got shape \(3,\).*pb\.jacobian\(pb\.jacobian"),
    (lambda: pb.hessian(lambda x: np.sum(x) * np.nan)(X3), pb.LossError,
     "the loss of .*<lambda> is nan; find where it stops being finite(\n|$)"),
], ids=["jacfwd-chunk-0", "jacfwd-chunk-negative", "jacfwd-chunk-float", "jacfwd-chunk-str",
        "jacfwd-chunk-bool", "hessian-no-function", "hessian-chunk", "hessian-returns-none",
        "hessian-vector", "hessian-nan"])
def test_jacfwd_and_hessian_refusals_name_themselves(call, error, match):
    with pytest.raises(error, match="^pullback: " + match):
        call()
    for message in ("grad of", "pb.grad", "jacobian's", "has_aux", "losscheck"):
        with pytest.raises(error) as caught:
            call()
        assert message not in str(caught.value).splitlines()[0]


def test_a_complex_arrays_float_view_and_complex_of_two_values_name_what_to_write():
    z = np.array([1.0 + 2j, 0.5 - 1j])
    with pytest.raises(TypeError, match=r"x\.view\(float64\).*np\.stack\(\[x\.real, "
                                        r"x\.imag\], axis=-1\)"):
        pb.grad(lambda z: np.sum(z.view(np.float64)))(z)
    f = lambda z: np.sum(np.stack([z.real, z.imag], axis=-1) ** 2)  # noqa: E731
    assert np.array_equal(np.stack([z.real, z.imag], axis=-1).ravel(), z.view(np.float64))
    np.testing.assert_allclose(pb.grad(f)(z), central_differences(f, z), rtol=1e-6)
    with pytest.raises(TypeError, match=r"For complex\(a, b\), write a \+ 1j \* b"):
        pb.grad(lambda x: np.abs(complex(x[0], x[1])) + np.sum(x))(np.ones(2))


@pytest.mark.parametrize("bad", [np.array([1.0, None], dtype=object), np.array(["a", "b"])])
def test_tangents_and_cotangents_that_are_no_numbers_are_refused(bad):
    x = np.array([0.3, 0.7])
    with pytest.raises(TypeError, match=r"^pullback: tangent 0 for jvp of sin is an? "
                                        r"(object|<U1) array.*holding numbers"):
        pb.jvp(np.sin, (x,), (bad,))
    with pytest.raises(TypeError, match=r"^pullback: cotangent 0 for sin is an? "
                                        r"(object|<U1) array.*holding numbers"):
        pb.vjp(np.sin, x)[1](bad)


@pytest.mark.parametrize("call, message", [
    (lambda x: np.matrix(x), r"^pullback: np\.matrix\(x\) of a tracked value.*x @ y"),
    (lambda x: x.reshape(2, 2) @ np.matrix(np.eye(2, 3)),
     r"^pullback: np\.matmul met an np\.matrix of shape \(2, 3\)"),
    (lambda x: np.array(x, dtype=object), r"^pullback: np\.array\(\.\.\., dtype=object\)"),
    (lambda x: np.array([[x[0], 1.0], [x[1]]], dtype=object),
     r"^pullback: np\.array\(\.\.\., dtype=object\).*np\.vectorize"),
])
def test_matrices_and_object_arrays_made_of_tracked_values_are_refused_naming_them(call,
                                                                                    message):
    call(np.ones(4))  # NumPy makes them of plain values
    with pytest.raises(TypeError, match=message):
        pb.grad(lambda x: np.sum(np.asarray(call(x), dtype=float)))(np.ones(4))


def test_no_grad_decorates_with_or_without_parentheses():
    w = pb.param(np.array([0.5, 1.0]))
    bare, called = pb.no_grad(np.sin), pb.no_grad()(np.sin)
    assert type(bare(w)) is np.ndarray and type(called(w)) is np.ndarray
    np.testing.assert_array_equal(bare(w), np.sin(w.value))
    with pytest.raises(TypeError, match=r"^pullback: pb\.no_grad takes no arguments"):
        pb.no_grad(3)
