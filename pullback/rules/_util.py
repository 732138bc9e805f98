"""Small helpers shared by the rule modules."""

import types

import numpy as np

from .._engine.core import apply, top_level
from .._engine.interception import (
    body_of_swapped,
    original_of,
    stand_in,
    swap_attribute,
    swap_code,
    unswap_attribute,
)
from .._engine.methods import NO_LEVEL
from .._engine.registry import is_primitive, primitive_bodies
from ..extend import Tracked, is_complex, is_foreign, on_backend, plain, primitive, rrule, shape_of


def as_array(x):
    """``x`` as a NumPy array (a list of numbers, a scalar), unless it is tracked or another
    library's array (CuPy's, Dask's), which stay as they are."""
    return x if isinstance(x, Tracked) or is_foreign(x) else np.asarray(x)


def batch_shape(g, out_ndim):
    """The leading batch axes a cotangent carries beyond an output of ``out_ndim`` axes."""
    s = np.shape(plain(g))
    return s[:len(s) - out_ndim]


def zero_of(g):
    """A 0-d zero of ``g``'s dtype on ``g``'s array library: the other branch of a
    ``np.where`` that sends a cotangent to some elements only."""
    return on_backend(np.zeros((), dtype=plain(g).dtype), g)


def normalize_axes(axis, ndim):
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    return tuple(sorted(int(a) % ndim if ndim else 0 for a in axis))


def unreduce(g, in_shape, axis, keepdims):
    """Give a reduction's cotangent back the reduced axes (as size 1), keeping any leading
    batch axes; the engine broadcasts it up to the input's shape."""
    if keepdims:
        return g
    gshape = shape_of(g)
    key = gshape, in_shape, axis
    try:  # planned once per shapes and axis
        full = _unreduced[key]
    except KeyError:
        full = _unreduced_shape(gshape, in_shape, axis)
        if len(_unreduced) < 4096:
            _unreduced[key] = full
    except TypeError:  # an axis that is no key (a list)
        full = _unreduced_shape(gshape, in_shape, axis)
    if full is None:
        return g
    return g.reshape(full) if hasattr(g, "reshape") else np.reshape(g, full)


_unreduced: dict = {}


def _unreduced_shape(gshape, in_shape, axis):
    ndim = len(in_shape)
    axes = normalize_axes(axis, ndim)
    if not axes:
        return None
    nb = len(gshape) - (ndim - len(axes))
    full = list(gshape[:nb])
    it = iter(gshape[nb:])
    for i in range(ndim):
        full.append(1 if i in axes else next(it))
    return tuple(full)


def conj_if_complex(x):
    return np.conjugate(x) if is_complex(x) else x


def intercept(owner, name, arguments=None):
    """Make ``owner.name``, a plain Python function (SciPy's ``logsumexp``, a
    distribution's ``logpdf`` ...) that NumPy's dispatch never sees, reach its registered
    rule when called with tracked values, while a differentiation runs
    (``_engine/interception.py``). Returns the function to register the rule for: the function
    itself for a Python function (its code is swapped, so every module that bound it,
    before or after pullback was imported, calls the rule), else a ``pullback.primitive``
    around it that stands in at ``owner.name``. ``arguments(*args, **kwargs)``, where
    given, returns the ``(args, kwargs)`` the rule takes (odeint's ``args`` as a tuple
    given positionally, so that the tracked arrays in it are seen)."""
    fn = original_of(getattr(owner, name))
    if isinstance(fn, types.FunctionType):
        swap_code(fn, _dispatch if arguments is None else _normalized(arguments))
        primitive_bodies[fn] = body_of_swapped(fn)
        return fn
    wrapped = primitive(fn)
    swap_attribute(owner, name, stand_in(fn, wrapped))
    return wrapped


def live(args, kwargs):
    """Whether a tracked value (of a live computation, or a finished one) is among a call's
    arguments, looking into lists and tuples."""
    top, finished = top_level((args, tuple(kwargs.values())))
    return top != NO_LEVEL or finished


def _dispatch(func, body, args, kwargs):
    """A swapped function's call: on tracked values, the rule of the method for the type of
    its first argument (``intercept_method``), else the function's own rule; its own body
    otherwise."""
    if args:
        replacement = _by_type.get((func, type(args[0])))
        if replacement is not None and live(args[1:], kwargs):
            return replacement(*args[1:], **kwargs)
    if is_primitive(func) and live(args, kwargs):
        return apply(func, args, kwargs)
    return body(*args, **kwargs)


def _normalized(arguments):
    def normalized_call(func, body, args, kwargs):
        given, named = arguments(*args, **kwargs)  # (a pytree's leaves among them)
        if live(given, named):
            return apply(func, given, named)
        return body(*args, **kwargs)

    return normalized_call


def replace_calls(owner, name, make):
    """While a differentiation runs, every call of ``owner.name`` (a Python function) goes
    to ``make(body)``, ``body`` the function's own code: scipy.sparse.linalg.splu returning
    a factorization whose ``solve`` differentiates. Returns the function."""
    fn = original_of(getattr(owner, name))
    made: list = []
    swap_code(fn, lambda func, body, args, kwargs: made[0](*args, **kwargs))
    made.append(make(body_of_swapped(fn)))
    return fn


def intercept_method(instance, name, replacement):
    """Make the method ``name`` of ``instance`` (``scipy.stats.norm.logpdf``), and of every
    instance of its type, call ``replacement`` (with the arguments after ``self``) when
    called with tracked values while a differentiation runs. The method's function on the
    class has its code swapped, so that a method bound before (``logpdf =
    norm.logpdf``) and the instances a frozen distribution makes reach it too."""
    klass = next(k for k in type(instance).__mro__ if name in vars(k))
    func = original_of(vars(klass)[name])
    unswap_attribute(instance, name)
    _by_type[(func, type(instance))] = replacement
    swap_code(func, _dispatch)


_by_type: dict = {}  # (a class's function, an instance's type) -> the replacement


def replace_when_tracked(owner, name, impl, applies=None):
    """Make ``owner.name`` (a Python function) compute ``impl(*args, **kwargs)`` when called
    with tracked values (and ``applies(*args, **kwargs)`` holds, where given), while a
    differentiation runs; its own body otherwise."""
    fn = original_of(getattr(owner, name))

    def replaced_call(func, body, args, kwargs):
        if live(args, kwargs) and (applies is None or applies(*args, **kwargs)):
            return impl(*args, **kwargs)
        return body(*args, **kwargs)

    return swap_code(fn, replaced_call)


def listed(ct, entry, ndim):
    """The cotangent ``ct`` of an argument read as one array, fitted to how it was given:
    for a list or tuple of values (``np.concatenate([[x[0], 1.0], y])``,
    ``logsumexp([a, b, 0.0])``), one cotangent per element, as the engine pairs them with
    the elements (indexing past the leading batch axes of ``ct``; ``ndim`` is the number of
    axes of the argument as an array)."""
    if type(entry) is not list and type(entry) is not tuple:
        return ct
    lead = (slice(None),) * (len(shape_of(ct)) - ndim)
    return [listed(ct[lead + (i,)], e, ndim - 1) for i, e in enumerate(entry)]


def rrule_if_present(module, name):
    """``rrule`` for ``module.name`` where this NumPy has it (NumPy 2 added several
    functions: ``np.trapezoid``, ``np.linalg.svdvals``, ...); elsewhere a decorator that
    registers nothing."""
    func = getattr(module, name, None)
    return (lambda rule: rule) if func is None else rrule(func, batched=True)
