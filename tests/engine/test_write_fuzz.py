"""A seeded fuzzer of programs that write into arrays: random straight-line NumPy programs
that take views (slices, ``.T``, ``reshape`` and ``ravel`` with orders, ``[None]``), copies
(``copy``, ``np.copy``, ``astype``, ``flatten``, ``np.array(copy=True)``, each with its
``order``), build arrays from tracked parts (``np.full``, ``np.array``, ``np.stack``,
``*_like``) and write into them (``v[index] = e`` with integer, slice, fancy and boolean
indices, the in-place operators, ``np.copyto``, writes through views, an array written
with itself). Each program is first run line by line on plain NumPy, so only code NumPy
accepts is kept; then ``pb.value_and_grad`` of the same program must give NumPy's value,
and a gradient equal to central finite differences of the program on plain arrays.

The suite runs 500 programs (a few seconds); for more, run this file with a count and a seed:
``python tests/engine/test_write_fuzz.py 5000 [seed]``, which prints the outcomes by class.
"""

import collections
import sys

import numpy as np

import pullback as pb

NUMPY1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"

SHAPES = [(), (1,), (4,), (6,), (2, 3), (3, 2), (2, 2, 3), (1, 3)]
ORDERS = ["'C'", "'F'", "'A'", "'K'"]


class _Program:
    """Lines of a program over ``x``, grown one line at a time, each kept only when plain
    NumPy runs it; ``env`` holds the plain run's arrays."""

    def __init__(self, rng, shape):
        self.rng, self.shape, self.lines, self.names = rng, shape, [], []
        self.x = rng.standard_normal(shape)
        self.env = self._fresh()
        self.add("a0 = x.copy()", "a0")

    def _fresh(self):
        return {"np": np, "x": self.x.copy()}

    def add(self, line, name=None):
        """Keep ``line`` if NumPy runs it (and it writes nothing into ``x``)."""
        env = self.env
        try:
            with np.errstate(all="ignore"):
                exec(line, env)
        except Exception:
            self.env = self._fresh()  # a failed line may have written halfway: run again
            for kept in self.lines:
                exec(kept, self.env)
            return False
        if not np.array_equal(env["x"], self.x) or name is not None and (
                not isinstance(env[name], np.ndarray) or env[name].dtype != np.float64
                or np.shares_memory(env[name], env["x"])):
            self.env = self._fresh()
            for kept in self.lines:
                exec(kept, self.env)
            return False
        self.lines.append(line)
        if name is not None and name not in self.names:
            self.names.append(name)
        return True

    def source(self, weights):
        body = "".join(f"    {line}\n" for line in self.lines)
        terms = " + ".join(f"np.sum(w[{k}] * {n})" for k, n in enumerate(self.names))
        return f"def program(x, w):\n{body}    return {terms}\n"


def _pick(rng, seq):
    return seq[rng.integers(len(seq))]


def _index(rng, shape):
    """An index NumPy reads for ``shape``: an int, a slice, a fancy or a boolean index."""
    if not shape or not shape[0]:
        return _pick(rng, ["...", "()", "None"] if not shape else ["...", ":"])
    kind = rng.integers(6)
    n = shape[0]
    if kind == 0:
        return str(int(rng.integers(-n, n)))
    if kind == 1:
        lo, hi = sorted(rng.integers(-n - 1, n + 1, 2))
        step = _pick(rng, ["", ":2", ":-1", ":-2"])
        if step in (":-1", ":-2"):
            lo, hi = hi, lo
        return f"{lo}:{hi}{step}" if rng.integers(2) else f"::{step[1:] or 1}"
    if kind == 2:
        k = int(rng.integers(1, n + 2))
        return str(rng.integers(-n, n, k).tolist())
    if kind == 3:
        return "np.array(" + str((rng.random(shape) < 0.5).tolist()) + ")"
    if kind == 4 and len(shape) > 1:
        return f"{int(rng.integers(n))}, {_index(rng, shape[1:])}"
    return _pick(rng, ["...", ":", "::-1", "..., 0" if shape[-1] else "..."])


def _reads_as_it_writes(target):
    """Whether NumPy writes ``target`` reading an overlapping value as it writes (which
    pullback does not follow): a boolean mask, and on NumPy 1.26 an integer list too."""
    return "np.array([" in target or NUMPY1 and "[[" in target


def _value(rng, prog, target_shape):
    """An expression to write: a number, another array (broadcast, reshaped, or the
    target itself), or a smooth function of one."""
    names = prog.names
    kind = rng.integers(5)
    if kind == 0:
        return repr(float(np.round(rng.standard_normal(), 2)))
    other = _pick(rng, names)
    oshape = prog.env[other].shape
    if kind == 1 and int(np.prod(oshape)) == int(np.prod(target_shape)):
        return f"{other}.reshape({target_shape})"
    if kind == 2:
        return f"np.sin({other})"
    if kind == 3:
        return f"{other}[::-1]" if oshape else other
    return f"2.0 * {other}"


def _grow(prog, rng):
    """Add one random line to ``prog``."""
    names, env = prog.names, prog.env
    a = _pick(rng, names)
    shape = env[a].shape
    new = f"a{len(names)}"
    kind = rng.integers(13)
    order = _pick(rng, ORDERS)
    if kind == 0:  # a view
        view = _pick(rng, [f"{a}.T", f"{a}[::-1]", f"{a}[1:]", f"{a}[None]", f"{a}[..., None]",
                           f"{a}.reshape(-1)", f"{a}.reshape(-1, order={order})",
                           f"{a}.ravel()", f"{a}.ravel(order={order})",
                           f"np.ravel({a}, order={order})", f"{a}.squeeze()",
                           f"np.swapaxes({a}, 0, -1)", f"np.moveaxis({a}, 0, -1)",
                           f"np.asarray({a})", f"{a}[...]", f"{a}.reshape({shape[::-1]})",
                           f"{a}.reshape({shape[::-1]}, order={order})"])
        return prog.add(f"{new} = {view}", new)
    if kind == 1:  # a copy, with an order
        copy = _pick(rng, [f"{a}.copy()", f"{a}.copy(order={order})", f"np.copy({a})",
                           f"np.copy({a}, order={order})", f"{a}.astype(np.float64)",
                           f"{a}.astype(np.float64, order={order})", f"{a}.flatten()",
                           f"{a}.flatten(order={order})", f"np.array({a})",
                           f"np.array({a}, copy=True, order={order})",
                           f"np.ascontiguousarray({a})", f"np.asfortranarray({a})",
                           f"{a}.astype(np.float64, copy=False)", f"{a}.copy().T"])
        return prog.add(f"{new} = {copy}", new)
    if kind == 2:  # a buffer
        first = f"{a}.flat[0]" if env[a].size else f"np.sum({a})"  # (tracked: a buffer of it
        buf = _pick(rng, [f"np.zeros_like({a})", f"np.ones_like({a}, order={order})",  # is)
                          f"np.full_like({a}, 0.5)", f"np.zeros_like({a}, order={order})",
                          f"np.full({shape}, {first})", f"np.full((), {first})",
                          f"np.full_like({a}, 0.0, order={order}) + {a}"])
        return prog.add(f"{new} = {buf}", new)
    if kind == 3:  # built from tracked parts
        build = _pick(rng, [f"np.stack([{a}, np.sin({a})])", f"np.array([{a}, {a} * 2.0])",
                            f"np.array([{a}.flat[0], 1.0, {a}.flat[-1]])"
                            if env[a].size else f"np.stack([{a}])",
                            f"np.concatenate([np.ravel({a}), np.ravel({a})])"])
        return prog.add(f"{new} = {build}", new)
    if kind == 4:  # a smooth function
        return prog.add(f"{new} = {_pick(rng, ['np.sin', 'np.tanh', 'np.cos'])}({a}) * "
                        f"{_pick(rng, names)}[...]" if rng.integers(2) else
                        f"{new} = np.cos({a})", new)
    target = f"{a}[{_index(rng, shape)}]" if rng.integers(4) else a
    try:
        target_shape = eval(target, dict(env)).shape
    except Exception:
        return False
    value = _value(rng, prog, target_shape)
    if _reads_as_it_writes(target) and np.shares_memory(eval(value, dict(env)), env[a]):
        value = f"({value}).copy()"  # NumPy's masked write reads an overlapping value as
        # it writes (a[mask] = a[::-1] differs from a[mask] = a[::-1].copy()): not followed
    if kind <= 7:  # v[index] = e
        line = f"{target} = {value}" if "[" in target else f"{a}[...] = {value}"
    elif kind == 8:  # in-place operators
        op = _pick(rng, ["+=", "-=", "*="])
        line = f"{target} {op} {value}"
    elif kind == 9:
        line = f"np.copyto({target}, {value})" if "[" not in target or rng.integers(2) else (
            f"np.copyto({a}, {value})")
    elif kind == 10:  # through a view taken now
        view = _pick(rng, [f"{a}.T", f"{a}.reshape(-1)", f"{a}[None]", f"{a}[::-1]",
                           f"{a}.ravel(order={order})"])
        try:
            index = _index(rng, eval(view, dict(env)).shape)
        except Exception:
            return False
        line = f"{view}[{index}] = " + (
            f"({value}).copy()" if _reads_as_it_writes(f"[{index}]") and "copy()" not in value
            and np.shares_memory(eval(value, dict(env)), env[a]) else value)
    elif kind == 11:  # out=, .flat, .fill, .sort, np.copyto(where=)
        mask = "np.array(" + str((prog.rng.random(shape) < 0.5).tolist()) + ")"
        line = _pick(rng, [f"np.add({a}, {value}, out={a})", f"np.multiply({value}, 2.0, out={a})",
                           f"{a}.flat[{int(rng.integers(-1, 1))}] = {value}",
                           f"{a}.fill({float(np.round(rng.standard_normal(), 2))})",
                           f"{a}.sort()" if shape else f"{a}[...] = 1.0",
                           f"np.copyto({a}, {value}, where={mask})",
                           f"np.negative({value}, out={a}[...])",
                           f"{a}.T.flat[::2] = 0.5"])
    else:  # with itself
        line = _pick(rng, [f"{a}[::-1] = {a}", f"{a}[...] = {a}", f"{a}[:] = {a}",
                           f"np.copyto({a}, {a})", f"{a}[{list(range(len(env[a]))[::-1])}] = {a}"
                           + (".copy()" if NUMPY1 else "") if shape else f"{a}[...] = {a}",
                           f"{a}[::-1][:] = {a}", f"{a} += {a}"])
    return prog.add(line)


def program(seed):
    """``(source, x, w)``: the random program of ``seed``, its input and loss weights."""
    rng = np.random.default_rng(seed)
    prog = _Program(rng, _pick(rng, SHAPES))
    for _ in range(int(rng.integers(3, 10))):
        _grow(prog, rng)
    w = [rng.standard_normal(prog.env[n].shape) for n in prog.names]
    return prog.source(w), prog.x, w


def outcome(seed):
    """``"ok"``, ``"value"``, ``"gradient"`` or ``"error: Type: words"`` for one program."""
    source, x, w = program(seed)
    env = {"np": np}
    exec(source, env)
    f = env["program"]
    with np.errstate(all="ignore"):
        want = f(x.copy(), w)
    try:
        got, grad = pb.value_and_grad(f)(x.copy(), w)
    except Exception as error:
        return f"error: {type(error).__name__}: {' '.join(str(error).split()[:6])}"
    if not np.allclose(got, want, rtol=1e-12, atol=1e-12):
        return "value"
    eps, fd = 1e-6, np.zeros_like(x)
    for k in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[k] = eps
        fd[k] = (f(np.array(x + step), w) - f(np.array(x - step), w)) / (2 * eps)
    if np.shape(grad) != x.shape or not np.allclose(grad, fd, rtol=1e-5, atol=1e-5):
        return "gradient"
    return "ok"


def tally(count, seed=0):
    """The outcomes of ``count`` programs from ``seed`` on, by class."""
    return collections.Counter(outcome(s) for s in range(seed, seed + count))


def test_write_programs_agree_with_numpy_and_finite_differences():
    bad = {s: o for s in range(500) if (o := outcome(s)) != "ok"}
    assert not bad, "\n\n".join(f"seed {s}: {o}\n{program(s)[0]}"
                                for s, o in list(bad.items())[:3])


if __name__ == "__main__":
    n, first = (int(a) for a in (sys.argv[1:] + ["1000", "0"])[:2])
    for what, k in tally(n, first).most_common():
        print(f"{k:6d}  {what}")
