"""Shared test data: a small tanh layer's loss and inputs for it."""

import numpy as np
import pytest


def layer_loss(W, b, x, y):
    h = np.tanh(x @ W + b)
    return np.mean((h - y) ** 2)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3, 2)), rng.standard_normal(2),
            rng.standard_normal((5, 3)), rng.standard_normal((5, 2)))


def pullback_cycles(fn, *args):
    """The objects of pullback's (tracked values, and the functions, cells and frames of
    its modules) that a second call of ``fn`` leaves in reference cycles: a graph must go
    when the call returns. Another library's garbage (a thread pool's, finishing a task
    an earlier test gave it) is not counted."""
    import gc

    import pullback as pb

    fn(*args)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        fn(*args)
        gc.collect()
        found = [o for o in gc.garbage if isinstance(o, pb.Tracked) or getattr(
            getattr(o, "__code__", getattr(o, "f_code", None)), "co_filename", "").find(
                "/pullback/") >= 0]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return found


def central_differences(f, x, eps=1e-6):
    """The gradient of the scalar ``f`` at the plain array ``x`` by central differences in
    float64: the oracle of the tests of user code. For a complex ``x``, the derivative
    along the real part plus 1j times the one along the imaginary part (the convention of
    docs/conventions.md for a real function of a complex argument)."""
    import numpy as np

    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        for d in (1, 1j) if np.iscomplexobj(x) else (1,):
            e = np.zeros_like(x)
            e[k] = eps * d
            g[k] += (f(x + e) - f(x - e)) / (2 * eps) * d
    return g
