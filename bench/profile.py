"""cProfile of one workload's pullback call, repeated, with one thread:

    python -m bench.profile scalar_chain [--lib pullback] [--calls 50] [--top 25]
"""

import argparse
import cProfile
import importlib
import io
import os
import pstats

from bench.one import ONE_THREAD


def main():
    for k, v in ONE_THREAD.items():
        os.environ.setdefault(k, v)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload")
    ap.add_argument("--lib", default="pullback")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--sort", default="tottime")
    args = ap.parse_args()

    from bench import workloads
    from bench.libs import MODULES

    module = importlib.import_module(f"bench.libs.{MODULES[args.lib]}")
    run, _ = module.build(args.workload, workloads.make_data(args.workload), args.lib)
    run()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        run()
    prof.disable()
    s = io.StringIO()
    stats = pstats.Stats(prof, stream=s).strip_dirs().sort_stats(args.sort)
    stats.print_stats(args.top)
    print(f"{args.workload} / {args.lib}: {args.calls} calls")
    print(s.getvalue())


if __name__ == "__main__":
    main()
