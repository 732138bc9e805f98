"""The jitted function: ``jit(f)`` makes a ``Jitted``, which keys each call by its
arguments' structure, shapes and dtypes (and the values of the others), replays the
programs traced for that key while their guards hold and the state they captured is
unchanged, and otherwise traces ``f`` again (trace.py), emits the program (emit.py) and
keeps it, up to ``MAX_TRACES``; what a program cannot replay runs eagerly."""

from __future__ import annotations

import contextlib
import functools
import inspect
import keyword
import types
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .._engine.backend import is_foreign
from .._engine.core import Tracked
from .._engine.interception import activate, deactivate
from .._engine.lazy import is_lazy
from ..tree import tree_flatten, tree_unflatten
from .bits import _bits_changed, _number_key, _put_back
from .emit import emit
from .reading import _counting, _raising, _random_state, _reading
from .scan import _SCAN_DEPTH, Wrapper, _Captured, _scan
from .trace import _SCALARS, RETRACE, Traced, _errstate_token, _Trace, _traces, _Untraceable
from .watch import _OPAQUE, _REACH_DEPTH, _REACH_VALUES, _check, _reach, _restore, _Watched

__all__ = ["jit", "Jitted"]

MAX_TRACES = 8  # per jitted function; past it, calls that need a new trace run eagerly


class _Rescanned(Exception):
    """Raised by a trace whose scan found other captured arrays than the last one (a
    global assigned after ``pb.jit(f)``): the call computes its key again."""


def _signature(x, sig, inputs):
    """Append to ``sig`` a hashable description of ``x``'s pytree structure with the
    shapes and dtypes of its arrays and the values of its other leaves, and to ``inputs``
    its arrays, in tree.py's order of leaves. Returns whether a leaf is tracked (a call
    inside a trace or a transform). The hot path of every call: arrays in tuples and lists
    are handled inline."""
    t = type(x)
    if t is tuple or t is list:
        sig.append(t)
        sig.append(len(x))
        tracked = False
        for c in x:
            if type(c) is np.ndarray:
                sig.append(c.shape)
                sig.append(c.dtype)
                sig.append(c.strides)  # (the memory layout: ravel(order="A"), x.flags)
                inputs.append(c)
            else:
                tracked = _signature(c, sig, inputs) or tracked
        return tracked
    if t is np.ndarray:
        sig.append(x.shape)
        sig.append(x.dtype)
        sig.append(x.strides)
        inputs.append(x)
        return False
    if t is dict or t is OrderedDict or issubclass(t, tuple) and hasattr(t, "_fields"):
        sig.append(t)
        mapping = t is dict or t is OrderedDict
        sig.append(tuple(x) if mapping else len(x))
        tracked = False
        for c in (x.values() if mapping else x):
            tracked = _signature(c, sig, inputs) or tracked
        return tracked
    sig.append(_leaf_key(x))  # one entry, never a shape: its first item is not an int
    if isinstance(x, _TRACED):
        inputs.append(x)
    return isinstance(x, Tracked)


# the leaves traced: arrays, and NumPy's float and complex scalars; the others (NumPy's
# integers and bools too, as Python's: indices, counts, flags) are static
_TRACED = (np.ndarray, np.inexact)


def _leaf_key(x):
    if isinstance(x, np.ndarray):
        return ((x.shape, x.dtype, x.strides),)
    if isinstance(x, np.inexact):
        return (x.dtype,)
    t = type(x)
    if t is float and not (x and x == x) or t is complex:  # 0.0 and -0.0 are ==, and a
        return (t, _number_key(x))  # NaN is equal to nothing
    if isinstance(x, _BY_VALUE) or t.__eq__ is object.__eq__:
        return (t, x)  # a static value: part of the key (it must be hashable)
    # another object: by identity, as its arrays and numbers are constants of the program
    # found from it (two objects that compare equal may hold other arrays)
    return (t, _BY_ID, id(x), x)  # (x: an unhashable one is refused, as before)


_BY_ID = "by id"
_BY_VALUE = (*_OPAQUE, frozenset)  # the static arguments keyed by value


class _Compiled:
    """A program compiled for one key: its source, the function that runs it, the
    constants it keeps alive, the state it watches and the check of that state
    (watch.py's ``_check``), and the np.errstate it was traced under."""

    __slots__ = ("source", "run", "keep", "watched", "check", "errors", "token")

    def __init__(self, source, run, keep, watched=(), errors=None, token=None):
        self.source, self.run, self.keep, self.watched = source, run, keep, watched
        self.check = _check(watched) if watched else None
        # the global np.errstate of the trace (its lines under a rule's np.errstate hold
        # what differs from it): a replay runs under the same one
        self.errors, self.token = errors, token

    def other_errstate(self):
        """Whether the global np.errstate now is another than the trace's."""
        token = _errstate_token()
        if token is self.token:
            return False
        if np.geterr() != self.errors:
            return True
        self.token = token  # (the same state again, in another np.errstate block)
        return False


_EAGER = _Compiled("", None, None)  # a structure that runs eagerly


def _names(f, args, kwargs):
    """A parameter name per argument position and keyword, from ``f``'s signature."""
    try:
        params = list(inspect.signature(f).parameters.values())
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                       p.POSITIONAL_OR_KEYWORD)]
        star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "arg")
    except (TypeError, ValueError):
        names, star = [], "arg"
    pos = [names[i] if i < len(names) else f"{star}{i}" for i in range(len(args))]
    return pos + list(kwargs)


def _takes_nothing(f):
    """Whether ``f`` can be called without arguments (or its signature is unknown)."""
    try:
        inspect.signature(f).bind()
    except TypeError:
        return False
    except ValueError:  # (no signature to read)
        pass
    return True


class Jitted(Wrapper):
    """A function replayed from generated NumPy source; made by ``pb.jit``. ``traces``
    counts the traces it has run.

    >>> step = pb.jit(np.tanh)
    >>> step(np.zeros(2)), step(np.ones(2)).round(3), step.traces
    (array([0., 0.]), array([0.762, 0.762]), 1)
    """

    def __init__(self, f: Callable[..., Any]) -> None:
        if not callable(f):
            raise TypeError(f"pullback: pb.jit takes the function to compile first (got "
                            f"{type(f).__name__})")
        functools.update_wrapper(self, f)
        self._f = f
        name = "".join(c if c.isalnum() else "_" for c in getattr(f, "__name__", "f"))
        name = name.strip("_") or "f"
        self._fname = f"_{name}" if keyword.iskeyword(name) or name[0].isdigit() else name
        self._programs: dict[Any, list[_Compiled]] = {}
        self._bound: dict[int, tuple[Any, Jitted]] = {}  # (a method's, by object)
        self._captured, self._generators, self._roots, self._scanned, _ = _scan(f)
        self.traces = 0
        self._warned = self._warned_reach = False
        self._changed = ""  # the last array seen changed between calls (for the warning)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(args, kwargs)[0]

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """``@pb.jit`` on a method: ``m.loss`` is ``pb.jit`` of the bound method, one per
        object (kept while the object lives)."""
        if obj is None:
            return self
        bound = self._bound.get(id(obj))
        if bound is not None and bound[0]() is obj:
            return bound[1]
        jitted = Jitted(types.MethodType(self._f, obj))
        key = id(obj)
        ref: Any
        try:
            ref = weakref.ref(obj, lambda _, key=key: self._bound.pop(key, None))  # type: ignore[misc]
        except TypeError:  # (an object without weak references: kept)
            ref = (lambda obj=obj: obj)
        self._bound[key] = (ref, jitted)
        return jitted

    def source(self, *args: Any, **kwargs: Any) -> str:
        """The generated Python source that these arguments run (tracing it if needed).

        >>> step = pb.jit(lambda x: np.sum(np.sin(x) * 2.0))
        >>> print(step.source(np.ones(3)))
        def _lambda(x):
            sin_1 = np.sin(x)
            multiply_2 = np.multiply(sin_1, 2.0, out=sin_1)
            sum_3 = np.add.reduce(multiply_2, axis=None)
            return sum_3
        <BLANKLINE>
        """
        if not args and not kwargs and not _takes_nothing(self._f):
            raise TypeError(
                f"pullback: {self._fname}.source(*args, **kwargs) shows the program that a "
                f"call with these arguments runs, and was given none: pass the arguments "
                f"you call it with, as step.source(x) for step(x)")
        program = self._run(args, kwargs)[1]
        if program is None:
            raise RuntimeError(
                f"pullback: {self._fname} ran eagerly for these arguments (past "
                f"{MAX_TRACES} traces, or with tracked arguments), so there is no source"
            )
        return program.source

    def _run(self, args, kwargs):
        sig: list[Any] = []
        inputs: list[Any] = []
        tracked = _signature(args, sig, inputs)
        if kwargs:
            tracked = _signature(kwargs, sig, inputs) or tracked
        if self._captured:
            captured = [c.get() for c in self._captured]
            sig.append(tuple(_leaf_key(x) for x in captured))
            inputs += [x for x in captured if isinstance(x, np.ndarray)]
        if len(inputs) > 1 and len(set(map(id, inputs))) < len(inputs):
            # the same array twice (f(x, x)): one traced value in the program, as x is x
            first: dict[int, int] = {}
            sig.append((_BY_ID, tuple(first.setdefault(id(a), i) for i, a in enumerate(
                inputs))))
        try:
            key = tuple(sig)
            hash(key)
        except TypeError:
            other = next((type(x) for x in tree_flatten((args, kwargs))[0]
                          if is_foreign(x) or is_lazy(x)), None)
            if other is not None:
                raise TypeError(
                    f"pullback: pb.jit({self._fname}) got a {other.__module__}."
                    f"{other.__name__}: pb.jit records NumPy programs. Call the function "
                    "without pb.jit on such arrays (the transforms build that library's "
                    "own graph), or pass NumPy arrays"
                ) from None
            raise TypeError(
                f"pullback: pb.jit({self._fname}) got an argument that is neither an array "
                "nor hashable; pass arrays, numbers, strings and pytrees of them"
            ) from None
        if tracked:  # inside a trace or a transform
            return self._f(*args, **kwargs), None
        programs = self._programs.get(key)
        if programs is not None:
            i = 0
            while i < len(programs):
                program = programs[i]
                if program is _EAGER:
                    return self._f(*args, **kwargs), None
                if program.check is not None and self._stale(program):
                    del programs[i]  # its constants are not the arrays' values any more
                    continue
                if program.other_errstate():
                    i += 1
                    continue
                try:
                    out = program.run(*inputs)
                except Exception:  # a path the trace did not take (the except branch of
                    return self._f(*args, **kwargs), None  # an np.linalg.solve): eager's
                if out is not RETRACE:
                    return out, program
                i += 1
        if self.traces >= MAX_TRACES:
            if not self._warned:
                self._warned = True
                changed = (f", or {self._changed}, an array or a number it reads through an "
                           "attribute, a container, a closure or a global, changed since the "
                           "trace (pass it as an argument)") if self._changed else ""
                warnings.warn(
                    f"pullback: pb.jit({self._fname}) traced {MAX_TRACES} times (new shapes, "
                    f"or Python decisions on values that keep changing{changed}); further "
                    "new cases run eagerly. Make such values static (Python numbers) or keep "
                    "the decision in NumPy (np.where).", RuntimeWarning, stacklevel=3)
            return self._f(*args, **kwargs), None
        self.traces += 1
        try:
            program = self._trace(args, kwargs)
        except _Rescanned:
            self.traces -= 1
            return self._run(args, kwargs)
        except _Untraceable as why:
            warnings.warn(
                f"pullback: pb.jit({self._fname}) cannot record this call ({why}); calls "
                f"with these shapes run eagerly. {why.advice}", RuntimeWarning,
                stacklevel=3)
            self._programs[key] = [_EAGER]
            return self._f(*args, **kwargs), None
        # the first result is the program's too: the same fresh arrays as every replay
        try:
            out = program.run(*inputs)
        except Exception:
            out = RETRACE
        if out is RETRACE:  # not replayable even on the arguments it was traced on
            warnings.warn(
                f"pullback: pb.jit({self._fname}) recorded a program that does not replay "
                "its own arguments (a decision on state other than them, or a library that "
                "reads arrays outside NumPy's protocols); calls with these shapes run "
                "eagerly", RuntimeWarning, stacklevel=3)
            self._programs[key] = [_EAGER]
            return self._f(*args, **kwargs), None
        self._programs.setdefault(key, []).append(program)
        return out, program

    def _stale(self, program):
        """Whether the state a program watches changed since its trace (its check)."""
        i = program.check()
        if i == -2:  # (reading a place raised: each entry says whether it changed)
            i = next((k for k, w in enumerate(program.watched) if w.changed()), -1)
        if i < 0:
            return False
        self._changed = program.watched[i].label
        return True

    def _trace(self, args, kwargs):
        trace = _Trace()
        rescan = _scan(self._f)  # (globals defined after pb.jit(f), cells filled since)
        again = [(id(c.root), c.steps) for c in rescan[0]] != [
            (id(c.root), c.steps) for c in self._captured]
        self._captured, self._generators, self._roots, self._scanned, seen_all = rescan
        if again:  # other captured arrays: the key and the inputs change
            self._programs.clear()
            raise _Rescanned
        flat, treedef = tree_flatten((args, kwargs))
        names = _names(self._f, args, kwargs)
        slots = _leaf_names(names, args, kwargs)
        params, boxed, roots = [], [], list(self._roots)
        boxes: dict[int, Traced] = {}  # the same array twice: one box (the key says so)
        for x, name in zip(flat, slots):
            if isinstance(x, _TRACED):
                box = boxes.setdefault(id(x), Traced(x, trace.level))
                params.append((name, box))
                boxed.append(box)
            else:
                boxed.append(x)
                if not isinstance(x, _OPAQUE):  # an object: its arrays are constants
                    roots.append((name, x, (), True, None))
        targs, tkwargs = tree_unflatten(treedef, boxed)
        swapped: list[tuple[_Captured, Any, Traced]] = []
        watched: list[_Watched] = []
        _traces[trace.level] = trace
        activate()  # NumPy's stand-ins in place while the trace runs
        try:
            for c in self._captured:
                v = c.get()
                if isinstance(v, np.ndarray):
                    box = boxes.setdefault(id(v), Traced(v, trace.level))
                    params.append((c.name, box))
                    c.set(box)
                    swapped.append((c, v, box))
            watched, generators, complete = _reach(roots, self._scanned)
            for w in watched:  # (a write into one of these is seen by _restore)
                if type(w) is _Watched:
                    trace.constants[id(w.array)] = None
            generators += self._generators
            before = _random_state(generators)
            raising = _raising[0]
            with _counting(), _reading() as read:
                out = self._f(*targs, **tkwargs)
        except _Untraceable:
            _restore(watched)
            _restore_handed(trace)
            raise
        finally:
            rebound = ""
            for c, v, box in reversed(swapped):
                if c.get() is not box:
                    rebound = c.name
                with contextlib.suppress(LookupError, AttributeError, TypeError, ValueError):
                    c.set(v)
            del _traces[trace.level]
            deactivate()
        if _restore_handed(trace):
            _restore(watched)
            raise _Untraceable(
                "it writes through np.asarray(x) or x.__array__() of a traced array, which "
                "is x's own memory, as in NumPy", "Write the update out of place "
                "(v = x + 1.0 for v = np.asarray(x); v += 1.0) to jit it.")
        if _random_state(generators) != before:
            _restore(watched)
            raise TypeError(
                f"pullback: {self._fname} draws random numbers (np.random, Python's random, "
                "a Generator it reaches or is passed, or one it makes from fresh entropy "
                "with np.random.default_rng()), which pb.jit would replay as the same draw "
                "on every call. Draw them outside and pass them as arguments: "
                "pb.jit(f)(x, noise) with noise = rng.normal(...)"
            )
        changed = _restore(watched)
        if changed or rebound:
            raise _Untraceable(
                f"it changes {changed or rebound}, a value it reads from outside its "
                "arguments", "Pass what changes as an argument and return its new value "
                "to jit it.")
        if _raising[0] != raising:
            raise _Untraceable(
                "it sets a warnings filter to raise, so a NumPy warning takes another path",
                "Catch the condition with NumPy (np.isfinite, np.errstate) to jit it.")
        if _written(trace):
            raise _Untraceable(
                "it writes into an array after a NumPy call took it (the program would "
                "replay the call on the array's last values)", "Make a new array for "
                "each use (np.zeros(3) inside the loop, or w = w * 3) to jit it.")
        if read.names is not None:  # watched from now on: what the code can have read
            watched, _, complete = _reach(roots, self._scanned, read)
        if not (complete and seen_all) and not self._warned_reach:
            self._warned_reach = True
            warnings.warn(
                f"pullback: pb.jit({self._fname}) reaches more containers, attributes and "
                f"functions than it looks into ({_REACH_VALUES} values, {_REACH_DEPTH} deep; "
                f"calls {_SCAN_DEPTH} deep), so a change to the state beyond them between "
                "calls is not seen; pass the arrays that change as arguments",
                RuntimeWarning, stacklevel=3)
        outs, out_def = tree_flatten(out)
        for o in outs:
            if isinstance(o, Tracked) and not isinstance(o, Traced):
                raise TypeError(
                    f"pullback: pb.jit({self._fname}) returned a tracked value (of pb.param "
                    "or of a transform around pb.jit); jit functions of plain arrays, such as "
                    "pb.grad(f) or pb.gradient(...) of a closure, that return plain results"
                )
            if not isinstance(o, (Traced, *_SCALARS, str, type(None))):
                raise TypeError(
                    f"pullback: pb.jit({self._fname}) returned a {type(o).__name__}; return "
                    "arrays, numbers and tuples, lists and dicts of them"
                )
        name = self._fname
        used = {n for n, _ in params}
        while name in used:
            name = f"_{name}"
        source, run, keep = emit(name, trace, params, outs, out_def)
        return _Compiled(source, run, keep, tuple(watched), trace.errors, trace.token)


def _written(trace):
    """Whether a constant of the trace's calls was written into after a call took it; the
    trace lets go of them (what only the trace holds is private: passes.py)."""
    written = any(_bits_changed(*c) for c in trace.constants.values() if c is not None)
    trace.constants.clear()
    return written


def _restore_handed(trace):
    """Whether an array ``__array__`` handed out as it is was written through during the
    trace; each is put back as it was (the call runs eagerly, and writes it once)."""
    changed = [(a, data) for a, data in trace.handed.values() if _bits_changed(a, data)]
    trace.handed.clear()
    for a, data in changed:
        with contextlib.suppress(ValueError):  # (one made read-only since: left)
            _put_back(a, data)
    return bool(changed)


def _leaf_names(names, args, kwargs):
    """A name for every leaf of ``(args, kwargs)``: the parameter's, numbered in pytrees."""
    out = []
    for name, value in zip(names, list(args) + list(kwargs.values())):
        flat, _ = tree_flatten(value)
        if len(flat) == 1 and not isinstance(value, (tuple, list, dict)):
            out.append(name)
        else:
            out.extend(f"{name}_{i}" for i in range(len(flat)))
    return out


def jit(f: Callable[..., Any]) -> Jitted:
    """``f`` recorded once per input structure and replayed as generated NumPy code.

    The first call with a new structure (pytree structure, shapes and dtypes of the array
    arguments, values of the other arguments) runs ``f`` with its arrays traced and
    compiles what it did into Python source; later calls run that source. ``f`` may be any
    transform: ``pb.jit(pb.value_and_grad(loss))`` records the forward and backward pass
    as one program. Python decisions on traced values (``if np.sum(x) > 0``, ``float(x)``,
    ``.item()``) become guards: a failed guard traces the new path (up to ``MAX_TRACES``
    traces, then further cases run eagerly with a warning). ``step.source(*args)`` shows
    the program.

    >>> step = pb.jit(pb.value_and_grad(lambda x: np.sum(x ** 2)))
    >>> step(np.array([1.0, 2.0]))
    (np.float64(5.0), array([2., 4.]))
    >>> step(np.array([3.0, 0.5]))
    (np.float64(9.25), array([6., 1.]))
    """
    return Jitted(f)
