"""Draw the benchmarks' figure for the docs from bench/RESULTS.md.

Reads the "× NumPy" column of each workload's table (each library's time over hand-written
NumPy's, measured in the same round) and writes docs/img/bench.svg: one group of bars per
workload, a log scale, NumPy at 1. Run it after `make bench`: `python bench/plot.py`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = ["pullback", "pullback.jit", "autograd", "PyTorch eager", "JAX eager", "jax.jit"]
WORKLOADS = ["small_mlp", "rnn", "scalar_chain", "hessian", "jacobian_mlp", "large_mlp",
             "training_loop"]


def ratios(text: str) -> dict[str, dict[str, float]]:
    """workload -> library -> time over hand-written NumPy's, from RESULTS.md's tables."""
    out: dict[str, dict[str, float]] = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        name = section.split("\n", 1)[0].strip()
        rows = [line for line in section.splitlines() if line.startswith("|")]
        if len(rows) < 3:
            continue
        header = [c.strip() for c in rows[0].strip("|").split("|")]
        if "× NumPy" not in header:
            continue
        col = header.index("× NumPy")
        for row in rows[2:]:
            cells = [c.strip() for c in row.strip("|").split("|")]
            if len(cells) > col and cells[col].endswith("×"):
                out.setdefault(name, {})[cells[0]] = float(cells[col].rstrip("×"))
    return out


def main(out_path: Path = ROOT / "docs" / "img" / "bench.svg") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    table = ratios((ROOT / "bench" / "RESULTS.md").read_text())
    workloads = [w for w in WORKLOADS if w in table]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    width = 0.8 / len(LIBRARIES)
    for k, lib in enumerate(LIBRARIES):
        values = [table[w].get(lib, np.nan) for w in workloads]
        ax.bar(np.arange(len(workloads)) + (k - (len(LIBRARIES) - 1) / 2) * width, values,
               width, label=lib)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(workloads)), workloads, rotation=20)
    ax.set_ylabel("time / hand-written NumPy (log)")
    ax.set_title("Gradient time relative to hand-written NumPy (bench/RESULTS.md)")
    ax.legend(ncol=3, fontsize=8)
    fig.tight_layout()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path, metadata={"Date": None})
    print(f"saved {out_path}")


if __name__ == "__main__":
    main(*(Path(a) for a in sys.argv[1:]))
