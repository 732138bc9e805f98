"""Logistic regression on more data than the workers' memory, with Dask and pullback.

The data (``X``: normal features, ``y``: labels drawn from a logistic model) is a Dask
array made chunk by chunk by ``da.random``; it is never held whole anywhere: each pass
generates every chunk again on the workers of a ``dask.distributed.LocalCluster`` (two
workers, one thread each, an explicit memory limit well below the data's size). The loss
is plain NumPy code; ``pb.value_and_grad`` of it builds one lazy graph, and
``scipy.optimize.minimize(..., jac=True)`` gets the value and the gradient from one
``dask.compute`` per evaluation. The same fit is done with a hand-written gradient of the
same model on the same cluster; the script prints the wall time and the peak memory of
each worker for both. Saves ``dask_logistic.png``: the loss at each evaluation.

    python examples/dask_logistic.py            # 1.8 GB of data, 2 workers x 400 MB
    python examples/dask_logistic.py --quick    # 16 MB, seconds
"""

import argparse
import logging
import threading
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import psutil
from distributed import Client, LocalCluster
from scipy.optimize import minimize

import pullback as pb

FEATURES = 10
PENALTY = 1e-3  # the L2 penalty, which makes the optimum unique
MEMORY_LIMIT = "400MB"  # per worker


def loss(w, X, y):
    """The mean logistic loss of the weights ``w`` with an L2 penalty: plain NumPy."""
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * PENALTY * (w @ w)


def loss_and_gradient_by_hand(w, X, y):
    """The same loss and its gradient written out: ``X.T (sigmoid(X w) - y) / n``."""
    z = X @ w
    value = da.mean(da.logaddexp(0.0, z) - y * z) + 0.5 * PENALTY * (w @ w)
    gradient = X.T @ (1.0 / (1.0 + da.exp(-z)) - y) / X.shape[0] + PENALTY * w
    return value, gradient


def make_data(rows, chunk):
    """Features and labels as lazy Dask arrays: every chunk is drawn when it is needed."""
    rng = da.random.default_rng(0)
    X = rng.standard_normal((rows, FEATURES), chunks=(chunk, FEATURES))
    true_w = np.linspace(-1.0, 1.0, FEATURES)
    p = 1.0 / (1.0 + da.exp(-(X @ true_w)))
    y = (rng.random(rows, chunks=chunk) < p).astype(np.float64)
    return X, y


def start_sampling(dask_worker):
    """On a worker: sample its resident memory every 10 ms, keeping the largest."""
    process = psutil.Process()
    state = dask_worker.pullback_example_memory = {"peak": process.memory_info().rss}

    def sample():
        while "stop" not in state:
            state["peak"] = max(state["peak"], process.memory_info().rss)
            time.sleep(0.01)

    threading.Thread(target=sample, daemon=True).start()


def stop_sampling(dask_worker):
    """On a worker: the peak resident memory since ``start_sampling``, in bytes."""
    state = dask_worker.pullback_example_memory
    state["stop"] = True
    return state["peak"]


def fit(client, value_and_grad, X, y):
    """L-BFGS-B from zero weights: (result, losses, seconds, peak memory per worker)."""
    client.run(start_sampling)
    losses = []

    def fun(w):
        value, g = dask.compute(*value_and_grad(w, X, y))  # one pass over the data
        losses.append(float(value))
        return float(value), np.asarray(g, dtype=np.float64)

    start = time.perf_counter()
    result = minimize(fun, np.zeros(FEATURES), jac=True, method="L-BFGS-B",
                      options={"gtol": 1e-8, "maxiter": 100})
    seconds = time.perf_counter() - start
    peaks = sorted(client.run(stop_sampling).values())
    return result, losses, seconds, peaks


def save_plot(path, runs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for (name, (_, losses, _, _)), style in zip(runs.items(), ["o-", "x--"]):
        ax.plot(np.arange(1, len(losses) + 1), losses, style, markersize=4, label=name)
    ax.set_xlabel("evaluation (one pass over the data)")
    ax.set_ylabel("loss")
    ax.set_yscale("log")
    ax.set_title("L-BFGS-B on a Dask cluster")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"saved {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="200,000 rows instead of 20 million")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out",
                        help="folder for the picture (default: examples/out/)")
    args = parser.parse_args()
    rows, chunk = (200_000, 20_000) if args.quick else (20_000_000, 250_000)
    X, y = make_data(rows, chunk)
    print(f"data: X {X.nbytes / 1e9:.2f} GB and y {y.nbytes / 1e9:.2f} GB in "
          f"{X.numblocks[0]} chunks; workers: 2 x {MEMORY_LIMIT}, one thread each")

    runs = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit=MEMORY_LIMIT,
                      processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        w0 = np.linspace(0.5, -0.5, FEATURES)
        g_pb = dask.compute(pb.grad(loss)(w0, X, y))[0]
        g_hand = dask.compute(loss_and_gradient_by_hand(w0, X, y)[1])[0]
        print(f"largest difference between the gradients at w0: "
              f"{np.max(np.abs(g_pb - g_hand)):.1e}")
        runs["pullback"] = fit(client, pb.value_and_grad(loss), X, y)
        runs["by hand"] = fit(client, loss_and_gradient_by_hand, X, y)

    print(f"{'gradient':10} {'evaluations':>11} {'loss':>12} {'wall s':>8} {'s/eval':>7} "
          f"{'peak MB per worker':>20}")
    for name, (result, _, seconds, peaks) in runs.items():
        peak = " ".join(f"{p / 1e6:.0f}" for p in peaks)
        print(f"{name:10} {result.nfev:11d} {result.fun:12.8f} {seconds:8.1f} "
              f"{seconds / result.nfev:7.2f} {peak:>20}")
    gap = np.max(np.abs(runs["pullback"][0].x - runs["by hand"][0].x))
    print(f"largest difference between the fitted weights: {gap:.1e}")
    args.out.mkdir(parents=True, exist_ok=True)
    save_plot(args.out / "dask_logistic.png", runs)


if __name__ == "__main__":
    main()
