"""Dask data, NumPy parameters: ``pb.value_and_grad`` of a loss over Dask arrays builds one
lazy graph, and ``dask.compute(value, grad)`` evaluates it in one pass. Skipped without
``pip install 'pullback[dask]'``."""

import pickle

import numpy as np
import pytest

import pullback as pb

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
from dask.callbacks import Callback  # noqa: E402

from tests.conftest import central_differences  # noqa: E402


class Computes(Callback):
    """Counts the graphs Dask starts to compute (one per ``compute`` call)."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def _start(self, dsk):
        self.count += 1


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def data(n, chunk, seed=0):
    rng = da.random.default_rng(seed)
    X = rng.standard_normal((n, 3), chunks=(chunk, 3))
    y = (rng.random(n, chunks=chunk) < 0.5).astype(np.float64)
    return X, y


W = np.array([0.3, -0.5, 0.2])


def central_difference(f, w, direction, *rest, eps=1e-6):
    up, down = dask.compute(f(w + eps * direction, *rest), f(w - eps * direction, *rest))
    return (up - down) / (2 * eps)


LOSSES = {
    "logistic": logistic_loss,
    "mean of a product": lambda w, X, y: np.mean(X @ w),  # a cotangent broadcast up
    "log and where": lambda w, X, y: np.sum(
        np.where(y > 0.5, np.log(1.0 + np.exp(X @ w)), np.tanh(X @ w) ** 2)),
    "bias and scale": lambda w, X, y: np.mean((X * w[0] + w[1] - y[:, None]) ** 2) * w[2],
}


@pytest.mark.parametrize("name", LOSSES)
def test_value_and_grad_compute_nothing_until_asked_then_once(name):
    loss = LOSSES[name]
    X, y = data(2_000, 500)
    with Computes() as counter:
        value, g = pb.value_and_grad(loss)(W, X, y)
    assert counter.count == 0
    assert isinstance(value, da.Array) and isinstance(g, da.Array)
    assert g.shape == W.shape and g.dtype == W.dtype
    with Computes() as counter:
        value, g = dask.compute(value, g)
    assert counter.count == 1
    assert value == pytest.approx(float(loss(W, X, y).compute()), rel=1e-12)
    direction = np.random.default_rng(1).standard_normal(3)
    expected = central_difference(loss, W, direction, X, y)
    assert np.dot(g, direction) == pytest.approx(expected, rel=1e-6, abs=1e-8)


def test_the_graph_holds_no_array_the_size_of_the_data():
    X, y = data(50_000_000, 1_000_000)  # 1.2 GB of X and 400 MB of y, never computed
    with Computes() as counter:
        value, g = pb.value_and_grad(logistic_loss)(W, X, y)
    assert counter.count == 0
    graph = {**dict(value.__dask_graph__()), **dict(g.__dask_graph__())}
    assert len(graph) < 40 * 50   # a few dozen tasks per chunk
    assert len(pickle.dumps(graph)) < 1 << 20   # the seed is built like the loss, in Dask
    # the mean's cotangent takes the chunks of the mean's input: no one-chunk broadcast
    names = {key[0] if isinstance(key, tuple) else key for key in graph}
    assert not [name for name in names if name.startswith("broadcast_to")]


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # (in Dask's threads)
def test_a_non_finite_loss_raises_when_computed():
    X, y = data(1_000, 250)
    X = da.where(da.arange(1_000)[:, None] == 600, np.nan, X)
    with Computes() as counter:
        value, g = pb.value_and_grad(logistic_loss)(W, X, y)
    assert counter.count == 0
    with pytest.raises(pb.LossError, match="loss of logistic_loss is nan.*Dask array"):
        dask.compute(value, g)
    with pytest.raises(pb.LossError):
        g.compute()   # the gradient depends on the check too
    value, g = pb.value_and_grad(logistic_loss, losscheck=False)(W, X, y)
    value, g = dask.compute(value, g)
    assert np.isnan(value) and np.all(np.isnan(g))


def test_only_the_gradients_last_tasks_wait_for_the_losscheck():
    # were the seed to wait for the loss, every chunk of the forward pass would stay in
    # memory until the whole loss was known
    from dask.core import flatten, get_dependencies

    value, g = pb.value_and_grad(logistic_loss)(W, *data(2_000, 500))
    (check,) = flatten(value.__dask_keys__())
    assert check[0].startswith("pullback-losscheck")
    graph = dict(g.__dask_graph__())
    waiting = {key for key in graph if check in get_dependencies(graph, key)}
    assert waiting == set(flatten(g.__dask_keys__()))


def test_grad_of_a_lazy_loss_with_aux():
    X, y = data(1_000, 250)

    def loss(w, X, y):
        z = X @ w
        return np.mean((z - y) ** 2), z

    (value, z), g = pb.value_and_grad(loss, has_aux=True)(W, X, y)
    value, z, g = dask.compute(value, z, g)
    assert z.shape == (1_000,)
    assert value == pytest.approx(np.mean((z - y.compute()) ** 2))
    assert np.allclose(g, pb.grad(lambda w: loss(w, X.compute(), y.compute())[0])(W))


def test_backward_of_a_lazy_loss_computes_nothing():
    X, y = data(1_000, 250)
    W_ = pb.param(W.copy())
    with Computes() as counter:
        logistic_loss(W_, X, y).backward()
    assert counter.count == 0 and isinstance(W_.grad, da.Array)
    direction = np.array([1.0, -2.0, 0.5])
    (g,) = dask.compute(W_.grad)
    expected = central_difference(logistic_loss, W, direction, X, y)
    assert np.dot(g, direction) == pytest.approx(expected, rel=1e-6)


def test_a_loss_that_is_no_scalar_names_the_fix():
    X, _ = data(100, 50)
    with pytest.raises(TypeError, match=r"Dask array of shape \(100,\).*np\.sum"):
        pb.grad(lambda w, X: X @ w)(W, X)


def test_on_a_distributed_cluster():
    distributed = pytest.importorskip("distributed")
    X, y = data(4_000, 1_000)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit="500MB") as cluster, \
            distributed.Client(cluster):
        value, g = dask.compute(*pb.value_and_grad(logistic_loss)(W, X, y))
    local, expected = pb.value_and_grad(logistic_loss)(W, X.compute(), y.compute())
    assert value == pytest.approx(local, rel=1e-12) and np.allclose(g, expected, rtol=1e-10)


@pytest.mark.parametrize("f", [
    lambda x: da.sum(x ** 2), lambda x: da.mean(x), lambda x: da.dot(x, x.T).sum(),
    lambda x: da.concatenate([x, x]).sum(), lambda x: da.map_blocks(np.sin, x).sum(),
    lambda x: da.from_array(x).sum(), lambda x: da.einsum("ij->", x),
])
def test_a_dask_array_function_given_a_tracked_value_is_refused(f):
    # Dask would hold the tracked value as a constant: the gradient would be zero
    x = da.from_array(np.arange(6.0).reshape(3, 2), chunks=(2, 2))
    with pytest.raises(TypeError, match="dask.array function .* got a tracked value"):
        dask.compute(*pb.value_and_grad(f)(x))
    with pytest.raises(TypeError, match="dask.array function"):
        pb.grad(f)(np.arange(6.0).reshape(3, 2))
    # NumPy's own functions on the Dask-backed value keep the gradient
    value, g = dask.compute(*pb.value_and_grad(lambda x: np.sum(x ** 2))(x))
    np.testing.assert_allclose(g, 2 * np.arange(6.0).reshape(3, 2))


def test_a_non_finite_lazy_loss_raises_through_the_tracker_too():
    data = np.ones((8, 3))
    data[5, 1] = np.nan
    X = da.from_array(data, chunks=(4, 3))
    W = pb.param(np.ones(3))
    np.mean((X @ W) ** 2).backward()
    with pytest.raises(pb.LossError, match="Dask array"):
        W.grad.compute()
    gs = pb.gradient(lambda: np.mean((X @ W) ** 2), pb.Params([W]))
    with pytest.raises(pb.LossError, match="Dask array"):
        gs[W].compute()
    V = pb.param(np.ones(3))  # a finite loss: the gradient as NumPy's
    np.mean((da.from_array(np.ones((8, 3)), chunks=(4, 3)) @ V) ** 2).backward()
    np.testing.assert_allclose(V.grad.compute(), np.full(3, 6.0))


def test_update_with_a_lazy_step_computes_it_into_the_numpy_param():
    X = da.from_array(np.ones((8, 3)), chunks=(4, 3))
    W = pb.param(np.zeros(3))
    np.mean((X @ W - 1.0) ** 2).backward()
    pb.update(W, -0.1 * W.grad)
    assert type(W.value) is np.ndarray
    np.testing.assert_allclose(W.value, np.full(3, 0.2))


def test_take_along_axis_of_a_dask_array():
    data = np.arange(12.0).reshape(4, 3)
    labels = np.array([[0], [2], [1], [0]])

    def f(x):
        return np.sum(np.take_along_axis(x, labels, axis=1) ** 2)

    value, g = dask.compute(*pb.value_and_grad(f)(da.from_array(data, chunks=(2, 3))))
    want_value, want = pb.value_and_grad(f)(data)
    np.testing.assert_allclose(value, want_value)
    np.testing.assert_allclose(g, want)


def test_jit_refuses_a_dask_argument_naming_it():
    x = da.from_array(np.ones((8, 3)), chunks=(4, 3))
    with pytest.raises(TypeError, match=r"got a dask\.array\.core\.Array: pb\.jit records "
                                        r"NumPy programs"):
        pb.jit(pb.value_and_grad(lambda w, x: np.mean((x @ w) ** 2)))(np.zeros(3), x)


def test_an_integer_or_boolean_dask_loss_is_refused_as_numpys():
    X = da.from_array(np.arange(12.0).reshape(4, 3) - 5, chunks=2)
    w = np.array([0.5, -1.0, 2.0])
    for loss in (lambda w: np.sum(X @ w > 0), lambda w: np.any(X @ w > 0)):
        with pytest.raises(TypeError, match="(?s)^pullback: .*no derivative"):
            pb.grad(loss)(w)
        with pytest.raises(TypeError):  # (the same code on NumPy data)
            pb.grad(lambda w: np.sum(X.compute() @ w > 0))(w)


def test_a_dask_array_of_unknown_chunk_sizes_names_compute_chunk_sizes():
    rng = np.random.default_rng(5)
    X = da.from_array(rng.standard_normal((20, 3)), chunks=(5, 3))
    y = da.from_array(rng.standard_normal(20), chunks=5)
    w = rng.standard_normal(3)
    keep = X[:, 0] > 0
    Xf, yf = X[keep], y[keep]  # chunks of unknown sizes

    def loss(w, X=Xf, y=yf):
        return np.mean((X @ w - y) ** 2)

    with pytest.raises(ValueError, match=r"^pullback: .*chunk sizes are unknown.*"
                                         r"compute_chunk_sizes\(\)"):
        pb.grad(loss)(w)
    Xk, yk = Xf.compute_chunk_sizes(), yf.compute_chunk_sizes()
    g = pb.grad(lambda w: loss(w, Xk, yk))(w)
    Xp, yp = Xk.compute(), yk.compute()
    np.testing.assert_allclose(np.asarray(g), central_differences(
        lambda w: loss(w, Xp, yp), w), rtol=1e-6)
