"""The floor of an eager tape in Python: the workloads on the smallest reverse-mode tape that
computes their gradients, for ``bench.floor`` (not one of the peers in the main table).

It does what any Python-level eager AD must (a node per operation, a pullback per node, one
reverse sweep) and nothing else: no mutation guard, no loss check, no nesting levels, no
dtype or batch-axis fitting, no NumPy dispatch protocol (the workloads call its own
namespace, as they call ``autograd.numpy``), no error messages. Whatever pullback costs
above it is the price of those, or of its code.
"""

import numpy as np

from .. import workloads as W

TAPE: list = []  # the nodes of the running gradient, in the order they were made


def _v(a):
    return a.v if a.__class__ is Box else a


def _fit(g, shape):
    """Sum the axes broadcasting added."""
    if np.shape(g) == shape:
        return g
    lead = np.ndim(g) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and np.shape(g)[i + lead] != 1)
    g = np.add.reduce(g, axes, keepdims=True)
    return g.reshape(shape)


def _matmul(a, b):
    av, bv = _v(a), _v(b)
    return Box(av @ bv, (a, b), lambda g: (g @ bv.T, av.T @ g))


def _add(a, b):
    av, bv = _v(a), _v(b)
    return Box(av + bv, (a, b), lambda g: (_fit(g, np.shape(av)), _fit(g, np.shape(bv))))


def _sub(a, b):
    av, bv = _v(a), _v(b)
    return Box(av - bv, (a, b), lambda g: (_fit(g, np.shape(av)), _fit(-g, np.shape(bv))))


def _mul(a, b):
    av, bv = _v(a), _v(b)
    return Box(av * bv, (a, b),
               lambda g: (_fit(g * bv, np.shape(av)), _fit(g * av, np.shape(bv))))


def _neg(a):
    return Box(-a.v, (a,), lambda g: (-g,))


def _operators(func):
    """The operator ``func(self, other)`` and its reflected form ``func(other, self)``."""
    def operator(self, other):
        return func(self, other)

    def reflected(self, other):
        return func(other, self)

    return operator, reflected


class Box:
    """A value on the tape, with its parents and its pullback."""

    __slots__ = ("v", "parents", "back")
    __array_ufunc__ = None  # an ndarray operand hands the operator to this class

    def __init__(self, v, parents=(), back=None):
        self.v, self.parents, self.back = v, parents, back
        if back is not None:
            TAPE.append(self)

    # each binary operator and its reflected form
    __matmul__, __rmatmul__ = _operators(_matmul)
    __add__, __radd__ = _operators(_add)
    __sub__, __rsub__ = _operators(_sub)
    __mul__, __rmul__ = _operators(_mul)

    def __truediv__(self, o):  # by a constant
        return _mul(self, 1.0 / o)

    def __neg__(self):
        return _neg(self)

    @property
    def shape(self):
        return np.shape(self.v)


def _spread(g, shape, axis, keepdims):
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    out = np.empty(shape)
    out[...] = g
    return out


class Namespace:
    """The NumPy names the workloads call."""

    @staticmethod
    def sin(a):
        x = a.v
        return Box(np.sin(x), (a,), lambda g: (g * np.cos(x),))

    @staticmethod
    def tanh(a):
        y = np.tanh(a.v)
        return Box(y, (a,), lambda g: (g * (1 - y * y),))

    @staticmethod
    def exp(a):
        y = np.exp(a.v)
        return Box(y, (a,), lambda g: (g * y,))

    @staticmethod
    def log(a):
        x = a.v
        return Box(np.log(x), (a,), lambda g: (g / x,))

    @staticmethod
    def max(a, axis=None, keepdims=False):
        x = a.v
        y = np.maximum.reduce(x, axis, None, None, keepdims)

        def back(g):
            top = y if keepdims or axis is None else np.expand_dims(y, axis)
            hit = x == top
            share = _spread(g, x.shape, axis, keepdims) / np.add.reduce(hit, axis, None,
                                                                        None, True)
            return (share * hit,)

        return Box(y, (a,), back)

    @staticmethod
    def sum(a, axis=None, keepdims=False):
        x = a.v
        return Box(np.add.reduce(x, axis, None, None, keepdims), (a,),
                   lambda g: (_spread(g, x.shape, axis, keepdims),))

    @staticmethod
    def mean(a):
        x = a.v
        return Box(np.add.reduce(x, None) / x.size, (a,),
                   lambda g: (_spread(g / x.size, x.shape, None, False),))


def value_and_grad(f, argnum=0):
    """``f``'s value and its gradient with respect to argument ``argnum``, a tuple of
    arrays (or one scalar)."""
    def run(*args):
        TAPE.clear()
        single = not isinstance(args[argnum], (tuple, list))
        leaves = [Box(p) for p in ([args[argnum]] if single else args[argnum])]
        args = list(args)
        args[argnum] = leaves[0] if single else leaves
        out = f(*args, np=Namespace)
        cts = {id(out): 1.0}
        for node in reversed(TAPE):
            g = cts.pop(id(node), None)
            if g is None:
                continue
            for p, c in zip(node.parents, node.back(g)):
                if p.__class__ is Box:
                    prev = cts.get(id(p))
                    cts[id(p)] = c if prev is None else prev + c
        TAPE.clear()
        grads = [cts.get(id(p), 0.0) for p in leaves]
        return out.v, (grads[0] if single else grads)

    return run


def _list(r):
    return [np.asarray(a) for a in (r if isinstance(r, (tuple, list)) else [r])]


def build(workload, data, lib="tape"):
    d = data
    if workload == "scalar_chain":
        g = value_and_grad(W.scalar_chain)
        return (lambda: g(d["x"])[1]), _list
    if workload in W.MLP_LOSSES:
        g = value_and_grad(W.MLP_LOSSES[workload])
        return (lambda: g(d["params"], d["x"], d["Y"])[1]), _list
    if workload in W.RNN_WORKLOADS:
        g = value_and_grad(W.rnn_loss)
        return (lambda: g(d["weights"], d["xs"], d["h0"])[1]), _list
    raise KeyError(workload)
