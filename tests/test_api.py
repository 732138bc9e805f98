"""The functional API: grad, value_and_grad, vjp; types, pytrees and errors."""

import collections

import numpy as np
import pytest

import pullback as pb

from .conftest import layer_loss as loss


def test_grad_matches_finite_differences_to_second_order(data):
    pb.check_grads(loss, *data, order=2)


def test_grad_returns_plain_arrays_of_the_arguments_shape_and_dtype(data):
    W, b, x, y = data
    gW = pb.grad(loss)(W, b, x, y)
    assert type(gW) is np.ndarray and gW.shape == W.shape and gW.dtype == W.dtype
    gW2, gb = pb.grad(loss, argnums=(0, 1))(W, b, x, y)
    np.testing.assert_array_equal(gW, gW2)
    assert gb.shape == b.shape
    value, gW3 = pb.value_and_grad(loss)(W, b, x, y)
    assert value == loss(W, b, x, y) and not isinstance(value, pb.Tracked)
    np.testing.assert_array_equal(gW, gW3)


def test_has_aux_returns_the_aux_untracked(data):
    W, b, x, y = data

    def f(W):
        h = np.tanh(x @ W + b)
        return np.mean((h - y) ** 2), {"h": h}

    (value, aux), g = pb.value_and_grad(f, has_aux=True)(W)
    assert isinstance(aux["h"], np.ndarray) and not isinstance(aux["h"], pb.Tracked)
    np.testing.assert_allclose(g, pb.grad(loss)(W, b, x, y))
    g2, aux2 = pb.grad(f, has_aux=True)(W)
    np.testing.assert_array_equal(g, g2)
    with pytest.raises(TypeError, match="pair"):
        pb.grad(lambda W: np.sum(W), has_aux=True)(W)


def test_vjp_is_reusable_and_handles_several_inputs_and_outputs():
    x, y = np.arange(3.0), np.ones(3)
    out, vjp_fn = pb.vjp(lambda x, y: (x * y, np.sin(x)), x, y)
    assert isinstance(out, tuple) and not isinstance(out[0], pb.Tracked)
    ct = (np.ones(3), np.zeros(3))
    first = vjp_fn(ct)
    second = vjp_fn(ct)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(first[0], y)
    np.testing.assert_array_equal(first[1], x)
    with pytest.raises(ValueError, match="shape"):
        vjp_fn((np.ones(2), np.zeros(3)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_preserved(dtype):
    x = np.linspace(-1, 1, 4).astype(dtype)
    g = pb.grad(lambda x: np.sum(np.tanh(x) * 2.0 + x ** 2))(x)
    assert g.dtype == dtype


def test_python_floats_and_zero_d_arrays():
    g = pb.grad(lambda x: x * x)(3.0)
    assert isinstance(g, float) and g == 6.0
    g0 = pb.grad(lambda x: np.sin(x))(np.array(0.0))
    assert isinstance(g0, np.ndarray) and g0.shape == () and g0 == 1.0
    assert pb.grad(lambda x: 5.0)(1.0) == 0.0  # a constant function has zero gradient


def test_pytrees_of_arguments_give_gradients_of_the_same_structure():
    params = {"W": np.ones((2, 2)), "bs": [np.zeros(2), (np.ones(2),)]}

    def f(p):
        return np.sum(p["W"] @ p["bs"][0] + p["bs"][1][0] * 3.0)

    g = pb.grad(f)(params)
    assert set(g) == {"W", "bs"} and isinstance(g["bs"], list) and isinstance(g["bs"][1], tuple)
    np.testing.assert_array_equal(g["bs"][1][0], np.full(2, 3.0))
    pb.check_grads(f, params, order=2)
    ordered = collections.OrderedDict([("b", np.ones(2)), ("a", np.arange(2.0))])
    g = pb.grad(lambda p: np.sum(p["a"] * p["b"] ** 2))(ordered)  # (it was refused)
    assert type(g) is collections.OrderedDict and list(g) == ["b", "a"]
    np.testing.assert_array_equal(g["b"], [0.0, 2.0])


def test_errors_name_a_pytrees_leaf_and_keyword_arguments():
    with pytest.raises(TypeError, match=r"argument 0 of .*, at \['n'\]\[1\], has dtype int"):
        pb.grad(lambda t: np.sum(t["a"] * t["n"][1]))({"a": np.ones(2), "n": [1.0, 3]})
    with pytest.raises(TypeError, match="given by keyword is not differentiated"):
        pb.grad(lambda x, b: np.sum(x * b), argnums=1)(np.ones(2), b=np.ones(2))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the NaN and inf are the point
def test_errors_say_what_and_where():
    with pytest.raises(TypeError, match="scalar output.*shape \\(3,\\)"):
        pb.grad(lambda x: x * 2)(np.ones(3))
    with pytest.raises(pb.LossError, match="nan"):
        pb.grad(lambda x: np.sum(np.log(x)))(np.array([-1.0, 1.0]))
    with pytest.raises(pb.LossError, match="inf"):
        pb.grad(lambda x: np.sum(x / 0.0))(np.array([1.0]))
    g = pb.grad(lambda x: np.sum(np.log(x)), losscheck=False)(np.array([-1.0, 1.0]))
    assert g[1] == 1.0
    with pytest.raises(TypeError, match="argument 0 of .* has dtype int64"):
        pb.grad(lambda x: np.sum(x * 1.0))(np.arange(3))
    with pytest.raises(TypeError, match="dtype bool"):
        pb.grad(lambda x: np.sum(x * 1.0))(np.array([True]))
    with pytest.raises(TypeError, match="argnums"):
        pb.grad(lambda x: x, argnums=3)(1.0)
    with pytest.raises(TypeError, match="real output"):
        pb.grad(lambda x: x * 1j)(1.0)


def test_function_without_rule_raises_no_rule_error_naming_it():
    with pytest.raises(pb.NoRuleError, match="np.ix_"):
        pb.grad(lambda x: np.sum(np.ix_(x)[0]))(np.ones(3))
    assert issubclass(pb.NoRuleError, NotImplementedError)
    with pytest.raises(pb.NoRuleError, match="np.multiply.reduceat"):
        pb.grad(lambda x: np.sum(np.multiply.reduceat(x, [0, 1])))(np.ones(3))


def test_tracked_values_refuse_silent_conversion_into_plain_arrays():
    def into_plain(x):
        a = np.zeros(3)
        a[0] = x[0]
        return np.sum(a)

    # NumPy turns the refusal into "setting an array element with a sequence"; the
    # refusal, with what to do instead, is the exception it chains to
    with pytest.raises((TypeError, ValueError)) as info:
        pb.grad(into_plain)(np.ones(3))
    chain = [info.value, info.value.__context__, info.value.__cause__]
    assert any("np.zeros_like(x)" in str(e) for e in chain if e is not None)

    def plain_inplace(x):
        a = np.zeros(3)
        a += x
        return np.sum(a)

    with pytest.raises(TypeError, match="a = a \\+ t"):
        pb.grad(plain_inplace)(np.ones(3))


def test_operators_reflected_and_inplace_forms():
    def f(x):
        y = 2.0 - x
        y = 3.0 / (y + 4.0)
        y = 2.0 ** y * y ** 2.0
        y += x
        y *= 2.0
        y -= 1.0
        y /= 3.0
        z = np.arange(3.0) @ y.reshape(3, 1)
        return -z[0] + abs(y).sum() + (+y).mean()

    pb.check_grads(f, np.array([0.1, 0.5, 0.9]), order=2)


def test_array_methods_and_properties():
    def f(x):
        assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == np.float64
        assert len(x) == 2 and x.T.shape == (3, 2)
        rows = [r for r in x]
        total = rows[0].sum() + rows[1].mean() + x.max() + x.min(axis=0).sum()
        total = total + x.reshape(6).dot(np.ones(6)) + x.transpose().ravel()[0]
        total = total + x.flatten()[1] + x[None].squeeze()[0, 0] + x.copy().sum()
        total = total + x.astype(np.float64).sum() + x.reshape((3, 2)).transpose(1, 0)[0, 0]
        assert isinstance(x.sum().item(), float)
        return total

    x = np.arange(6.0).reshape(2, 3) / 7.0
    pb.check_grads(f, x, order=2)


def test_returned_gradients_are_writeable_arrays_of_their_own():
    # the engine broadcasts cotangents as read-only views; users get owned arrays
    x = np.ones(3)
    results = [pb.grad(lambda x: np.sum(x))(x), pb.vjp(lambda x: np.sum(x), x)[1](1.0)[0],
               pb.jacobian(lambda x: np.sum(x) * np.ones(2))(x),
               pb.hvp(lambda x: np.sum(x) ** 2, (x,), (x,))[0]]
    W = pb.param(x)
    results.append(pb.gradient(lambda: np.sum(W), pb.Params([W]))[W])
    np.sum(W).backward()
    results.append(W.grad)
    for r in results:
        assert r.flags.writeable
        r += 1.0


def test_results_never_share_memory_with_each_other_or_a_cotangent_given():
    # x + y sends one cotangent to both; x.ravel() sends back a view of the cotangent given;
    # np.exp saves its result, which pb.vjp returns: a write into one result must not
    # change another result, the caller's cotangent, or what the graph saved
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -0.7])
    gx, gy = pb.grad(lambda x, y: np.sum(np.sin(x + y)), argnums=(0, 1))(x, y)
    g = pb.grad(lambda p: np.sum(np.sin(p["a"] + p["b"])))({"a": x, "b": y})
    gx *= 0.0
    g["a"][...] = 0.0
    expected = pb.grad(lambda y: np.sum(np.sin(x + y)))(y)
    np.testing.assert_array_equal(gy, expected)
    np.testing.assert_array_equal(g["b"], expected)
    ct = np.ones((2, 3))
    _, vjp_fn = pb.vjp(lambda x: (x + 0.0).reshape(2, 3), np.arange(6.0))
    (r,) = vjp_fn(ct)
    r *= 10.0
    np.testing.assert_array_equal(ct, np.ones((2, 3)))
    np.testing.assert_array_equal(vjp_fn(ct)[0], np.ones(6))
    A = np.array([[0.2, 0.1], [0.4, -0.3], [0.1, 0.5]])
    w, target = np.array([0.3, -0.2]), np.array([1.0, 2.0, 0.5])
    residual, vjp_fn = pb.vjp(lambda w: np.exp(A @ w), w)
    residual -= target  # a Gauss-Newton step's residual, in place
    (g,) = vjp_fn(residual)
    np.testing.assert_allclose(g, pb.grad(lambda w: 0.5 * np.sum((np.exp(A @ w) - target) ** 2))(w),
                               rtol=1e-12)


@pb.primitive
def _scaled(x, n):
    return x * n


@pb.rrule(_scaled)
def _scaled_rule(x, n):
    def scaled_pullback(g):
        return (g * n * 2, None)  # wrong on purpose: twice the derivative

    return x * n, scaled_pullback


def test_check_grads_holds_integer_arguments_fixed_and_catches_a_wrong_rule():
    x = np.array([0.3, -1.2, 0.7])
    pb.check_grads(lambda x, n: np.sum(x ** n), x, 3)                    # n is a constant
    pb.check_grads(lambda p: np.sum(np.pad(p["x"], p["n"], mode=p["mode"]) ** 2),
                   {"x": x, "n": 2, "mode": "reflect"})
    with pytest.raises(AssertionError, match=r"_scaled: reverse mode gives .* finite differences"):
        pb.check_grads(_scaled, x, 3)
    with pytest.raises(AssertionError, match="relative error"):
        pb.check_grads(lambda p: np.sum(_scaled(p["x"], p["n"])), {"x": x, "n": 2}, order=1)


def test_a_list_of_numbers_is_named_with_the_fix():
    # a list of floats is a pytree of scalars (as in JAX): plain Python works on it...
    g = pb.grad(lambda x: x[0] * x[1] ** 2)([3.0, 2.0])
    assert type(g) is list and g == [4.0, 12.0]
    # ...and a NumPy function that wants an array gets a message naming the list
    for f in (lambda x: np.sum(np.sin(x)), lambda x: np.sum(x ** 2)):
        with pytest.raises(TypeError, match=r"argument 0 of \S*<lambda> is a list of 2 numbers.*"
                                            r"np\.array\(\[\.\.\.\]\)"):
            pb.grad(f)([1.0, 2.0])
    with pytest.raises(TypeError, match=r"a tuple of 3 numbers.*\(the error inside: "):
        pb.jacobian(lambda x: x ** 2)((1.0, 2.0, 3.0))
    np.testing.assert_allclose(pb.grad(lambda x: np.sum(np.sin(x)))(np.array([1.0, 2.0])),
                               np.cos([1.0, 2.0]))


def test_help_explains_every_parameter_of_grad():
    for f in (pb.grad, pb.value_and_grad):
        doc = f.__doc__
        for name in ("argnums", "has_aux", "losscheck", "LossError"):
            assert name in doc
