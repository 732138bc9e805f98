"""Whole programs as users write them, with plain `import numpy as np` and SciPy, checked
against finite differences to second order."""

import numpy as np
import pytest
import scipy.linalg
import scipy.special
import scipy.stats

import pullback as pb

rng = np.random.default_rng(7)


def test_logistic_regression():
    X, y = rng.standard_normal((20, 3)), rng.integers(0, 2, 20)

    def nll(w, b):
        p = scipy.special.expit(X @ w + b)
        return -np.mean(scipy.special.xlogy(y, p) + scipy.special.xlog1py(1 - y, -p))

    pb.check_grads(nll, rng.standard_normal(3), 0.1, order=2)


def test_gaussian_mixture_log_likelihood():
    x = rng.standard_normal(30)

    def loglik(means, log_scales, logits):
        logp = scipy.stats.norm.logpdf(x[:, None], means, np.exp(log_scales))
        return np.sum(scipy.special.logsumexp(logp + scipy.special.log_softmax(logits), axis=1))

    pb.check_grads(loglik, np.array([-1.0, 1.0]), np.array([0.1, -0.2]),
                   np.array([0.3, 0.0]), order=2)


def test_gaussian_process_marginal_likelihood():
    t = np.linspace(0, 1, 8)
    y = np.sin(6 * t)

    def neg_log_marginal(log_length, log_noise):
        K = np.exp(-0.5 * (t[:, None] - t[None, :]) ** 2 / np.exp(2 * log_length))
        K = K + np.exp(2 * log_noise) * np.eye(len(t))
        L = np.linalg.cholesky(K)
        alpha = scipy.linalg.solve_triangular(L, y, lower=True)
        return 0.5 * alpha @ alpha + np.sum(np.log(np.diag(L)))

    pb.check_grads(neg_log_marginal, -1.0, -1.5, order=2)


def test_power_spectrum_and_einsum_attention():
    def spectrum(x):
        return np.sum(np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2)

    pb.check_grads(spectrum, rng.standard_normal(16), order=2)

    def attention(q, k, v):
        scores = np.einsum("id,jd->ij", q, k) / np.sqrt(q.shape[-1])
        weights = scipy.special.softmax(scores, axis=-1)
        return np.sum(np.einsum("ij,jd->id", weights, v) ** 2)

    pb.check_grads(attention, rng.standard_normal((4, 3)), rng.standard_normal((5, 3)),
                   rng.standard_normal((5, 2)), order=2)


def test_rnn_with_indexing_and_stacking():
    xs = rng.standard_normal((6, 2))

    def loss(W, U):
        h, states = np.zeros(3), []
        for x in xs:
            h = np.tanh(W @ h + U @ x)
            states.append(h)
        H = np.stack(states)
        return np.sum(H[::2, 1:] ** 2) + np.max(H[-1])

    pb.check_grads(loss, 0.5 * rng.standard_normal((3, 3)), rng.standard_normal((3, 2)),
                   order=2)


# ---------------------------------------------------------------------------- the idioms of
# scientific code: loops over time steps, lists turned into arrays, buffers filled in place,
# in-place sorts, np.vectorize and np.piecewise, statistics and polynomial fits

_X, _Y = rng.standard_normal((6, 3)), rng.standard_normal(6)


def _kalman_filter(q):
    x, P = np.zeros(2), np.eye(2)
    F, H = np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([[1.0, 0.0]])
    nll = 0.0
    for t in range(6):
        x, P = F @ x, F @ P @ F.T + q[0] ** 2 * np.eye(2)
        S = H @ P @ H.T + 0.5
        K = P @ H.T / S
        r = _Y[t] - H @ x
        x, P = x + (K * r).ravel(), (np.eye(2) - K @ H) @ P
        nll = nll + 0.5 * (np.log(S) + r ** 2 / S)
    return np.sum(nll)


def _euler_steps(k):
    y = [np.array(1.0)]
    for t in range(20):
        y.append(y[-1] + 0.05 * (-k[0] * y[-1] + np.sin(t * 0.1) * k[1]))
    return np.sum(np.array(y) ** 2)


def _fft_convolution(x):
    kernel, n = np.array([0.25, 0.5, 0.25]), len(x) + 2
    return np.sum(np.fft.irfft(np.fft.rfft(x, n) * np.fft.rfft(kernel, n), n) ** 2)


def _running_buffer(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] ** 2 + (out[i - 1] if i else 0.0)
    return np.sum(out)


def _sorted_cdf(x):
    y = x.copy()
    y.sort()
    return np.sum((np.cumsum(y) / np.sum(np.abs(x))) ** 2)


def _trend_and_covariance(x):
    coeffs = np.polyfit(np.arange(6.0), x, 2)
    return (np.sum(np.polyval(coeffs, np.arange(6.0)) ** 2)
            + np.sum(np.cov(x.reshape(2, 3))) + np.sum(np.corrcoef(x.reshape(2, 3)) ** 2))


def _weighted_histogram(w):
    counts, _ = np.histogram(_Y, bins=3, weights=w)
    return np.sum(counts ** 2)


def _scalar_code(x):
    branchy = np.vectorize(lambda t: t ** 2 if t > 0 else -t)
    pieces = np.piecewise(x, [x < 0, x >= 0], [lambda t: t ** 2, np.sin])
    return np.sum(branchy(x)) + np.sum(pieces)


def _edited(x):
    y = np.insert(x, 1, x[0] * 2)
    return np.sum(np.delete(y, [0, 3]) ** 2) + np.sum(np.interp([0.1, 0.5, 0.9], [0, 0.5, 1],
                                                               x[:3]))


def _leapfrog(y0):  # a symplectic step on the halves of the state, written in place
    y = y0.copy()
    for _ in range(3):
        q, p = np.split(y, 2)
        p -= 0.1 * np.sin(q)
        q += 0.1 * p
    return np.sum(y ** 2)


def _safe_ratios(x):
    counts = np.array([0.0, 2.0, 0.0, 4.0, 1.0])
    rates = np.divide(x, counts, out=np.zeros_like(x), where=counts != 0)
    return np.sum(rates ** 2) + np.sum(scipy.stats.zscore(x) ** 3)


def _through_a_view(x):  # under pb.jit too, the write reaches y (it used to be lost there)
    y = x * 1.0
    tail = y[1:]
    tail[0] = x[0] ** 2
    y.T[2] *= 3.0
    return np.sum(y ** 2)


def _tied_weights(x):
    params = {"encoder": x, "decoder": x}  # one array, two names
    return np.sum(np.tanh(params["encoder"] * 2.0) * params["decoder"])


@pytest.mark.parametrize("program,size", [
    (_kalman_filter, 1), (_euler_steps, 2), (_fft_convolution, 5), (_running_buffer, 4),
    (_sorted_cdf, 5), (_trend_and_covariance, 6), (_weighted_histogram, 6), (_scalar_code, 5),
    (_edited, 4), (_leapfrog, 4), (_safe_ratios, 5), (_tied_weights, 3), (_through_a_view, 4),
], ids=lambda p: getattr(p, "__name__", "")[1:])
def test_idioms_of_scientific_code(program, size):
    x = np.random.default_rng(size).standard_normal(size) + 0.1
    pb.check_grads(program, x, order=1)
    jitted = pb.jit(pb.grad(program))  # the same gradient, replayed on new values
    for value in (x, x * 1.01 + 0.001):
        np.testing.assert_allclose(jitted(value), pb.grad(program)(value), rtol=1e-10,
                                   atol=1e-12)


# ---------------------------------------------------------------------------- SciPy's matrix
# functions that SciPy computes from its own expm (which pullback's interception of
# scipy.linalg.expm does not reach)

_SPRINGS = np.array([[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]])


def _oscillator_in_closed_form(k):
    # x(t) = cos(t sqrt(K)) x0 + sin(t sqrt(K)) sqrt(K)^-1 v0, with sqrt(K) = k * springs
    root = k[0] * _SPRINGS + 0.1 * np.eye(3)
    x0, v0 = np.array([1.0, 0.0, -0.5]), np.array([0.0, 0.3, 0.0])
    x = scipy.linalg.cosm(root) @ x0 + scipy.linalg.sinm(root) @ np.linalg.solve(root, v0)
    return np.sum(x ** 2)


@pytest.mark.parametrize("program", [
    _oscillator_in_closed_form,
    lambda A: np.sum(scipy.linalg.tanm(0.3 * A) ** 2),
    lambda A: np.trace(scipy.linalg.coshm(A) - scipy.linalg.sinhm(A) @ A),
    lambda A: np.sum(scipy.linalg.tanhm(A) * A),
    lambda A: np.sum(np.abs(scipy.linalg.cosm(A + 0.5j * A.T)) ** 2),   # complex input
    lambda A: np.sum(np.abs(scipy.linalg.sinm(A + 0.5j * A.T)) ** 2),
], ids=["oscillator", "tanm", "coshm_sinhm", "tanhm", "cosm_complex", "sinm_complex"])
def test_matrix_trigonometric_and_hyperbolic_functions(program):
    size = 1 if program is _oscillator_in_closed_form else (3, 3)
    x = 0.4 * np.random.default_rng(3).standard_normal(size) + (0.5 if size == 1 else 0.0)
    pb.check_grads(program, x, order=2)


# ---------------------------------------------------------------------------- 2-D filters
# with boundary conditions: scipy.signal.convolve2d and correlate2d

_IMAGE = np.random.default_rng(5).standard_normal((6, 5))
_SOBEL = np.array([[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]])


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("boundary,fillvalue", [("fill", 0.0), ("fill", 1.5), ("symm", 0.0),
                                                ("wrap", 0.0)])
def test_edge_energy_of_an_image_through_2d_filters(mode, boundary, fillvalue):
    def edge_energy(image, kernel):
        gx = scipy.signal.convolve2d(image, kernel, mode, boundary, fillvalue)
        gy = scipy.signal.correlate2d(image, kernel.T, mode=mode, boundary=boundary,
                                      fillvalue=fillvalue)
        return np.sum(gx ** 2 + gy ** 2) + np.sum(gx[:2, :2] * gy[:2, :2])

    pb.check_grads(edge_energy, _IMAGE, _SOBEL + 0.1, order=2)
    value, _ = pb.vjp(edge_energy, _IMAGE, _SOBEL + 0.1)  # SciPy's own value on plain arrays
    np.testing.assert_allclose(value, edge_energy(_IMAGE, _SOBEL + 0.1), rtol=1e-12)


@pytest.mark.parametrize("f", [
    lambda a, k: scipy.signal.convolve2d(a[:2, :2], k, "valid"),       # swapped inputs
    lambda a, k: scipy.signal.correlate2d(a[:2, :3] * 1j + a[:2, :3], k, "valid"),
    lambda a, k: scipy.signal.correlate2d(a + 0.5j * a ** 2, k * (1 - 1j), "same", "wrap"),
], ids=["convolve2d_swapped", "correlate2d_complex_swapped", "correlate2d_complex_same"])
def test_2d_filters_of_small_and_complex_inputs(f):
    pb.check_grads(lambda a, k: np.sum(np.abs(f(a, k)) ** 2), _IMAGE, _SOBEL, order=2)
    value, _ = pb.vjp(f, _IMAGE, _SOBEL)
    np.testing.assert_allclose(value, f(_IMAGE, _SOBEL), rtol=1e-12, atol=1e-12)
