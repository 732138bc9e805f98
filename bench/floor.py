"""How much of an eager gradient is bookkeeping: each workload's graph at its own sizes and
with every dimension shrunk (the MLP's widths and batch to 2, the RNN's to 1, its 100 steps
kept), so that the same nodes do next to no arithmetic.

    python -m bench.floor           # pullback, hand-written NumPy, PyTorch, the bare tape
    python -m bench.floor --libs pullback,numpy

For each library: the minimum over many calls of one gradient (``value_and_grad`` for
pullback), in µs, one BLAS thread. At the small sizes a library's time is what it costs
per node and per call whatever the arrays hold; the difference between the two columns is
the arithmetic (NumPy's, for pullback and hand-written NumPy alike). ``tape`` is the
smallest eager tape in Python (bench/libs/tape_lib.py): the floor of any design at
pullback's level. Each library's gradient is checked against pullback's before it is timed.
"""

import argparse
import importlib
import os
import time

from bench.one import ONE_THREAD

SHRUNK = {"small_mlp": {"sizes": (2, 2, 2, 2), "batch": 2},
          "rnn": {"hidden": 1, "input": 1, "batch": 1}}


def _data(workload, shrunk):
    import numpy

    from bench import workloads as W
    if not shrunk:
        return W.make_data(workload)
    rng = numpy.random.default_rng(0)
    if workload == "small_mlp":
        params, x, Y = W._mlp_data(SHRUNK[workload]["sizes"], SHRUNK[workload]["batch"], rng)
        return {"params": params, "x": x, "Y": Y}
    s = SHRUNK[workload]
    weights = (rng.standard_normal((s["input"], s["hidden"])),
               rng.standard_normal((s["hidden"], s["hidden"])), rng.standard_normal(s["hidden"]))
    return {"weights": weights, "xs": rng.standard_normal((W.RNN_STEPS, s["batch"], s["input"])),
            "h0": numpy.zeros((s["batch"], s["hidden"]))}


def _time(run, calls):
    run()
    best = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libs", default="pullback,numpy,torch,tape")
    args = parser.parse_args()
    os.environ.update(ONE_THREAD)
    import numpy

    from bench.libs import MODULES, pullback_lib

    libs = []
    for lib in args.libs.split(","):
        try:
            libs.append((lib, importlib.import_module(f"bench.libs.{MODULES[lib]}")))
        except ImportError:  # a peer that is not installed
            print(f"({lib} is not installed: left out)")
    print("| workload | library | own sizes (µs) | shrunk (µs) | arithmetic (µs) |")
    print("|---|---|---|---|---|")
    for workload, calls in (("small_mlp", 2000), ("rnn", 150)):
        data = _data(workload, False)
        want = pullback_lib.build(workload, data)
        want = want[1](want[0]())
        for lib, module in libs:
            run, to_numpy = module.build(workload, data, lib)
            got = to_numpy(run())
            if len(got) != len(want) or not all(
                    numpy.allclose(a, b, rtol=1e-7, atol=1e-10) for a, b in zip(got, want)):
                raise SystemExit(f"{lib}'s gradient of {workload} differs from pullback's")
            times = [_time(module.build(workload, _data(workload, shrunk), lib)[0], calls)
                     for shrunk in (False, True)]
            print(f"| {workload} | {lib} | {times[0] * 1e6:.0f} | {times[1] * 1e6:.0f} | "
                  f"{(times[0] - times[1]) * 1e6:.0f} |", flush=True)


if __name__ == "__main__":
    main()
