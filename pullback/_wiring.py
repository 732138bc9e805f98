"""The one module that writes into other modules' namespaces: each slot the engine leaves
for a layer above it, filled here, after every module is loaded (pullback/__init__.py
imports this module last). ``tests/engine/test_layers.py`` fails on such an assignment
anywhere else."""

from ._engine import core, writes
from ._engine.core import Tracked
from ._jit.trace import checking_indices, run_primitive
from .tracker.backprop import backward, grad_of_nonparam

# x[i] = v, out=x and where= on tracked values, recorded as functional updates
# (_engine/writes.py, above core), whose index pb.jit checks while it traces
core.writes.write = checking_indices(writes.write)
core.writes.into_out = writes.into_out
core.writes.where = writes.where
core.writes.view = writes.note_view  # told of each recorded NumPy view, for a later write

# x += v and the other in-place operators, by the ufunc each applies
for name, ufunc in writes.IN_PLACE_OPERATORS.items():
    setattr(Tracked, f"__i{name}__", writes.in_place(getattr(Tracked, f"__{name}__"), ufunc))

# a pb.primitive's body meeting a pb.jit trace: one recorded call (_jit/trace.py)
core.run_primitive = run_primitive

# the Tracker face on every tracked value: loss.backward(), and .grad for a param only
# (tracker/backprop.py, which sits above the engine)
Tracked.backward = backward
Tracked.grad = property(grad_of_nonparam)
