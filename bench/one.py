"""One (workload, library) measurement in a fresh process; prints one JSON line.

    python -m bench.one WORKLOAD LIB            # check against the reference, then time
    python -m bench.one WORKLOAD LIB --ref      # compute and save the reference instead
    python -m bench.one graph_memory LIB        # bytes per recorded op on the scalar chain

The driver (bench/run.py) sets the one-thread environment; main() sets it again before
anything imports NumPy, so that a hand-run child is measured the same way.
"""

import argparse
import importlib
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
REF = OUT / "ref"

ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "JAX_PLATFORMS": "cpu",
    "TF_CPP_MIN_LOG_LEVEL": "3",
}

# Libraries whose arrays are NumPy arrays, so that tracemalloc sees their memory.
TRACEMALLOC_LIBS = ("pullback", "pullback_fn", "numpy", "autograd", "mygrad")

# Timing: at least MIN_REPEATS timed calls, more while they fit in TIME_BUDGET seconds.
MIN_REPEATS, MAX_REPEATS, TIME_BUDGET, WARM_UP = 3, 200, 0.4, 0.3


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def reset_peak_rss():
    """Reset the kernel's high-water mark of RSS (through /proc/self/clear_refs) and return
    the RSS now, in bytes; None where Linux does not allow it. After a call, VmHWM less
    this is the peak RSS growth during the call."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _status_kb("VmRSS") * 1024


def tracemalloc_peak(run):
    """Peak of the memory NumPy and Python allocate during one call, above what was held
    before it, in bytes."""
    import tracemalloc

    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    result = run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    return peak - base


def flat(result, to_numpy):
    import numpy as np

    return [np.asarray(a, dtype=np.float64) for a in to_numpy(result)]


def compare(got, ref):
    """Largest error relative to the reference's scale; None when shapes differ."""
    import numpy as np

    if len(got) != len(ref):
        return None
    worst = 0.0
    for a, b in zip(got, ref):
        if a.shape != b.shape:
            return None
        scale = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-300)
        worst = max(worst, float(np.max(np.abs(a - b))) / scale if a.size else 0.0)
    return worst


def measure(workload, lib, make_ref):
    import numpy as np

    from bench import workloads
    from bench.libs import MODULES

    module = importlib.import_module(f"bench.libs.{MODULES[lib]}")
    data = workloads.make_data(workload)
    run, to_numpy = module.build(workload, data, lib)

    t0 = time.perf_counter()
    result = run()
    first = time.perf_counter() - t0
    got = flat(result, to_numpy)
    out = {"first_call_s": first}

    if make_ref:
        REF.mkdir(parents=True, exist_ok=True)
        np.savez(REF / f"{workload}.npz", *got)
        (REF / f"{workload}.json").write_text(json.dumps({"source": lib}))
        out["ref_saved"] = True
        return out

    ref_path = REF / f"{workload}.npz"
    if ref_path.exists():
        with np.load(ref_path) as z:
            ref = [z[f"arr_{i}"] for i in range(len(z.files))]
        err = compare(got, ref)
        out["check_source"] = json.loads((REF / f"{workload}.json").read_text())["source"]
        out["check_err"] = err
        if err is None or not err <= 1e-6:
            out["error"] = (
                f"result differs from {out['check_source']}'s: "
                + ("shapes differ" if err is None else f"relative error {err:.2e}")
            )
            return out
    else:
        out["check_source"] = None

    # warm-up: calls after the checked one (a compiled library's first call compiles)
    # while under 0.3 s in all, and at least three: the first calls of a big graph still
    # grow the allocator's arenas. The number of timed calls follows the fastest of them.
    spent, calls, fastest = 0.0, 0, float("inf")
    while calls < 3 or spent < WARM_UP:
        t0 = time.perf_counter()
        run()
        last = time.perf_counter() - t0
        spent += last
        calls += 1
        fastest = min(fastest, last)
    n = int(min(MAX_REPEATS, max(MIN_REPEATS, TIME_BUDGET / max(fastest, 1e-9))))
    times = []
    for i in range(n):
        if i == n - 1:  # the last call also gives the peak RSS (read outside the timing)
            rss = reset_peak_rss()
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    # the round's value is the best call: on a shared machine the slower calls measure
    # the neighbours; the median is kept for reading
    out.update(time_s=min(times), median_s=statistics.median(times), repeats=n)
    # the kernel's RSS counters are approximate (per-thread caches): clamp at zero
    out["rss_peak_bytes"] = None if rss is None else max(0, _status_kb("VmHWM") * 1024 - rss)
    if lib in TRACEMALLOC_LIBS:
        out["tracemalloc_peak_bytes"] = tracemalloc_peak(run)
    return out


def graph_memory(lib):
    """Memory held by the recorded graph of the scalar chain after its forward pass, per
    recorded operation: tracemalloc for NumPy-based libraries, RSS growth for torch."""
    import tracemalloc

    import numpy as np

    from bench import workloads
    from bench.libs import MODULES

    module = importlib.import_module(f"bench.libs.{MODULES[lib]}")
    x = np.float64(0.3)
    if lib in TRACEMALLOC_LIBS:
        keep = module.graph_bytes(x)  # warm-up: first-use caches are not the graph's
        del keep
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        keep = module.graph_bytes(x)
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        method = "tracemalloc"
    else:
        # a short warm-up only: memory freed by a full one would be reused unseen by RSS
        keep = module.graph_bytes(x, steps=10)
        del keep
        before = _status_kb("VmRSS") * 1024
        keep = module.graph_bytes(x)
        after = _status_kb("VmRSS") * 1024
        method = "RSS growth"
    del keep
    return {"bytes_per_op": (after - before) / workloads.CHAIN_OPS, "method": method}


def main():
    for k, v in ONE_THREAD.items():
        os.environ.setdefault(k, v)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("lib")
    parser.add_argument("--ref", action="store_true", help="save the reference result")
    args = parser.parse_args()
    out = {"workload": args.workload, "lib": args.lib}
    try:
        if args.workload == "graph_memory":
            out.update(graph_memory(args.lib))
        else:
            out.update(measure(args.workload, args.lib, args.ref))
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        out["traceback"] = traceback.format_exc()[-2000:]
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
