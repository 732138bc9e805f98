"""An MkDocs hook that writes the Coverage page from pullback's rule table at build time.

``docs/coverage.md`` holds the prose; the line ``<!-- coverage: generated -->`` is replaced
by the tables: every function with a rule (grouped by namespace, with the form of its
rule), every function declared non-differentiable, and every function of NumPy's
namespaces that has neither (a tracked argument raises ``pb.NoRuleError`` there). SciPy's
rules are registered when SciPy's modules are imported, so the hook imports those that are
installed first. The page cannot drift from the code: it is the code's table.
"""

from __future__ import annotations

import importlib
import sys
from collections import defaultdict
from pathlib import Path

MARKER = "<!-- coverage: generated -->"
# indexing, writes, astype, and the primitives SciPy's and pullback's functions are made of
OTHER = "Indexing, writes and internal primitives"
SCIPY = ["scipy.special", "scipy.linalg", "scipy.stats", "scipy.signal", "scipy.integrate",
         "scipy.spatial", "scipy.fft", "scipy.sparse"]


def on_config(config):
    root = str(Path(config.config_file_path).resolve().parent)
    if root not in sys.path:  # this checkout's pullback, not another installed one
        sys.path.insert(0, root)
    return config


def _tables():
    import numpy as np

    import pullback as pb
    from pullback._engine import registry

    loaded = []
    for name in SCIPY:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except ImportError:
            pass
    by_space = defaultdict(list)
    for f in pb.registered_rules(None):  # (which loads the rules of the SciPy modules)
        rule = registry.rules[f]
        name = pb.name_of(f)
        space = name.rsplit(".", 1)[0] if "." in name else OTHER
        if isinstance(getattr(np, space[3:], None), np.ufunc) and space.startswith("np."):
            space = "np ufunc methods"  # np.add.reduce, np.maximum.accumulate, ...
        elif not space.startswith(("np", "scipy")):
            space = OTHER
        form = rule.form  # its record says its kind
        if (refuses := getattr(getattr(rule, "rule", rule), "refuses", None)) is not None:
            form = f"refuses every argument: {refuses}"
        by_space[space].append((name, form))
    constants = sorted(pb.name_of(f) for f in pb.registered_nondifferentiable())
    known = set(registry.rules) | set(registry.nondiff)
    missing = []
    for prefix, module in (("np", np), ("np.linalg", np.linalg), ("np.fft", np.fft)):
        for attr in sorted(dir(module)):
            f = getattr(module, attr, None)
            if attr.startswith("_") or isinstance(f, type) or not callable(f):
                continue
            if getattr(f, "_pb_original", f) not in known:
                missing.append(f"{prefix}.{attr}")

    total = sum(len(v) for v in by_space.values())
    out = [f"With NumPy {np.__version__}" + (
        f" and SciPy {importlib.import_module('scipy').__version__}" if loaded else "") +
        f": **{total} functions with a rule**, **{len(constants)} declared "
        f"non-differentiable**, and {len(missing)} functions of `np`, `np.linalg` and "
        "`np.fft` with neither.", ""]
    order = sorted(by_space, key=lambda s: (not s.startswith("np"), s == OTHER, s))
    for space in order:
        rows = sorted(set(by_space[space]))
        title = space if space == OTHER else f"`{space}`"
        out += [f"### {title} ({len(rows)})", "", "| function | rule |", "|---|---|"]
        out += [f"| `{name}` | {form} |" for name, form in rows]
        out.append("")
    out += ["## Non-differentiable: outputs are constants", "",
            "Their outputs carry no gradient (indices, comparisons, rounding, predicates, "
            "printing and saving), so they may be called inside a differentiated function.",
            "", ", ".join(f"`{n}`" for n in constants), "",
            "## No rule", "",
            "These functions of NumPy's namespaces have no rule and are not declared "
            "constant: given a tracked value, each raises `pb.NoRuleError` naming it. Most "
            "take no floating-point data (integer, bit, date, string, file and "
            "error-state functions), or build arrays from plain values.", "",
            ", ".join(f"`{n}`" for n in missing), ""]
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files):
    if MARKER in markdown:
        return markdown.replace(MARKER, _tables())
    return markdown
