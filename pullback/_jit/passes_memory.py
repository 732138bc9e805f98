"""The passes over a ``Program`` (program.py) that spend less memory, each exact: an
``astype`` to the dtype an array has dropped where the copy is the array, an elementwise
result written into an operand that dies there, and big arrays let go after their last use."""

from __future__ import annotations

import numpy as np

from .._engine.core import Tracked
from .._engine.interception import original_of
from .._engine.registry import getitem
from .bits import _same_bits
from .passes import _fresh
from .program import Program, _astype, _leaves


def drop_copies(program: Program) -> None:
    """``astype`` to the dtype an array has already copies it; where nothing else sees
    the array (it is new, and used by the ``astype`` alone), the copy is the array: added
    to ``program.subst``."""
    boxes = program.live()
    canon, call_of = program.canon, program.call_of
    users: dict[int, int] = {}
    for e in boxes:
        for a in _leaves(call_of(e)[1:], []):
            users[id(canon(a))] = users.get(id(canon(a)), 0) + 1
    for o in program.outs:
        if isinstance(o, Tracked):
            users[id(canon(o))] = users.get(id(canon(o)), 0) + 1

    def owned(x, depth=0):
        if not isinstance(x, Tracked) or x.args is None or depth > 8:
            return False
        func, args, _ = call_of(x)
        if _fresh(call_of(x)):
            return True
        view = (func is getitem or original_of(func) in (
            original_of(np.reshape), original_of(np.transpose), original_of(np.swapaxes)))
        first = canon(args[0]) if args else None
        return view and users.get(id(first), 0) == 1 and owned(first, depth + 1)

    drops: dict[int, Tracked] = {}
    for e in boxes:
        func, args, kwargs = call_of(e)
        if func is not _astype or kwargs:
            continue
        x = canon(args[0])
        if (isinstance(x, Tracked) and isinstance(x.value, (np.ndarray, np.generic))
                and np.dtype(args[1]) == x.value.dtype and users.get(id(x), 0) == 1
                and owned(x) and _same_bits(x.value, e.value)):
            drops[id(e)] = x
    program.subst.update(drops)


def reuse_dead(program: Program, boxes: list[Tracked]) -> None:
    """For elementwise ufunc calls among ``boxes`` (the live nodes), an operand that dies
    there, to write the result into (``out=``, cheaper than a new array at every size):
    ``program.into``. A new array of the same shape and dtype that nothing else sees (no
    view of it, not returned, no guard on it), as a hand-written ``dz *= 1 - h * h`` does.
    The ufunc's values are the same with ``out=`` an input (NumPy reads each element
    before it writes it, and copies where the memory overlaps otherwise)."""
    canon, call_of = program.canon, program.call_of
    guarded = {id(canon(e[0])) for e in program.guards()}
    last: dict[int, int] = {}
    viewed: set[int] = set()
    for i, e in enumerate(boxes):
        fresh = _fresh(call_of(e))
        for a in _leaves(call_of(e)[1:], []):
            a = canon(a)
            last[id(a)] = i
            if not fresh:
                viewed.add(id(a))
    for o in program.outs:
        if isinstance(o, Tracked):
            viewed.add(id(canon(o)))
    taken: set[int] = set()
    for i, e in enumerate(boxes):
        func, args, kwargs = call_of(e)
        value = e.value
        if (not isinstance(func, np.ufunc) or func.signature is not None or func.nout != 1
                or kwargs or type(value) is not np.ndarray):
            continue
        for a in args:
            a = canon(a)
            if (isinstance(a, Tracked) and a.args is not None and id(a) not in taken
                    and id(a) not in viewed and id(a) not in guarded and last.get(id(a)) == i
                    and _fresh(call_of(a)) and type(a.value) is np.ndarray
                    and a.value.shape == value.shape and a.value.dtype == value.dtype):
                taken.add(id(a))
                program.into[id(e)] = a
                break


FREE_SIZE = 1 << 15  # elements: arrays this big are let go after their last use


def free_after(program: Program, boxes: list[Tracked]) -> None:
    """The big arrays among ``boxes`` (the live nodes) let go after their last use, for
    the allocator to hand out again: ``program.free``, by the position of that event."""
    canon = program.canon
    needed = {id(b) for b in boxes}
    last: dict[int, int] = {}
    for i, e in enumerate(program.events):
        if not isinstance(e, Tracked):
            last[id(canon(e[0]))] = i
        elif id(e) in needed:
            for a in program.operands(program.call_of(e)):
                last[id(a)] = i
    kept = {id(canon(o)) for o in program.outs} | {id(b) for _, b in program.params}
    for b in boxes:
        if (id(b) not in kept and type(b.value) is np.ndarray
                and b.value.size >= FREE_SIZE and id(b) in last):
            program.free.setdefault(last[id(b)], []).append(b)
