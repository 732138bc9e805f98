"""small_mlp's forward pass one statement at a time: what each costs recorded by pullback
(inside a transform's level, as ``value_and_grad`` records it), on the bare tape
(bench/libs/tape_lib.py) and in plain NumPy, and pullback's excess over the tape.

    python -m bench.statements

Each figure is the minimum over ``CALLS`` interleaved runs of the loss, in µs, one BLAS
thread. The statements are those of ``workloads.mlp_loss``, split so that each line makes
one node.
"""

import os
import time

from bench.one import ONE_THREAD

CALLS = 2000
STATEMENTS = ("x @ W1", "+ b1", "tanh", "h @ W2", "+ b2", "tanh", "h @ W3", "+ b3",
              "np.max(axis=1)", "logits - top", "exp", "np.sum(axis=1)", "log", "top + ...",
              "lse - logits", "Y * ...", "np.sum(axis=1)", "np.mean")


def loss(params, x, Y, np, marks, clock):
    """``workloads.mlp_loss``, one node per line, appending a time before each."""
    W1, b1, W2, b2, W3, b3 = params
    marks.append(clock())
    a = x @ W1
    marks.append(clock())
    a = a + b1
    marks.append(clock())
    h = np.tanh(a)
    marks.append(clock())
    a = h @ W2
    marks.append(clock())
    a = a + b2
    marks.append(clock())
    h = np.tanh(a)
    marks.append(clock())
    a = h @ W3
    marks.append(clock())
    logits = a + b3
    marks.append(clock())
    top = np.max(logits, axis=1, keepdims=True)
    marks.append(clock())
    z = logits - top
    marks.append(clock())
    e = np.exp(z)
    marks.append(clock())
    s = np.sum(e, axis=1, keepdims=True)
    marks.append(clock())
    lg = np.log(s)
    marks.append(clock())
    lse = top + lg
    marks.append(clock())
    q = lse - logits
    marks.append(clock())
    q = Y * q
    marks.append(clock())
    q = np.sum(q, axis=1)
    marks.append(clock())
    q = np.mean(q)
    marks.append(clock())
    return q


def main():
    os.environ.update(ONE_THREAD)
    import numpy

    from bench import workloads as W
    from bench.libs import tape_lib
    from pullback._engine.vjp import Linearized

    d = W.make_data("small_mlp")
    params, x, Y = d["params"], d["x"], d["Y"]
    clock = time.perf_counter
    best = {lib: [float("inf")] * len(STATEMENTS) for lib in ("pullback", "tape", "numpy")}

    def record(lib, marks):
        for k in range(len(STATEMENTS)):
            best[lib][k] = min(best[lib][k], marks[k + 1] - marks[k])

    for _ in range(CALLS):
        marks: list = []
        # a transform's level, its hold and boxed parameters, as value_and_grad makes them
        Linearized(lambda *p, marks=marks: loss(p, x, Y, numpy, marks, clock), params, {},
                   range(len(params)))
        record("pullback", marks)
        marks = []
        tape_lib.TAPE.clear()
        loss([tape_lib.Box(p) for p in params], x, Y, tape_lib.Namespace, marks, clock)
        record("tape", marks)
        marks = []
        loss(params, x, Y, numpy, marks, clock)
        record("numpy", marks)
    print("| statement | pullback | tape | NumPy | pullback - tape |")
    print("|---|---|---|---|---|")
    for k, name in enumerate(STATEMENTS):
        p, t, n = (best[lib][k] * 1e6 for lib in ("pullback", "tape", "numpy"))
        print(f"| `{name}` | {p:.1f} | {t:.1f} | {n:.1f} | {p - t:.1f} |")
    p, t, n = (sum(best[lib]) * 1e6 for lib in ("pullback", "tape", "numpy"))
    print(f"| forward, all | {p:.0f} | {t:.0f} | {n:.0f} | {p - t:.0f} |")


if __name__ == "__main__":
    main()
