"""The README's and the docs' code blocks run, and what they say they print is what they print.

A page's blocks run in order in one namespace, as a reader pastes them:

- a ``python`` block is executed; the ``text`` block right after it (blank lines between
  at most) is its expected output: what it prints, then, if it raises, the exception as
  Python shows its last line(s). A block that raises with no such ``text`` block fails.
  ``title="model.py"`` compiles it under that file name, so messages that quote a line of
  it quote this one.
- a ``pycon`` block is a doctest (``np`` and ``pb`` are there, as in the docstrings);
- an HTML comment ``<!-- no-run: why -->`` on the line before a block skips it,
  ``<!-- no-check: why -->`` runs it without comparing its output (ids that change), and
  ``<!-- numpy>=2: why -->`` marks a block whose output differs on NumPy 1.26.

The pages show what NumPy 2 prints; on NumPy 1.26 (``make test-oldest``) every block runs,
and only raising where the page shows no error fails.

The README's blocks start from nothing, as pasted into a fresh interpreter; a docs page's
start with ``np`` and ``pb`` imported, as the site says once on its first page.

The docs site itself is built strictly by ``make test`` (broken links fail the build); the
test here that builds it runs where MkDocs is installed.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import linecache
import os
import re
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback._engine import registry

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
NUMPY1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"
NEEDS = {  # a page -> the modules its blocks import beyond numpy and pullback
    "dask.md": ["dask"],
    "scipy.md": ["scipy"],
    "optimizers.md": ["scipy"],
    "debugging.md": [],
}


def blocks(text):
    """``(language, options, code, skip, check, line)`` for each fenced block of ``text``,
    with the ``text`` block that follows a ``python`` one attached as its output."""
    found = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip().rsplit("\n", 1)[-1]
        found.append({"lang": m.group(1), "options": m.group(2), "code": m.group(3),
                      "skip": before.startswith("<!-- no-run"),
                      "check": not before.startswith("<!-- no-check"),
                      "line": text.count("\n", 0, m.start()) + 1,
                      "start": m.start(), "end": m.end()})
    out = []
    for i, b in enumerate(found):
        if b["lang"] == "text":
            continue
        b["expected"] = None
        after = found[i + 1] if i + 1 < len(found) else None
        if b["lang"] == "python" and after and after["lang"] == "text" and not text[
                b["end"]:after["start"]].strip():
            b["expected"] = after["code"]
        out.append(b)
    return out


def run_python(code, namespace, filename):
    """What running ``code`` prints, and the exception's last lines if it raises."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(code, filename, "exec"), namespace)
        except Exception as error:  # shown as Python shows it, without the traceback
            print("".join(traceback.format_exception_only(type(error), error)), end="")
            namespace["__raised__"] = True
    return out.getvalue()


def normal(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


@pytest.fixture
def registry_kept():
    """The library's rules as they were before the test: a page that registers a rule for a
    NumPy function (``pb.composite(np.cov, cov_impl)``) leaves the library's for the tests
    after it. (The rules of a SciPy module the page imports, which load then, stay.)"""
    saved = dict(registry.rules), dict(registry.origin)
    yield
    for func in list(registry.rules):
        if func in saved[0]:
            registry.rules[func], registry.origin[func] = saved[0][func], saved[1][func]
        elif not registry.origin.get(func, "").startswith("pullback."):
            del registry.rules[func]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_code_blocks_run_as_shown(page, tmp_path, monkeypatch, registry_kept):
    for module in NEEDS.get(page.name, []):
        pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)  # (a block that saves a file saves it here)
    text = page.read_text()
    namespace = {"__name__": "__main__"}
    if page.name != "README.md":
        namespace.update(np=np, pb=pb)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    parser = doctest.DocTestParser()
    ran = 0
    for b in blocks(text):
        where = f"{page.relative_to(ROOT)}:{b['line']}"
        if b["skip"] or b["lang"] not in ("python", "pycon"):
            continue
        ran += 1
        np.random.seed(0)
        if b["lang"] == "pycon" and NUMPY1:  # (NumPy 1.26 writes scalars otherwise: run only)
            for example in parser.get_examples(b["code"]):
                try:
                    exec(compile(example.source, where, "single"), namespace)
                except Exception:
                    assert example.exc_msg, f"{where}: {example.source} raised"
            continue
        if b["lang"] == "pycon":
            globs = {**namespace, "np": np, "pb": pb}
            test = parser.get_doctest(b["code"], globs, where, str(page), b["line"])
            report = io.StringIO()
            result = runner.run(test, out=report.write, clear_globs=False)
            assert result.failed == 0, f"{where}: a pycon block fails:\n{report.getvalue()}"
            namespace.update({k: v for k, v in test.globs.items() if k != "__builtins__"})
            continue
        title = re.search(r'title="([^"]+)"', b["options"])
        filename = title.group(1) if title else f"<{where}>"
        namespace.pop("__raised__", None)
        got = run_python(b["code"], namespace, filename)
        raised = namespace.pop("__raised__", False)
        if b["expected"] is None:
            assert not raised, f"{where}: the block raised:\n{got}"
        elif b["check"] and not NUMPY1:
            assert normal(got) == normal(b["expected"]), (
                f"{where}: the block prints\n{got}\nbut the page shows\n{b['expected']}")
    assert ran or page.name not in ("README.md", "index.md")


def test_the_readme_is_a_front_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 210
    for word in ("pip install", "make demo", "make test", "pb.jit", "pb.param",
                 "hessian", "detect_anomaly", "Dask", "autograd", "JAX", "PyTorch",
                 "What `import pullback` does to NumPy"):
        assert word in text, word


def test_no_page_points_back_to_the_readme():
    for page in (ROOT / "docs").rglob("*.md"):
        assert "readme" not in page.read_text().lower(), page


def test_the_site_builds_strictly_with_its_links_checked(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "--site-dir", str(tmp_path / "site")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    coverage = (site / "coverage" / "index.html").read_text()
    assert "np.sin" in coverage and "np.linalg.solve" in coverage
    for page in site.rglob("*.html"):
        assert "&lt;BLANKLINE&gt;" not in page.read_text(), page
    api = (site / "api" / "index.html").read_text()
    for internal in ("_Watched", "_Untraceable", "core.py"):
        assert internal not in api, internal
    index = (site / "search" / "search_index.json").read_text()
    assert "LossError" in index
