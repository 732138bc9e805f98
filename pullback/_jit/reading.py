"""What the code run in a trace does besides its NumPy calls, watched for the length of
the trace: the attribute names it can read (``_reading``: what watch.py follows), the
random state it draws from and the fresh seeds it draws (``_random_state``, ``_counting``:
a draw is refused, as a replay would repeat it), and the warnings filters it sets to
raise (a path a replay would not take)."""

from __future__ import annotations

import builtins
import contextlib
import random
import sys
import threading
import types
import warnings
from typing import Any

import numpy as np

from .._engine.interception import replace_attributes, restore_attributes, stand_in
from .scan import _library


def _random_state(generators):
    """What a draw changes: NumPy's global state, Python's ``random`` module's, that of the
    generators reached, and the count of fresh seeds drawn (``np.random.default_rng()``
    made inside the function)."""
    legacy = np.random.get_state(legacy=False)
    states = [legacy["state"]["pos"], legacy["state"]["key"].tobytes(), legacy["has_gauss"],
              random.getstate(), _entropy[0]]
    for g in generators:
        if isinstance(g, random.Random):
            states.append(g.getstate())
            continue
        bits = g.bit_generator if isinstance(g, np.random.Generator) else getattr(
            g, "_bit_generator", g)
        states.append(repr(bits.state))
    return states


# what makes the attributes a function reads unknowable from the names in its code
_DYNAMIC = frozenset({"__dict__", "vars", "__getattribute__", "dir"})


class _Reading:
    """The attribute names the code run inside ``_reading`` can read: ``names``, or None
    where they cannot be known."""

    def __init__(self):
        self.codes: dict[types.CodeType, str] = {}
        self.asked: set[Any] = set()
        self.names: set[str] | None = None
        self.compiled = False  # (a call into another library's compiled code)


_active: list[_Reading] = []  # the traces reading now, in any thread
_builtins: list[Any] = []  # builtins' getattr and hasattr while they are wrapped
_saved: dict[str, Any] = {}  # what replace_attributes took out of builtins
_active_lock = threading.Lock()


def _asking_getattr(obj, name, *default):  # builtins.getattr while a trace reads
    if type(name) is str:  # (another type: getattr's own TypeError)
        for reading in tuple(_active):
            reading.asked.add(name)
    return _builtins[0](obj, name, *default)


def _asking_hasattr(obj, name):
    if type(name) is str:
        for reading in tuple(_active):
            reading.asked.add(name)
    return _builtins[1](obj, name)


def _ask(reading, start):
    """Add ``reading`` to the traces told of the names given to getattr and hasattr
    (``start``), or take it off; the first puts the wrappers in builtins, the last puts
    builtins' own back."""
    with _active_lock:
        if start:
            if not _active:  # (stand-ins: equal to builtins' own, with their docs)
                _builtins[:] = [builtins.getattr, builtins.hasattr]
                _saved.update(replace_attributes(builtins, {
                    "getattr": stand_in(_builtins[0], _asking_getattr),
                    "hasattr": stand_in(_builtins[1], _asking_hasattr)}))
            _active.append(reading)
            return
        _active.remove(reading)
        if not _active:
            restore_attributes(builtins, _saved)
            _saved.clear()
            _builtins.clear()


@contextlib.contextmanager
def _reading():
    """For the length of one trace, the names of the attributes its code can read: those
    in the code of every function that runs (its names and string constants, as
    ``getattr(self, "offset", 0)`` has it) and those given to ``getattr`` and ``hasattr``
    (made at run time). The functions that run are seen by ``sys.setprofile``, which calls
    on to a profile function set before; where one set in C (cProfile) is there, or the
    user's code reads ``__dict__`` or ``vars()``, or calls another library's compiled
    functions (Cython's), the names are None: anything."""
    reading = _Reading()
    previous = sys.getprofile()
    if previous is not None and not callable(previous):
        yield reading
        return
    codes = reading.codes

    def profile(frame, event, arg):
        if event == "call":
            codes[frame.f_code] = frame.f_globals.get("__name__", "")
        elif event == "c_call" and not reading.compiled:  # another library's compiled
            module = getattr(arg, "__module__", None)  # function (Cython's), whose
            reading.compiled = type(module) is str and not _library(module)  # reads no
            # code object shows (a builtin method has no module)
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(profile)
    _ask(reading, True)
    try:
        yield reading
    finally:
        _ask(reading, False)
        sys.setprofile(previous)
    if reading.compiled:
        return  # (names: None)
    names = set(reading.asked)
    for code, module in codes.items():
        if not _library(module) and not _DYNAMIC.isdisjoint(code.co_names):
            return  # (names: None)
        names.update(code.co_names)
        for c in code.co_consts:  # (operator.attrgetter("link.inverse"): each part)
            if type(c) is str:
                names.update(c.split(".") if "." in c else (c,))
    reading.names = names


_entropy = [0]  # the fresh seeds drawn in traces (NumPy's SeedSequence() without entropy)
_raising = [0]  # the warnings filters set to "error" in traces


@contextlib.contextmanager
def _counting():
    """For the length of one trace, count the fresh seeds NumPy draws (a generator the
    function makes from fresh entropy, ``np.random.default_rng()``, draws one) and the
    warnings filters set to raise (a function that sets one to catch a RuntimeWarning takes
    another path where a replay would warn): NumPy's ``randbits`` and ``warnings``'
    ``_add_filter`` are wrapped, and put back after."""
    bit_generator = np.random.bit_generator
    draw, add = getattr(bit_generator, "randbits", None), getattr(warnings, "_add_filter", None)

    def randbits(k):
        _entropy[0] += 1
        return draw(k)

    def _add_filter(*item, append):
        if item and item[0] == "error":
            _raising[0] += 1
        return add(*item, append=append)

    saved_draw = saved_add = {}
    try:
        if draw is not None:
            saved_draw = replace_attributes(bit_generator, {"randbits": randbits})
        if add is not None:
            saved_add = replace_attributes(warnings, {"_add_filter": _add_filter})
        yield
    finally:
        restore_attributes(bit_generator, saved_draw)
        restore_attributes(warnings, saved_add)

