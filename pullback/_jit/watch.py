"""The watch of captured state: what a trace reached other than through its arguments
(through an attribute, a container, a closure, a global, a default argument), found by
``_reach`` and kept with the program, since the program holds it as constants: arrays by
their bits, numbers by value, other objects by identity, containers by their keys. A call
that finds any of it changed traces again (``_check``: those tests compiled into one
function, run before each call); a trace that changed it puts it back."""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import functools
import itertools
import keyword
import linecache
import types
from typing import Any

import numpy as np

from .._engine.core import Tracked
from .bits import _bits_changed, _number_key, _put_back, _snapshot
from .scan import Wrapper, _assign, _follow, _is_random, _library, _others, global_names
from .trace import Traced, _Untraceable


class _Watched:
    """An array the function reaches other than as an argument, a closure's or a global's
    value (through an attribute, a container, a default argument): a constant of the
    program, and NumPy work done on it alone was done at the trace. Its bytes at the trace
    are kept, and a call that finds it changed in place, or another array in its place,
    traces again."""

    __slots__ = ("label", "root", "steps", "array", "shape", "data", "first")

    def __init__(self, label, root, steps, array, data, first=True):
        self.label, self.root, self.steps, self.array, self.data = (
            label, root, steps, array, data)
        self.shape = array.shape
        self.first = first  # (an array reached again: its bits are compared at the first)

    def current(self):
        return _follow(self.root, self.steps)

    def changed(self):
        try:
            x = self.current()
        except (LookupError, AttributeError, TypeError, ValueError):
            return True
        if x is not self.array or x.shape != self.shape:
            return True
        return self.first and _bits_changed(x, self.data)

    def test(self, place, const):
        """``changed``'s test as source, for ``_check``: ``place`` names the value at the
        entry's place, ``const`` a constant."""
        x = place(self.root, self.steps)
        test = f"{x} is not {const(self.array)} or {x}.shape != {self.shape!r}"
        return f"{test} or _bits_changed({x}, {const(self.data)})" if self.first else test

    def restore(self):
        """Put back what the trace found here: the function changed it, and runs eagerly."""
        try:
            if self.current() is self.array:
                _put_back(self.array, self.data)
                return
            _assign(self.root, self.steps, self.array)  # (another array was put there)
        except (LookupError, AttributeError, TypeError, ValueError):
            pass  # (a read-only array, an immutable container: left as the trace left it)


class _WatchedNumber(_Watched):
    """A Python or NumPy number the function reaches the same ways (``self.training``, a
    global ``N``, a closure's ``scale``): a constant of the program too, so a call that
    finds another number there (or the same one of another type) traces again."""

    __slots__ = ()

    def __init__(self, label, root, steps, number):
        super().__init__(label, root, steps, np.empty(0), None)
        self.array = number

    def changed(self):
        try:
            x = self.current()
        except (LookupError, AttributeError, TypeError, ValueError):
            return True
        n = self.array
        return x is not n and (type(x) is not type(n) or _number_key(x) != _number_key(n))

    def test(self, place, const):
        x, n = place(self.root, self.steps), self.array
        return (f"{x} is not {const(n)} and (type({x}) is not {const(type(n))} or "
                f"_number_key({x}) != {const(_number_key(n))})")

    def restore(self):
        try:
            _assign(self.root, self.steps, self.array)
        except (LookupError, AttributeError, TypeError, ValueError):
            pass  # (an immutable container: left as the trace left it)


_NUMBERS = (bool, int, float, complex, np.number, np.bool_)

# what _reach does not look into: values that hold no arrays, or whose arrays are reached
# another way (a module's by the names the functions use, a class's through its instances)
_OPAQUE = (str, bytes, int, float, complex, type(None), type, types.ModuleType, np.generic,
           np.dtype, np.ufunc, range, slice, types.BuiltinFunctionType, types.CodeType)
_REACH_DEPTH = 6  # containers and attributes below a root
_REACH_VALUES = 20000  # containers and objects looked into, per trace


class _WatchedObject(_Watched):
    """Any other value the function reaches through an attribute, a container, a closure
    or a global (a string ``self.mode``, ``None``, a function ``self.act``, a list): a
    call that finds another object there (a string of other characters) traces again."""

    __slots__ = ()

    def __init__(self, label, root, steps, value):
        super().__init__(label, root, steps, np.empty(0), None)
        self.array = value

    def changed(self):
        try:
            x = self.current()
        except (LookupError, AttributeError, TypeError, ValueError):
            return True
        v = self.array
        if x is v:
            return False
        return type(x) is not type(v) or not isinstance(v, (str, bytes)) or x != v

    def test(self, place, const):
        x, v = place(self.root, self.steps), self.array
        if not isinstance(v, (str, bytes)):
            return f"{x} is not {const(v)}"
        return f"{x} is not {const(v)} and (type({x}) is not {const(type(v))} or {x} != {const(v)})"

    restore = _WatchedNumber.restore


class _WatchedItems(_Watched):
    """What a container or an object holds, beyond its values (watched one by one): its
    length, keys or attribute names, so ``layers.append(W)``, ``cfg["scale"] = 10`` and
    ``o.scale = 5`` (read as ``getattr(o, "scale", 1.0)``) trace again; a set's or a
    frozenset's elements."""

    __slots__ = ("get", "held")

    def __init__(self, label, x):
        super().__init__(label, None, (), np.empty(0), None)
        self.get = _holding(x)
        self.array, self.data = x, _items(x)
        # (a dict: the keys its items were copied by, which a subclass that keeps them
        # elsewhere gives otherwise than its own keys, as scipy.sparse's dok_array: whose
        # items are then always seen changed, and the call runs eagerly)
        self.held = tuple(self.data) if isinstance(x, dict) else self.get(x)

    def changed(self):
        return self.get(self.array) != self.held

    def test(self, place, const):
        return f"{const(self.get)}({const(self.array)}) != {const(self.held)}"

    def restore(self):
        x, saved = self.array, self.data
        with contextlib.suppress(LookupError, AttributeError, TypeError, ValueError):
            if isinstance(x, (list, collections.deque)):
                x.clear()
                x.extend(saved)
            elif isinstance(x, (dict, set)):
                x.clear()
                x.update(saved)
            elif isinstance(x, type):
                for n in [n for n in x.__dict__ if n not in saved]:
                    delattr(x, n)
                for n, v in saved.items():
                    if x.__dict__.get(n, _MISSING) is not v:
                        setattr(x, n, v)
            elif isinstance(getattr(x, "__dict__", None), dict):
                x.__dict__.clear()
                x.__dict__.update(saved)


_MISSING = object()


def _items(x):
    """A shallow copy of what ``x`` holds, by key (a set: itself)."""
    if isinstance(x, (list, tuple, collections.deque)):
        return dict(enumerate(x))
    if isinstance(x, (set, frozenset)):
        return frozenset(x)
    if isinstance(x, dict):
        return dict(x)
    if isinstance(x, type):
        return dict(x.__dict__)
    return dict(getattr(x, "__dict__", None) or {})


def _holding(x):
    """The function that gives what a change to what ``x`` holds changes: a set's
    elements, a sequence's length, the keys of a dict, a class or an object, in order (a
    tuple compares them at C's speed: a model object's classes hold dozens of names each)."""
    if isinstance(x, (set, frozenset)):
        return frozenset
    if isinstance(x, (list, tuple, collections.deque)):
        return len
    # (a dict's own keys: a subclass may iterate otherwise, as scipy.sparse's dok_matrix)
    return _keys if isinstance(x, dict) else _names_of_class if isinstance(x, type) else (
        _names)


def _keys(x):
    return tuple(dict.keys(x))


def _names_of_class(x):
    return tuple(x.__dict__)


def _names(x):
    return tuple(getattr(x, "__dict__", None) or ())


def _reach(roots, visited, read=None):
    """``(watched, generators, complete)``: what is reachable from ``roots`` (arrays as
    ``_Watched``, numbers as ``_WatchedNumber``, every other value by identity and every
    container by its keys), the random generators, and whether the walk saw everything.
    Functions in ``visited`` were scanned already (their closures' arrays are traced);
    other functions reached (an argument, a method, a property, another module's) are
    looked into: closures, defaults and the globals they read. An iterator (a batch
    iterator ``next(batches)``) is state the function changes: its call runs eagerly.
    With ``read`` (what ran in the trace: ``_reading``), an object's attributes and its
    class's are followed only where their names are among those its code can read (a
    class's special methods always), and a function only where it ran: what the function
    can have read, not all that an object it reaches holds. An array reached twice is
    compared once (``first``)."""
    watched: list[_Watched] = []
    generators: list[Any] = []
    seen: set[int] = set()
    data: dict[int, Any] = {}
    complete = True
    budget = [_REACH_VALUES]

    def walk(x, label, root, steps, depth, rebindable=True):
        nonlocal complete
        if isinstance(x, np.ndarray) and x.dtype.kind != "O":
            first = id(x) not in data
            if first:
                data[id(x)] = _snapshot(x)
            watched.append(_Watched(label, root, steps, x, data[id(x)], first))
            return
        if isinstance(x, _NUMBERS) and steps:
            watched.append(_WatchedNumber(label, root, steps, x))
            return
        if isinstance(x, Traced):
            return  # (an input, captured)
        if steps and rebindable and not isinstance(x, types.ModuleType):
            watched.append(_WatchedObject(label, root, steps, x))
        if isinstance(x, type) and _library(x.__module__) or isinstance(x, (
                _OPAQUE, Wrapper)) and not isinstance(x, type) or id(x) in seen:
            return
        budget[0] -= 1
        if budget[0] < 0 or depth > _REACH_DEPTH:
            complete = False
            return
        seen.add(id(x))
        if _is_random(x):
            generators.append(x)
            return
        if isinstance(x, collections.abc.Iterator):
            raise _Untraceable(
                f"it reaches {label}, an iterator, whose next items the program would not "
                "read", "Pass the items it takes (the batch) as arguments to jit it.")
        items: Any
        if isinstance(x, Tracked):  # (a param: its value, and the .grad backward() adds to)
            items = [(True, n) for n in ("value", "grad") if n == "value" or hasattr(x, n)]
        elif isinstance(x, np.ndarray):  # of objects: each element, by identity
            items = [(False, np.unravel_index(i, x.shape)) for i in range(x.size)]
        elif isinstance(x, (list, tuple, collections.deque)):
            if not isinstance(x, tuple):
                watched.append(_WatchedItems(label, x))
            items = [(False, i) for i in range(len(x))]
        elif isinstance(x, dict):
            watched.append(_WatchedItems(label, x))
            items = [(False, k) for k in x]
        elif isinstance(x, (set, frozenset)):
            watched.append(_WatchedItems(label, x))
            return
        elif isinstance(x, types.FunctionType):
            if id(x) in visited or _others(x.__globals__.get("__name__")) or (
                    read is not None and x.__code__ not in read.codes):
                return  # (scanned, a library's, or one that did not run)
            cells = zip(x.__code__.co_freevars, x.__closure__ or ())
            for name, cell in cells:
                walk_at(cell, ((True, "cell_contents"),), name, cell, (), depth, False)
            for name in ("__defaults__", "__kwdefaults__"):
                walk_at(x, ((True, name),), f"{x.__name__}.{name}", x, (), depth, False,
                        False)
            scope = x.__globals__
            if not _library(scope.get("__name__")):  # the globals it reads
                for name in sorted(global_names(x.__code__, set())):
                    if name in scope and not isinstance(scope[name], types.ModuleType):
                        walk_at(scope, ((False, name),), name, scope, (), depth + 1, False)
            return
        elif isinstance(x, functools.partial):
            items = [(True, "args"), (True, "keywords"), (True, "func")]
        elif isinstance(x, types.MethodType):
            items = [(True, "__self__"), (True, "__func__")]
        elif isinstance(x, property):
            items = [(True, "fget"), (True, "fset"), (True, "fdel")]
        elif isinstance(x, (staticmethod, classmethod)):
            items = [(True, "__func__")]
        elif isinstance(x, type):  # a class reached directly (K.W) or an instance's
            watched.append(_WatchedItems(label, x))
            for n in list(x.__dict__):
                if n not in ("__dict__", "__weakref__", "__doc__", "__module__") and (
                        read is None or n in read.names or n[:2] == "__" == n[-2:]):
                    walk_at(x, ((True, "__dict__"), (False, n)), label, root, steps,
                            depth + 1)
            return
        else:
            names = list(getattr(x, "__dict__", None) or ())
            if isinstance(getattr(x, "__dict__", None), dict):
                watched.append(_WatchedItems(label, x))
            for cls in type(x).__mro__:
                slots = cls.__dict__.get("__slots__", ())
                names += [slots] if isinstance(slots, str) else [
                    n for n in slots if n not in ("__dict__", "__weakref__")]
                if not _library(cls.__module__):  # its methods, properties, attributes
                    walk(cls, cls.__name__, cls, (), depth + 1)
            items = [(True, n) for n in names if read is None or n in read.names]
        fixed = isinstance(x, (tuple, types.MethodType, functools.partial, property,
                              staticmethod, classmethod))  # (what cannot be rebound)
        for step in items:
            walk_at(x, (step,), label, root, steps, depth + 1, rebindable=not fixed)

    def walk_at(x, path, label, root, steps, depth, named=True, rebindable=True):
        """Walk the value at ``path`` from ``x`` (a label of its own unless ``named``)."""
        try:
            value = x
            for attribute, key in path:
                value = getattr(value, key) if attribute else value[key]
        except (LookupError, AttributeError, TypeError, ValueError):
            return
        for attribute, key in path if named else ():
            if attribute and key == "__dict__":
                continue
            label = f"{label}.{key}" if attribute else f"{label}[{key!r}]"
        walk(value, label, root, steps + path, depth, rebindable)

    for label, root, steps, rebindable, code in roots:
        if read is not None and code is not None and code not in read.codes:
            continue  # (the state of a function that did not run)
        walk_at(root, steps, label, root, (), 0, False, rebindable and (steps[-1][1] not in (
            "__defaults__", "__kwdefaults__") if steps else True))  # (rebound rarely)
    found = watched[:]  # (walk and walk_at hold each other, and these: emptied, a walk
    watched.clear(), data.clear(), seen.clear()  # not kept is freed at once, not by the
    return found, generators, complete  # collector, which an eager call then pays for)


def _restore(watched):
    """The label of the first of ``watched`` that the trace changed, after putting each
    back as it was (the call runs eagerly), or ""."""
    changed = [w for w in watched if w.changed()]
    for w in changed:
        w.restore()
    return changed[0].label if changed else ""


def _check(watched):
    """The tests of ``watched`` compiled into one function, the check before each call
    (about 20 ns an entry against 250 ns for ``changed``, which dozens of entries a model
    object pay on every call): it reads each watched place once, a path that several
    share once, and returns the index of the first entry changed, -1 for none, or -2 where
    reading a place raised (then each entry's ``changed`` says)."""
    namespace: dict[str, Any] = {"_bits_changed": _bits_changed, "_number_key": _number_key}
    names: dict[int, str] = {}
    places: dict[Any, str] = {}
    lines: list[str] = []

    def const(x):
        name = names.get(id(x))
        if name is None:
            name = names[id(x)] = f"k{len(names)}"
            namespace[name] = x  # (alive as long as the check: its id is not reused)
        return name

    def place(root, steps):
        if not steps:
            return const(root)
        key = (id(root), steps)
        if key not in places:
            parent = place(root, steps[:-1])
            attribute, k = steps[-1]
            if attribute and type(k) is str and k.isidentifier() and not keyword.iskeyword(k):
                read = f"{parent}.{k}"
            else:
                read = f"getattr({parent}, {const(k)})" if attribute else f"{parent}[{const(k)}]"
            places[key] = f"v{len(places)}"
            lines.append(f"{places[key]} = {read}")
        return places[key]

    for i, w in enumerate(watched):
        test = w.test(place, const)
        lines.append(f"if {test}: return {i}")
    head = ", ".join(f"{n}={n}" for n in names.values())
    body = "".join(f"        {line}\n" for line in lines)
    source = (f"def check(*, {head}):\n    try:\n{body}"
              "    except (LookupError, AttributeError, TypeError, ValueError):\n"
              "        return -2\n    return -1\n")
    filename = f"<pb.jit check #{next(_checks)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace["check"]


_checks = itertools.count(1)
