"""The mutation guard: while a recorded graph still needs a plain array (a constant a node
saved, a ``param``'s value, an argument of ``vjp``), the array is read-only, so a write
into it raises NumPy's ``ValueError: assignment destination is read-only`` at the line
that writes, instead of a backward pass that silently uses the new values.

A node of the Tracker's graphs holds its arrays through one ``Hold`` (the node's ``hold``
slot); the nodes of a transform's level (grad, vjp, jacobian ...) share one ``Hold``, owned
by the level's ``Linearized``, which lives exactly as long as that graph can be pulled
back through. Holds are counted per array: the array becomes writeable again when the last
holder is released, by a backward pass that frees the graph or by the graph being dropped
(an exception, a KeyboardInterrupt, a graph nobody calls backward on). Arrays that were
read-only already are left alone. ``held_by`` says what holds an array, for the message.
Nothing is held that no derivative reads: np.add's and np.subtract's arrays stay free.
A write into a held array inside a differentiated function fails with NumPy's words, which
``refused_write`` puts after pullback's: the array by its name, what holds it, the fix.
It sits below the engine, beside the rule table.
"""

import linecache
import os
import re
import threading
from typing import Any

import numpy as np

from .refusals import refuse_subclass
from .registry import name_of

_lock = threading.RLock()  # a Hold freed by the GC inside a locked block releases too
_NOT_BOXES = frozenset({float, int, complex, bool, str, slice, type(None), tuple, list, dict,
                        np.float64, np.float32, np.int64, np.bool_, np.complex128})
_held: dict[int, list] = {}  # id(array) -> [array, number of holds, what holds it]


def _take(a, what, mine):
    """One more hold on ``a`` (and its base: a view is written through its base as well),
    appending what it made read-only or counted to ``mine``. Called under the lock."""
    base = a.base
    for arr in (a,) if base.__class__ is not np.ndarray else (base, a):
        entry = _held.get(id(arr))
        if entry is not None:
            entry[1] += 1
        elif arr.flags.writeable:
            _held[id(arr)] = [arr, 1, what]
            arr.setflags(write=False)
        else:
            continue  # read-only already, by someone else
        mine.append(arr)


class Hold:
    """Arrays made read-only for as long as this object lives: one node's, or (for the
    level of a transform) every array any node of that level needs, each counted once."""

    __slots__ = ("arrays", "seen")

    def __init__(self, arrays=(), what=None):
        self.arrays = []
        if not arrays:  # a level's: arrays are added as its nodes are recorded
            self.seen = {}  # id -> array: kept alive, so that no other array takes its id
            return
        self.seen = None  # a node's: one hold per mention (W * W holds W twice)
        with _lock:
            for a in arrays:
                _take(a, what, self.arrays)

    def add(self, arrays, what):
        seen, mine = self.seen, self.arrays
        with _lock:
            for a in arrays:
                key = id(a)
                if key in seen:
                    continue
                seen[key] = a
                base = a.base
                if base is None and key not in _held and a.flags.writeable:  # (_take's
                    _held[key] = [a, 1, what]  # common case: an array of its own, held now)
                    a.setflags(write=False)
                    mine.append(a)
                    continue
                _take(a, what, mine)
                if base.__class__ is np.ndarray:  # held too: its read-only views are
                    seen[id(base)] = base          # (hold, below)

    def __del__(self):
        release(self.arrays)


# the Hold of each live transform level (its graph lives as long as its Linearized)
level_holds: dict[int, Hold] = {}


def release(arrays):
    """Drop one hold on each of ``arrays``; the last hold makes an array writeable again
    (a base before its views: a view can be writeable only over a writeable base)."""
    with _lock:
        for arr in arrays:
            entry = _held.get(id(arr))
            if entry is None:
                continue
            entry[1] -= 1
            if entry[1] == 0:
                del _held[id(arr)]
                try:
                    arr.setflags(write=True)
                except ValueError:  # its base is held by another node still
                    pass
    arrays.clear()


def hold(node, args, what):
    """Make the plain arrays among ``args`` read-only while ``node``'s graph lives:
    constants, and the values of inputs (leaves). A node of a transform's level adds them
    to the level's Hold (each array once); any other node gets its own."""
    # add's and subtract's derivatives read no value (at any order): their arrays stay free
    free = what.reads_no_value
    level = level_holds.get(node.level)
    seen = None if level is None else level.seen
    arrays = None
    for a in args:
        c = a.__class__
        if c is not np.ndarray:
            if c in _NOT_BOXES:
                continue
            if isinstance(a, np.ndarray):  # a subclass: a memmap is held as an ndarray is
                if isinstance(a, (np.matrix, np.ma.MaskedArray)):
                    refuse_subclass(getattr(what, "func", what), a)
            elif getattr(a, "rule", 0) is not None:  # a tracked input (rule None) holds
                continue                               # its value
            else:
                a = getattr(a, "value", None)
                if a.__class__ is not np.ndarray:
                    continue
        if free:
            continue
        if seen is not None and (id(a) in seen or a.base is not None and id(a.base) in seen
                                 and not a.flags.writeable):
            continue  # held by the level already, or a read-only view of what it holds
        if arrays is None:
            arrays = [a]
        else:
            arrays.append(a)
    if arrays is not None:
        if level is None:
            node.hold = Hold(arrays, what)
        else:
            level.add(arrays, what)


def read_only(v: Any, computed: bool) -> Any:
    """The array ``v`` of a tracked value as a call inside ``pb.no_grad()`` gets it:
    read-only where a node ``computed`` it (a pullback may have saved it, and np.copyto(h,
    0) would change the gradient of what was computed from h before); a param's (a leaf's)
    stays writeable, for an optimizer's step."""
    if computed and v.__class__ is np.ndarray and v.flags.writeable:
        v = v.view()
        v.setflags(write=False)
    return v


def held_by(a: Any) -> str | None:
    """What holds ``a`` read-only: a description, or None if pullback does not.

    >>> x = np.ones(2); out, vjp_fn = pb.vjp(np.sin, x)
    >>> pb.held_by(x)
    'argument 0 of sin, recorded by a gradient computation that is still alive'
    >>> del out, vjp_fn; print(pb.held_by(x), x.flags.writeable)
    None True
    """
    entry = _held.get(id(a))
    if entry is None or entry[0] is not a:
        return None
    what = entry[2]  # a rule (a table row names its function), or a description
    func = getattr(what, "func", None)
    name = what if isinstance(what, str) else name_of(func) if func is not None else (
        getattr(what, "__qualname__", repr(what)))
    return f"{name}, recorded by a gradient computation that is still alive"


def is_held(a: Any) -> bool:
    """Whether the guard holds ``a`` read-only now."""
    entry = _held.get(id(a))
    return entry is not None and entry[0] is a


def _holder(a: Any) -> Any:
    """``a``, or the base through which the guard holds it, if the guard holds either."""
    for arr in (a, a.base):
        if arr.__class__ is np.ndarray and is_held(arr):
            return arr
    return None


def refused_write(error: BaseException) -> BaseException | None:
    """pullback's words for NumPy's "assignment destination is read-only" (or "output array
    is read-only") raised by a write into an array the guard holds, inside a function being
    differentiated: which array (by its name at the line that wrote), what holds it, and the
    fix. None for any other error."""
    if type(error) is not ValueError or "read-only" not in str(error) or str(
            error).startswith("pullback:"):
        return None
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    frame = tb.tb_frame
    line = linecache.getline(frame.f_code.co_filename, tb.tb_lineno).strip()
    target = re.split(r"(?<![=!<>])=(?!=)", line)[0] if "=" in line else line
    held = [(name, v) for name, v in frame.f_locals.items()
            if isinstance(v, np.ndarray) and _holder(v) is not None]
    if not held:
        return None
    # the array the line writes into: a name on the left of its '=', else one it mentions
    name, a = next((h for h in held if re.search(rf"\b{re.escape(h[0])}\b", target)), held[0])
    where = f"{os.path.basename(frame.f_code.co_filename)}:{tb.tb_lineno}"
    if "-packages" + os.sep in frame.f_code.co_filename:  # a library's code: its call
        return ValueError(
            f"pullback: {frame.f_globals.get('__name__', '?')}.{frame.f_code.co_name} "
            f"({where}) writes into {name} (an array of shape {a.shape}), which the "
            f"computation used before and still needs (held for {held_by(_holder(a))}): a "
            "library's function that changes an array after using it cannot be followed. "
            "Give that function a rule (pb.primitive and pb.rrule), or call it with plain "
            f"values (pb.stop_gradient(x)) where no gradient should flow. (NumPy: {error})")
    return ValueError(
        f"pullback: {where} writes into {name} (an array of shape {a.shape}), which is "
        f"read-only while a gradient computation needs its values (held for "
        f"{held_by(_holder(a))}). A buffer that collects tracked values must be tracked "
        f"itself: create it from a tracked value (np.zeros_like(x), np.zeros(shape) + 0 * "
        f"x[0]) or build the result out of place (np.stack of the rows); to change a "
        f"constant the computation used, write into a copy ({name} = {name}.copy()) first. "
        f"pb.held_by({name}) says what holds an array. (NumPy: {error})")
