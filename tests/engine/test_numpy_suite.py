"""A part of NumPy's own test suite, from the installed NumPy, run without pullback, with
pullback imported, and during a differentiation (a live ``pb.param``): the outcomes must
be NumPy's own.

During a differentiation pullback's stand-ins are in NumPy's namespace, and they differ
from NumPy's functions by ``is`` and ``type()`` alone; NumPy's tests of exactly that
(``type(np.mean) is _ArrayFunctionDispatcher``, ``func is getattr(np, func.__name__)``) are
the only ones allowed to differ there, and they are named below."""

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("hypothesis")  # (NumPy's tests use it)
if np.lib.NumpyVersion(np.__version__) < "2.0.0":  # (CI's time: the current NumPy's suite)
    pytest.skip("NumPy's own tests run against the current NumPy (they passed on 1.26.4 "
                "too when this check was written)", allow_module_level=True)

_CORE = "_core" if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else "core"
MODULES = [f"numpy.{_CORE}.tests.test_overrides", "numpy.linalg.tests.test_linalg",
           "numpy.lib.tests.test_function_base"]

# NumPy's tests of the identity and the type of the objects in its namespace
IDENTITY_TESTS = {"test_function_like", "test_array_like"}

_RUNNER = """
import sys
import numpy as np
MODE = {mode!r}
if MODE != "plain":
    import pullback as pb
if MODE == "differentiating":
    keep = pb.param(np.zeros(1))
import pytest
sys.exit(pytest.main(["-q", "-rf", "-p", "no:cacheprovider", "-p", "no:xdist",
                      "--pyargs", *{modules!r}]))
"""


def _start(mode):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(_RUNNER.format(
        mode=mode, modules=MODULES))], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, cwd="/")


def _outcome(process):
    out = process.communicate(timeout=600)[0]
    summary = out.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    assert passed, out[-3000:]
    failed = {line.split(" - ")[0].split()[-1] for line in out.splitlines()
              if line.startswith("FAILED ")}
    return int(passed.group(1)), failed


def test_numpys_tests_pass_as_without_pullback():
    runs = {mode: _start(mode) for mode in ("plain", "imported", "differentiating")}
    plain, imported, differentiating = (_outcome(runs[m]) for m in runs)
    assert plain[0] > 1000
    assert imported == plain
    extra = differentiating[1] - plain[1]
    names = {re.split(r"[\[:]", name.rsplit("::", 1)[-1])[0] for name in extra}
    assert names <= IDENTITY_TESTS, extra
    assert plain[1] <= differentiating[1]
    assert differentiating[0] + len(extra) == plain[0]
