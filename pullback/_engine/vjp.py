"""The vjp layer: ``linearize`` runs a function once with some arguments boxed at a fresh
level; the ``Linearized`` it returns pulls cotangents back through that run (with
``backward_pass``). Every transform (grad, vjp, jvp, jacobian, hessian, hvp, checkpoint) is
built on it. The checks of what a transform is given live in ``arguments.py``.
"""

import numpy as np

from ..tree import StructureMismatch, leaves_by, tree_flatten, tree_unflatten
from . import refusals
from .arguments import at_leaf, described, dtype_of, fname_of, make_leaf, runs
from .backend import is_foreign
from .backward import backward_pass
from .core import Frame, Tracked, box_at, live_levels, plain, state, writes
from .guard import Hold, level_holds, refused_write, release
from .methods import escapes, is_complex, owner, shape_of
from .records import zeros_for


def strip(x):
    """``x`` without the boxes of finished computations (and of the top-level Tracker
    level): what a transform hands back once its own level has ended."""
    while isinstance(x, Tracked) and not x.traced and (  # (pb.jit's box stays)
            x.level not in live_levels or x.level == 0 and not state.in_gradient):
        x = x.value
    return x


def writeable(ct):
    """``ct``, copied if it is a read-only view (the engine's broadcasts are): what a user
    gets back must be an array of their own."""
    if ct.__class__ is np.ndarray and not ct.flags.writeable:
        return ct.copy()
    return ct


def as_result(ct, x):
    """A finished cotangent in the form of its input ``x``: same dtype, an ndarray for an
    ndarray, a NumPy scalar for a Python or NumPy scalar."""
    if ct.__class__ is np.ndarray and x.__class__ is np.ndarray and ct.dtype == x.dtype:
        return ct if ct.flags.writeable else ct.copy()  # the common case first
    if isinstance(x, Tracked) and x.traced:  # under pb.jit: the form of the traced value
        x = x.value
    if isinstance(ct, Tracked) and ct.traced:
        x = plain(x)  # (a live box around a traced value: the form of the value)
        x = x.value if isinstance(x, Tracked) else x
        if isinstance(x, np.ndarray) and not isinstance(ct.value, np.ndarray):
            ct = np.reshape(np.atleast_1d(ct), x.shape)  # a 0-d array for a 0-d array
        dtype = x.dtype if isinstance(x, (np.ndarray, np.generic)) else np.result_type(type(x))
        ct = ct.astype(dtype)  # (the method: np.astype is NumPy 2's)
        return ct if isinstance(x, np.ndarray) else ct[()]
    if isinstance(ct, Tracked) or isinstance(x, Tracked):
        return ct
    if is_foreign(ct) or is_foreign(x):  # another library's array stays in it, with x's
        dtype = x.dtype if hasattr(x, "dtype") else np.result_type(x)  # dtype (lazy.py)
        return ct if ct.dtype == dtype else ct.astype(dtype)
    if isinstance(x, np.ndarray):
        return writeable(np.asarray(ct, dtype=x.dtype))
    dtype = x.dtype if isinstance(x, np.generic) else np.result_type(type(x))
    return dtype.type(ct)




def _list_of_numbers(inputs, argnums, f):
    """Where a differentiated argument is a list (or tuple) of plain numbers, which is a
    pytree of scalars, the sentence that names it and the fix (None where there is none):
    NumPy's functions given that list see a list of tracked scalars, not an array."""
    for i, (treedef, flat, _) in zip(argnums, inputs):
        if treedef is None or treedef[0] not in (list, tuple) or any(
                child is not None for child in treedef[1]) or not all(
                isinstance(x, (int, float, np.number)) and not isinstance(x, bool)
                for x in flat) or not flat:
            continue
        kind = treedef[0].__name__
        return (f"pullback: argument {i} of {fname_of(f)} is a {kind} of {len(flat)} numbers, "
                f"which is differentiated as a pytree (one scalar per entry, as JAX does), so "
                f"NumPy's functions inside see a {kind} of tracked scalars; pass an array, "
                f"np.array({kind == 'list' and '[...]' or '(...)'}), to differentiate it as one "
                "array (its gradient is then an array)")
    return None


class Linearized:
    """One run of ``f`` with the arguments ``argnums`` boxed at a fresh level: ``out`` is
    what ``f`` returned, and ``pull`` sends cotangents back through the run."""

    def __init__(self, f, args, kwargs, argnums):
        with Frame() as frame:
            self.level = frame.level
            runs[frame.level] = self
            # the arrays this graph needs stay read-only while this object lives (guard.py)
            self.hold = level_holds[frame.level] = Hold()
            try:
                self._run(f, args, kwargs, argnums, frame)
            except BaseException:  # a run that raised is never pulled back: its arrays are
                release(self.hold.arrays)  # writeable at once (the traceback keeps it alive)
                raise
            finally:
                level_holds.pop(frame.level, None)
                # x.item() or x.tolist() of this level's values: said if nothing depends on it
                self.escaped, self.f = escapes.pop(frame.level, None), f

    def _run(self, f, args, kwargs, argnums, frame):
        args = list(args)
        self.inputs = []  # per differentiated argument: (treedef, leaves, boxes)
        boxed = {}  # an argument named twice in argnums is boxed once
        arrays = 0
        for i in argnums:
            if i not in boxed:
                flat, treedef = tree_flatten(args[i])
                what = f"argument {i} of {fname_of(f)}"
                try:
                    boxes = [make_leaf(x, frame.level, what) for x in flat]
                except TypeError as error:  # a pytree's leaf: say which
                    raise at_leaf(error, args[i], flat, frame.level, what) from None
                held = [x for x in flat if x.__class__ is np.ndarray]
                self.hold.add(held, what)
                arrays += len(held)
                args[i] = tree_unflatten(treedef, boxes)
                boxed[i] = (treedef, flat, boxes)
            self.inputs.append(boxed[i])
        if len(self.hold.seen) < arrays:  # one array given twice (f(w, w)): a write into
            for _, _, boxes in boxed.values():  # one of its boxes goes into the other too
                for box in boxes:
                    if box.value.__class__ is np.ndarray:
                        writes.view(box)
        refusals.forget_refusals()
        try:
            self.out = f(*args, **kwargs)
        except (TypeError, ValueError) as error:  # one that hid a refusal, or NumPy's for a
            # write into an array the guard holds: say it
            if (clear := refused_write(error) or refusals.swallowed(error)) is not None:
                raise clear from error
            if (listed := _list_of_numbers(self.inputs, argnums, f)) is not None:
                said = str(error)  # NumPy's own words stay; pullback's are replaced
                raise type(error)(listed + ("" if said.startswith("pullback:") else
                                            f" (the error inside: {said})")) from error
            raise
        if writes.seen:  # a leaf written into holds its update; its first version is the leaf
            for _, _, boxes in self.inputs:
                for k, box in enumerate(boxes):
                    while box.rule is not None:
                        box = box.args[0]
                    boxes[k] = box

    def pull_leaves(self, outs, seeds, batch_shape=(), retain_graph=True):
        """The cotangent of each boxed leaf, one flat list per differentiated argument
        (None where nothing reached it)."""
        roots, root_seeds = [], []
        for o, s in zip(outs, seeds):
            node = box_at(o, self.level)
            if node is not None:
                roots.append(node)
                root_seeds.append(s)
        if not roots and self.escaped is not None:
            raise ValueError(
                f"pullback: the output of {fname_of(self.f)} does not depend on the "
                "differentiated arguments through tracked operations, so its derivative "
                f"would be zero; {self.escaped} took a plain number out of the graph on "
                "the way. Keep that computation in NumPy operations on the tracked value "
                "(x[i] rather than x[i].item()); if the derivative is meant to be zero, use "
                "pb.stop_gradient(x) instead."
            )
        leaves = backward_pass(roots, root_seeds, batch_shape, retain_graph) if roots else {}
        return [[None if (ct := leaves.get(box)) is None else strip(ct) for box in boxes]
                for _, _, boxes in self.inputs]

    def pull(self, outs, seeds, batch_shape=()):
        """Cotangents of the inputs, one pytree per differentiated argument, each leaf in
        the form of its argument (zeros where nothing reached it)."""
        # each result an array of its own, which a write into another result or into a
        # cotangent given does not change (x + y: one array for both; x.ravel(): a view of
        # the cotangent)
        given = {id(owner(s)) for s in seeds}
        result = []
        for (treedef, flat, _), cts in zip(self.inputs, self.pull_leaves(outs, seeds,
                                                                         batch_shape)):
            leaves = [zeros_for(x, batch_shape) if ct is None
                      else writeable(ct) if batch_shape else as_result(ct, x)
                      for x, ct in zip(flat, cts)]
            for k, leaf in enumerate(leaves):
                if leaf.__class__ is np.ndarray:
                    if id(owner(leaf)) in given:
                        leaves[k] = leaf = leaf.copy()
                    given.add(id(owner(leaf)))
            result.append(tree_unflatten(treedef, leaves))
        return result


def linearize(f, args, kwargs, argnums):
    """Run ``f(*args, **kwargs)`` once with ``argnums`` boxed at a fresh level:
    ``(lin, outs, out_def)``, the run, its flat outputs and their structure."""
    lin = Linearized(f, args, kwargs, argnums)
    outs, out_def = tree_flatten(lin.out)
    return lin, outs, out_def


def _leaves_in(tree, spec, fname):
    """The leaves of the cotangent ``tree`` in the order of the output's structure
    ``spec`` (tree.leaves_by); a different structure is refused, saying where."""
    try:
        return leaves_by(spec, tree, bare_singletons=True)  # (one array for a 1-tuple)
    except StructureMismatch as m:
        raise TypeError(f"pullback: the cotangent for {fname} must have the output's "
                        f"structure; at out{m.path} the output has {m.want}, the cotangent "
                        f"{m.got}") from None


class VJP:
    """The pullback of a linearized function: call it with a cotangent of the output's
    structure to get one cotangent per differentiated argument. It can be called any
    number of times.

    >>> out, vjp_fn = pb.vjp(np.sin, np.zeros(2))
    >>> vjp_fn(np.ones(2))
    (array([1., 1.]),)
    """

    def __init__(self, lin, outs, fname, out_def=False):
        self._lin = lin
        self._outs = outs
        self._fname = fname
        self._out_def = out_def  # the output's structure (False: not known)

    def __call__(self, cotangent, *more):
        if more:
            raise TypeError(f"pullback: the pullback of {self._fname} takes one cotangent "
                            "with the output's structure: pass several as one tuple, "
                            "vjp_fn((ct1, ct2))")
        return self.batched(cotangent, ())

    def batched(self, cotangent, batch_shape):
        """The pullback of a stack of cotangents, each with leading axes ``batch_shape``,
        in one backward pass."""
        seeds = (tree_flatten(cotangent)[0] if self._out_def is False
                 else _leaves_in(cotangent, self._out_def, self._fname))
        if len(seeds) != len(self._outs):
            raise TypeError(
                f"pullback: the cotangent for {self._fname} has {len(seeds)} leaves but its "
                f"output has {len(self._outs)}; pass one array per output array"
            )
        checked = []
        for k, (s, o) in enumerate(zip(seeds, self._outs)):
            if isinstance(s, (str, bytes)) or s is None or dtype_of(s).kind not in "biufc":
                raise TypeError(  # (None: NaN further on; a str or object array: a crash)
                    f"pullback: cotangent {k} for {self._fname} is "
                    + ("None" if s is None else f"a {type(s).__name__}" if isinstance(
                        s, (str, bytes)) else described(s))
                    + "; pass an array of the output's shape holding numbers "
                    "(np.ones_like(out) for a sum)")
            want = batch_shape + shape_of(o)
            if shape_of(s) != want:
                raise ValueError(
                    f"pullback: cotangent {k} for {self._fname} has shape "
                    f"{shape_of(s)}, but the output has shape {want}"
                )
            if is_complex(s) and not is_complex(o):
                raise TypeError(
                    f"pullback: cotangent {k} for {self._fname} is complex but the output is "
                    "real: its imaginary part would be dropped. Pass a real cotangent "
                    "(np.real(ct)), or make the output complex (out * (1 + 0j))."
                )
            checked.append(s if isinstance(s, Tracked) or is_foreign(s) else np.asarray(s))
        return tuple(self._lin.pull(self._outs, checked, batch_shape))
