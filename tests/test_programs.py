"""Whole programs as users write them, with plain `import numpy as np` and SciPy, checked
against finite differences to second order."""

import numpy as np
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
