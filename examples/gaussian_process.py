"""Fit a Gaussian process's kernel hyperparameters by maximising the marginal likelihood.

Noisy samples of a 1-d function are modelled by a GP with a squared-exponential kernel.
Its three log-hyperparameters (length scale, signal variance, noise variance) minimise
the negative log marginal likelihood, written in plain NumPy with a Cholesky factor.
The fit is done twice: with L-BFGS-B through ``pb.minimize`` (gradient
from pullback), and with SciPy's trust-exact method given ``jac=pb.grad(nll)`` and
``hess=pb.hessian(nll)``. The two optima must agree. Saves ``gp_fit.png``: the data and
the posterior mean with a band of two standard deviations.

    python examples/gaussian_process.py            # full run, seconds
    python examples/gaussian_process.py --quick    # fewer points, seconds
"""

import argparse
from pathlib import Path

import numpy as np
import scipy.optimize

import pullback as pb

NAMES = ("length scale", "signal variance", "noise variance")


def truth(x):
    return np.sin(3.0 * x) + 0.3 * x


def kernel(log_length, log_signal, a, b):
    d2 = (a[:, None] - b[None, :]) ** 2
    return np.exp(log_signal) * np.exp(-0.5 * d2 / np.exp(2.0 * log_length))


def nll(theta, x, y):
    """Negative log marginal likelihood of y under the GP with log-hyperparameters theta."""
    log_length, log_signal, log_noise = theta[0], theta[1], theta[2]
    n = len(x)
    K = kernel(log_length, log_signal, x, x) + np.exp(log_noise) * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L, y)                  # L alpha = y, so y' K^-1 y = |alpha|^2
    return 0.5 * alpha @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * n * np.log(2.0 * np.pi)


def posterior(theta, x, y, x_new):
    log_length, log_signal, log_noise = theta
    K = kernel(log_length, log_signal, x, x) + np.exp(log_noise) * np.eye(len(x))
    L = np.linalg.cholesky(K)
    K_cross = kernel(log_length, log_signal, x, x_new)
    v = np.linalg.solve(L, K_cross)
    mean = v.T @ np.linalg.solve(L, y)
    var = np.exp(log_signal) - np.sum(v ** 2, axis=0)
    return mean, np.sqrt(np.maximum(var, 0.0))


def save_plot(theta, x, y, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(x.min() - 0.5, x.max() + 0.5, 300)
    mean, sd = posterior(theta, x, y, grid)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.fill_between(grid, mean - 2 * sd, mean + 2 * sd, color="C0", alpha=0.25,
                    label="mean ± 2 sd")
    ax.plot(grid, mean, color="C0", label="posterior mean")
    ax.plot(grid, truth(grid), color="k", linestyle=":", label="true function")
    ax.plot(x, y, "o", color="C1", markersize=4, label="data")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title("GP regression: maximum marginal likelihood")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer data points (seconds)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out",
                        help="folder for the picture (default: examples/out/)")
    args = parser.parse_args()
    n = 20 if args.quick else 150

    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-3.0, 3.0, n))
    y = truth(x) + 0.2 * rng.standard_normal(n)
    theta0 = np.zeros(3)                            # length 1, signal variance 1, noise 1
    print(f"{n} points of sin(3x) + 0.3x with noise of variance 0.04; "
          f"start at log-hyperparameters {theta0}")

    lbfgs = pb.minimize(nll, theta0, args=(x, y), method="L-BFGS-B")
    exact = scipy.optimize.minimize(nll, theta0, args=(x, y), jac=pb.grad(nll),
                                    hess=pb.hessian(nll), method="trust-exact")

    print(f"{'':22s} {'L-BFGS-B':>12s} {'trust-exact':>12s}")
    for i, name in enumerate(NAMES):
        print(f"{name:22s} {np.exp(lbfgs.x[i]):12.5f} {np.exp(exact.x[i]):12.5f}")
    print(f"{'negative log lik.':22s} {lbfgs.fun:12.5f} {exact.fun:12.5f}")
    print(f"{'iterations':22s} {lbfgs.nit:12d} {exact.nit:12d}")
    gap = np.max(np.abs(lbfgs.x - exact.x))
    print(f"largest difference in log-hyperparameters: {gap:.1e}")
    if not (lbfgs.success and exact.success and gap < 1e-3):
        raise SystemExit("the two optimisers disagree")

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "gp_fit.png"
    save_plot(exact.x, x, y, path)
    print(f"saved {path}")


if __name__ == "__main__":
    main()
