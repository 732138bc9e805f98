"""Writes into tracked arrays: ``x[index] = v``, the in-place operators (``x += v``),
``out=x`` and a ufunc's ``where=``, each recorded as a functional update (``index_update``,
``ufunc_where``, whose rules are in rules/numpy/writes.py).

A write makes a new node, ``index_update(old, index, v)``; since Python keeps the name
``x`` bound to the same object, that object takes the new node's contents (its value,
rule, arguments and a new, larger ``seq``) and its old contents move into a fresh node,
``old``, which the update refers to as its first argument. Nodes recorded before the write
still refer to the object; the backward pass sends their cotangents to the version they
were recorded with (the one found by following first arguments back while ``seq`` is
later than the node's own).

A write into a *view* of another tracked value (``v = y[1:]``, ``y.T``, ``y.reshape``)
goes through to that value, as NumPy's does, and the view then reads it again. A view
taken *before* a write into its base reads the base again too, as NumPy's does: the engine
tells ``note_view`` of every node whose value is a NumPy view, and a write into the base
makes each live view of the same memory a ``reread`` of the new base (nodes recorded
earlier keep the view's version they were computed from).
"""

import functools
import numbers
import weakref

import numpy as np

from .backend import is_foreign, on_backend
from .core import Tracked, _seq, live_levels, note_write, plain, state
from .guard import is_held
from .methods import memory, shape_of
from .methods import owner as _owner
from .register import primitive
from .registry import name_of
from .registry import rules as _rows

# ---------------------------------------------------------------------------- the updates

@primitive
def index_update(x, index, v):
    """A copy of ``x`` with ``v`` written at ``index``: NumPy's ``x[index] = v`` (``v``
    broadcast, cast to ``x``'s dtype) without the update in place. It is what
    ``x[index] = v`` records on a tracked ``x``.

    >>> index_update(np.zeros(3), [0, 2], 5.0)
    array([5., 0., 5.])
    """
    # another library's copy method: Dask has no np.copy (it would compute x)
    out = x.copy() if is_foreign(x) else np.array(x, copy=True)
    out[index] = v
    return out


@primitive
def reread(old, base, geometry):
    """The view of ``base``'s memory with ``geometry`` ``(offset, shape, strides, axes)``:
    what a view of ``base`` holds after a write into ``base``. ``old`` is the view's
    previous version (only recorded, never read)."""
    offset, shape, strides, axes = geometry
    axes = _axes(axes, len(shape_of(base)))
    if is_foreign(base):  # another library's array, laid out as its shape says
        return base[view_positions(shape_of(base), geometry, np.dtype(base.dtype).itemsize)]
    b = np.asarray(base)
    if _layout(b) == axes:  # (the axes in memory order: a C-contiguous view of the memory)
        return np.ndarray(shape, b.dtype, buffer=b.transpose(axes), offset=offset,
                          strides=strides)
    return b[view_positions(b.shape, geometry, b.itemsize)]  # the base was laid out anew


def view_positions(base_shape, geometry, itemsize):
    """Where each element of the view with ``geometry`` lies in ``base``: a tuple index."""
    offset, shape, strides, axes = geometry
    axes = _axes(axes, len(base_shape))
    flat = np.full(shape, offset // itemsize, dtype=np.intp)
    for axis, (n, s) in enumerate(zip(shape, strides)):
        step = np.arange(n, dtype=np.intp) * (s // itemsize)
        flat = flat + step.reshape((n,) + (1,) * (len(shape) - axis - 1))
    where = np.unravel_index(flat, tuple(base_shape[k] for k in axes))
    return tuple(where[axes.index(k)] for k in range(len(base_shape)))


def _axes(order, ndim):
    """A geometry's axes in memory order; 'C' or 'F' (strided.py's) for the two usual."""
    if order == "C":
        return tuple(range(ndim))
    return tuple(range(ndim))[::-1] if order == "F" else order


def _layout(a):
    """The axes of ``a`` from the slowest to the fastest in memory when its elements fill
    its memory densely (C order: 0, 1, ...; Fortran order: the reverse; np.stack of
    Fortran-ordered arrays: another permutation), else None."""
    n = a.ndim
    if a.flags.c_contiguous:
        return tuple(range(n))
    if a.flags.f_contiguous:
        return tuple(range(n))[::-1]
    axes = tuple(sorted(range(n), key=lambda k: -a.strides[k]))
    if min(a.strides) > 0 and a.transpose(axes).flags.c_contiguous:
        return axes
    return None



@primitive
def ufunc_where(ufunc, mask, fill, *inputs):
    """``ufunc(*inputs)`` where ``mask`` holds and ``fill`` (zeros for None) elsewhere:
    NumPy's ``ufunc(*inputs, out=fill, where=mask)`` without the update in place (entries
    left out are not computed, so they raise no warning)."""
    like = next((a for a in inputs if hasattr(a, "dtype")), inputs[0])
    mask = on_backend(mask, like)
    if any(is_foreign(a) for a in (mask, fill, *inputs)):  # Dask and CuPy have no where=
        with np.errstate(all="ignore"):
            return np.where(mask, ufunc(*inputs), 0 if fill is None else fill)
    shape = np.broadcast_shapes(np.shape(mask), *(np.shape(a) for a in inputs))
    if fill is None:
        with np.errstate(all="ignore"):  # (the result's dtype, from one element of each)
            dtype = np.result_type(ufunc(*(np.zeros((), np.result_type(a)) for a in inputs)))
        out = np.zeros(shape, dtype)
    else:
        out = np.array(np.broadcast_to(fill, shape), copy=True)
    ufunc(*inputs, out=out, where=mask)
    return out



# ---------------------------------------------------------------------------- writing

def _check_index(index):
    if isinstance(index, Tracked) or type(index) is tuple and any(
            isinstance(i, Tracked) for i in index):
        raise TypeError(
            "pullback: an index must be a plain integer, slice or array, not a tracked "
            "value; build indices from plain values (np.argmax(x) is plain already)"
        )


def _moved(x):
    """A fresh node holding ``x``'s contents (same ``seq``): its version before a write."""
    old = Tracked.__new__(Tracked)
    old.value, old.level, old.seq, old.args, old.rule = x.value, x.level, x.seq, x.args, x.rule
    return old


def _become(x, new, old=None):
    """``x`` takes the contents of the just-recorded ``new``, with ``x``'s previous
    version (``old``, when the caller moved it already) in every place ``new`` refers to
    ``x`` or to ``old``: one node per version, which the backward pass orders by ``seq``."""
    if old is None:
        old = _moved(x)
    args = new.args
    if type(args) is tuple:
        args = tuple(old if a is x else a for a in args)
    x.value, x.level, x.seq, x.args, x.rule = new.value, new.level, new.seq, args, new.rule
    note_write()


def version_at(a, seq):
    """The version of ``a`` (a tracked value, or a list or tuple of them) that a node
    recorded at ``seq`` was computed from: a write moves a value's earlier contents into
    its first argument (``_become``)."""
    if isinstance(a, Tracked):
        while a.seq > seq:
            a = a.args[0]
    elif type(a) is list or type(a) is tuple:
        return type(a)(version_at(b, seq) for b in a)
    return a


def base_and_geometry(x):
    """``(base, geometry)``: the tracked value ``x`` is a NumPy view of (looking through
    views of views), and where ``x`` lies in its memory; None when ``x`` owns its values."""
    xv = memory(x)  # (under pb.jit, the traced values' arrays)
    if not isinstance(xv, np.ndarray):
        return None
    owner, found, a = _owner(xv), None, x  # (the owner is xv itself for np.atleast_1d(y))
    while True:
        if a.rule is not None and a.rule.index is not None:  # one of several outputs
            a = a.args[0]  # (np.split's): its hub's input
        if type(a.args) is not tuple:
            break
        # the argument whose memory this is (the first, but np.einsum's is its second, and
        # np.atleast_1d(y, x)'s second output is x): a pullback may name it (``view_of``:
        # a reread's base is its second argument)
        k = getattr(a.rule, "view_of", None)  # (a pb.jit trace's node has no record)
        bases = a.args if k is None else (a.args[k],)
        for b in bases:
            if isinstance(b, Tracked):
                version = version_at(b, a.seq)
                value = memory(version)
                if isinstance(value, np.ndarray) and _owner(value) is owner:
                    break
        else:
            break
        found, found_value, a = b, value, version
    if found is None:
        return None
    if found_value.dtype != xv.dtype:  # x.real or x.imag of a complex array
        raise _part_view()
    axes = _layout(found_value)
    if axes is None:
        raise TypeError(
            "pullback: this write goes through a view of a tracked array that is itself a "
            "strided view of a plain array, which pullback cannot follow; write into a copy "
            "(y = x.copy()) or into the array the view was taken from"
        )
    return found, (xv.ctypes.data - found_value.ctypes.data, xv.shape, xv.strides, axes)


# id of the memory a tracked view's value lies in (its owner ndarray) -> a weak reference
# to that owner and the live views into it, by id (ndarrays cannot be dictionary keys)
_views: dict = {}


def _forget(ref, *, key):
    if _views.get(key, (None,))[0] is ref:
        del _views[key]


def note_view(node):
    """Remember ``node``, whose value is a NumPy view, so that a write into its base reads
    it again."""
    owner = _owner(memory(node))
    entry = _views.get(id(owner))
    if entry is None or entry[0]() is not owner:
        try:
            ref = weakref.ref(owner, functools.partial(_forget, key=id(owner)))
        except TypeError:  # a view of memory that is no ndarray (bytes): nothing writes it
            return
        entry = _views[id(owner)] = (ref, weakref.WeakValueDictionary())
    entry[1][id(node)] = node
    inner = node.value  # under a nested derivative, the view as the levels below recorded
    while isinstance(inner, Tracked):  # it: part of this node, which a write rereads as a
        entry[1].pop(id(inner), None)  # whole (its versions keep the values they had)
        inner = inner.value


def _refresh_views(x, old_value):
    """After a write into ``x``, whose value was ``old_value``: every live view into
    ``old_value``'s memory, at any live level, reads the new value, as NumPy's views do."""
    if not isinstance(old_value, np.ndarray):
        return
    owner = _owner(old_value)
    entry = _views.get(id(owner))
    if entry is None or entry[0]() is not owner or not entry[1]:
        return
    views = entry[1]
    axes = _layout(old_value)
    if axes is None:
        raise TypeError(
            "pullback: this write goes into a tracked array that is a strided view, and "
            "other views into the same memory were taken before it, which pullback cannot "
            "follow; write into a copy (y = x.copy()) before taking views"
        )
    for w in list(views.values()):
        wv = memory(w)
        if w is x or w.level != x.level and w.level not in live_levels or not isinstance(
                wv, np.ndarray) or _owner(wv) is not owner:
            continue
        offset, part = wv.ctypes.data - old_value.ctypes.data, None
        if wv.dtype != old_value.dtype:  # r = z.real (or z.imag) taken before a write into z
            size = old_value.itemsize
            part, offset = divmod(offset % size, size // 2)[0], offset - offset % size
            if (wv.dtype.kind != "f" or old_value.dtype.kind != "c" or offset % size
                    or wv.itemsize * 2 != size or any(s % size for s in wv.strides)):
                raise _part_view()
        geometry = (offset, wv.shape, wv.strides, axes)
        try:  # a view outside x's part of the memory (x a view of a plain array) stays
            if old_value.ndim or offset:  # (a view of a 0-d x holds x's one element)
                view_positions(old_value.shape, geometry, old_value.itemsize)
        except ValueError:
            continue
        if part is None:
            new = reread(w, x, geometry)  # (a view of an outer level joins an inner write's)
        else:  # the real or imaginary part of the complex view with the same geometry
            old = _moved(w)
            whole = reread(old, x, geometry)
            new = (np.imag if part else np.real)(whole)
            if not (isinstance(whole, Tracked) and whole.args is not None
                    and whole.args[0] is old):
                continue
        if isinstance(new, Tracked) and new.args is not None and (new.args[0] is w or part
                                                                  is not None):
            _become(w, new)
            note_view(w)


def _part_view():
    return TypeError(
        "pullback: a write into a complex tracked array's real or imaginary part (z.real[i] "
        "= v, or into z while r = z.real is alive) cannot be followed. Build the new array "
        "instead: z = v + 1j * z.imag (or z.real + 1j * v), and take r = z.real after the "
        "write."
    )


def _check_param(x):
    # (a param is the Tracked subclass with an ``updated`` slot; pb.jit's Traced is another)
    if hasattr(x, "updated") and x.rule is None and not state.no_grad:
        raise TypeError(
            "pullback: a write into a param (w[i] = v, w += v) would make it something "
            "other than the leaf its gradient is for. Change its value inside "
            "pb.no_grad(), or write into a copy (y = w.copy())."
        )


def write(x, index, v):
    """``x[index] = v`` on a tracked ``x``, recorded (see the module's docstring)."""
    _check_index(index)
    xv = plain(x)
    # read-only but not by the guard (which holds an input's value, and views of it, while
    # a graph needs it; this write leaves that value alone): a read-only view such as a
    # broadcast, refused as NumPy does
    if isinstance(xv, np.ndarray) and not xv.flags.writeable and (
            not is_held(xv if xv.base is None else xv.base)
            or any(s == 0 and n > 1 for s, n in zip(xv.strides, xv.shape))):
        raise ValueError(
            "pullback: assignment destination is read-only (NumPy's error: a broadcast, "
            "a diagonal or a sliding window is a read-only view); write into a copy, "
            "y = x.copy()"
        )
    _check_param(x)
    moved = None
    if v is x:  # y[::-1] = y: the value written is x's version before the write
        v = moved = _moved(x)
    elif type(v) is list or type(v) is tuple:
        v = np.array(v)  # tracked when it holds tracked values (construct.py)
    view = base_and_geometry(x)
    if view is not None:
        base, geometry = view
        if shape_of(base):
            where = tuple(i[index] for i in view_positions(shape_of(base), geometry, xv.itemsize))
            extra = len(shape_of(v)) - len(shape_of(where[0]))
            if extra > 0:  # v's leading axes of length 1 beyond the place's, which NumPy
                v = np.reshape(v, shape_of(v)[extra:])  # drops (an integer index's place
            write(base, where, v)                       # is one element in the base)
        elif xv.size:  # a view of a 0-d base (y[None]): its elements are the base's one
            write(base, Ellipsis, np.reshape(index_update(x, index, v), (-1,))[-1])
        new = reread(x, base, geometry)
    else:
        new = index_update(x, index, v)
    if isinstance(new, Tracked) and new.args is not None and new.args[0] is x:
        _become(x, new, moved)
        if view is None:  # (through a view, the write into the base read the views again)
            _refresh_views(x, memory(xv))
        return
    # nothing recorded (no_grad, or a value of a finished computation): a leaf takes the
    # new value, as a param's value changes in an optimizer's step
    if x.rule is not None and x.level in live_levels:
        raise TypeError(
            "pullback: a write inside pb.no_grad() into a tracked value computed with a "
            "gradient cannot be recorded; write outside no_grad, or into a copy"
        )
    if hasattr(x, "updated") and isinstance(xv, np.ndarray):
        if is_held(_owner(xv)):
            x.updated = next(_seq)  # a param a graph still needs: its backward() refuses
        elif xv.flags.writeable and shape_of(new) == xv.shape and plain(new).dtype == xv.dtype:
            xv[...] = plain(new)  # its own array, in place (as PyTorch's and pb.update's)
            return
    x.value = plain(new) if x.level in live_levels else new
    if hasattr(x, "updated"):
        param_moved(x, xv)


def param_moved(x, old_value):
    """After a param ``x`` took a new array in place of ``old_value`` (a graph held the
    old one read-only): the live views of the param taken before (v = W[1:], W.T) read the
    new values, as NumPy's and PyTorch's views do. A view's pullback does not depend on
    the values, so each keeps its node; only its value moves to the new array."""
    new = x.value
    if not isinstance(old_value, np.ndarray) or not isinstance(new, np.ndarray) or (
            new.shape != old_value.shape or new.dtype != old_value.dtype):
        return
    owner = _owner(old_value)
    entry = _views.get(id(owner))
    if entry is None or entry[0]() is not owner or owner is not old_value:
        return
    new = np.ascontiguousarray(new) if old_value.flags.c_contiguous else np.asfortranarray(new)
    if new is not x.value:
        x.value = new
    for w in list(entry[1].values()):
        wv = memory(w)
        if w is x or w.value is not wv or _owner(wv) is not owner:  # (a nested box: no)
            continue
        w.value = np.ndarray(wv.shape, wv.dtype, buffer=new,
                             offset=wv.ctypes.data - old_value.ctypes.data, strides=wv.strides)
        if not wv.flags.writeable:
            w.value.setflags(write=False)
        note_view(w)


def in_place(func, ufunc):
    """The in-place operator of ``func``, the operator of ``ufunc`` (``x += v`` for
    np.add): the result of ``func(x, v)`` written into ``x``, so that every name for ``x``
    sees it, as NumPy's."""
    def in_place_operator(self, other):
        if isinstance(memory(self), (np.generic, numbers.Number)):  # immutable, as NumPy's
            return func(self, other)  # scalars (pb.jit's too): the name is bound to the result
        _check_param(self)
        before = memory(self)
        result = func(self, other)
        _same_kind(ufunc, result, self)
        new_shape = shape_of(result)
        if not isinstance(result, Tracked) or state.no_grad:
            if self.rule is not None and base_and_geometry(self) is not None:
                raise TypeError(
                    "pullback: a write inside pb.no_grad() through a view of a tracked array "
                    "(v = p[1:]; v *= 2) cannot reach the array; write into the array "
                    "itself (p[1:] *= 2)"
                )
            if self.rule is not None and self.level in live_levels and state.no_grad:
                raise TypeError(  # (h *= 3 would leave h a constant: its gradient lost)
                    "pullback: an in-place operator inside pb.no_grad() on a tracked value "
                    "computed with a gradient cannot be recorded; write it outside no_grad, "
                    "or on a copy (y = h.copy(); y *= 3)"
                )
            if self.rule is not None:
                return result  # a value of a finished computation: a constant
        elif (new_shape == shape_of(self) and result.dtype == self.dtype
              and result.args[0] is self and base_and_geometry(self) is None
              and not isinstance(memory(result), np.generic)):  # (0-d: a scalar takes no
            # write, and a 0-d array stays one, as NumPy's)
            _become(self, result)  # the result is the update itself: no copy
            _refresh_views(self, before)
            return self
        write(self, Ellipsis, result)
        return self

    return in_place_operator


def into_out(call, func, args, kwargs):
    """``func(*args, out=y)``: for a tracked ``y``, the result written into ``y`` (NumPy's
    semantics: the result is ``y``); for a plain ``y``, an error."""
    out = kwargs["out"]
    rest = {k: v for k, v in kwargs.items() if k != "out"}
    if out is None:
        return call(func, args, rest)
    target = out[0] if type(out) is tuple and len(out) == 1 else out
    if type(target) is tuple and all(isinstance(t, Tracked) for t in target):
        results = call(func, args, rest)  # several outputs (np.divmod, np.modf): each its own
        for t, result in zip(target, results):
            write(t, Ellipsis, result)
        return target
    if not isinstance(target, Tracked):
        raise TypeError(
            f"pullback: {name_of(func)}(..., out=...) writes into an existing plain array, "
            "which cannot record a gradient (this includes a += t for a plain array a and a "
            "tracked t). Write it out of place: a = a + t, or drop out= and use the result "
            "(out= into a tracked array, such as np.zeros_like(x), is recorded)."
        )
    result = call(func, args, rest)
    if isinstance(func, np.ufunc):
        _same_kind(func, result, target)
    write(target, Ellipsis, result)
    return target


def _same_kind(ufunc, result, target):
    """NumPy's casting rule for a ufunc's output written into ``target`` (``x += v``,
    ``out=x``): 'same_kind', so a complex result does not go into a real array."""
    have, want = np.result_type(plain(result)), np.result_type(plain(target))
    if not np.can_cast(have, want, "same_kind"):
        raise TypeError(
            f"pullback: cannot cast {name_of(ufunc)}'s output from {have} to {want} with "
            "casting rule 'same_kind' (NumPy's error for an in-place operator or out=); "
            f"write the result to a new array (x = x + v), or make x {have} first"
        )


def where(call, ufunc, inputs, kwargs):
    """``ufunc(*inputs, where=mask, out=...)``: the result where ``mask`` holds and the
    values of ``out`` (of a tracked ``out``, written as ``out=`` is) elsewhere; zeros without
    ``out``, where NumPy leaves what the memory held."""
    rest = {k: v for k, v in kwargs.items() if k != "where"}
    mask = plain(kwargs["where"])
    if mask is True:
        return call(ufunc, inputs, rest)
    if not getattr(_rows.get(ufunc), "elementwise", False) or set(rest) - {"out"}:
        raise TypeError(
            f"pullback: {name_of(ufunc)}(..., where=) on a tracked value is recorded for the "
            "elementwise ufuncs with no other keyword; write np.where(mask, "
            f"{name_of(ufunc)}(...), fill) instead"
        )
    out = rest.get("out")
    target = out[0] if type(out) is tuple and len(out) == 1 else out

    def masked(func, args, others):
        return ufunc_where(func, mask, target, *args)

    return masked(ufunc, inputs, {}) if target is None else into_out(masked, ufunc, inputs,
                                                                         rest)


# the in-place operators of tracked values, by the ufunc each applies (_wiring.py sets them)
IN_PLACE_OPERATORS = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                      "truediv": np.true_divide, "floordiv": np.floor_divide,
                      "mod": np.remainder, "pow": np.power, "matmul": np.matmul}
