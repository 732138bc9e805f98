"""Seeded random programs through ``pb.jit``: every call of the jitted function, the trace
and each replay, gives what the eager call of the same function gives on the same values
(the result's types, dtypes, shapes and values, the arguments it writes into, the errors
it raises).

A program reads three arguments (``x`` of shape (n,), ``y`` of shape (m, n), float64 or
now and then float32; ``t`` a NumPy float, traced, or a Python float, static) and state it
does not take as arguments: a closed-over array ``W`` and number ``scale``, a global array
``G`` and count ``N``, an object's array ``obj.b`` and string ``obj.mode``. Its steps are
NumPy calls (elementwise, reductions, sorting, masks, matrix products), Python decisions on
values (``if`` on comparisons, on 0-d booleans combined with ``| & ^ == !=``, ``+`` and
``*``, ``np.logical_*`` and ``np.maximum``, on ``float()`` and ``.item()``, loops counted
by state), and now and then a write through ``np.asarray(x)``. Between calls the state
changes: ``W`` written in place or rebound, ``scale`` rebound, ``G`` replaced or written,
``N`` counted up, ``obj.b``, ``obj.mode`` and ``obj.k`` (read by ``getattr`` with a
default) set, an attribute no program reads written, the method ``obj.scaled`` replaced
on the class. Half the programs return a tuple of
arrays, numbers and booleans; the other half a loss, jitted as ``pb.grad(loss)``.

    python -m tests.jit.test_jit_fuzz --count 5000 [--seed 0]   # a longer run, with counts
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import warnings

import numpy as np

import pullback as pb

_UNARY = ["np.sin({})", "np.tanh({})", "np.abs({})", "np.exp(np.minimum({}, 2.0))",
          "np.sqrt(np.abs({}) + 1.0)", "-{}", "{}[::-1]", "np.sort({})", "np.cumsum({})",
          "np.clip({}, -0.5, 0.5)", "np.maximum({}, 0.0)", "{} * scale", "{} * 2.0",
          "np.partition({}, 0)", "np.fmax({}, 0.1)", "np.round({} * 1.0, 1)",
          "{} * getattr(obj, 'k', 1.0)", "{} * obj.scaled()"]
_BINARY = ["{} + {}", "{} - {}", "{} * {}", "np.maximum({}, {})", "np.minimum({}, {})",
           "np.where({0} > {1}, {0}, {1})", "{} / (1.0 + {} ** 2)", "np.fmin({}, {})"]
_SCALAR = ["np.sum({})", "np.mean({})", "np.max({})", "np.min({})", "{}[0]", "{}[-1]",
           "np.dot({0}, {0})", "np.linalg.norm({})", "np.median({})"]
_COMPARE = ["{} > {}", "{} < {}", "{} >= 0.0", "{} < 0.25", "{} == {}", "{} > scale"]
_COMBINE = ["{} | {}", "{} & {}", "{} ^ {}", "{} == {}", "{} != {}", "{} + {}", "{} * {}",
            "np.logical_or({}, {})", "np.logical_and({}, {})", "np.logical_xor({}, {})",
            "np.maximum({}, {})", "np.minimum({}, {})", "~{0} | {1}"]


class _Obj:
    """An object the function reads attributes of."""

    def __init__(self, b, mode):
        self.b, self.mode = b, mode
        self.unread = [np.zeros(2) for _ in range(50)]  # (what no program reads)

    def scaled(self):
        return self.b[0] * 2.0 if self.mode == "a" else 0.5


class _Writer:
    """The program's text: steps over typed variables (vectors of shape (n,), matrices of
    shape (m, n), 0-d floats, 0-d booleans)."""

    def __init__(self, rng):
        self.rng = rng
        self.lines: list[str] = []
        self.vars = {"vec": ["x", "W", "G", "obj.b"], "mat": ["y"], "num": ["t"], "bool": []}
        self.count = 0

    def fresh(self, kind):
        self.count += 1
        name = f"{kind[0]}{self.count}"
        return name

    def pick(self, kind):
        return self.rng.choice(self.vars[kind])

    def expr(self, kind):
        """A random expression of ``kind`` over the variables so far."""
        r = self.rng
        if kind == "vec":
            choice = r.random()
            if choice < 0.4:
                return r.choice(_UNARY).format(self.pick("vec"))
            if choice < 0.75:
                template = r.choice(_BINARY)
                return template.format(self.pick("vec"), self.pick("vec"))
            if choice < 0.85:
                return r.choice(["np.sum({}, axis=0)", "np.max({}, axis=0)",
                                 "np.mean(np.tanh({}), axis=0)", "{}[N % 2]"]).format(
                    self.pick("mat"))
            if choice < 0.95 and self.vars["num"]:
                return f"{self.pick('vec')} * {self.pick('num')}"
            return f"{self.pick('mat')}.T @ np.ones(m) * 0.5 + {self.pick('vec')}"
        if kind == "mat":
            return r.choice(["{1} * {0}", "np.tanh({1})", "{1} + {0}[None, :]",
                             "{1} * {0}.reshape(1, -1)"]).format(
                self.pick("vec"), self.pick("mat"))
        if kind == "num":
            return r.choice(_SCALAR).format(self.pick("vec"))
        if not self.vars["num"] or r.random() < 0.2:
            return f"{self.pick('vec')}[0] > {self.pick('vec')}[-1]"
        if len(self.vars["bool"]) >= 2 and r.random() < 0.6:
            a, b = r.sample(self.vars["bool"], 2)
            return r.choice(_COMBINE).format(a, b)
        a, b = self.pick("num"), self.pick("num")
        return r.choice(_COMPARE).format(a, b)

    def assign(self, kind, indent=""):
        name = self.fresh(kind)
        self.lines.append(f"{indent}{name} = {self.expr(kind)}")
        return name

    def step(self):
        r = self.rng
        choice = r.random()
        if choice < 0.45:
            self.vars_add(r.choice(["vec", "vec", "mat", "num", "num"]))
        elif choice < 0.65:
            self.vars_add("bool")
        elif choice < 0.85 and (self.vars["bool"] or self.vars["num"]):
            self.branch()
        elif choice < 0.9:
            v = self.pick("vec")
            name = self.fresh("vec")
            self.lines.append(f"{name} = {v}")
            self.lines.append("for _ in range(N):")
            self.lines.append(f"    {name} = np.tanh({name} * 0.9 + {self.pick('vec')})")
            self.vars["vec"].append(name)
        elif choice < 0.95:
            v = self.pick("vec")
            name = self.fresh("num")
            test = r.choice([f"{v} > 0", f"{v} > scale", f"np.abs({v}) < 0.5"])
            self.lines.append(f"{name} = np.sum({v}[{test}]) + np.sum({test})")
            self.vars["num"].append(name)
        elif choice < 0.97:
            name = self.fresh("vec")
            self.lines.append(f"{name} = np.asarray(x)")  # x itself, as NumPy gives it
            self.lines.append(f"{name} += 0.5")
            self.vars["vec"].append(name)
        else:
            name = self.fresh("num")
            self.lines.append(f"{name} = {self.pick('vec')}[int(np.argmax({self.pick('vec')}))]")
            self.vars["num"].append(name)

    def vars_add(self, kind):
        self.vars[kind].append(self.assign(kind))

    def branch(self):
        r = self.rng
        if self.vars["bool"] and r.random() < 0.6:
            test = self.pick("bool")
        elif self.vars["num"]:
            n = self.pick("num")
            test = r.choice([f"float({n}) > 0.1", f"{n}.item() < scale", f"{n} > 0",
                             "obj.mode == 'a'"])
        else:
            test = "obj.mode == 'a'"
        name = self.fresh("vec")
        self.lines.append(f"if {test}:")
        self.lines.append(f"    {name} = {self.expr('vec')}")
        self.lines.append("else:")
        self.lines.append(f"    {name} = {self.expr('vec')}")
        self.vars["vec"].append(name)

    def result(self, loss):
        r = self.rng
        vecs = [v for v in self.vars["vec"] if v not in ("W", "G", "obj.b")] or ["x"]
        if loss:
            terms = [f"np.sum({v} * {v})" if r.random() < 0.5 else f"np.sum(np.sin({v}))"
                     for v in r.sample(vecs, min(3, len(vecs)))]
            terms += [f"{b} * np.sum(x)" for b in self.vars["bool"][-2:]]
            terms += [f"{n} * 1.0" for n in self.vars["num"][-2:]]
            return " + ".join(terms)
        outs = r.sample(vecs, min(2, len(vecs)))
        outs += self.vars["num"][-2:] + self.vars["bool"][-2:]
        return "(" + ", ".join(outs) + ",)"


def program(seed):
    """``(source, loss)``: a random program's text and whether it returns a loss."""
    r = random.Random(seed)
    w = _Writer(r)
    for _ in range(r.randint(2, 9)):
        w.step()
    loss = r.random() < 0.5
    body = "\n".join(f"        {line}" for line in w.lines)
    source = f"""def make(W, scale):
    def f(x, y, t):
        m = y.shape[0]
{body}
        return {w.result(loss)}

    def rebind(new_W, new_scale):
        nonlocal W, scale
        W, scale = new_W, new_scale

    return f, rebind
"""
    return source, loss


def _values(rng, n, m, k, dtype):
    """Arguments for the k-th call: new values, signs flipped, zeros; ``t`` a NumPy float
    (traced) or a Python float (static: a new value traces again)."""
    x, y = rng.normal(size=n).astype(dtype), rng.normal(size=(m, n)).astype(dtype)
    kind = k % 4 if k else 0
    if kind == 2:
        x = -x
    elif kind == 3 and rng.random() < 0.3:
        x = np.zeros(n, dtype)
    t = float(rng.choice([0.5, -1.0]))
    return x, y, np.float64(rng.normal()) if rng.random() < 0.5 else t


def _change(rng, ns, rebind, state, n):
    """Change the state the program reads but does not take as arguments."""
    what = rng.integers(0, 11)
    if what == 0:
        state["W"][...] = rng.normal(size=n)  # in place
    elif what == 1:
        state["W"] = rng.normal(size=n)  # rebound
        rebind(state["W"], state["scale"])
    elif what == 2:
        state["scale"] = float(rng.choice([0.7, -0.3, 0.0, 2.5]))
        rebind(state["W"], state["scale"])
    elif what == 3:
        ns["G"] = rng.normal(size=n)
    elif what == 4:
        ns["G"][0] = rng.normal()
    elif what == 5:
        ns["N"] += 1
    elif what == 6:
        ns["obj"].b = rng.normal(size=n)
    elif what == 7:
        ns["obj"].mode = "b" if ns["obj"].mode == "a" else "a"
    elif what == 8:  # an attribute read by getattr with a default, set and then removed
        if hasattr(ns["obj"], "k"):
            del ns["obj"].k
        else:
            ns["obj"].k = float(rng.normal())
    elif what == 9:
        ns["obj"].unread[3][0] += 1.0
    else:
        type(ns["obj"]).scaled = lambda self: self.b[-1] - 1.0  # the class's method


def _outcome(call, *args, counts=None):
    """What a call gives: ``("ok", result)`` or ``("error", type)``; ``counts`` counts the
    calls pb.jit ran eagerly, saying so."""
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            return "ok", call(*args)
    except Exception as e:  # noqa: BLE001 (the type is what is compared)
        return "error", type(e)
    finally:
        if counts is not None and any("cannot record" in str(w.message) for w in seen):
            counts["ran eagerly, with a warning"] += 1


def _differs(got, want):
    """The class of a difference between two results, or None."""
    if got[0] != want[0]:
        return "error" if got[0] == "error" else "no error"
    if got[0] == "error":
        return None if got[1] is want[1] else "error type"
    g, w = pb.tree_flatten(got[1])[0], pb.tree_flatten(want[1])[0]
    if len(g) != len(w):
        return "structure"
    for a, b in zip(g, w):
        if type(a) is not type(b) or np.shape(a) != np.shape(b) or (
                np.result_type(a) != np.result_type(b)):
            return "type"
        if not np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True):
            return "value"
    return None


def run(count, seed=0, calls=6, report=None):
    """Run ``count`` programs from ``seed``; returns ``(counts, failures)``: the counts of
    programs, calls and mismatches by class, and the first failing programs' sources."""
    counts: collections.Counter = collections.Counter()
    failures: list[str] = []
    for p in range(seed, seed + count):
        source, loss = program(p)
        rng = np.random.default_rng(p)
        n, m = int(rng.integers(1, 4)), int(rng.integers(2, 4))
        dtype = np.float32 if rng.random() < 0.2 else np.float64
        obj = type("Obj", (_Obj,), {})(rng.normal(size=n), "a")  # (a class of its own)
        ns = {"np": np, "G": rng.normal(size=n), "N": 1, "obj": obj}
        exec(compile(source, f"<jit fuzz {p}>", "exec"), ns)
        state = {"W": rng.normal(size=n), "scale": 0.7}
        f, rebind = ns["make"](state["W"], state["scale"])
        eager = pb.grad(f) if loss else f
        jitted = pb.jit(pb.grad(f) if loss else f)
        counts["programs"] += 1
        for k in range(calls):
            if k and rng.random() < 0.6:
                _change(rng, ns, rebind, state, n)
            x, y, t = _values(rng, n, m, k, dtype)
            x2, y2 = x.copy(), y.copy()
            got, want = _outcome(jitted, x, y, t, counts=counts), _outcome(eager, x2, y2, t)
            counts["calls"] += 1
            kind = _differs(got, want)
            if kind is None and not (np.array_equal(x, x2) and np.array_equal(y, y2)):
                kind = "argument written"
            if kind is not None:
                counts[kind] += 1
                counts["mismatched programs"] += 1
                if len(failures) < 5:
                    failures.append(f"# program {p}, call {k}: {kind}\n{source}")
                break
    return counts, failures


def test_jit_replays_eager_on_random_programs():
    counts, failures = run(300)
    print(dict(counts))
    assert not failures, "\n".join(failures)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    counts, failures = run(args.count, args.seed)
    for failure in failures:
        print(failure)
    print(dict(counts))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
