"""Small helpers shared by the rule modules."""

import numpy as np

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


def intercept(owner, name, replacement=None):
    """Replace ``owner.name``, a plain Python function (SciPy's ``logsumexp``, a
    distribution's ``logpdf`` ...) that NumPy's dispatch never sees, by a
    ``pullback.primitive`` around it, so that calls on tracked values reach its registered
    rule. Returns the wrapper, to register the rule for. Code that imported the function
    before pullback was imported keeps the original. A ``replacement`` (a function with the
    original's signature and results, such as scipy.sparse.linalg.splu's, whose result's
    compiled ``solve`` is wrapped) is put in place of the primitive."""
    fn = getattr(owner, name)
    if fn in _intercepted:
        return fn
    wrapped = primitive(fn) if replacement is None else replacement
    _intercepted.add(wrapped)
    setattr(owner, name, wrapped)
    return wrapped


_intercepted: set = set()  # the wrappers intercept has put in place


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
    return (lambda rule: rule) if func is None else rrule(func)
