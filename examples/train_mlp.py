"""Train a small MLP written in plain NumPy with pullback, and print the loss falling.

The model and loss are ordinary NumPy functions; pullback differentiates them. The data
is generated: two interleaved spirals, to be told apart by a 2-32-32-2 network.
"""

import numpy as np

import pullback as pb


def make_spirals(n, rng):
    t = rng.uniform(0.0, 3.0 * np.pi, n)
    label = rng.integers(0, 2, n)
    r = t / (3.0 * np.pi)
    angle = t + np.pi * label
    x = np.stack([r * np.cos(angle), r * np.sin(angle)], axis=1)
    return x + 0.02 * rng.standard_normal(x.shape), label


def init(sizes, rng):
    return [(rng.standard_normal((m, n)) / np.sqrt(m), np.zeros(n))
            for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, x):
    h = x
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    W, b = params[-1]
    return h @ W + b


def loss(params, x, label):
    logits = predict(params, x)
    top = np.max(logits, axis=1, keepdims=True)
    logz = top[:, 0] + np.log(np.sum(np.exp(logits - top), axis=1))
    picked = logits[np.arange(len(label)), label]
    return np.mean(logz - picked)


def main():
    rng = np.random.default_rng(0)
    x, label = make_spirals(512, rng)
    params = init([2, 32, 32, 2], rng)
    value_and_grad = pb.value_and_grad(loss)
    lr = 0.3
    for step in range(1201):
        value, grads = value_and_grad(params, x, label)
        params = [(W - lr * gW, b - lr * gb) for (W, b), (gW, gb) in zip(params, grads)]
        if step % 100 == 0:
            accuracy = np.mean(np.argmax(predict(params, x), axis=1) == label)
            print(f"step {step:4d}  loss {value:.4f}  accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
