"""What pullback costs code that does not differentiate: plain NumPy, SciPy and pandas calls
timed without pullback, with pullback imported, and while a differentiation runs (a live
``pb.param``: NumPy's stand-ins in place), and the cost of starting and ending a
differentiation (installing and removing the stand-ins).

    python -m bench.plain_calls            # 7 rounds, interleaved

Each configuration runs in a process of its own, the rounds interleaved; a figure is the
minimum over the rounds of the per-call median of a timed loop (ns per call), and the
ratios divide by the figure without pullback. Printed as a Markdown table (bench/NOTES.md).
"""

import argparse
import subprocess
import sys
import textwrap

_CALLS = textwrap.dedent("""
    import sys, time, statistics
    import numpy as np
    import scipy.linalg
    import pandas as pd
    MODE = sys.argv[1]
    if MODE != "plain":
        import pullback as pb
    if MODE == "differentiating":
        keep = pb.param(np.zeros(1))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(100), rng.standard_normal(100)
    A4, b4 = rng.standard_normal((4, 4)) + 4 * np.eye(4), rng.standard_normal(4)
    df = pd.DataFrame({"k": rng.integers(0, 10, 1000), "v": rng.standard_normal(1000)})
    CALLS = {
        "np.asarray(ndarray)": lambda: np.asarray(a),
        "np.array(list of 3 floats)": lambda: np.array([1.0, 2.0, 3.0]),
        "np.concatenate([a, b])": lambda: np.concatenate([a, b]),
        "np.dot(a, b)": lambda: np.dot(a, b),
        "np.sum(a)": lambda: np.sum(a),
        "scipy.linalg.solve 4x4": lambda: scipy.linalg.solve(A4, b4),
        "pandas groupby().describe()": lambda: df.groupby("k")["v"].describe(),
    }
    for name, call in CALLS.items():
        n = 20 if "pandas" in name else 2000
        for _ in range(n // 10):
            call()
        times = []
        for _ in range(15):
            t0 = time.perf_counter_ns()
            for _ in range(n):
                call()
            times.append((time.perf_counter_ns() - t0) / n)
        print(name, "|", statistics.median(times), flush=True)
""")

_SWITCH = textwrap.dedent("""
    import time
    import numpy as np
    import scipy.linalg, scipy.special, scipy.stats
    import pullback as pb
    from pullback._engine import interception as _interception
    _interception.load_scipy_rules()
    pb.grad(lambda x: np.sum(x))(np.ones(2))
    n, times = 2000, []
    for _ in range(15):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            _interception.activate()
            _interception.deactivate()
        times.append((time.perf_counter_ns() - t0) / n)
    import statistics
    print("start and end a differentiation (SciPy's rules loaded)", "|",
          statistics.median(times), flush=True)
""")

MODES = ("plain", "imported", "differentiating")


def _run(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=True).stdout
    return {line.split(" | ")[0]: float(line.split(" | ")[1]) for line in out.splitlines()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    best: dict = {}
    for r in range(args.rounds):
        order = MODES if r % 2 == 0 else MODES[::-1]
        for mode in order:
            for name, ns in _run(_CALLS, mode).items():
                best[mode, name] = min(ns, best.get((mode, name), float("inf")))
        for name, ns in _run(_SWITCH).items():
            best["switch", name] = min(ns, best.get(("switch", name), float("inf")))
    names = [name for mode, name in best if mode == "plain"]
    print("| call | without pullback (ns) | pullback imported | during a differentiation |")
    print("|---|---|---|---|")
    for name in names:
        base = best["plain", name]
        print(f"| {name} | {base:,.0f} | {best['imported', name] / base:.2f}x | "
              f"{best['differentiating', name] / base:.2f}x |")
    for (mode, name), ns in best.items():
        if mode == "switch":
            print(f"\n{name}: {ns / 1000:.1f} µs")


if __name__ == "__main__":
    main()
