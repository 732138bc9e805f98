"""The benchmark driver (`make bench`): every (workload, library) in a fresh process, the
libraries interleaved across rounds, the table written to bench/RESULTS.md.

    python bench/run.py                       # all workloads, all libraries, 3 rounds
    python bench/run.py --rounds 3 --only small_mlp,rnn --libs pullback,numpy,torch

Before the rounds, pullback computes each workload's reference result (hand-written NumPy
where pullback fails); every child checks its result against it before it is timed.
A run with --only or --libs writes bench/out/RESULTS.md unless --out says otherwise.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.libs import LIBS, pairs  # noqa: E402
from bench.one import ONE_THREAD, TRACEMALLOC_LIBS  # noqa: E402
from bench.workloads import CHAIN_OPS, TRAIN_STEPS, WORKLOADS  # noqa: E402

OUT = ROOT / "bench" / "out"
GRAPH_LIBS = ("pullback", "autograd", "mygrad", "torch")
NAMES = {
    "pullback": "pullback", "pullback_fn": "pullback (functional)", "pullback_jit": "pullback.jit",
    "numpy": "hand-written NumPy", "autograd": "autograd", "mygrad": "MyGrad",
    "torch": "PyTorch eager", "jax": "JAX eager", "jax_jit": "jax.jit",
}
DESCRIPTIONS = {
    "scalar_chain": "a 0-d value through 2,000 iterations of `x = np.sin(x) * 1.0001 + 0.1`; "
                    "d/dx (6,000 primitive operations)",
    "small_mlp": "64-128-128-10 MLP, tanh, batch 32, softmax cross-entropy with a "
                 "log-sum-exp; gradient with respect to the six weight and bias arrays",
    "small_mlp_sum": "small_mlp with the loss written `-np.sum(Y * (logits - lse)) / n`",
    "large_mlp": "the same code at 1024-2048-2048-10, batch 512 (compute-bound)",
    "rnn": "vanilla tanh RNN, hidden 32, input 16, 100 steps, batch 8, loss the sum of "
           "squares of the final state; gradient with respect to Wx, Wh, b",
    "rnn_list": "rnn with the inputs a Python list of arrays",
    "hessian": "full Hessian of `sum(tanh(A @ x)) ** 2`, x in R^64",
    "jacobian_ew": "Jacobian of the elementwise map `sin(x) * exp(-x*x/2) + tanh(x)`, "
                   "R^1000 -> R^1000",
    "jacobian_mlp": "Jacobian of the small MLP's output (R^10) with respect to its input "
                    "(R^64), one example",
    "training_loop": "200 steps of plain SGD on small_mlp; pullback through the Tracker API "
                     "(param, backward, update), `pullback (functional)` through "
                     "pb.grad, the others in their usual style",
}


# ---------------------------------------------------------------------------- children

def child(workload, lib, ref=False, timeout=300):
    cmd = [sys.executable, "-m", "bench.one", workload, lib] + (["--ref"] if ref else [])
    env = dict(os.environ, **ONE_THREAD)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"workload": workload, "lib": lib, "error": f"timed out after {timeout} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"workload": workload, "lib": lib,
                "error": f"child exited {p.returncode}: {tail[:300]}"}
    out = json.loads(lines[-1])
    out["wall_s"] = time.perf_counter() - t0
    return out


def make_refs(workloads, timeout):
    """Each workload's reference from pullback, else from hand-written NumPy."""
    notes = {}
    for w in workloads:
        r = child(w, "pullback", ref=True, timeout=timeout)
        if "error" in r:
            r2 = child(w, "numpy", ref=True, timeout=timeout)
            if "error" in r2:
                notes[w] = f"no reference: pullback ({r['error']}), NumPy ({r2['error']})"
            else:
                notes[w] = f"pullback failed ({r['error']}); checked against hand-written NumPy"
            print(f"reference {w}: {notes[w]}", file=sys.stderr)
    return notes


# ---------------------------------------------------------------------------- statistics

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Stats:
    def __init__(self, records, rounds):
        self.rounds = rounds
        self.by = {}
        for r in records:
            self.by.setdefault((r["workload"], r["lib"]), {})[r["round"]] = r

    def rec(self, w, lib):
        return self.by.get((w, lib), {})

    def times(self, w, lib):
        return {k: r["time_s"] for k, r in self.rec(w, lib).items() if "time_s" in r}

    def time(self, w, lib):
        return med(self.times(w, lib).values())

    def field(self, w, lib, key):
        return med(r.get(key) for r in self.rec(w, lib).values())

    def ratio(self, w, a, b):
        """Median over rounds of time(a) / time(b), both measured in the same round."""
        ta, tb = self.times(w, a), self.times(w, b)
        return med(ta[k] / tb[k] for k in ta if k in tb)

    def ratio_fastest(self, w, lib, libs):
        ta = self.times(w, lib)
        out = []
        for k, t in ta.items():
            best = min(self.times(w, x).get(k, float("inf")) for x in libs)
            out.append(t / best)
        return med(out)

    def errors(self, w, lib):
        return sorted({r["error"] for r in self.rec(w, lib).values() if "error" in r})


# ---------------------------------------------------------------------------- formatting

def fmt_time(t):
    if t is None:
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t * 1e9:.3g} ns"


def fmt_bytes(b):
    if b is None:
        return "n/a"
    b = float(b)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(b) >= 1000 * scale / 1024:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def fmt_ratio(x):
    return "–" if x is None else f"{x:.2f}×"


def versions():
    code = (
        "import json, importlib.metadata as m, numpy\n"
        "v = {}\n"
        "for p in ('numpy', 'scipy', 'autograd', 'mygrad', 'torch', 'jax', 'jaxlib'):\n"
        "    try: v[p] = m.version(p)\n"
        "    except Exception: v[p] = 'not installed'\n"
        "try:\n"
        "    b = numpy.show_config(mode='dicts')['Build Dependencies']['blas']\n"
        "    v['numpy BLAS'] = f\"{b['name']} {b['version']}\"\n"
        "except Exception: pass\n"
        "try:\n"
        "    import torch\n"
        "    v['torch BLAS'] = 'MKL' if torch.backends.mkl.is_available() else 'other'\n"
        "except Exception: pass\n"
        "print(json.dumps(v))\n"
    )
    env = dict(os.environ, **ONE_THREAD)
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=120)
        v = json.loads(p.stdout.strip().splitlines()[-1])
    except Exception as e:  # the report is still worth writing
        v = {"versions": f"unavailable ({e})"}
    return {"pullback": pullback_state(), **v}


def pullback_state():
    """The commit of the checkout, and whether pullback/ has uncommitted changes."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "pullback"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown (no git)"
    return f"{commit}{' + uncommitted changes' if dirty else ''}" if commit else "unknown"


def machine():
    model = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {
        "CPU": model, "cores": os.cpu_count(), "memory": fmt_bytes(mem),
        "OS": platform.platform(), "Python": platform.python_version(),
    }


# ---------------------------------------------------------------------------- report

def targets(S, libs):
    """(description, measured, met) for each target of the issue; met is None when not
    measured."""
    out = []

    def add(desc, value, text, ok):
        out.append((desc, text if value is not None else "not measured",
                    None if value is None else ok(value)))

    t = S.time("scalar_chain", "pullback")
    us = None if t is None else t / CHAIN_OPS * 1e6
    add("scalar_chain: at most 2.5 µs per operation", us,
        us is not None and f"{us:.2f} µs/op", lambda v: v <= 2.5)
    r = S.ratio("scalar_chain", "pullback", "torch")
    add("scalar_chain: at most 0.4× PyTorch eager", r,
        r is not None and f"pullback / torch = {r:.2f}", lambda v: v <= 0.4)
    r = S.ratio("scalar_chain", "autograd", "pullback")
    add("scalar_chain: 8× faster than autograd", r,
        r is not None and f"autograd / pullback = {r:.2f}", lambda v: v >= 8)
    for w in ("small_mlp", "small_mlp_sum", "rnn", "rnn_list"):
        r = S.ratio(w, "pullback", "torch")
        add(f"{w}: at most 0.85× PyTorch eager", r,
            r is not None and f"pullback / torch = {r:.2f}", lambda v: v <= 0.85)
    for w, lim in (("small_mlp", 1.3), ("rnn", 1.6)):
        r = S.ratio(w, "pullback", "numpy")
        add(f"{w}: within {lim}× of hand-written NumPy", r,
            r is not None and f"pullback / NumPy = {r:.2f}", lambda v, lim=lim: v <= lim)
    r = S.ratio("large_mlp", "pullback", "numpy")
    add("large_mlp: within 1.05× of hand-written NumPy in time", r,
        r is not None and f"pullback / NumPy = {r:.3f}", lambda v: v <= 1.05)
    a = S.field("large_mlp", "pullback", "tracemalloc_peak_bytes")
    b = S.field("large_mlp", "numpy", "tracemalloc_peak_bytes")
    r = None if a is None or not b else a / b
    add("large_mlp: within 1.2× of hand-written NumPy in peak memory", r,
        r is not None and f"{fmt_bytes(a)} / {fmt_bytes(b)} = {r:.2f}", lambda v: v <= 1.2)
    t = S.time("hessian", "pullback")
    add("hessian: under 1 ms", t, t is not None and fmt_time(t), lambda v: v < 1e-3)
    for w in ("jacobian_ew", "jacobian_mlp"):
        r = S.ratio(w, "autograd", "pullback")
        add(f"{w}: 10× faster than autograd", r,
            r is not None and f"autograd / pullback = {r:.1f}", lambda v: v >= 10)
    g = S.field("graph_memory", "pullback", "bytes_per_op")
    ga = S.field("graph_memory", "autograd", "bytes_per_op")
    text = g is not None and f"{g:.0f} B/op" + (
        f" (autograd {ga:.0f} B/op)" if ga is not None else "")
    add("recorded graph: at most 300 bytes per operation (scalar chain)", g, text,
        lambda v: v <= 300)
    r = S.ratio("training_loop", "pullback", "pullback_fn")
    add("training_loop: the Tracker API costs the same as the functional one "
        "(no threshold in the issue; read as within 1.1×)", r,
        r is not None and f"Tracker / functional = {r:.2f}", lambda v: v <= 1.1)
    return out


def report(S, workloads, libs, skipped, ref_notes, info, path):
    L = []
    L.append("# Benchmarks\n")
    L.append(f"Written by `bench/run.py` on {info['date']} in {info['duration']:.0f} s, "
             f"{S.rounds} round(s); command: `{info['command']}`.\n")
    L.append(
        "Each (workload, library) runs in a fresh process with one thread for every "
        "library (OMP/MKL/OpenBLAS threads 1, `torch.set_num_threads(1)`, XLA "
        "`--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1`), float64, "
        "on the same data from a fixed seed. Libraries interleave: in each round the "
        "order of the libraries within a workload rotates. A child first checks its "
        "result against pullback's (largest error relative to the result's scale at "
        "most 1e-6), then warms up (at least 3 calls and 0.3 s: the first calls of a big "
        "graph still grow the allocator's arenas), then times calls with "
        "`time.perf_counter` (at least 3, as many as the fastest warm-up call says fit in "
        "0.4 s). *Time* is the median over rounds of each "
        "round's fastest call (on a shared machine the slower calls measure the "
        "neighbours; `bench/out/results.json` keeps each round's median call too). "
        "*× fastest* and *× NumPy* are medians over rounds of the ratio to the fastest "
        "library and to hand-written NumPy measured in the same round.\n")
    L.append("*Peak (tracemalloc)* is the peak of traced allocations during one call above "
             "what was held before it; NumPy reports its array buffers to tracemalloc, so "
             "this covers the NumPy-based libraries only (n/a for torch and JAX, whose "
             "buffers it cannot see). *Peak RSS growth* is the kernel's high-water mark "
             "during one call after warm-up, less the RSS before it: it is 0 whenever the "
             "allocator reuses memory freed by earlier calls, so read it as a lower bound. "
             "*First call* is the checked call before warm-up (it includes jit compilation "
             "and first-use caches).\n")
    L.append("## Machine\n")
    for k, v in info["machine"].items():
        L.append(f"- {k}: {v}")
    L.append(f"- load average (1 min) at start / end: {info['load'][0]:.2f} / "
             f"{info['load'][1]:.2f} (other processes share the machine when this is above "
             "0; the interleaving spreads their noise over all libraries)")
    L.append("\n## Versions\n")
    for k, v in info["versions"].items():
        L.append(f"- {k}: {v}")
    L.append("\n## Targets\n")
    L.append("| target | measured | |")
    L.append("|---|---|---|")
    for desc, text, ok in targets(S, libs):
        mark = "not measured" if ok is None else ("met" if ok else "**missed**")
        L.append(f"| {desc} | {text} | {mark} |")
    L.append("")
    for w in [w for w in workloads if w != "graph_memory"]:
        L.append(f"## {w}\n")
        L.append(DESCRIPTIONS.get(w, "") + "\n")
        if w in ref_notes:
            L.append(f"Reference: {ref_notes[w]}.\n")
        wl = [x for x in libs if (w, x) in S.by or (w, x) in skipped]
        chain = w == "scalar_chain"
        head = ["library", "time"] + (["µs / op"] if chain else []) + [
            "× fastest", "× NumPy", "peak (tracemalloc)", "peak RSS growth", "first call",
            "check error", "rounds"]
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + "---|" * len(head))
        order = sorted(wl, key=lambda x: (S.time(w, x) is None, S.time(w, x) or 0))
        for x in order:
            if (w, x) in skipped:
                L.append(f"| {NAMES.get(x, x)} | n/a: {skipped[(w, x)]} |"
                         + " |" * (len(head) - 2))
                continue
            t = S.time(w, x)
            errs = S.errors(w, x)
            if t is None:
                msg = "; ".join(errs) or "no result"
                L.append(f"| {NAMES.get(x, x)} | failed: {msg} |" + " |" * (len(head) - 2))
                continue
            row = [NAMES.get(x, x), fmt_time(t)]
            if chain:
                row.append(f"{t / CHAIN_OPS * 1e6:.3g}")
            tm = S.field(w, x, "tracemalloc_peak_bytes") if x in TRACEMALLOC_LIBS else None
            err = S.field(w, x, "check_err")
            src = {r.get("check_source") for r in S.rec(w, x).values()} - {None}
            check = "unchecked" if err is None else f"{err:.1e}"
            if src and src != {"pullback"}:
                check += f" (vs {'/'.join(sorted(src))})"
            ok = len(S.times(w, x))
            rounds = f"{ok}/{S.rounds}" + (f" ({'; '.join(errs)})" if errs else "")
            row += [fmt_ratio(S.ratio_fastest(w, x, wl)),
                    fmt_ratio(S.ratio(w, x, "numpy")),
                    fmt_bytes(tm), fmt_bytes(S.field(w, x, "rss_peak_bytes")),
                    fmt_time(S.field(w, x, "first_call_s")), check, rounds]
            L.append("| " + " | ".join(row) + " |")
        if w == "training_loop":
            t, tn = S.time(w, "pullback"), S.time("small_mlp", "pullback")
            if t is not None and tn is not None:
                L.append(f"\npullback per training step: {fmt_time(t / TRAIN_STEPS)} "
                         f"(gradient alone in small_mlp: {fmt_time(tn)}).")
        L.append("")
    if ("graph_memory", "pullback") in S.by or any(("graph_memory", x) in S.by
                                                   for x in GRAPH_LIBS):
        L.append("## Recorded graph memory (scalar_chain)\n")
        L.append("Memory held after the forward pass of the scalar chain with its graph kept "
                 "alive (pb.vjp, autograd.make_vjp, the output tensor for MyGrad and "
                 "PyTorch), divided by the 6,000 recorded operations. tracemalloc for the "
                 "NumPy-based libraries; for PyTorch the RSS growth, a coarse estimate (its "
                 "allocations are invisible to tracemalloc).\n")
        L.append("| library | bytes / op | method |")
        L.append("|---|---|---|")
        for x in GRAPH_LIBS:
            rec = S.rec("graph_memory", x)
            if not rec:
                continue
            v = S.field("graph_memory", x, "bytes_per_op")
            errs = S.errors("graph_memory", x)
            method = next((r.get("method") for r in rec.values() if "method" in r), "")
            text = f"{v:.0f}" if v is not None else "failed: " + "; ".join(errs)
            L.append(f"| {NAMES[x]} | {text} | {method} |")
        L.append("")
    L.append("Raw per-round records: `bench/out/results.json` (not committed).\n")
    path.write_text("\n".join(L))


# ---------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="comma-separated workloads (a prefix selects several: "
                                   "'jacobian'), or graph_memory")
    ap.add_argument("--libs", help="comma-separated libraries: " + ",".join(LIBS)
                                   + ",pullback_fn")
    ap.add_argument("--out", help="the report (default bench/RESULTS.md for a full run)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per child")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite the report from the last run's bench/out/run.json")
    args = ap.parse_args()
    if args.report_only:
        run = json.loads((OUT / "run.json").read_text())
        skipped = {tuple(k.split("/")): v for k, v in run["skipped"].items()}
        path = Path(args.out) if args.out else ROOT / run["path"]
        report(Stats(run["records"], run["rounds"]), run["workloads"], run["libs"], skipped,
               run["ref_notes"], run["info"], path)
        print(f"wrote {path}", file=sys.stderr)
        return

    all_w = list(WORKLOADS) + ["graph_memory"]
    if args.only:
        sel = [s.strip() for s in args.only.split(",") if s.strip()]
        workloads = [w for w in all_w if any(w.startswith(s) for s in sel)]
        if not workloads:
            ap.error(f"--only {args.only}: no such workload; choose from {', '.join(all_w)}")
    else:
        workloads = all_w
    libs = list(LIBS) + ["pullback_fn"]
    if args.libs:
        want = [s.strip() for s in args.libs.split(",") if s.strip()]
        bad = [x for x in want if x not in libs]
        if bad:
            ap.error(f"--libs: unknown {', '.join(bad)}; choose from {', '.join(libs)}")
        libs = want
    partial = bool(args.only or args.libs)
    path = Path(args.out) if args.out else (OUT / "RESULTS.md" if partial
                                            else ROOT / "bench" / "RESULTS.md")
    OUT.mkdir(parents=True, exist_ok=True)

    start, load0 = time.time(), os.getloadavg()[0]
    vers = versions()
    timed_w = [w for w in workloads if w != "graph_memory"]
    todo, skipped = pairs(timed_w, libs)
    if "graph_memory" in workloads:
        todo += [("graph_memory", x) for x in GRAPH_LIBS if x in libs]
    ref_notes = make_refs(timed_w, args.timeout)

    records = []
    for rnd in range(args.rounds):
        for w in workloads:
            cell = [x for (ww, x) in todo if ww == w]
            k = rnd % len(cell) if cell else 0
            for x in cell[k:] + cell[:k]:
                r = child(w, x, timeout=args.timeout)
                r["round"] = rnd
                records.append(r)
                shown = (r.get("error") or (fmt_time(r["time_s"]) if "time_s" in r
                         else f"{r.get('bytes_per_op', 0):.0f} B/op"))
                print(f"[round {rnd + 1}/{args.rounds}] {w:14s} {x:12s} {shown}",
                      file=sys.stderr, flush=True)
        (OUT / "results.json").write_text(json.dumps(records, indent=1))

    info = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "duration": time.time() - start,
        "command": " ".join(["python bench/run.py"] + sys.argv[1:]),
        "machine": machine(),
        "versions": vers,
        "load": (load0, os.getloadavg()[0]),
    }
    end_state = pullback_state()
    if end_state != vers["pullback"]:
        vers["pullback"] += f" at the start, {end_state} at the end (changed during the run)"
    (OUT / "run.json").write_text(json.dumps({
        "records": records, "rounds": args.rounds, "workloads": workloads, "libs": libs,
        "skipped": {f"{w}/{x}": v for (w, x), v in skipped.items()},
        "ref_notes": ref_notes, "info": info, "path": str(path.relative_to(ROOT))
        if path.is_relative_to(ROOT) else str(path)}, indent=1))
    S = Stats(records, args.rounds)
    report(S, workloads, libs, skipped, ref_notes, info, path)
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
