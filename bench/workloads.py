"""The workloads, written once in plain NumPy style, and their data from a fixed seed.

Every function takes the array namespace as ``np`` (a keyword with NumPy as default), so
that the same code runs on ``numpy`` (pullback traces it as is), ``autograd.numpy``,
``jax.numpy``, ``mygrad`` and a small NumPy-style shim over ``torch`` (bench/libs/torch_lib).
Only reductions with an axis and ``max`` are used beyond elementwise functions and ``@``,
so every namespace reads the code the same way.
"""

import numpy

SEED = 0

# scalar_chain: 2,000 iterations of three primitive operations (sin, multiply, add)
CHAIN_STEPS = 2000
CHAIN_OPS = 3 * CHAIN_STEPS

SMALL_SIZES = (64, 128, 128, 10)
SMALL_BATCH = 32
LARGE_SIZES = (1024, 2048, 2048, 10)
LARGE_BATCH = 512

RNN_HIDDEN, RNN_INPUT, RNN_STEPS, RNN_BATCH = 32, 16, 100, 8

HESS_DIM = 64
JAC_EW_DIM = 1000

TRAIN_STEPS, TRAIN_LR = 200, 0.1


# ---------------------------------------------------------------------------- functions

def scalar_chain(x, np=numpy, steps=CHAIN_STEPS):
    for _ in range(steps):
        x = np.sin(x) * 1.0001 + 0.1
    return x


def mlp_predict(params, x, np=numpy):
    W1, b1, W2, b2, W3, b3 = params
    h = np.tanh(x @ W1 + b1)
    h = np.tanh(h @ W2 + b2)
    return h @ W3 + b3


def mlp_loss(params, x, Y, np=numpy):
    """Softmax cross-entropy with a log-sum-exp; ``Y`` holds one-hot rows."""
    logits = mlp_predict(params, x, np)
    top = np.max(logits, axis=1, keepdims=True)
    lse = top + np.log(np.sum(np.exp(logits - top), axis=1, keepdims=True))
    return np.mean(np.sum(Y * (lse - logits), axis=1))


def mlp_loss_sum(params, x, Y, np=numpy):
    """The same loss as users often write it: minus the sum of ``Y`` times the log-softmax,
    over the batch size."""
    logits = mlp_predict(params, x, np)
    top = np.max(logits, axis=1, keepdims=True)
    lse = top + np.log(np.sum(np.exp(logits - top), axis=1, keepdims=True))
    return -np.sum(Y * (logits - lse)) / logits.shape[0]


# the MLP workloads and their losses (small_mlp_sum: the small MLP with the loss written the
# other way)
MLP_LOSSES = {"small_mlp": mlp_loss, "large_mlp": mlp_loss, "small_mlp_sum": mlp_loss_sum}
RNN_WORKLOADS = ("rnn", "rnn_list")  # rnn_list: the inputs a Python list of arrays


def rnn_loss(weights, xs, h0, np=numpy):
    Wx, Wh, b = weights
    h = h0
    for t in range(RNN_STEPS):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return np.sum(h * h)


def hess_fn(x, A, np=numpy):
    return np.sum(np.tanh(A @ x)) ** 2


def ew_map(x, np=numpy):
    """An elementwise map R^n -> R^n."""
    return np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(x)


# ---------------------------------------------------------------------------- data

def _mlp_data(sizes, batch, rng):
    params = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        params.append(rng.standard_normal((m, n)) / numpy.sqrt(m))
        params.append(0.1 * rng.standard_normal(n))
    x = rng.standard_normal((batch, sizes[0]))
    labels = rng.integers(0, sizes[-1], batch)
    Y = numpy.eye(sizes[-1])[labels]
    return tuple(params), x, Y


def make_data(workload):
    """The inputs of ``workload`` as plain float64 ndarrays (a dict), the same in every
    process: a generator seeded with ``SEED`` and the workload's name."""
    rng = numpy.random.default_rng([SEED, sum(map(ord, workload))])
    if workload == "scalar_chain":
        return {"x": numpy.float64(0.3)}
    if workload in ("small_mlp", "small_mlp_sum", "training_loop"):
        params, x, Y = _mlp_data(SMALL_SIZES, SMALL_BATCH, rng)
        return {"params": params, "x": x, "Y": Y}
    if workload == "large_mlp":
        params, x, Y = _mlp_data(LARGE_SIZES, LARGE_BATCH, rng)
        return {"params": params, "x": x, "Y": Y}
    if workload in RNN_WORKLOADS:
        weights = (
            rng.standard_normal((RNN_INPUT, RNN_HIDDEN)) / numpy.sqrt(RNN_INPUT),
            rng.standard_normal((RNN_HIDDEN, RNN_HIDDEN)) / numpy.sqrt(RNN_HIDDEN),
            0.1 * rng.standard_normal(RNN_HIDDEN),
        )
        xs = rng.standard_normal((RNN_STEPS, RNN_BATCH, RNN_INPUT))
        if workload == "rnn_list":
            xs = list(xs)
        return {"weights": weights, "xs": xs, "h0": numpy.zeros((RNN_BATCH, RNN_HIDDEN))}
    if workload == "hessian":
        A = rng.standard_normal((HESS_DIM, HESS_DIM)) / numpy.sqrt(HESS_DIM)
        return {"x": 0.5 * rng.standard_normal(HESS_DIM), "A": A}
    if workload == "jacobian_ew":
        return {"x": rng.standard_normal(JAC_EW_DIM)}
    if workload == "jacobian_mlp":
        params, x, _ = _mlp_data(SMALL_SIZES, 1, rng)
        return {"params": params, "x": x[0]}
    raise KeyError(workload)


WORKLOADS = (
    "scalar_chain", "small_mlp", "small_mlp_sum", "large_mlp", "rnn", "rnn_list",
    "hessian", "jacobian_ew", "jacobian_mlp", "training_loop",
)
