"""Classify handwritten digits with two models written in plain NumPy.

A multinomial logistic regression and a 64-32-10 tanh MLP are trained on scikit-learn's
bundled 8x8 digits (no download) with minibatch Adam. The models are ordinary NumPy
functions of a dict of arrays; ``pb.value_and_grad`` gives the loss and its gradient,
and ``pb.optim.Adam`` updates the dict. Saves ``digits_loss.png``: train and test loss per
epoch for both models.

    python examples/digits.py            # full run, seconds
    python examples/digits.py --quick    # a few epochs, seconds
"""

import argparse
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import pullback as pb


def logistic(params, x):
    return x @ params["W"] + params["b"]


def mlp(params, x):
    h = np.tanh(x @ params["W1"] + params["b1"])
    return h @ params["W2"] + params["b2"]


def cross_entropy(logits, label):
    top = np.max(logits, axis=1, keepdims=True)
    logz = top[:, 0] + np.log(np.sum(np.exp(logits - top), axis=1))
    picked = logits[np.arange(len(label)), label]
    return np.mean(logz - picked)


def make_loss(model, l2):
    def loss(params, x, label):
        penalty = sum(np.sum(w ** 2) for name, w in params.items() if name.startswith("W"))
        return cross_entropy(model(params, x), label) + l2 * penalty
    return loss


def accuracy(model, params, x, label):
    return np.mean(np.argmax(model(params, x), axis=1) == label)


def train(name, model, params, data, epochs, batch_size, lr, l2, rng):
    x_train, y_train, x_test, y_test = data
    loss = make_loss(model, l2)
    value_and_grad = pb.value_and_grad(loss)
    opt = pb.optim.Adam(lr)
    state = opt.init(params)
    history = {"train": [], "test": []}
    for _ in tqdm(range(epochs), desc=f"{name:8s}", unit="epoch"):
        order = rng.permutation(len(x_train))
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            _, grads = value_and_grad(params, x_train[batch], y_train[batch])
            params, state = opt.update(params, grads, state)
        history["train"].append(cross_entropy(model(params, x_train), y_train))
        history["test"].append(cross_entropy(model(params, x_test), y_test))
    return params, history


def save_plot(histories, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (name, history), color in zip(histories.items(), ["C0", "C1"]):
        epochs = np.arange(1, len(history["train"]) + 1)
        ax.plot(epochs, history["train"], color=color, label=f"{name} train")
        ax.plot(epochs, history["test"], color=color, linestyle="--", label=f"{name} test")
    ax.set_xlabel("epoch")
    ax.set_ylabel("cross-entropy")
    ax.set_yscale("log")
    ax.set_title("load_digits: loss per epoch")
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
    epochs = 3 if args.quick else 40

    digits = load_digits()
    x = digits.data / 16.0
    x_train, x_test, y_train, y_test = train_test_split(
        x, digits.target, test_size=0.25, random_state=0, stratify=digits.target)
    data = (x_train, y_train, x_test, y_test)
    print(f"load_digits: {len(x_train)} train and {len(x_test)} test images of 8x8 pixels, "
          f"10 classes; {epochs} epochs of minibatch Adam")

    rng = np.random.default_rng(0)
    models = {
        "logistic": (logistic, {"W": np.zeros((64, 10)), "b": np.zeros(10)}),
        "mlp": (mlp, {"W1": rng.standard_normal((64, 32)) / 8.0, "b1": np.zeros(32),
                      "W2": rng.standard_normal((32, 10)) / np.sqrt(32), "b2": np.zeros(10)}),
    }
    histories, results = {}, {}
    for name, (model, params) in models.items():
        params, histories[name] = train(name, model, params, data, epochs, batch_size=32,
                                        lr=3e-3, l2=1e-4, rng=rng)
        results[name] = (accuracy(model, params, x_train, y_train),
                         accuracy(model, params, x_test, y_test))

    print(f"{'model':10s} {'train loss':>10s} {'test loss':>10s} {'train acc':>10s} "
          f"{'test acc':>10s}")
    for name, (train_acc, test_acc) in results.items():
        history = histories[name]
        print(f"{name:10s} {history['train'][-1]:10.4f} {history['test'][-1]:10.4f} "
              f"{train_acc:10.3f} {test_acc:10.3f}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "digits_loss.png"
    save_plot(histories, path)
    print(f"saved {path}")


if __name__ == "__main__":
    main()
