"""The minimum and median time of one library's call of a workload, over many calls: for
comparing two trees of pullback on a shared machine, where load can only raise a minimum.

    python -m bench.mintime small_mlp 200            # pullback, 200 timed calls
    python -m bench.mintime rnn 200 --lib torch

Run it from each tree in turn (interleaved rounds), with one BLAS thread; it prints the
minimum and the median in seconds.
"""

import argparse
import importlib
import os
import statistics
import time

from bench.one import ONE_THREAD


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("calls", type=int)
    parser.add_argument("--lib", default="pullback")
    args = parser.parse_args()
    os.environ.update(ONE_THREAD)

    from bench import workloads
    from bench.libs import MODULES

    module = importlib.import_module(f"bench.libs.{MODULES[args.lib]}")
    run, _ = module.build(args.workload, workloads.make_data(args.workload), args.lib)
    run()  # warm-up
    times = []
    for _ in range(args.calls):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    print(min(times), statistics.median(times))


if __name__ == "__main__":
    main()
