"""The engine: no recursion, per-pass state, nesting levels, threads."""

import threading

import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences, pullback_cycles


def test_a_chain_a_million_operations_deep_differentiates():
    def f(x):
        for _ in range(1_000_000):
            x = x * 1.000001
        return x

    g = pb.grad(f)(1.0)
    # the derivative of the chain is the product of the million factors
    expected = 1.0
    for _ in range(1_000_000):
        expected *= 1.000001
    assert g == pytest.approx(expected, rel=1e-12)


_RELEASE = """
import sys, threading, tracemalloc
import numpy as np
import pullback as pb

def deep(n):
    w = pb.param(0.5)
    y = w
    for _ in range(n):
        y = np.sin(y) + 0.0
    return w, y

def run():
    tracemalloc.start()
    w, y = deep(50_000)
    y.backward()                       # releases the graph as it walks it
    del y
    w, y = deep(50_000)               # never walked: released when the last name goes
    held = tracemalloc.get_traced_memory()[0]
    del y
    freed = held - tracemalloc.get_traced_memory()[0]
    assert freed > 2_000_000, freed   # the 100,000 nodes really went
    print("released")

threading.stack_size(256 * 1024)       # a recursive release would overflow this stack
t = threading.Thread(target=run)
t.start()
t.join()
"""


def test_a_deep_graph_is_released_without_recursion():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _RELEASE], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "released" in done.stdout, done.stderr[-2000:]


def test_the_release_check_catches_a_recursive_release():
    # the same check, with a release that recurses per node, crashes or raises
    import subprocess
    import sys

    recursive = _RELEASE.replace("    del y\n    freed", "    def free(n):\n        if n.args:\n"
                                 "            [free(a) for a in n.args "
                                 "if isinstance(a, pb.Tracked)]\n        n.args = None\n"
                                 "    free(y)\n    del y\n    freed")
    assert recursive != _RELEASE
    done = subprocess.run([sys.executable, "-c", recursive], capture_output=True, text=True,
                          timeout=120)
    assert "released" not in done.stdout


_calls = {"n": 0}


@pb.primitive
def flaky(x):
    return x * 1.0


@pb.rrule(flaky)
def flaky_rule(x):
    def flaky_pullback(g):
        _calls["n"] += 1
        if _calls["n"] == 1:
            raise ValueError("boom")
        if _calls["n"] == 2:
            raise KeyboardInterrupt
        return (g,)

    return flaky(x), flaky_pullback


def test_an_exception_inside_a_pullback_leaves_later_gradients_correct():
    # Tracker's refcount bug: an error mid-pass broke counts on shared intermediates
    W = pb.param(np.array([0.3, -0.2]))
    h = np.tanh(W)  # shared by every loss below
    _calls["n"] = 0
    with pytest.raises(ValueError, match="boom"):
        np.sum(flaky(h) * h).backward(retain_graph=True)
    np.testing.assert_array_equal(W.grad, 0.0)  # nothing half-added
    with pytest.raises(KeyboardInterrupt):
        np.sum(flaky(h) + h).backward(retain_graph=True)
    np.sum(h ** 2).backward(retain_graph=True)
    expected = pb.grad(lambda w: np.sum(np.tanh(w) ** 2))(W.value)
    np.testing.assert_allclose(W.grad, expected)
    W.zero_grad()
    np.sum(flaky(h) * h).backward()  # the third call succeeds
    expected = pb.grad(lambda w: np.sum(np.tanh(w) ** 2))(W.value)
    np.testing.assert_allclose(W.grad, expected)


def test_perturbation_confusion():
    # d/dx [x * d/dy (x + y)] = 1
    def outer(x):
        return x * pb.grad(lambda y: x + y)(2.0)

    assert pb.grad(outer)(3.0) == 1.0


def test_grad_of_grad():
    f = lambda x: np.sin(x) * x ** 3  # noqa: E731
    pb.check_grads(pb.grad(f), 0.7, order=2)


def test_a_value_escaping_a_finished_computation_is_a_constant_later():
    leaked = []

    def f(x):
        leaked.append(x * 2.0)
        return x * x

    pb.grad(f)(3.0)
    g = pb.grad(lambda y: leaked[0] * y)(5.0)
    assert g == 6.0 and not isinstance(g, pb.Tracked)


def test_threads_compute_independent_gradients():
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((20, 20)) for _ in range(8)]

    def f(x):
        y = x
        for _ in range(30):
            y = np.tanh(y @ x) * 0.5
        return np.sum(y ** 2)

    expected = [pb.grad(f)(x) for x in inputs]
    results = [None] * len(inputs)
    errors = []

    def work(i):
        try:
            for _ in range(5):
                results[i] = pb.grad(f)(inputs[i])
                W = pb.param(inputs[i])
                f(W).backward()
                np.testing.assert_allclose(W.grad, expected[i])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for r, e in zip(results, expected):
        np.testing.assert_array_equal(r, e)


def test_no_grad_is_per_thread():
    W = pb.param(np.ones(2))
    seen = {}
    entered, release = threading.Event(), threading.Event()

    def other():
        entered.wait()
        seen["other"] = isinstance(np.sin(W), pb.Tracked)
        release.set()

    t = threading.Thread(target=other)
    t.start()
    with pb.no_grad():
        entered.set()
        release.wait()
        seen["here"] = isinstance(np.sin(W), pb.Tracked)
    t.join()
    assert seen == {"other": True, "here": False}


def test_zero_cotangent_gives_zero_through_a_singular_derivative():
    f = lambda x: np.sum(np.where(x > 0, np.sqrt(np.abs(x)), 0.0))  # noqa: E731
    x = np.array([0.0, -1.0, 4.0])
    g = pb.grad(f)(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.25])
    h = pb.grad(lambda x: np.sum(pb.grad(f)(x)))(x)
    assert np.all(np.isfinite(h))


@pytest.mark.parametrize("zero", [0, 0.0, np.float64(0.0)])
def test_dividing_by_a_constant_zero_has_numpys_derivative(zero):
    # x / 0 is inf in NumPy, whatever the zero's type: so is its derivative, and a zero
    # cotangent still gives zero
    with np.errstate(divide="ignore"):
        out, vjp_fn = pb.vjp(lambda x: x / zero, np.array([1.0, 2.0]))
        (g,) = vjp_fn(np.array([1.0, 0.0]))
    np.testing.assert_array_equal(g, [np.inf, 0.0])


def test_accumulated_cotangents_shared_by_a_pullback_stay_separate():
    # c = a + b hands one cotangent object to both a and b; the contributions that reach a
    # and b afterwards (from e, made before c) must not be added into each other's
    def f(x):
        a = x * 2.0
        b = x * 3.0
        e = a * 5.0 + b * 7.0
        c = a + b
        d = c + c  # c's cotangent is a sum the pass made
        return np.sum(d + e)

    g = pb.grad(f)(np.ones(3))
    # d + e = 10 x + 10 x + 21 x: each contribution counted once
    np.testing.assert_array_equal(g, np.full(3, 41.0))
    pb.check_grads(f, np.ones(3), order=2)


def test_a_finished_gradient_leaves_no_reference_cycles():
    # the graph must go as soon as grad returns, not wait for the cyclic collector
    f = lambda x: np.sum(np.tanh(x @ np.ones((3, 3))) ** 2)  # noqa: E731
    transforms = [pb.grad(f), pb.value_and_grad(f), pb.hessian(f),
                  lambda x: pb.vjp(f, x)[1](1.0), lambda x: pb.jvp(f, (x,), (x,))]
    for fn in transforms:
        assert pullback_cycles(fn, np.ones(3)) == []



def test_a_product_row_pulls_back_only_to_its_tracked_arguments_and_falls_back_elsewhere():
    calls = []

    @pb.primitive
    def product(a, b):
        return a @ b

    def general_rule(a, b):
        calls.append("general")
        return product(a, b), lambda g: (g @ np.swapaxes(b, -1, -2),
                                         np.swapaxes(a, -1, -2) @ g)

    def vjp_a(g, a, b):
        calls.append("a")
        assert g.ndim == 2  # a user's row, not declared batched: one slice at a time
        return g @ b.T

    def vjp_b(g, a, b):
        calls.append("b")
        assert g.ndim == 2
        return a.T @ g

    matrices = lambda a, b: a.__class__ is b.__class__ is np.ndarray and a.ndim == b.ndim == 2
    pb.bilinear(product, general_rule, matrices, vjp_a, vjp_b)
    x, W = np.arange(6.0).reshape(2, 3) / 6, np.ones((3, 2))

    def loss(W):
        return np.sum(np.tanh(product(x, W)))

    g = pb.grad(loss)(W)
    assert calls == ["b"]  # a row's node: x is a constant, so its cotangent is not computed
    numeric = np.zeros_like(W)
    for i in np.ndindex(W.shape):
        e = np.zeros_like(W)
        e[i] = 1e-6
        numeric[i] = (loss(W + e) - loss(W - e)) / 2e-6
    np.testing.assert_allclose(g, numeric, rtol=1e-7)
    calls.clear()
    pb.grad(lambda W: np.sum(product(x[None], W[None])))(W)  # stacks: the general rule
    assert calls == ["general"]
    calls.clear()
    jac = pb.jacobian(lambda W: np.tanh(product(x, W)))(W)  # 4 cotangents in one pass
    assert calls == ["b"] * 4
    for i in np.ndindex(W.shape):
        e = np.zeros_like(W)
        e[i] = 1e-6
        column = (np.tanh(x @ (W + e)) - np.tanh(x @ (W - e))) / 2e-6
        np.testing.assert_allclose(jac[(...,) + i], column, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("reduction, row", [
    (lambda x: np.sum(x, axis=1), True),
    (lambda x: np.mean(x), True),
    (lambda x: np.max(x, axis=1, keepdims=True), True),
    (lambda x: np.min(x, (0, 1)), True),
    (lambda x: x.sum(0), True),
    (lambda x: np.mean(x, 0, keepdims=True), True),
    (lambda x: np.sum(x, axis=1, where=x > 0), False),
    (lambda x: np.max(x, axis=0, initial=0.5), False),
    (lambda x: np.mean(x, axis=np.int64(0)), False),
    (lambda x: np.sum(x, axis=1, dtype=np.float64), False),
])
def test_a_reduction_row_takes_the_calls_it_fits_and_the_general_rule_the_rest(reduction, row):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4))
    x[1, 3] = x[1].max()  # a tie: the slice's cotangent is shared
    w = rng.standard_normal(12)
    kinds = []

    def f(x):
        y = reduction(x)
        if isinstance(y, pb.Tracked):
            kinds.append(type(y.rule).__name__)
        return np.sum(np.sin(3 * y) * w[:np.size(y)].reshape(np.shape(y)))

    g = pb.grad(f)(x)
    assert (kinds == ["Reduction"]) is row, kinds
    # at the tie a central difference is one-sided: accurate to O(eps)
    np.testing.assert_allclose(g, central_differences(f, x), rtol=1e-5, atol=1e-5)
    # batched cotangents (a Jacobian's rows in one pass) and a nested derivative
    jac = pb.jacobian(lambda x: np.sin(3 * reduction(x)))(x)
    for i in np.ndindex(np.shape(jac)[:-2]):
        column = central_differences(lambda x, i=i: np.sin(3 * reduction(x))[i], x)
        np.testing.assert_allclose(jac[i], column, rtol=1e-5, atol=1e-5)
    smooth = x + np.arange(12.0).reshape(3, 4) / 100  # no tie: a kink has no Hessian
    hess = pb.hessian(f)(smooth)
    for i in np.ndindex(x.shape):
        column = central_differences(lambda x, i=i: pb.grad(f)(x)[i], smooth, 1e-5)
        np.testing.assert_allclose(hess[i], column, rtol=1e-4, atol=1e-4)


def test_an_error_that_hid_a_refused_conversion_says_so():
    # np.nditer catches __array__'s refusal and raises its own unclear TypeError
    def through_nditer(x):
        return sum(v for v in np.nditer(x))

    # pullback's sentence first, naming the line; NumPy's error after it
    with pytest.raises(TypeError, match=r"^pullback: a tracked value .* was refused as a "
                                        r"plain NumPy array\. The line test_engine\.py:\d+ "
                                        r".*x\.flat.*\(TypeError: .*WRITEBACKIFCOPY\)$"):
        pb.grad(through_nditer)(np.ones(3))
    # x.flat, as the message says, differentiates
    assert np.array_equal(pb.grad(lambda x: sum(v for v in x.flat))(np.ones(3)), np.ones(3))

    # code that catches the refusal and goes on is unaffected
    def falls_back(x):
        try:
            np.zeros(2)[0] = x[0]
        except (TypeError, ValueError):
            pass
        return np.sum(x ** 2)

    x = np.array([1.0, 2.0])
    assert np.array_equal(pb.grad(falls_back)(x), 2 * x)
    def writes_into_a_plain_buffer(x):
        buffer = np.zeros(2)
        buffer[0] = x[0]
        return np.sum(buffer)

    # NumPy turns float()'s refusal into its own ValueError: pullback's sentence comes first
    with pytest.raises(ValueError, match=r"^pullback: float\(\) of a tracked value was "
                                         r"refused\. The line test_engine\.py:\d+ .*"
                                         r"np\.zeros_like.*\(ValueError: setting an array "
                                         r"element with a sequence\.\)$"):
        pb.grad(writes_into_a_plain_buffer)(x)
    # and pullback's own errors are not touched
    with pytest.raises(TypeError, match=r"^pullback: float\(\) of a tracked value"):
        pb.grad(lambda x: float(x[0]))(x)


@pytest.mark.parametrize("f", [
    lambda x: np.abs(1j * x[1]), lambda x: np.abs(1j + x[1]), lambda x: np.abs(1j - x[0]),
    lambda x: np.abs(1j / x[1]), lambda x: np.abs((1 + 1j) ** x[1]),
    lambda x: np.real(2j * x[0] * x[1] + x[0]) + np.imag(2j * x[0] * x[1]),
])
def test_a_python_complex_on_the_left_of_a_tracked_float_scalar(f):
    # 1j * np.float64(x) is Python's complex (np.float64 subclasses float): a node's value
    # is a NumPy scalar all the same
    x = np.array([0.3, 0.5])
    pb.check_grads(f, x, order=2)


@pb.primitive
def _cube_as_python_float(w):
    return float(w) ** 3


@pb.rrule(_cube_as_python_float, batched=True)
def _cube_rule(w):
    ans = _cube_as_python_float(w)  # the primitive again: one level down when nested
    return ans, lambda g: (3 * w * w * g,)


@pb.primitive
def _powers_as_python_floats(w):
    return float(w) ** 2, float(w) ** 3


@pb.rrule(_powers_as_python_floats, batched=True)
def _powers_rule(w):
    ans = _powers_as_python_floats(w)
    return ans, lambda g: (2 * w * g[0] + 3 * w * w * g[1],)


@pytest.mark.parametrize("f", [
    lambda w: _cube_as_python_float(w[0]) * w[1],
    lambda w: _powers_as_python_floats(w[0])[1] + _powers_as_python_floats(w[1])[0] * w[0],
])
def test_a_rule_whose_output_is_a_python_float_keeps_every_level(f):
    # a primitive's body returning float(...), and a rule that calls the primitive again:
    # the output, recorded at each level in turn, once read as constant one level up (a
    # Python float has no dtype), and every derivative past the first was 0
    w = np.array([2.0, 3.0])
    np.testing.assert_allclose(pb.grad(f)(w), central_differences(f, w), rtol=1e-6)
    hessian = pb.hessian(f)(w)
    for k in range(2):
        np.testing.assert_allclose(
            hessian[k], central_differences(lambda v, k=k: pb.grad(f)(v)[k], w),
            rtol=1e-5, atol=1e-6)
