"""The cost of one recorded node of each kind, forward and backward, against PyTorch eager:

    python -m bench.nodes                  # pullback and, when installed, torch
    python -m bench.nodes --libs pullback

Each kind records ``K`` independent nodes on small (8 x 8) float64 inputs, so that the
time is the library's bookkeeping rather than arithmetic: ``pb.vjp`` of a function
returning the ``K`` outputs, then its pullback of ``K`` seeds (PyTorch: the ops on tensors
that require grad, then ``torch.autograd.backward`` of the outputs). *forward* is the time
to record one node (its NumPy call included), *backward* the time one node adds to the
backward pass (its pullback's NumPy calls and the accumulation into the input included).
Each figure is the minimum over rounds of the mean over ``K`` nodes; the *NumPy* column is
the plain call, the floor of the forward figure.
"""

import argparse
import os
import time

from bench.one import ONE_THREAD

K = 200
ROUNDS = 100

# kind: (description, the op on the tracked x and the other inputs)
KINDS = {
    "unary": ("np.tanh(x)", lambda np, x, a, w, b, i: np.tanh(x)),
    "binary": ("x * a, a a plain array of x's shape", lambda np, x, a, w, b, i: x * a),
    "binary, both tracked": ("x * w", lambda np, x, a, w, b, i: x * w),
    "binary, broadcasting": ("x + b, b tracked of shape (8,)",
                             lambda np, x, a, w, b, i: x + b),
    "matmul": ("x @ w", lambda np, x, a, w, b, i: x @ w),
    "reduction": ("np.sum(x, axis=1)", lambda np, x, a, w, b, i: np.sum(x, axis=1)),
    "indexing": ("x[2:5]", lambda np, x, a, w, b, i: x[2:5]),
    "indexing, an integer array": ("x[i]", lambda np, x, a, w, b, i: x[i]),
}


def _inputs():
    import numpy as np
    rng = np.random.default_rng(0)
    return (rng.standard_normal((8, 8)), rng.standard_normal((8, 8)),
            rng.standard_normal((8, 8)), rng.standard_normal(8), np.array([0, 3, 5]))


def _best_mean(fn, rounds=ROUNDS):
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best / K * 1e6


def measure_numpy(op):
    import numpy as np
    x, a, w, b, i = _inputs()
    return _best_mean(lambda: [op(np, x, a, w, b, i) for _ in range(K)])


def measure_pullback(op):
    import numpy as np

    import pullback as pb
    x, a, w, b, i = _inputs()

    def f(x, w, b):
        return [op(np, x, a, w, b, i) for _ in range(K)]

    fwd = _best_mean(lambda: pb.vjp(f, x, w, b))
    outs, pullback = pb.vjp(f, x, w, b)
    seeds = [np.ones_like(o) for o in outs]
    return fwd, _best_mean(lambda: pullback(seeds))


def measure_torch(op):
    import numpy as np
    import torch
    torch.set_num_threads(1)
    x0, a0, w0, b0, i0 = _inputs()
    x, w, b = (torch.tensor(v, requires_grad=True) for v in (x0, w0, b0))
    a, i = torch.tensor(a0), torch.tensor(i0)
    fwd = _best_mean(lambda: [op(torch, x, a, w, b, i) for _ in range(K)])
    outs = [op(torch, x, a, w, b, i) for _ in range(K)]
    seeds = [torch.ones_like(o) for o in outs]

    def back():
        torch.autograd.backward(outs, seeds, retain_graph=True)
    del np
    return fwd, _best_mean(back)


def main():
    os.environ.update(ONE_THREAD)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libs", default="pullback,torch")
    libs = parser.parse_args().libs.split(",")
    if "torch" in libs:
        try:
            import torch  # noqa: F401
        except ImportError:
            libs.remove("torch")
    head = "| node | NumPy call | pullback forward | pullback backward |"
    rule = "|---|---|---|---|"
    if "torch" in libs:
        head += " PyTorch forward | PyTorch backward | pullback / PyTorch (total) |"
        rule += "---|---|---|"
    print(f"µs per node, {K} nodes on 8 x 8 float64 inputs, minimum over {ROUNDS} rounds\n")
    print(head)
    print(rule)
    for kind, (what, op) in KINDS.items():
        row = f"| {kind}: `{what}` | {measure_numpy(op):.2f} |"
        pf, pbk = measure_pullback(op)
        row += f" {pf:.2f} | {pbk:.2f} |"
        if "torch" in libs:
            tf, tbk = measure_torch(op)
            row += f" {tf:.2f} | {tbk:.2f} | {(pf + pbk) / (tf + tbk):.2f} |"
        print(row)


if __name__ == "__main__":
    main()
