"""What a jitted function reaches other than through its arguments, found before each
trace: the arrays it reads from closure cells and module globals (``_Captured``: traced
like arguments), the random generators it reaches that way, and the roots (objects,
containers, default arguments) from which watch.py finds the rest of the state it reads."""

from __future__ import annotations

import functools
import random
import sys
import types
from typing import Any

import numpy as np


class Wrapper:
    """A callable standing for the function ``_f`` it wraps (``pb.jit``'s ``Jitted``): the
    scan looks through it to ``_f``, and the watch of captured state does not look into it."""

    _f: Any


class _Captured:
    """An array the function reads from a closure cell or a module global: read at call
    time at its place (``steps`` from ``root``), and traced like an argument."""

    __slots__ = ("name", "root", "steps")

    def __init__(self, name, root, steps):
        self.name, self.root, self.steps = name, root, steps

    def get(self):
        try:
            return _follow(self.root, self.steps)
        except (LookupError, AttributeError, TypeError, ValueError):  # (an empty cell)
            return None

    def set(self, value):
        _assign(self.root, self.steps, value)


def _follow(x, steps):
    for attribute, key in steps:
        x = getattr(x, key) if attribute else x[key]
    return x


def _assign(root, steps, value):
    """Put ``value`` at ``steps`` from ``root``."""
    *head, (attribute, key) = steps
    parent = _follow(root, head)
    if attribute:
        setattr(parent, key, value)
    else:
        parent[key] = value


def global_names(code, found):
    """The names a code object (and the code nested in it) reads as globals or
    attributes, added to ``found``."""
    found.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            global_names(c, found)
    return found


def _is_random(v):
    """Whether ``v`` draws random numbers: Python's generator, or NumPy's (numpy.random, which
    NumPy imports when first asked for, is looked at only once a program has imported it:
    no NumPy generator exists before)."""
    if isinstance(v, random.Random):
        return True
    numpy_random = sys.modules.get("numpy.random")
    return numpy_random is not None and isinstance(v, (
        numpy_random.Generator, numpy_random.RandomState, numpy_random.BitGenerator))


# the modules whose globals are no user's state (pullback's own, NumPy's, SciPy's)
LIBRARIES = frozenset({"pullback", "numpy", "scipy"})


# the modules whose classes and functions hold no user state
def _library(module):
    top = str(module or "").partition(".")[0]
    return top in LIBRARIES or top in sys.stdlib_module_names or top == "builtins"


def _others(module):
    """Whether a function of this module holds no user state (its caches may change):
    NumPy's, SciPy's, the standard library's; pullback's own hold the user's functions."""
    return _library(module) and str(module or "").partition(".")[0] != "pullback"


_SCAN_DEPTH = 100  # functions calling functions, through globals and closures


def _scan(f):
    """The arrays ``f`` reads through closures and globals (and through the functions it
    reaches that way: ``_Captured``), the random generators it reaches that way, and the
    places where it may reach other arrays (a container or an object in a closure, a global
    or another module's global, a bound method's object, a partial's arguments, default
    arguments): ``(label, root, steps)`` for ``_reach``."""
    arrays: dict[tuple[int, tuple], _Captured] = {}
    generators: list[Any] = []
    roots: list[tuple[Any, ...]] = []  # (label, root, steps, rebindable, the code it is of)
    seen: set[int] = set()
    complete = [True]

    def visit(fn, depth, label="f"):
        if id(fn) in seen:
            return
        if depth > _SCAN_DEPTH:
            complete[0] = False  # (a call chain deeper than this: a warning)
            return
        seen.add(id(fn))
        if isinstance(fn, functools.partial):
            roots.append((label, fn, (), True, None))
            visit(fn.func, depth + 1)
            return
        if isinstance(fn, types.MethodType):
            roots.append(("self", fn.__self__, (), True, None))
            visit(fn.__func__, depth + 1)
            methods(type(fn.__self__), depth + 1)
            return
        if isinstance(fn, Wrapper):
            visit(fn._f, depth + 1)
            return
        if not isinstance(fn, types.FunctionType):
            call = next((c.__dict__["__call__"] for c in type(fn).__mro__
                         if "__call__" in c.__dict__), None)
            if isinstance(call, types.FunctionType):  # an object called as a function
                roots.append((label, fn, (), True, None))
                visit(call, depth + 1)
                methods(type(fn), depth + 1)
            return
        scope = fn.__globals__
        if _others(scope.get("__name__")):  # (NumPy's, SciPy's: no user state)
            return
        library = str(scope.get("__name__", "")).partition(".")[0] in LIBRARIES
        code = fn.__code__  # (what the roots below matter for: a call that runs it)
        if not library:
            roots.extend((f"{fn.__name__}.{name}", fn, ((True, name),), True, code)
                         for name in ("__defaults__", "__kwdefaults__"))
        values = []
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                values.append((name, cell.cell_contents, cell, ((True, "cell_contents"),)))
            except ValueError:
                continue
        names = sorted(global_names(fn.__code__, set()))
        values += [(name, scope[name], scope, ((False, name),)) for name in names
                   if name in scope]
        for name, v, root, steps in values:
            if isinstance(v, np.ndarray):
                arrays.setdefault((id(root), steps), _Captured(name, root, steps))
                continue
            if not library:
                roots.append((name, root, steps, True, code))
            elif root is not scope and not (callable(v) or isinstance(v, str)):
                roots.append((name, root, steps, False, code))  # (pullback's own closure: its
                # cells are never rebound, and its functions are visited)
            if isinstance(v, types.ModuleType) and not _library(
                    v.__name__):  # config.W: a constant, as an attribute
                roots.extend((f"{name}.{n}", v.__dict__, ((False, n),), True, code)
                             for n in names if n in v.__dict__ and not callable(v.__dict__[n]))
                for n in names:  # helpers.f(x): the globals that f reads too
                    if isinstance(v.__dict__.get(n), types.FunctionType):
                        visit(v.__dict__[n], depth + 1, f"{name}.{n}")
            if _is_random(v):
                generators.append(v)
            elif callable(v) and not isinstance(v, (type, np.ufunc)):
                visit(v, depth + 1, name)

    def methods(cls, depth):
        """The methods and properties of a class's object (``self.forward``, called from
        the method jitted)."""
        for c in cls.__mro__:
            if _library(c.__module__):
                continue
            for v in list(c.__dict__.values()):
                if isinstance(v, property):
                    v = v.fget
                elif isinstance(v, (staticmethod, classmethod)):
                    v = v.__func__
                if isinstance(v, types.FunctionType):
                    visit(v, depth)

    visit(f, 0)
    return list(arrays.values()), generators, roots, seen, complete[0]

