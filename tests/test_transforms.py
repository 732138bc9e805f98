"""Higher-order transforms: jvp, jacobian, jacfwd, hessian, hvp, checkpoint, hook,
stop_gradient, nobacksies, and nesting of every transform inside every other.

The oracle is central finite differences in float64: pb.check_grads for derivatives of
the transforms themselves, and full finite-difference Jacobians and Hessians computed here
on small inputs.
"""

import math
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.special

import pullback as pb
from tests.conftest import central_differences

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3))
B = RNG.standard_normal((3, 3))


def fd_jacobian(f, x, eps=1e-6):
    """d f(x) / d x by central differences: shape f(x).shape + x.shape."""
    x = np.asarray(x, dtype=float)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = eps
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(f(x)) + x.shape)


def fd_hessian(f, x, eps=1e-4):
    """Second central differences of the values of scalar f."""
    x = np.asarray(x, dtype=float)
    n = x.size
    E = np.eye(n).reshape((n,) + x.shape) * eps
    H = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            H[i, j] = (f(x + E[i] + E[j]) - f(x + E[i] - E[j]) - f(x - E[i] + E[j])
                       + f(x - E[i] - E[j])) / (4 * eps * eps)
    return H.reshape(x.shape + x.shape)


def close(a, b, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------- functions

def mixing(x):  # (3,) -> (2,): not elementwise
    return np.tanh(A @ x) * x[0] + np.sum(x ** 2)


def matrix_in(X):  # (2, 3) -> (3,)
    return np.sum(np.sin(X) * X[::-1], axis=0)


def to_matrix(x):  # (3,) -> (3, 3)
    return np.tanh(B * x) * x[:, None]


def scalar(x):
    return np.sum(np.tanh(B @ x)) ** 2 + np.sum(np.sin(x) * x[::-1])


FUNCTIONS = [(mixing, (3,)), (matrix_in, (2, 3)), (to_matrix, (3,)), (scalar, (3,))]


# ---------------------------------------------------------------------------- grad of grad

def test_grad_nests_to_any_depth():
    f = lambda x: np.sin(x) * x ** 3  # noqa: E731
    g3 = pb.grad(pb.grad(pb.grad(f)))
    pb.check_grads(g3, 0.7, order=2)
    close(g3(0.7), fd_jacobian(pb.grad(pb.grad(f)), 0.7), rtol=1e-6)


@pytest.mark.parametrize("x, y", [(3.0, 2.0), (-1.5, 0.25)])
def test_perturbation_confusion_in_every_combination(x, y):
    # d/dx [x * d/dy (x + y)] = 1 whichever transforms take the two derivatives
    def inner_grad(x):
        return x * pb.grad(lambda y: x + y)(y)

    def inner_jvp(x):
        return x * pb.jvp(lambda y: x + y, (y,), (1.0,))[1]

    for outer in (inner_grad, inner_jvp):
        assert pb.grad(outer)(x) == 1.0
        assert pb.jvp(outer, (x,), (1.0,))[1] == 1.0
        assert pb.jacobian(outer)(np.array(x)) == 1.0
        assert pb.jacfwd(outer)(np.array(x)) == 1.0
    # d/dx [x * d/dy (x * y)] = 2x
    assert pb.grad(lambda x: x * pb.grad(lambda y: x * y)(y))(x) == 2 * x


# ---------------------------------------------------------------------------- jvp

def test_jvp_is_the_directional_derivative():
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    vx, vy = RNG.standard_normal(3), RNG.standard_normal(3)
    f = lambda x, y: np.tanh(A @ (x * y)) + np.sum(np.sin(y))  # noqa: E731
    out, t = pb.jvp(f, (x, y), (vx, vy))
    close(out, f(x, y), rtol=0, atol=0)
    eps = 1e-6
    close(t, (f(x + eps * vx, y + eps * vy) - f(x - eps * vx, y - eps * vy)) / (2 * eps))
    # derivatives of the jvp itself, in the primals and in the tangents
    pb.check_grads(lambda x, y, vx, vy: pb.jvp(f, (x, y), (vx, vy))[1], x, y, vx, vy,
                   order=2)


def test_jvp_takes_pytrees_and_scalars():
    params = {"w": np.array([1.0, 2.0]), "b": (0.5,)}
    tangent = {"w": np.array([1.0, 0.0]), "b": (2.0,)}
    f = lambda p: {"s": np.sum(p["w"] ** 2) * p["b"][0], "w": p["w"] * 3.0}  # noqa: E731
    out, t = pb.jvp(f, (params,), (tangent,))
    assert set(t) == {"s", "w"} and out["s"] == 2.5
    close(t["s"], 2 * 1.0 * 0.5 + 5.0 * 2.0)
    close(t["w"], [3.0, 0.0])
    assert pb.jvp(lambda x: x * x, (3.0,), (1.0,)) == (9.0, 6.0)
    with pytest.raises(ValueError, match=r"tangent 0 for jvp .* shape \(3,\), but primal 0"):
        pb.jvp(lambda x: x, (np.ones(2),), (np.ones(3),))


def test_jvp_survives_the_zero_cotangent_mask():
    # sqrt'(0) is infinite, so its pullback masks zero cotangents; the double vjp must
    # not run the pullback at a zero cotangent or the finite entry is lost too
    with np.errstate(all="ignore"):
        _, t = pb.jvp(np.sqrt, (np.array([0.0, 4.0]),), (np.array([1.0, 1.0]),))
    assert t[1] == 0.25


@pytest.mark.parametrize("f", [np.sqrt, np.log, np.cbrt, lambda x: x ** 0.5, lambda x: 1 / x])
def test_a_zero_tangent_at_a_singular_point_gives_zero(f):
    # the README's convention: J v with v = 0 where J is infinite is 0 (JAX: NaN); a
    # nonzero tangent there gives the infinity
    with np.errstate(all="ignore"):
        _, t = pb.jvp(f, (np.array([0.0, 0.0, 2.0]),), (np.array([0.0, 1.0, 1.0]),))
        slope = (f(2.0 + 1e-6) - f(2.0 - 1e-6)) / 2e-6
    assert t[0] == 0 and np.isinf(t[1]) and np.isclose(t[2], slope, rtol=1e-6)


# ---------------------------------------------------------------------------- Jacobians

@pytest.mark.parametrize("jac", [pb.jacobian, pb.jacfwd])
@pytest.mark.parametrize("f, shape", FUNCTIONS, ids=[f.__name__ for f, _ in FUNCTIONS])
def test_jacobian_against_finite_differences(jac, f, shape):
    x = RNG.standard_normal(shape)
    J = jac(f)(x)
    assert type(J) is np.ndarray and J.shape == np.shape(f(x)) + x.shape
    close(J, fd_jacobian(f, x))
    close(jac(f, chunk_size=2)(x), J, rtol=1e-12, atol=0)


@pytest.mark.parametrize("jac", [pb.jacobian, pb.jacfwd])
def test_jacobian_argnums_and_pytrees(jac):
    x, y = RNG.standard_normal(3), RNG.standard_normal(2)
    f = lambda x, y, scale: (np.tanh(A @ x) * y * scale, np.sum(x) * y[0])  # noqa: E731
    Jx = jac(f, argnums=0)(x, y, 2.0)
    assert isinstance(Jx, tuple) and Jx[0].shape == (2, 3) and Jx[1].shape == (3,)
    close(Jx[0], fd_jacobian(lambda x: f(x, y, 2.0)[0], x))
    (J0x, J0y), (J1x, J1y) = jac(f, argnums=(0, 1))(x, y, 2.0)
    close(J0x, Jx[0], rtol=1e-12, atol=0)
    close(J0y, fd_jacobian(lambda y: f(x, y, 2.0)[0], y))
    close(J1y, fd_jacobian(lambda y: f(x, y, 2.0)[1], y))
    params = {"W": A, "b": [np.ones(2)]}
    J = jac(lambda p: np.tanh(p["W"] @ x + p["b"][0]), chunk_size=3)(params)
    assert set(J) == {"W", "b"} and J["W"].shape == (2, 2, 3) and J["b"][0].shape == (2, 2)
    close(J["W"], fd_jacobian(lambda W: np.tanh(W @ x + 1.0), A))
    # chunks of a Jacobian that is itself differentiated are joined differentiably
    pb.check_grads(lambda x: jac(mixing, chunk_size=2)(x), x)


@pytest.mark.parametrize("jac", [pb.jacobian, pb.jacfwd])
def test_elementwise_maps_and_lookalikes(jac):
    # an elementwise map has a diagonal Jacobian; reversing or broadcasting does not
    x = RNG.standard_normal((2, 3))
    c = RNG.standard_normal(3)
    cases = [lambda x: np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(x) * c,
             lambda x: x,
             lambda x: np.sin(x) * x[::-1],
             lambda x: x * np.sum(x),
             lambda x: np.tanh(x) * np.ones((2, 2, 3))]
    for f in cases:
        close(jac(f)(x), fd_jacobian(f, x))


def test_jacobian_rejects_complex_where_undefined():
    with pytest.raises(TypeError, match="complex outputs"):
        pb.jacobian(lambda x: x * 1j)(np.ones(2))
    with pytest.raises(TypeError, match="complex arguments"):
        pb.jacfwd(lambda z: np.abs(z))(np.ones(2) + 0j)


# ---------------------------------------------------------------------------- Hessians

def test_hessian_against_finite_differences_and_symmetric():
    for shape in [(3,), (2, 2)]:
        x = RNG.standard_normal(shape)
        f = lambda x: np.sum(np.tanh(x * x[::-1]) ** 2) + np.sum(np.sin(x)) ** 3  # noqa: E731
        H = pb.hessian(f)(x)
        assert H.shape == x.shape + x.shape
        close(H, fd_hessian(f, x), rtol=1e-5, atol=1e-6)
        flat = H.reshape(x.size, x.size)
        close(flat, flat.T, rtol=1e-12, atol=1e-12)
        close(pb.hessian(f, chunk_size=1)(x), H, rtol=1e-12, atol=0)
        close(pb.jacfwd(pb.grad(f))(x), H, rtol=1e-10, atol=1e-12)
        pb.check_grads(pb.hessian(f), x)


def test_hessian_blocks_for_several_arguments():
    x, y = RNG.standard_normal(3), RNG.standard_normal(2)
    f = lambda x, y: np.sum(np.tanh(A @ x) * y) ** 2  # noqa: E731
    (Hxx, Hxy), (Hyx, Hyy) = pb.hessian(f, argnums=(0, 1))(x, y)
    assert Hxy.shape == (3, 2) and Hyx.shape == (2, 3)
    close(Hxy, Hyx.T, rtol=1e-12, atol=1e-12)
    xy = np.concatenate([x, y])
    full = fd_hessian(lambda v: f(v[:3], v[3:]), xy)
    close(np.block([[Hxx, Hxy], [Hyx, Hyy]]), full, rtol=1e-5, atol=1e-6)


def test_hvp_is_the_hessian_times_the_vector():
    x, y = RNG.standard_normal(3), RNG.standard_normal(2)
    vx, vy = RNG.standard_normal(3), RNG.standard_normal(2)
    f = lambda x, y: np.sum(np.tanh(A @ x) * y) ** 2 + np.sum(np.sin(x))  # noqa: E731
    Hvx, Hvy = pb.hvp(f, (x, y), (vx, vy))
    (Hxx, Hxy), (Hyx, Hyy) = pb.hessian(f, argnums=(0, 1))(x, y)
    close(Hvx, Hxx @ vx + Hxy @ vy, rtol=1e-10, atol=1e-12)
    close(Hvy, Hyx @ vx + Hyy @ vy, rtol=1e-10, atol=1e-12)
    (only,) = pb.hvp(lambda x: f(x, y), (x,), (vx,))
    close(only, Hxx @ vx, rtol=1e-10, atol=1e-12)
    close(pb.hvp(f, (x, y), (vx,), argnums=0), Hxx @ vx, rtol=1e-10, atol=1e-12)
    pb.check_grads(lambda x, v: pb.hvp(lambda x: f(x, y), (x,), (v,))[0], x, vx)


# ---------------------------------------------------------------------------- mixed nesting

def test_grad_of_jvp_and_jacobian_of_grad():
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    H = pb.hessian(scalar)(x)
    close(pb.grad(lambda x: pb.jvp(scalar, (x,), (v,))[1])(x), H @ v, rtol=1e-10)
    close(pb.jacobian(pb.grad(scalar))(x), H, rtol=1e-12)
    close(pb.jvp(pb.grad(scalar), (x,), (v,))[1], H @ v, rtol=1e-10)
    pb.check_grads(lambda x: pb.jacfwd(mixing)(x), x, order=2)
    pb.check_grads(lambda x: pb.jacobian(mixing)(x), x, order=2)


def test_forward_mode_and_the_tracker_inside_grad():
    # inside a transform a param belongs to that transform's computation; at top level
    # (level 0) transforms hand back plain values, as grad does
    v = RNG.standard_normal(3)

    def f(x):
        p = pb.param(x)
        np.sum(pb.jvp(mixing, (p,), (v,))[1] ** 2).backward()
        return np.sum(p.grad * x)

    def same_without_tracker(x):
        return np.sum(pb.grad(lambda x: np.sum(pb.jvp(mixing, (x,), (v,))[1] ** 2))(x) * x)

    x = RNG.standard_normal(3)
    close(pb.grad(f)(x), pb.grad(same_without_tracker)(x), rtol=1e-12)
    pb.check_grads(same_without_tracker, x)


def test_backward_inside_a_differentiated_function():
    def f(x):
        p = pb.param(x * 2.0)           # a param made inside f
        np.sum(p ** 3).backward()       # p.grad = 3 (2x)^2, still a function of x
        return np.sum(p.grad * np.sin(x))

    x = RNG.standard_normal(3)
    pb.check_grads(f, x, order=2)
    close(pb.hessian(f)(x), fd_hessian(f, x), rtol=1e-5, atol=1e-5)


def test_a_value_escaping_a_finished_computation_is_a_constant_later():
    leaked = []

    def f(x):
        leaked.append(np.sin(x))
        return np.sum(x ** 2)

    x = np.array([0.5, 1.0])
    pb.grad(f)(x)
    J = pb.jacobian(lambda x: leaked[0] * x)(x)
    close(J, np.diag(np.sin(x)), rtol=1e-15, atol=0)
    H = pb.hessian(lambda x: np.sum(leaked[0] * x ** 2))(x)
    close(H, np.diag(2 * np.sin(x)), rtol=1e-15, atol=0)
    assert pb.jvp(lambda x: np.sum(leaked[0] * x), (x,), (np.ones(2),))[1] == np.sum(np.sin(x))


# ---------------------------------------------------------------------------- checkpoint

def test_checkpoint_gives_the_same_values_and_derivatives():
    def block(h, p):
        return np.tanh(h @ p["W"] + p["b"]), np.sum(h ** 2)

    ck = pb.checkpoint(block)
    p = {"W": RNG.standard_normal((3, 3)), "b": RNG.standard_normal(3)}
    x = RNG.standard_normal((2, 3))
    for fn in (block, ck):
        assert fn.__name__ == "block"

    def loss(x, p, fn):
        h, r = fn(x, p)
        h, s = fn(h, p)
        return np.sum(h ** 3) + r * s

    close(loss(x, p, ck), loss(x, p, block), rtol=0, atol=0)
    g = pb.grad(loss, argnums=(0, 1))(x, p, ck)
    want = pb.grad(loss, argnums=(0, 1))(x, p, block)
    close(g[0], want[0], rtol=1e-12)
    close(g[1]["W"], want[1]["W"], rtol=1e-12)
    pb.check_grads(lambda x, p: loss(x, p, ck), x, p, order=2)
    close(pb.hessian(loss)(x, p, ck), pb.hessian(loss)(x, p, block), rtol=1e-10, atol=1e-12)
    close(pb.jacobian(lambda x: ck(x, p)[0])(x), pb.jacobian(lambda x: block(x, p)[0])(x))
    W = pb.param(p["W"])
    loss(x, {"W": W, "b": p["b"]}, ck).backward()
    close(W.grad, want[1]["W"], rtol=1e-12)


def test_checkpoint_reruns_with_the_random_state_restored():
    def noisy(h):
        return np.tanh(h * np.random.randn(*h.shape)) * (np.random.rand(*h.shape) > 0.3)

    ck = pb.checkpoint(noisy)
    x = RNG.standard_normal(5)
    results = []
    for fn in (noisy, ck):
        np.random.seed(7)
        g = pb.grad(lambda x, fn=fn: np.sum(fn(fn(x)) ** 2))(x)
        results.append((g, np.random.rand()))
    close(results[1][0], results[0][0], rtol=1e-12)
    assert results[1][1] == results[0][1]  # the global state moves on as without checkpoint


@pb.primitive
def _square_and_sine(x):
    return x ** 2, np.sin(x)


@pb.rrule(_square_and_sine)
def _square_and_sine_rule(x):
    def square_and_sine_pullback(g):  # takes one slice of a batch at a time
        g_square, g_sine = g
        return (2 * x * g_square + np.cos(x) * g_sine,)

    return _square_and_sine(x), square_and_sine_pullback


@pytest.mark.parametrize("out", [0, 1, "both"])
def test_jacobian_through_a_rule_with_several_outputs(out):
    # a batched cotangent of several outputs goes to the pullback one slice of each at a
    # time (it used to get each output's whole batch, wrong as the batch had two rows)
    def f(x):
        a, b = _square_and_sine(x)
        return a + b if out == "both" else (a, b)[out]

    for x in (np.array([0.3, -0.7]), np.array([0.3, -0.7, 0.2])):
        close(pb.jacobian(f)(x), fd_jacobian(f, x))


def test_a_complex_cotangent_or_tangent_for_a_real_value_is_refused():
    # its imaginary part used to be dropped without a word
    _, pull = pb.vjp(np.sin, np.ones(2))
    with pytest.raises(TypeError, match="cotangent 0 for sin is complex but the output is real"):
        pull(np.ones(2) * 1j)
    with pytest.raises(TypeError, match="tangent 0 for jvp of sin is complex but primal 0 is real"):
        pb.jvp(np.sin, (np.ones(2),), (np.ones(2) * 1j,))
    z = np.ones(2) + 0j  # a complex primal takes them
    close(pb.vjp(lambda z: z * 2.0, z)[1](np.ones(2) * 1j)[0], 2j * np.ones(2))
    close(pb.jvp(lambda z: z * 2.0, (z,), (np.ones(2) * 1j,))[1], 2j * np.ones(2))


@pytest.mark.parametrize("changes", ["an array replaced", "a Generator", "a counter"])
def test_checkpoint_refuses_a_function_whose_rerun_differs(changes):
    # the backward pass runs the function again: state it reads that changed since the
    # forward pass used to give the gradient at other values, without a word (an array it
    # closes over is held read-only instead: tests/test_tracker_misuse.py)
    scales, rng, calls = [np.array([1.0, 2.0, 3.0])], np.random.default_rng(0), [0]

    def block(h):
        calls[0] += 1
        noise = rng.standard_normal(3) if changes == "a Generator" else 1.0
        return np.sin(h * scales[0] * noise * (calls[0] if changes == "a counter" else 1))

    def loss(x):
        y = pb.checkpoint(block)(x)
        if changes == "an array replaced":
            scales[0] = scales[0] * 10.0
        return np.sum(y)

    with pytest.raises(RuntimeError, match=r"checkpoint\(.*block\) ran .*block again.*another "
                                           r"output.*as arguments"):
        pb.grad(loss)(np.ones(3))


def test_checkpoint_refuses_tracked_closures():
    x = RNG.standard_normal(3)

    def f(w):
        return np.sum(pb.checkpoint(lambda h: h * w)(x * w))

    with pytest.raises(TypeError, match="not one of its arguments"):
        pb.grad(f)(x)


def _writes_into_its_argument(h):
    h[0] = h[1] * 2.0
    return h * 1.0


def _multiplies_its_argument_in_place(h):
    h *= 2.0
    return h


@pytest.mark.parametrize("block", [_writes_into_its_argument, _multiplies_its_argument_in_place])
def test_checkpoint_refuses_a_function_that_writes_into_its_argument(block):
    # the write would change the caller's array behind the graph, and the rerun would read it
    x, message = RNG.standard_normal(3), "writes into a tracked argument"
    with pytest.raises(ValueError, match=message):
        pb.grad(lambda x: np.sum(pb.checkpoint(block)(x * 1.0)))(x)
    with pytest.raises(ValueError, match=message):  # an argument the guard holds already
        pb.grad(lambda x: np.sum(pb.checkpoint(block)(x) * x))(x)
    W = pb.param(x.copy())
    with pytest.raises(ValueError, match=message):
        pb.checkpoint(block)(W)
    np.testing.assert_array_equal(W.value, x)
    w = x.copy()  # the argument is writeable again afterwards
    w[0] = 1.0


def _chain(h, layers):
    for _ in range(layers):
        h = np.sin(h) * 1.01 + 0.1 * h
    return h


def test_checkpoint_holds_about_the_square_root_of_the_intermediates():
    n_layers, size = 50, 20_000
    layer_bytes = size * 8
    seg = round(math.sqrt(n_layers))
    segment = pb.checkpoint(_chain)

    def plain_loss(x):
        return np.sum(_chain(x, n_layers))

    def checkpointed_loss(x):
        h = x
        for start in range(0, n_layers, seg):
            h = segment(h, min(seg, n_layers - start))
        return np.sum(h)

    x = RNG.standard_normal(size)
    peaks, grads = [], []
    for loss in (plain_loss, checkpointed_loss):
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            grads.append(pb.grad(loss)(x))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    close(grads[1], grads[0], rtol=1e-12)
    plain, ck = peaks[0] / layer_bytes, peaks[1] / layer_bytes  # in arrays of x's size
    # without checkpointing every layer keeps its intermediates (4 arrays: sin, two
    # products, the sum); with it, the segment boundaries plus one segment's
    # intermediates at a time: about 2 sqrt(n) layers' worth instead of n
    per_layer = 4
    assert plain > per_layer * n_layers, (plain, ck)
    assert ck < 1.5 * (n_layers / seg + per_layer * seg), (plain, ck)
    assert ck < plain / 3, (plain, ck)


# ---------------------------------------------------------------------------- hook, stop_gradient

def test_hook_maps_the_cotangent():
    x = RNG.standard_normal(3)
    double = lambda g: 2.0 * g  # noqa: E731
    f = lambda x: np.sum(np.sin(pb.hook(double, x)))  # noqa: E731
    y = pb.hook(double, x)
    assert y is x  # nothing to track: x itself
    close(pb.grad(f)(x), 2 * fd_jacobian(lambda x: np.sum(np.sin(x)), x))
    clip = lambda g: np.clip(g, -0.5, 0.5)  # noqa: E731
    close(pb.grad(lambda x: np.sum(3.0 * pb.hook(clip, x)))(x), np.full(3, 0.5))
    # batched cotangents reach fn in a Jacobian
    close(pb.jacobian(lambda x: np.tanh(pb.hook(double, x)))(x), 2 * fd_jacobian(np.tanh, x))
    # the identity hook changes nothing, to second order
    pb.check_grads(lambda x: np.sum(np.tanh(pb.hook(lambda g: g, x)) ** 3), x, order=2)


def test_hook_applies_at_every_level_of_nesting():
    # f(x) = sum(hook(c*, x) ** 3): the inner gradient is c * 3x^2 and the outer
    # derivative, which also meets the hook, c * d/dx (c * 3x^2)
    c, x = 2.0, RNG.standard_normal(3)
    f = lambda x: np.sum(pb.hook(lambda g: c * g, x) ** 3)  # noqa: E731
    plain_grad = pb.grad(lambda x: np.sum(x ** 3))
    close(pb.grad(f)(x), c * plain_grad(x), rtol=1e-15)
    close(pb.hessian(f)(x), c * c * fd_jacobian(plain_grad, x), rtol=1e-6)


def test_stop_gradient_is_a_constant_at_every_level():
    x = RNG.standard_normal(3)
    y = pb.stop_gradient(x)
    assert y is x
    close(pb.grad(lambda x: np.sum(x * pb.stop_gradient(x)))(x), x, rtol=0, atol=0)
    tree = pb.stop_gradient({"a": pb.param(x), "b": [1.0]})
    assert type(tree["a"]) is np.ndarray and tree["b"] == [1.0]

    def outer(x):  # the inner derivative is stop_gradient(x): a constant outside too
        return x * pb.grad(lambda y: pb.stop_gradient(x) * y)(1.0)

    assert pb.grad(outer)(3.0) == 3.0
    assert pb.hessian(lambda x: np.sum(np.sin(x) * pb.stop_gradient(x) ** 2))(x).shape == (3, 3)


# ---------------------------------------------------------------------------- user rules

@pb.primitive
def softplus(x):
    return np.logaddexp(0.0, x)


@pb.rrule(softplus)
def softplus_rule(x):
    def softplus_pullback(g):
        return (g * scipy.special.expit(x),)

    return softplus(x), softplus_pullback


@pb.primitive
def softplus2(x):
    return np.logaddexp(0.0, x)


@pb.rrule(softplus2)
def softplus2_rule(x):
    def softplus2_pullback(g):
        return (g / (1.0 + np.exp(-x)),)

    return softplus2(x), softplus2_pullback


@pb.primitive
def rowsum(x):
    return np.sum(x, axis=1)


@pb.primitive
def rowsum_unbatched(x):
    return np.sum(x, axis=1)


def _rowsum_rule(fn):
    def rowsum_rule(x):
        n = np.shape(x)[1]

        def rowsum_pullback(g):
            return (np.outer(g, np.ones(n)),)  # np.outer flattens any batch axes

        return fn(x), rowsum_pullback

    return rowsum_rule


pb.rrule(rowsum, batched=True)(_rowsum_rule(rowsum))  # declared, wrongly
pb.rrule(rowsum_unbatched, batched=False)(_rowsum_rule(rowsum_unbatched))


def test_user_rules_in_jacobians_and_hessians():
    x = RNG.standard_normal(4)
    w = RNG.standard_normal(4)
    close(pb.jacobian(softplus)(x), fd_jacobian(softplus, x))
    g = lambda x: np.sum(softplus(x * w) * x)  # noqa: E731
    close(pb.hessian(g)(x), fd_hessian(g, x), rtol=1e-5, atol=1e-6)
    close(pb.jacfwd(lambda x: softplus2(x) * w)(x), fd_jacobian(lambda x: softplus2(x) * w, x))
    f = lambda x: np.sum(softplus2(np.tanh(x) * w)) ** 2  # noqa: E731
    close(pb.hessian(f)(x), fd_hessian(f, x), rtol=1e-5, atol=1e-6)
    pb.check_grads(f, x, order=2)


def test_a_rule_marked_unbatched_is_applied_per_slice():
    X = RNG.standard_normal((2, 3))
    J = pb.jacobian(lambda X: np.tanh(rowsum_unbatched(X)))(X)
    close(J, fd_jacobian(lambda X: np.tanh(np.sum(X, axis=1)), X))
    with pytest.raises(ValueError, match="rowsum_pullback"):
        pb.jacobian(lambda X: np.tanh(rowsum(X)))(X)  # the same pullback, batched


@pb.primitive
def reverse(x):
    return x[::-1]


@pb.primitive
def reverse_batched(x):
    return x[::-1]


pb.linear(reverse, lambda g, ans, x: g[::-1])  # written for one cotangent: applied per slice
pb.linear(reverse_batched, lambda g, ans, x: g[..., ::-1], batched=True)


@pytest.mark.parametrize("fn", [reverse, reverse_batched])
def test_a_users_linear_transpose_keeps_the_batch_contract_of_rrule(fn):
    x = RNG.standard_normal(3)
    close(pb.jacobian(lambda x: fn(x) * x)(x), fd_jacobian(lambda x: x[::-1] * x, x))
    close(pb.hessian(lambda x: np.sum(fn(x) * x ** 2))(x),
          fd_hessian(lambda x: np.sum(x[::-1] * x ** 2), x), rtol=1e-5, atol=1e-6)


@pb.primitive
def cube(x):
    return x ** 3


@pb.rrule(cube)
@pb.nobacksies
def cube_rule(x):
    def cube_pullback(g):
        return (g * 3.0 * x ** 2,)

    return cube(x), cube_pullback


@pb.primitive
def cube_lazily(x):
    return x ** 3


@pb.rrule(cube_lazily)
@pb.nobacksies
def cube_lazily_rule(x):
    def cube_lazily_pullback(g):
        def cotangent():  # a thunk: computed only if x needs it
            return g * 3.0 * x ** 2

        return (cotangent,)

    return cube_lazily(x), cube_lazily_pullback


@pytest.mark.parametrize("fn", [cube, cube_lazily], ids=["cube", "cube_lazily"])
def test_nobacksies_allows_first_derivatives_only(fn):
    x = np.array([1.0, 2.0])
    J = fd_jacobian(lambda x: x ** 3, x)
    close(pb.grad(lambda x: np.sum(fn(x)))(x), np.sum(J, axis=0))
    close(pb.jacobian(fn)(x), J)
    assert pb.grad(lambda y: pb.grad(lambda x: x * y)(2.0) + fn(y))(1.0) == 4.0
    for second in (lambda: pb.grad(pb.grad(fn))(2.0),
                   lambda: pb.hessian(lambda x: np.sum(fn(x)))(x),
                   lambda: pb.jvp(fn, (x,), (x,))):
        with pytest.raises(pb.NestedDifferentiationError, match=fn.__name__):
            second()


@pb.primitive
def _twice(x):
    return 2.0 * x


@pb.rrule(_twice, batched=False)
def _twice_rule(x):
    def twice_pullback(g):
        def cotangent():
            return 2.0 * g

        return (cotangent,)

    return _twice(x), twice_pullback


def test_unbatched_rule_with_thunks_in_a_jacobian():
    np.testing.assert_array_equal(pb.jacobian(_twice)(np.ones(3)), 2 * np.eye(3))


def test_transforms_compute_inside_no_grad():
    with pb.no_grad():
        g = pb.grad(lambda x: np.sum(x ** 2))(np.arange(3.0))
        J = pb.jacobian(lambda x: np.sin(x) * x[::-1])(np.arange(3.0))
    np.testing.assert_array_equal(g, [0.0, 2.0, 4.0])
    np.testing.assert_allclose(J, pb.jacobian(lambda x: np.sin(x) * x[::-1])(np.arange(3.0)))
    assert isinstance(np.sin(pb.param(1.0)), pb.Tracked)


@pytest.mark.parametrize("f", [
    lambda t: np.exp(1j * t),                      # elementwise: the diagonal shortcut
    lambda t: np.exp(1j * t) * (2.0 - 1j) + t,
    lambda t: np.exp(1j * t[::-1]),                # not elementwise: the double vjp
])
def test_jacfwd_keeps_the_imaginary_part_of_complex_outputs(f):
    x = np.array([0.3, -1.2, 0.7])
    J = pb.jacfwd(f)(x)
    assert J.dtype.kind == "c"
    np.testing.assert_allclose(J, fd_jacobian(f, x), rtol=1e-6, atol=1e-8)
    (J0, J1) = pb.jacfwd(lambda t: (f(t), np.sin(t)))(x)
    np.testing.assert_allclose(J0, fd_jacobian(f, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(J1, np.diag(np.cos(x)), rtol=1e-12)


def test_hvp_refuses_an_array_for_its_tuples():
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"hvp of .* takes tangents as a tuple.*pb\.hvp\(f"):
        pb.hvp(lambda x: np.sum(x ** 3), (x,), np.ones(3))
    with pytest.raises(TypeError, match="takes primals as a tuple"):
        pb.hvp(lambda x: np.sum(x ** 3), x, (np.ones(3),))
    (Hv,) = pb.hvp(lambda x: np.sum(x ** 3), [x], [np.ones(3)])  # any sequence is fine
    np.testing.assert_allclose(Hv, fd_jacobian(pb.grad(lambda x: np.sum(x ** 3)), x) @ np.ones(3),
                               rtol=1e-6)


@pytest.mark.parametrize("f", [
    lambda y: (y * 2.0).astype(np.float32),         # elementwise: the diagonal shortcut
    lambda y: np.cumsum(y).astype(np.float32),      # not elementwise, the output's shape
    lambda y: np.cumsum(y)[:2].astype(np.float32),  # one array out of another shape
    lambda y: np.sin(y.astype(np.float32)),
], ids=["elementwise", "cumsum", "fewer-outputs", "float32-inside"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jacobian_and_jacfwd_give_the_arguments_dtype_as_grad_does(f, dtype):
    # jacobian gave float64 and jacfwd float32 for a float64 argument and a float32 output
    y = np.array([0.5, -1.0, 2.0], dtype)
    J, Jf = pb.jacobian(f)(y), pb.jacfwd(f)(y)
    assert J.dtype == Jf.dtype == pb.grad(lambda y: np.sum(f(y)))(y).dtype == dtype
    expected = fd_jacobian(lambda y: f(y).astype(float), y, eps=1e-3)
    close(J, expected, rtol=1e-3, atol=1e-3)
    close(Jf, J, rtol=1e-6, atol=1e-6)


def test_jvp_and_hvp_match_a_tangent_to_its_primal_by_key_and_position():
    d = {"a": np.array([0.3, -0.7]), "b": np.array([1.1, 0.4])}
    t = {"b": np.array([0.5, 2.0]), "a": np.array([-1.0, 0.25])}  # the keys in another order
    f = lambda d: np.sum(np.sin(d["a"]) * d["b"] ** 2)  # noqa: E731
    eps = 1e-6
    step = lambda s: {k: d[k] + s * t[k] for k in d}  # noqa: E731
    _, df = pb.jvp(f, (d,), (t,))
    close(df, (f(step(eps)) - f(step(-eps))) / (2 * eps))
    x, y, v = np.array([0.5, 1.5]), np.array([2.0, -1.0]), np.array([1.0, -3.0])
    g = lambda x, y: np.sum(np.exp(x) * y ** 3)  # noqa: E731
    grad_y = pb.grad(g, argnums=1)  # the tangent of argnums=1 goes with primal 1
    expected = (grad_y(x, y + eps * v) - grad_y(x, y - eps * v)) / (2 * eps)
    close(pb.hvp(g, (x, y), (v,), argnums=1), expected)
    close(pb.hvp(g, (x, y), [v], argnums=(1,))[0], expected)


@pytest.mark.parametrize("transform", [pb.jacobian, pb.jacfwd])
@pytest.mark.parametrize("f", [np.cumsum, np.sort, lambda x: x[::-1], lambda x: (x, 2 * x),
                               lambda x: x @ np.ones((0, 3))])
def test_jacobians_of_size_0_outputs_are_empty_arrays_of_their_shape(transform, f):
    x = np.zeros(0)
    out = f(x)
    got = transform(f)(x)
    for o, j in zip(pb.tree_flatten(out)[0], pb.tree_flatten(got)[0]):
        assert isinstance(j, np.ndarray) and j.shape == np.shape(o) + x.shape
    assert pb.hessian(lambda x: np.sum(np.cumsum(x) ** 2))(x).shape == (0, 0)


def test_a_jitted_elementwise_jacobian_is_zero_off_its_diagonal_where_it_is_infinite():
    x = np.array([0.0, 1.0, 2.0])  # np.sqrt's derivative is infinite at 0
    eager = pb.jacobian(np.sqrt)(x)
    np.testing.assert_array_equal(eager[~np.eye(3, dtype=bool)], 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(pb.jit(pb.jacobian(np.sqrt))(x), eager)


def test_the_hessian_of_a_function_of_a_complex_argument_is_refused_naming_hvp():
    f = lambda z: np.sum(np.abs(z) ** 2)  # noqa: E731  (a real function of complex z)
    with pytest.raises(TypeError, match=r"^pullback: pb\.hessian of .*<lambda> needs real "
                                        r"arguments, and argument 0 is complex.*pb\.hvp"):
        pb.hessian(f)(np.array([1.0 + 2j, 0.5j]))
    x = np.array([1.0, -0.5])  # a real argument: its Hessian, by differences of differences
    want = np.stack([central_differences(lambda y, i=i: central_differences(f, y, 1e-4)[i], x,
                                         1e-4) for i in range(2)])
    np.testing.assert_allclose(pb.hessian(f)(x), want, rtol=1e-5, atol=1e-6)
