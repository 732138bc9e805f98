"""A training loop in the Tracker style: params, ``loss.backward()`` and ``opt.step``.

A 10-32-1 tanh network predicts disease progression in scikit-learn's bundled diabetes
data (442 patients, 10 standardised measurements; no download). The weights are
``pb.param``s, the loss is plain NumPy on them, ``loss.backward()`` fills each ``.grad``
and ``pb.optim.Adam.step`` moves the params in place (and resets ``.grad``). The test error
is computed under ``pb.no_grad()``, which records nothing. Prints the losses every few
epochs and saves ``tracker_loss.png``.

    python examples/tracker_loop.py            # full run, seconds
    python examples/tracker_loop.py --quick    # a few epochs, seconds
"""

import argparse
from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

import pullback as pb


def save_plot(history, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = np.arange(1, len(history["train"]) + 1)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(epochs, history["train"], label="train")
    ax.plot(epochs, history["test"], linestyle="--", label="test")
    ax.set_xlabel("epoch")
    ax.set_ylabel("mean squared error (standardised target)")
    ax.set_yscale("log")
    ax.set_title("load_diabetes: a 10-32-1 network trained with .backward()")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few epochs (seconds)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out",
                        help="folder for the picture (default: examples/out/)")
    args = parser.parse_args()
    epochs, report_every = (20, 5) if args.quick else (100, 10)

    x, y = load_diabetes(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=0)
    mean, sd = x_train.mean(axis=0), x_train.std(axis=0)
    x_train, x_test = (x_train - mean) / sd, (x_test - mean) / sd
    y_mean, y_sd = y_train.mean(), y_train.std()
    y_train, y_test = (y_train - y_mean) / y_sd, (y_test - y_mean) / y_sd
    print(f"load_diabetes: {len(x_train)} train and {len(x_test)} test patients, "
          f"10 features; {epochs} epochs of minibatch Adam")

    rng = np.random.default_rng(0)
    W1 = pb.param(rng.standard_normal((10, 32)) / np.sqrt(10))
    b1 = pb.param(np.zeros(32))
    W2 = pb.param(rng.standard_normal(32) / np.sqrt(32))
    b2 = pb.param(0.0)
    ps = pb.Params([W1, b1, W2, b2])

    def predict(x):
        return np.tanh(x @ W1 + b1) @ W2 + b2

    def loss(x, y):
        return np.mean((predict(x) - y) ** 2) + 1e-2 * (np.sum(W1 ** 2) + np.sum(W2 ** 2))

    opt = pb.optim.Adam(1e-3)
    history = {"train": [], "test": []}
    print(f"{'epoch':>5s} {'train mse':>10s} {'test mse':>10s}")
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(x_train))
        for start in range(0, len(order), 32):
            batch = order[start:start + 32]
            loss(x_train[batch], y_train[batch]).backward()
            opt.step(ps)
        with pb.no_grad():
            history["train"].append(np.mean((predict(x_train) - y_train) ** 2))
            history["test"].append(np.mean((predict(x_test) - y_test) ** 2))
        if epoch % report_every == 0 or epoch == 1:
            print(f"{epoch:5d} {history['train'][-1]:10.4f} {history['test'][-1]:10.4f}")
    with pb.no_grad():
        r2 = 1.0 - np.mean((predict(x_test) - y_test) ** 2) / np.var(y_test)
    design = np.column_stack([x_train, np.ones(len(x_train))])
    coef = np.linalg.lstsq(design, y_train, rcond=None)[0]
    linear = np.column_stack([x_test, np.ones(len(x_test))]) @ coef
    r2_linear = 1.0 - np.mean((linear - y_test) ** 2) / np.var(y_test)
    print(f"test R^2 {r2:.3f} (1 is a perfect fit, 0 predicts the mean); "
          f"least squares on the same split: {r2_linear:.3f}")

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "tracker_loss.png"
    save_plot(history, path)
    print(f"saved {path}")


if __name__ == "__main__":
    main()
