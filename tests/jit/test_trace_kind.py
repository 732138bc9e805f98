"""pb.jit's trace as a kind of its own: a traced value's operators record on the trace
directly, never through the engine's dispatch, and a gradient computation's box meeting a
traced value records first at its own level."""

import sys

import numpy as np

import pullback as pb
from tests.conftest import central_differences

DISPATCH = {"apply", "_binary", "_unary", "_call_plain"}


def _core_calls(f, *args):
    calls = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_globals.get("__name__") == "pullback._engine.core":
            calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        out = f(*args)
    finally:
        sys.setprofile(None)
    return out, set(calls)


def _operators(x):
    y = -x * 2.0 + abs(x) ** 2 - 1.5 / (x + 3.0)
    y = y @ np.eye(3) + 1j * y.real
    q, r = divmod(y.real, 0.7)
    return (+y.real - 2 * q) % 5.0 + (4.0 - r) // 2.0 + y.imag


def test_a_traced_values_operators_record_on_the_trace_directly():
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    jitted = pb.jit(_operators)
    traced, calls = _core_calls(jitted, x)  # the first call traces
    assert not DISPATCH & calls, DISPATCH & calls
    np.testing.assert_allclose(traced, _operators(x))
    np.testing.assert_allclose(jitted(x + 0.25), _operators(x + 0.25))  # the replay


def _loss(x):
    return np.sum(np.sin(x) * x + 3.0 / (x + 2.0) - x ** 2)


def test_a_gradients_box_records_first_over_a_traced_value():
    x = np.linspace(0.1, 1.0, 5)
    g = pb.jit(pb.grad(_loss))
    for v in (x, x + 0.3):  # traced, then replayed
        np.testing.assert_allclose(g(v), central_differences(_loss, v), rtol=1e-7, atol=1e-9)
    h = pb.jit(pb.hessian(_loss))(x)
    column = central_differences(lambda v: pb.grad(_loss)(v)[2], x)
    np.testing.assert_allclose(h[2], column, rtol=1e-6, atol=1e-8)
