"""The program's Python source, written from a finished trace and compiled: the passes
run over its ``Program`` (passes.py, passes_memory.py), then each live node becomes one
line (an operator, a NumPy call, a cheaper door to the same call), each guard an ``if``
that returns ``RETRACE``, and the constants keyword parameters with their values."""

from __future__ import annotations

import itertools
import keyword
import linecache
import math
import operator
from collections import OrderedDict
from typing import Any

import numpy as np

from .._engine.interception import original_of
from .._engine.registry import getitem
from .bits import _number_key, _same_bits
from .passes import share, simplify
from .passes_memory import drop_copies, free_after, reuse_dead
from .program import Program, _astype, _eye_product, _finite_number
from .trace import READERS, RETRACE, Traced

_OPERATORS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/",
              np.power: "**", np.matmul: "@", np.floor_divide: "//", np.remainder: "%",
              np.bitwise_and: "&", np.bitwise_or: "|", np.bitwise_xor: "^",
              np.greater: ">", np.less: "<", np.greater_equal: ">=", np.less_equal: "<=",
              np.equal: "==", np.not_equal: "!="}
_UNARY = {np.negative: "-", np.positive: "+", np.invert: "~"}


_REDUCE = {original_of(f): name for f, name in (
    (np.sum, "np.add.reduce"), (np.max, "np.maximum.reduce"), (np.amax, "np.maximum.reduce"),
    (np.min, "np.minimum.reduce"), (np.amin, "np.minimum.reduce"),
    (np.all, "np.logical_and.reduce"), (np.any, "np.logical_or.reduce"))}
_MODULES = (("np", np), ("np.linalg", np.linalg), ("np.fft", np.fft))


def _func_name(func):
    name = getattr(func, "__name__", None)
    owner = getattr(func, "__self__", None)
    if isinstance(owner, np.ufunc) and getattr(np, owner.__name__, None) is owner:
        return f"np.{owner.__name__}.{name}"
    for prefix, module in _MODULES:
        if name and original_of(getattr(module, name, None)) is func:
            return f"{prefix}.{name}"
    return None


def _short(func):
    name = getattr(func, "__name__", None) or type(func).__name__
    owner = getattr(func, "__self__", None)
    if isinstance(owner, np.ufunc):
        name = f"{owner.__name__}_{name}"
    name = {"getitem": "item", "_astype": "astype"}.get(name, name)
    name = "".join(c if c.isalnum() else "_" for c in name).strip("_").lower() or "t"
    return name


def _literal(x):
    """Source for a small constant, or None when it is to be a named parameter."""
    t = type(x)
    if x is None or x is Ellipsis or t is bool or t is str:
        return "..." if x is Ellipsis else repr(x)
    if t is int or t is float and np.isfinite(x):
        return f"({x!r})" if x < 0 or t is float and np.signbit(x) else repr(x)
    return None


class _Source:
    """The program's text: names of nodes, parameters for constants."""

    def __init__(self):
        self.names: dict[int, str] = {}     # id(box) -> name
        self.used = {"np", "RETRACE", "math", "operator"}
        self.consts: dict[int, str] = {}    # id(constant) -> parameter name
        self.namespace: dict[str, Any] = {"np": np, "RETRACE": RETRACE}
        self.keep: list[Any] = []           # the constants, alive as long as the program
        self.counter = itertools.count(1)

    def fresh(self, base):
        base = base if base.isidentifier() and not keyword.iskeyword(base) else f"_{base}"
        name, k = base, 1
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def const(self, x, base="c"):
        name = self.consts.get(id(x))
        if name is None:
            if isinstance(x, np.dtype):
                base = x.name
            elif isinstance(x, type):
                base = x.__name__
            name = self.fresh(base)
            self.consts[id(x)] = name
            self.namespace[name] = x
            self.keep.append(x)
        return name

    def expr(self, x):
        if isinstance(x, Traced):
            return self.names[id(x)]
        if type(x) is list or type(x) is tuple:
            inner = ", ".join(self.expr(a) for a in x)
            if type(x) is list:
                return f"[{inner}]"
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if type(x) is slice:
            return f"slice({self.expr(x.start)}, {self.expr(x.stop)}, {self.expr(x.step)})"
        text = _literal(x)
        return self.const(x) if text is None else text

    def index(self, index):
        parts = index if type(index) is tuple else (index,)
        out = []
        for p in parts:
            if type(p) is slice and all(_literal(e) is not None or isinstance(e, Traced)
                                        for e in (p.start, p.stop, p.step) if e is not None):
                text = ":".join("" if e is None else self.expr(e)
                                for e in (p.start, p.stop, p.step))
                out.append(text[:-1] if p.step is None else text)
            else:
                out.append(self.expr(p))
        if type(index) is tuple:
            return "()" if not out else out[0] + "," if len(out) == 1 else ", ".join(out)
        return out[0]

    def call(self, func, args, kwargs):
        if func is getitem:
            return f"{self.expr(args[0])}[{self.index(args[1])}]"
        if func is _finite_number:  # a guard's test of a float: Python's, without a ufunc
            return f"math.isfinite({self.expr(args[0])})"
        if func is _eye_product:  # the identity basis of a Jacobian, multiplied in
            x, eye, left = (self.expr(a) for a in args)
            product = f"{eye} @ {x}" if args[2] else f"{x} @ {eye}"
            return f"np.add({x}, 0.0, order='C') if np.isfinite({x}).all() else {product}"
        if func is _astype:
            kw = "".join(f", {k}={self.expr(v)}" for k, v in kwargs.items())
            return f"{self.expr(args[0])}.astype({self.expr(args[1])}{kw})"
        operands = [a for a in args if isinstance(a, Traced)]
        arrays = any(isinstance(a.value, (np.ndarray, np.generic)) for a in operands)
        if not kwargs and arrays and len(args) == 2 and func in _OPERATORS:
            return f"{self.expr(args[0])} {_OPERATORS[func]} {self.expr(args[1])}"
        if not kwargs and arrays and len(args) == 1 and func in _UNARY:
            return f"{_UNARY[func]}{self.expr(args[0])}"
        fast = self.fast(func, args, kwargs)
        if fast is not None:
            return fast
        name = _func_name(func)
        if name is None:
            name = self.const(func, _short(func))
        parts = [self.expr(a) for a in args] + [f"{k}={self.expr(v)}" for k, v in kwargs.items()]
        return f"{name}({', '.join(parts)})"

    def fast(self, func, args, kwargs):
        """The same call through a cheaper door, for an ndarray first argument: the
        ufunc's reduce for np.sum and np.max (no Python layer), ``.T`` for a 2-d
        swapaxes, the ``.reshape`` method."""
        first = args[0] if args else None
        value = first.value if isinstance(first, Traced) else None
        if (func is original_of(np.reshape) and isinstance(value, (np.ndarray, np.generic))
                and len(args) == 2 and set(kwargs) <= {"order"}):
            kw = "".join(f", {k}={self.expr(v)}" for k, v in kwargs.items())
            return f"{self.expr(first)}.reshape({self.expr(args[1])}{kw})"
        if type(value) is not np.ndarray or value.ndim == 0:
            return None
        a = self.expr(first)
        if func in _REDUCE and len(args) <= 2 and set(kwargs) <= {"axis", "keepdims", "dtype"}:
            kw = {"axis": None, **kwargs}  # the reduce's own default axis is 0
            if len(args) == 2:
                kw["axis"] = args[1]
            if kw.get("dtype", None) is None:
                kw.pop("dtype", None)
            if func is not original_of(np.sum) and "dtype" in kw:
                return None
            parts = "".join(f", {k}={self.expr(v)}" for k, v in kw.items())
            return f"{_REDUCE[func]}({a}{parts})"
        if (func is original_of(np.mean) and len(args) == 1
                and set(kwargs) <= {"axis", "keepdims", "dtype"}
                and kwargs.get("dtype") is None and value.dtype in (np.float64, np.float32)):
            # np.mean's own steps for these dtypes: the sum, divided by the count
            axis = kwargs.get("axis")
            axes = range(value.ndim) if axis is None else (
                axis if isinstance(axis, tuple) else (axis,))
            count = int(np.prod([value.shape[i] for i in axes]))
            keep = f", keepdims={self.expr(kwargs['keepdims'])}" if "keepdims" in kwargs else ""
            return f"np.add.reduce({a}, axis={self.expr(axis)}{keep}) / {count}"
        if (func is original_of(np.swapaxes) and value.ndim == 2 and not kwargs and len(args) == 3
                and {args[1], args[2]} in ({0, 1}, {-1, -2}, {0, -1}, {-2, 1})
                and args[1] != args[2]) or (func is original_of(np.transpose) and len(args) == 1
                                            and kwargs.get("axes") is None):
            return f"{a}.T"
        return None

    def output(self, x, out_def):
        """The return expression: the output's pytree as literals around the leaves."""
        leaves = iter(x)

        def build(spec):
            if spec is None:
                leaf = next(leaves)
                if isinstance(leaf, Traced):
                    name = self.names[id(leaf)]
                    value = leaf.value
                    ro = isinstance(value, np.ndarray) and not value.flags.writeable
                    return f"{name}.copy()" if ro else name
                if isinstance(leaf, np.ndarray):  # a constant: a fresh copy per call
                    return f"{self.const(leaf)}.copy()"
                return self.expr(leaf)
            kind, children, keys = spec
            parts = [build(c) for c in children]
            if kind is OrderedDict:
                items = ", ".join(f"({k!r}, {p})" for k, p in zip(keys, parts))
                return f"{self.const(kind)}([{items}])"
            if kind is dict:
                return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(keys, parts)) + "}"
            if kind is list:
                return f"[{', '.join(parts)}]"
            if kind is tuple:
                return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
            return f"{self.const(kind)}({', '.join(parts)})"

        return build(out_def)


def emit(fname, trace, params, outs, out_def):
    """``(source, program, constants)`` for a finished trace: the passes, then the source
    of what an output or a guard needs, compiled."""
    params = _unique(params)
    program = Program(trace.events, params, outs)
    share(program)
    simplify(program)
    drop_copies(program)
    boxes = program.live()
    reuse_dead(program, boxes)
    free_after(program, boxes)
    needed = {id(b) for b in boxes}

    src = _Source()
    for name, box in params:
        src.names[id(box)] = name
        src.used.add(name)
    lines, block = [], ""  # block: the np.errstate of the lines above, if any
    for i, e in enumerate(trace.events):
        if not isinstance(e, Traced):
            box, kind, expected = e
            box = program.canon(box)
            if isinstance(box, Traced):  # a guard on a constant holds
                lines.extend(_guard_lines(src, src.names[id(box)], kind, expected))
                block = ""
        elif id(e) in needed:
            # consecutive lines under one np.errstate share its block
            state = ", ".join(f"{k}={v!r}" for k, v in trace.errstate.get(id(e), {}).items())
            if state and state != block:
                lines.append(f"with np.errstate({state}):")
            block = state
            lines.append(("    " if state else "") + _line(src, program, e))
        if i in program.free:
            lines.append(("    " if block else "")
                         + f"del {', '.join(src.names[id(b)] for b in program.free[i])}")

    ret = src.output([program.canon(o) for o in outs], out_def)
    defaults = [n for n in src.namespace if n not in ("np", "RETRACE")]
    head = ", ".join([n for n, _ in params] + ([f"*, {', '.join(f'{n}={n}' for n in defaults)}"]
                                               if defaults else []))
    notes = [f"# {n}: {_describe(src.namespace[n])}" for n in defaults]
    body = "\n".join(f"    {line}" for line in notes + lines + [f"return {ret}"])
    source = f"def {fname}({head}):\n{body}\n"
    filename = f"<pb.jit {fname} #{-trace.level}>"
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = dict(src.namespace)
    namespace.update(_HELPERS)
    exec(code, namespace)
    return source, namespace[fname], src.keep


def _unique(params):
    """The parameters, each named once by an identifier other than the program's own
    ``np``, ``RETRACE``, ``operator``, ``math``, ``_same`` and ``_same_array``."""
    used: set[str] = set()
    out = []
    for name, box in params:
        base = name if name.isidentifier() and not keyword.iskeyword(name) else f"_{name}"
        if base in ("np", "RETRACE", "operator", "math", "_same", "_same_array"):
            base = f"{base}_"
        n, k = base, 1
        while n in used:
            k += 1
            n = f"{base}_{k}"
        used.add(n)
        out.append((n, box))
    return out


def _line(src, program, e):
    """The line that computes node ``e``."""
    func, args, kwargs = program.call_of(e)
    args = program.mapped(args)
    kwargs = {k: program.mapped(v) for k, v in kwargs.items()}
    if id(e) in program.into:  # into an operand that dies here
        kwargs = {"out": program.into[id(e)]}
    text = src.call(func, args, kwargs)
    named = e.args[0] if func in (_finite_number, _eye_product) else func
    name = src.fresh(f"{_short(named)}_{next(src.counter)}")
    src.names[id(e)] = name
    return f"{name} = {text}"


def _describe(x):
    """A constant parameter, in a comment of the program."""
    if isinstance(x, np.ndarray):
        if x.size <= 4:
            return " ".join(repr(x).split())
        return f"a {x.dtype} array of shape {x.shape}"
    if isinstance(x, np.generic):
        return repr(x)
    # (on one line: a scipy.sparse matrix's repr has several)
    return getattr(x, "__qualname__", None) or " ".join(repr(x).split())


def _same_array(x, expected, dtype):
    x = np.asarray(x, dtype=dtype)
    return _same_bits(x, expected)  # (-0.0 is not 0.0 to the library it escaped to)


def _same(a, b):
    """A guard's test where ``!=`` is not exact: ``a`` is ``b``, the value seen at the trace."""
    if type(a) is list:
        return type(b) is list and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and _number_key(a) == _number_key(b)


def _exact(expected):
    """Whether ``value != expected`` is an exact guard: an integer, a string, or a float
    other than a zero (equal to -0.0) and NaN (equal to nothing)."""
    if isinstance(expected, (int, np.integer, str)):
        return True
    return isinstance(expected, (float, np.floating)) and bool(expected) and expected == expected


# what the program's lines call besides NumPy
_HELPERS: dict[str, Any] = {"_same_array": _same_array, "_same": _same, "math": math,
                            "operator": operator, **READERS}


def _guard_lines(src, name, kind, expected):
    if kind == "bool":
        test = f"not {name}" if expected else name
    elif kind == "shape":
        test = f"{name}.shape != {expected!r}"
    elif kind == "dtype":
        test = f"{name}.dtype != {src.const(expected)}"
    elif isinstance(kind, tuple) and kind[0] == "array":
        test = f"not _same_array({name}, {src.const(expected, 'seen')}, {src.const(kind[1])})"
    else:
        if isinstance(kind, tuple) and kind[0] == "format":
            value = f"format({name}, {kind[1]!r})"
        elif isinstance(kind, tuple) and kind[0] == "round":
            digits = "" if kind[1] is None else f", {kind[1]!r}"
            value = f"round({name}{digits})"
        elif isinstance(kind, tuple) and kind[0] == "call":
            value = f"{kind[1]}({name})"
        elif kind == "is":  # a string or a dtype made from traced values
            value = name
        elif isinstance(kind, tuple) and kind[0] == "method":
            value = f"np.asarray({name}).{kind[1]}({', '.join(repr(a) for a in kind[2])})"
        elif isinstance(kind, tuple):  # item(*args)
            value = f"np.asarray({name}).item({', '.join(repr(a) for a in kind[1])})"
        elif kind == "tolist":
            value = f"np.asarray({name}).tolist()"
        else:
            value = f"{'operator.index' if kind == 'index' else kind}({name})"
        literal = _literal(expected)
        exp = literal if literal is not None else src.const(expected, "seen")
        test = f"{value} != {exp}" if _exact(expected) else f"not _same({value}, {exp})"
    return [f"if {test}:", "    return RETRACE"]
