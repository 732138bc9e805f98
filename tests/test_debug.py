"""Debugging: NaN provenance in losscheck, detect_anomaly, graph and memory_report."""

import inspect
import os
import re
import shutil
import sys
import threading
import tracemalloc

import numpy as np
import pytest

import pullback as pb
from pullback._engine import core

HERE = os.path.basename(__file__)


def line_of(fn, text):
    """The file line number of the first line of ``fn``'s source containing ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def log_of_zero(x):
    y = np.exp(x) * 2.0
    z = np.log(y - 2.0 * np.exp(x[0]))  # log(0) at index 0
    return np.sum(z)


def sqrt_loss(x):
    return np.sum(np.sqrt(x))  # d/dx at 0 is infinite


def mlp(W1, b1, W2, b2, x):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.sum(out ** 2)


def mlp_params(rng, n_in=8, n_hidden=16, n_out=4):
    return (rng.standard_normal((n_in, n_hidden)) * 0.3, np.zeros(n_hidden),
            rng.standard_normal((n_hidden, n_out)) * 0.3, np.zeros(n_out))


X = np.array([0.5, 1.0, 2.0])


def half_powers(x):
    return np.sum(x ** 0.5 * 0.0 + x ** 1.5)  # pow'(0) of x ** 0.5 is infinite


def sum_of_inner_gradient(x):
    g = pb.grad(lambda y: np.sum(np.sqrt(y)))(  # the inner function
        x)
    return np.sum(g)


# ---------------------------------------------------------------------------- losscheck

def test_an_infinite_loss_names_where_the_first_non_finite_value_was_born():
    with np.errstate(all="ignore"), pytest.raises(pb.LossError) as info:
        pb.grad(log_of_zero)(X)
    message = str(info.value)
    assert "loss of log_of_zero is -inf" in message
    assert f"{HERE}:{line_of(log_of_zero, 'np.log')} in log_of_zero" in message
    assert "z = np.log(y - 2.0 * np.exp(x[0]))" in message
    assert "np.log of finite inputs gave -inf at index (0,)" in message


def test_an_overflow_is_found_at_the_function_that_overflowed():
    def loss(x):
        scaled = x * 400.0
        return np.sum(np.exp(scaled))

    with np.errstate(all="ignore"), pytest.raises(pb.LossError) as info:
        pb.value_and_grad(loss)(X)
    message = str(info.value)
    assert "np.exp of finite inputs gave inf at index (2,)" in message
    assert f"{HERE}:{line_of(loss, 'np.exp')}" in message


def test_a_non_finite_argument_is_named_as_the_source():
    with pytest.raises(pb.LossError, match=r"Argument 0 is not finite: nan at index \(1,\)"):
        pb.grad(lambda x: np.sum(x * 2.0))(np.array([1.0, np.nan]))


def masked_then_bad(x):
    safe = np.where(x > 0.7, np.log(x - 0.7), 0.0)  # a log of negatives, masked out
    big = np.exp(x * 1000.0)  # overflows, never used  # noqa: F841
    bad = np.log(x[2] - 2.0)  # the cause: log(0)
    return np.sum(safe) + bad


def test_the_non_finite_value_named_is_one_that_reaches_the_loss():
    x = np.array([0.5, 1.0, 2.0])
    with np.errstate(all="ignore"), pytest.raises(pb.LossError) as info:
        pb.grad(masked_then_bad)(x)
    message = str(info.value)
    assert f"{HERE}:{line_of(masked_then_bad, 'the cause')} in masked_then_bad" in message
    assert "np.log of finite inputs gave -inf at index ()" in message
    W = pb.param(x)
    with np.errstate(all="ignore"), pytest.raises(
            pb.LossError, match=r"np\.log of finite inputs gave -inf at index \(\)\."):
        masked_then_bad(W).backward()


MASK = np.array([1.0, np.nan, 1.0])  # a constant that brings a NaN in


def times_mask(x):
    scaled = x * 2.0
    return np.sum(scaled * MASK)


def test_a_non_finite_constant_is_named_where_it_comes_in():
    with pytest.raises(pb.LossError) as info:
        pb.grad(times_mask)(X)
    message = str(info.value)
    assert f"came in at {HERE}:{line_of(times_mask, 'MASK)')} in times_mask" in message
    assert "np.multiply's argument 1, a constant (not a differentiated argument), holds " \
           "nan at index (1,)" in message
    W = pb.param(X.copy())
    with pytest.raises(pb.LossError, match=r"np\.multiply's argument 1, a constant, holds nan "
                       r"at index \(1,\)"):
        times_mask(W).backward()


def test_a_finite_loss_runs_the_function_once():
    calls = []

    def loss(x):
        calls.append(1)
        return np.sum(x ** 2)

    pb.grad(loss)(X)
    assert len(calls) == 1


def test_backward_names_the_operation_from_its_graph_and_suggests_detect_anomaly():
    w = pb.param(np.array([1.0, 0.0]))
    with np.errstate(all="ignore"):
        loss = np.sum(np.log(w) * 3.0)
    with pytest.raises(pb.LossError) as info:
        loss.backward()
    message = str(info.value)
    assert "np.log of finite inputs gave -inf at index (1,)" in message
    assert "pb.detect_anomaly()" in message
    with np.errstate(all="ignore"), pytest.raises(pb.LossError, match="np.log of finite"):
        pb.gradient(lambda: np.sum(np.log(w)), [w])


# ---------------------------------------------------------------------------- detect_anomaly

def test_detect_anomaly_stops_at_the_forward_operation_that_made_a_nan():
    with np.errstate(all="ignore"), pytest.raises(FloatingPointError) as info:
        with pb.detect_anomaly():
            pb.grad(log_of_zero, losscheck=False)(X)
    message = str(info.value)
    assert "np.log of finite inputs gave -inf at index (0,) in the forward pass" in message
    assert f"{HERE}:{line_of(log_of_zero, 'np.log')} in log_of_zero" in message


def test_detect_anomaly_stops_at_the_pullback_that_made_an_infinity():
    x = np.array([0.0, 1.0])
    with np.errstate(all="ignore"):
        assert not np.all(np.isfinite(pb.grad(sqrt_loss)(x)))  # what it catches
        with pytest.raises(FloatingPointError) as info:
            with pb.detect_anomaly():
                pb.grad(sqrt_loss)(x)
    message = str(info.value)
    assert "the pullback of np.sqrt turned finite cotangents into inf at index (0,)" in message
    assert "backward pass" in message
    assert f"{HERE}:{line_of(sqrt_loss, 'np.sqrt')} in sqrt_loss" in message


def test_a_zero_cotangent_times_an_infinite_derivative_is_no_anomaly():
    def loss(x):
        return np.sum(np.where(x > 0, np.sqrt(x), 0.0))

    x = np.array([0.0, 4.0])
    plain = pb.grad(loss)(x)
    with pb.detect_anomaly():
        detected = pb.grad(loss)(x)
    assert np.all(np.isfinite(detected)) and np.array_equal(detected, plain)


def test_detect_anomaly_leaves_derivatives_unchanged_to_second_order():
    rng = np.random.default_rng(0)
    W1, b1, W2, b2 = mlp_params(rng, 3, 4, 2)
    x = rng.standard_normal((5, 3))
    with pb.detect_anomaly():
        pb.check_grads(lambda W1, W2: mlp(W1, b1, W2, b2, x), W1, W2, order=2)
        g = pb.grad(mlp, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, x)
    want = pb.grad(mlp, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, x)
    for a, b in zip(g, want):
        np.testing.assert_array_equal(a, b)


def test_detect_anomaly_as_a_decorator_and_the_state_it_leaves():
    @pb.detect_anomaly()
    def run(x):
        return pb.grad(log_of_zero, losscheck=False)(x)

    with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match="np.log"):
        run(X)
    assert not core.watching and core.state.slow == 0 and core.state.watch is None
    with pb.no_grad():
        with pb.detect_anomaly():
            assert core.state.slow == 2
        assert core.state.slow == 1
    assert core.state.slow == 0


def test_detect_anomaly_is_per_thread():
    results = []

    def other_thread():
        with np.errstate(all="ignore"):
            results.append(pb.grad(log_of_zero, losscheck=False)(X))

    with pb.detect_anomaly():
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert len(results) == 1 and not np.all(np.isfinite(results[0]))


def test_a_backward_recorded_under_detection_is_checked_after_the_block():
    w = pb.param(np.array([0.0, 1.0]))
    with pb.detect_anomaly():
        loss = np.sum(np.sqrt(w))
    with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match="np.sqrt"):
        loss.backward()


# ---------------------------------------------------------------------------- the user's line

@pb.primitive
def fragile(x):
    return x * 2.0


@pb.rrule(fragile)
def fragile_rule(x):
    def fragile_pullback(g):
        raise ValueError("fragile_pullback failed")

    return x * 2.0, fragile_pullback


def test_an_error_in_a_pullback_names_the_line_that_recorded_the_node():
    def loss(x):
        return np.sum(fragile(x))

    with pytest.raises(ValueError, match="fragile_pullback failed") as info:
        with pb.detect_anomaly():
            pb.grad(loss)(np.ones(2))
    notes = "\n".join(getattr(info.value, "__notes__", [])) or str(info.value)
    assert f"raised in the pullback of {pb.name_of(fragile)}" in notes
    assert f"{HERE}:{line_of(loss, 'fragile(x)')} in loss" in notes


def test_an_error_inside_a_rule_in_the_forward_pass_names_the_users_line():
    def loss(a):
        return np.sum(np.linalg.solve(a, np.ones(3)))

    with pytest.raises(np.linalg.LinAlgError) as info:
        with pb.detect_anomaly():
            pb.grad(loss)(np.zeros((3, 3)))
    notes = "\n".join(getattr(info.value, "__notes__", [])) or str(info.value)
    assert f"{HERE}:{line_of(loss, 'np.linalg.solve')} in loss" in notes


# ---------------------------------------------------------------------------- graph

def _structurally_valid_dot(text):
    """A small check of DOT text: one digraph, declared nodes, edges between them."""
    lines = text.strip().splitlines()
    assert lines[0].startswith("digraph ") and lines[0].endswith("{") and lines[-1] == "}"
    declared, edges = set(), []
    for line in lines[1:-1]:
        line = line.strip()
        assert line.endswith(";"), line
        if m := re.fullmatch(r"(n\d+) -> (n\d+);", line):
            edges.append(m.groups())
        elif m := re.fullmatch(r'(n\d+) \[label="((?:[^"\\]|\\.)*)"(.*)\];', line):
            declared.add(m.group(1))
            assert m.group(3).count('"') % 2 == 0
        else:
            assert re.fullmatch(r"(rankdir=\w+|node \[.*\]);", line), line
    assert edges and all(a in declared and b in declared for a, b in edges)
    return declared, edges


def test_the_graph_of_a_small_mlp():
    rng = np.random.default_rng(1)
    W1, b1, W2, b2 = mlp_params(rng)
    x = rng.standard_normal((6, 8))
    g = pb.graph(mlp, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, x)
    ops = [n.op for n in g.nodes]
    assert ops.count("np.matmul") == 2 and ops.count("np.tanh") == 1
    assert ops.count("np.add") == 2 and ops[-1] == "np.sum"
    assert [n.op for n in g.nodes if n.kind == "input"] == [
        "input 0", "input 1", "input 2", "input 3"]
    tanh = next(n for n in g.nodes if n.op == "np.tanh")
    assert tanh.shape == (6, 16) and tanh.dtype == "float64"
    assert tanh.site.lineno == line_of(mlp, "np.tanh")
    dot = g.to_dot()
    declared, edges = _structurally_valid_dot(dot)
    assert len(declared) == len(g.nodes)
    assert len(edges) == sum(len(n.inputs) for n in g.nodes)
    assert f"{HERE}:{line_of(mlp, 'np.tanh')}" in dot and "(6, 16) float64" in dot
    assert dot.count("shape=ellipse") == 4 and dot.count("penwidth=2") == 1
    graphviz = pytest.importorskip("graphviz")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed")
    svg = graphviz.Source(dot).pipe(format="svg").decode()  # dot parses it
    assert "<svg" in svg and svg.count('class="node"') == len(g.nodes)
    assert g._repr_svg_() == svg


def test_the_summary_table():
    rng = np.random.default_rng(2)
    W1, b1, W2, b2 = mlp_params(rng)
    x = rng.standard_normal((6, 8))
    g = pb.graph(mlp)(W1, b1, W2, b2, x)
    lines = g.summary().splitlines()
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["np.matmul"][1] == "2"
    assert "(6, 16), (6, 4)" in next(line for line in lines if line.startswith("np.matmul"))
    assert int(rows["total"][-1]) == g.saved_bytes == pb.memory_report(mlp)(
        W1, b1, W2, b2, x).total_bytes
    assert repr(g).startswith("<pullback graph of mlp: 1 input, 7 operations, ")


def test_the_graph_of_a_gradient():
    def loss(x):
        return np.sum(np.sin(x) * x)

    g = pb.graph(pb.grad(loss))(X)
    ops = [n.op for n in g.nodes]
    assert "np.cos" in ops  # the derivative of sin, computed in the backward pass
    assert g.outputs and all(n.kind == "op" for n in g.nodes if n.id in g.outputs)
    _structurally_valid_dot(g.to_dot())


def test_a_picture_without_graphviz_says_how_to_install_it(monkeypatch):
    g = pb.graph(lambda x: np.sum(np.sin(x)))(X)
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match=r"pip install 'pullback\[graph\]'"):
        g._repr_svg_()


def test_a_picture_without_the_dot_program_says_how_to_install_it(monkeypatch):
    pytest.importorskip("graphviz")
    g = pb.graph(lambda x: np.sum(np.sin(x)))(X)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(RuntimeError, match="apt install graphviz"):
        g._repr_svg_()


# ---------------------------------------------------------------------------- memory

def _mlp_activations(W1, b1, W2, b2, x):
    """The intermediate arrays of ``mlp`` in plain NumPy, in the order it makes them."""
    a = x @ W1
    z = a + b1
    h = np.tanh(z)
    o = h @ W2
    out = o + b2
    sq = out ** 2
    return [a, z, h, o, out, sq, np.sum(sq)]


def test_a_memory_report_of_an_mlp_counts_the_saved_activations():
    rng = np.random.default_rng(3)
    W1, b1, W2, b2 = mlp_params(rng, 32, 64, 16)
    x = rng.standard_normal((128, 32))
    rep = pb.memory_report(mlp, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, x)
    activations = _mlp_activations(W1, b1, W2, b2, x)
    assert rep.total_bytes == sum(a.nbytes for a in activations)
    assert sorted(e.saved_bytes for e in rep.entries) == sorted(a.nbytes for a in activations)
    largest = rep.entries[0]
    assert largest.saved_bytes == 128 * 64 * 8 and largest.site is not None
    text = str(rep)
    assert text.splitlines()[0].startswith("mlp keeps ")
    assert f"{HERE}:{line_of(mlp, 'np.tanh')}" in text


def test_a_memory_report_agrees_with_tracemalloc():
    rng = np.random.default_rng(4)
    W1, b1, W2, b2 = mlp_params(rng, 64, 256, 32)
    x = rng.standard_normal((512, 64))
    rep = pb.memory_report(mlp, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, x)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        kept = pb.vjp(lambda *p: mlp(*p, x), W1, b1, W2, b2)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept is not None
    # the graph's arrays are what stays allocated; the Python objects add 0.1% here
    # (measured: peak / report = 1.0014 on NumPy 2, 1.0203 on NumPy 1.26; README)
    factor = 1.02 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 1.03
    assert rep.total_bytes <= current - base <= factor * rep.total_bytes
    assert rep.total_bytes <= peak - base <= factor * rep.total_bytes


def test_arrays_shared_between_nodes_count_once():
    def loss(x):
        y = np.exp(x)
        return np.sum(y * y) + np.sum(y)

    rep = pb.memory_report(loss)(np.ones(1000))
    exp = next(e for e in rep.entries if e.op == "np.exp")
    assert exp.saved_bytes == 8000
    assert rep.total_bytes == sum(e.saved_bytes for e in rep.entries)
    assert rep.total_bytes == 8000 * 2 + 8 * 3  # exp, y * y, two sums and their sum


def test_an_anomaly_born_in_a_pullback_names_the_line_of_its_node():
    # a Hessian's forward pass runs the gradient's pullbacks: the infinity of x ** -0.5 at
    # 0 is born in the pullback of x ** 0.5, whose line is the user's, not the pb.hessian call
    with pytest.raises(FloatingPointError) as info:
        pb.detect_anomaly()(pb.hessian(half_powers))(np.array([0.0, 1.0]))
    message = str(info.value)
    assert f"{HERE}:{line_of(half_powers, 'x ** 1.5')} in half_powers" in message
    assert "computing the derivative of np.power, in its pullback" in message
    with np.errstate(all="ignore"), pytest.raises(pb.LossError) as info:
        pb.grad(sum_of_inner_gradient)(np.array([0.0, 1.0]))
    message = str(info.value)
    assert f"{HERE}:{line_of(sum_of_inner_gradient, 'the inner function')} in" in message
    assert "(computing the derivative of np.sqrt, in its pullback)." in message
    x = np.array([0.25, 1.0])
    H = pb.detect_anomaly()(pb.hessian(half_powers))(x)  # finite: no error
    gradient = pb.grad(half_powers)
    fd = np.array([(gradient(x + e) - gradient(x - e)) / 2e-6 for e in np.eye(2) * 1e-6])
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------- misuse

X3 = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("call, error, match", [
    (lambda: pb.detect_anomaly()(None), TypeError,
     r"@pb\.detect_anomaly\(\) decorates a function, got NoneType"),
    (lambda: pb.graph(None), TypeError, "pb.graph takes the function .* first"),
    (lambda: pb.graph(X3, np.sin), TypeError, r"pb.graph takes the function .*got ndarray"),
    (lambda: pb.memory_report(None), TypeError, "pb.memory_report takes the function .* first"),
    (lambda: pb.memory_report(np.sin, top="a"), ValueError,
     "memory_report's top must be a non-negative integer .* got 'a'"),
    (lambda: pb.memory_report(np.sin, top=-1), ValueError, "top must be .* got -1"),
    (lambda: pb.Graph("a", None, None), TypeError, r"a Graph is made by pb\.graph\(f\)"),
    (lambda: pb.MemoryReport(None), TypeError, "MemoryReport takes a Graph .* got NoneType"),
    (lambda: pb.MemoryReport("abc"), TypeError, "MemoryReport takes a Graph .* got str"),
    (lambda: pb.MemoryReport(pb.graph(np.sin)(X3), top=1.5), ValueError,
     "top must be .* got 1.5"),
], ids=["anomaly-none", "graph-none", "graph-swapped", "memory-none", "top-str", "top-negative",
        "graph-by-hand", "report-none", "report-str", "report-top"])
def test_misuses_of_the_debugging_helpers_are_refused_at_the_call(call, error, match):
    with pytest.raises(error, match="^pullback: .*" + match):
        call()


def test_a_memory_report_prints_its_top_entries_or_all_of_them():
    def f(x):
        return np.sum(np.sin(x) * np.exp(x))

    assert len(str(pb.memory_report(f, top=None)(X3)).splitlines()) == 2 + 4
    assert str(pb.memory_report(f, top=1)(X3)).splitlines()[-1] == "... and 3 more nodes"


@pytest.mark.parametrize("call, error, match", [
    (lambda: pb.check_grads(None, X3), TypeError, "pb.check_grads takes the function .* first"),
    (lambda: pb.check_grads(X3, np.sin), TypeError, "pb.check_grads takes the function"),
    (lambda: pb.check_grads(np.sin, X3, order=True), ValueError, "order 1 or 2 .* got True"),
    (lambda: pb.check_grads(np.sin, X3, order=1.0), ValueError, "order 1 or 2 .* got 1.0"),
    (lambda: pb.check_grads(np.sin, X3, eps="a"), ValueError, "a step eps > 0.* got 'a'"),
    (lambda: pb.check_grads(np.sin, X3, eps=0.0), ValueError, "a step eps > 0.* got 0.0"),
    (lambda: pb.check_grads(np.sin, X3, rtol=-1), ValueError, "rtol >= 0.* got -1"),
    (lambda: pb.check_grads(np.sin, X3, atol=np.nan), ValueError, "atol >= 0.* got nan"),
    (lambda: pb.check_grads(lambda x: "a", X3), TypeError, "<lambda> returned a str"),
    (lambda: pb.check_grads(lambda x: np.array(["a"]), X3), TypeError,
     "<lambda> returned an array of dtype <U1"),
    (lambda: pb.check_grads(lambda x: (x, None), X3), TypeError,
     "<lambda> returned None inside its output"),
    (lambda: pb.testing.check_batched(None, X3), TypeError,
     "pb.testing.check_batched takes the function .* first"),
    (lambda: pb.testing.check_batched(np.sin), TypeError, "check_batched got no argument"),
    (lambda: pb.testing.check_batched(lambda x: None, X3), TypeError,
     r"<lambda> returned None \(is a return statement missing\?\)"),
    (lambda: pb.testing.check_batched(np.sin, X3, batch=0), ValueError,
     "batch must be a positive integer .* got 0"),
], ids=["grads-none", "grads-swapped", "order-bool", "order-float", "eps-str", "eps-zero",
        "rtol-negative", "atol-nan", "returns-str", "returns-str-array", "returns-none-inside",
        "batched-none", "batched-no-argument", "batched-returns-none", "batch-zero"])
def test_misuses_of_the_testing_helpers_are_refused_at_the_call(call, error, match):
    with pytest.raises(error, match="^pullback: .*" + match):
        call()


@pb.primitive
def _twice(x):
    return 2.0 * x


@pb.rrule(_twice)
def _twice_rule(x):
    def twice_pullback(g):
        return (3.0 * g,)  # wrong: the derivative of 2 x is 2

    return _twice(x), twice_pullback


@pb.primitive
def _square(x):
    return x * x


@pb.rrule(_square)
def _square_rule(x):
    def square_pullback(g):
        return (g * _twice(x),)  # right, through _twice's value (its rule is used one order up)

    return _square(x), square_pullback


@pb.primitive
def _cube(x):
    return x * x * x


@pb.rrule(_cube)
def _cube_rule(x):
    def cube_pullback(g):
        return (3.0 * g * _square(x),)

    return _cube(x), cube_pullback


def test_check_grads_checks_each_order_it_is_asked_for():
    # _cube's first and second derivatives are right; its third goes through _twice's
    # wrong rule, so only order 3 (or more) can see it
    def f(x):
        return np.sum(_cube(x))

    pb.check_grads(f, X3, order=2)
    with pytest.raises(AssertionError, match=r"^pullback: check_grads: pullback of pullback of"):
        pb.check_grads(f, X3, order=3)
    with pytest.raises(AssertionError, match="pullback: check_grads: pullback of pullback of"):
        pb.check_grads(f, X3, order=5)
