"""A CPU array type that refuses what CuPy refuses, to test pullback's contract for arrays
of another library without a GPU.

``FakeArray`` wraps an ndarray and implements the NumPy API it receives through NumPy's
dispatch protocols by unwrapping, calling NumPy and wrapping the results, as CuPy runs
its own kernels. Like a CuPy array it

- has no implicit host copy: ``np.asarray(x)`` (``__array__``) raises ``TypeError``;
- refuses ``numpy.ndarray`` operands in ufuncs and functions (``TypeError``), while
  Python and NumPy scalars are accepted; ``np.asarray(a, like=x)`` is the one way a host
  array moves onto it, as ``cupy.asarray(a)`` is;
- returns 0-d arrays, not scalars, from reductions;
- counts a *device sync* each time a value is read back to the host: ``float()``,
  ``int()``, ``bool()``, ``complex()``, ``.item()``, ``__index__``, ``.get()``.
"""

import numpy as np

syncs = 0  # device syncs so far: reads of a value back to the host


class FakeArray(np.lib.mixins.NDArrayOperatorsMixin):
    """An array on a pretend device, wrapping the ndarray ``_a``."""

    __slots__ = ("_a",)

    def __init__(self, a):
        self._a = a

    # -- what an array is
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    T = property(lambda self: FakeArray(self._a.T))
    mT = property(lambda self: FakeArray(np.swapaxes(self._a, -1, -2)))
    real = property(lambda self: FakeArray(self._a.real))
    imag = property(lambda self: FakeArray(self._a.imag))

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (FakeArray(row) for row in self._a)

    def __repr__(self):
        return f"FakeArray({self._a!r})"

    def __getitem__(self, index):
        return wrap(self._a[unwrap(index)])

    def __setitem__(self, index, value):
        self._a[unwrap(index)] = unwrap(value)

    def __getattr__(self, name):  # the ndarray methods: .reshape, .sum, .astype, .conj ...
        if name.startswith("__"):
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if not callable(attr):
            return wrap(attr)

        def method(*args, **kwargs):
            return wrap(attr(*unwrap(args), **unwrap(kwargs)))

        return method

    # -- no implicit host copy; reads back to the host are device syncs
    def __array__(self, dtype=None, copy=None):
        raise TypeError("FakeArray: implicit conversion to a NumPy array is not allowed; "
                        "use .get() to copy it to the host")

    def get(self):
        """A host copy (CuPy's ``.get()``): a device sync."""
        _sync()
        return self._a.copy()

    def item(self, *args):
        _sync()
        return self._a.item(*args)

    def __float__(self):
        _sync()
        return float(self._a)

    def __int__(self):
        _sync()
        return int(self._a)

    def __complex__(self):
        _sync()
        return complex(self._a)

    def __bool__(self):
        _sync()
        return bool(self._a)

    def __index__(self):
        _sync()
        return self._a.__index__()

    # -- NumPy's dispatch protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # ufunc.at's indices may be host arrays (CuPy copies them to the device)
        operands = (inputs[0],) + inputs[2:] if method == "at" else inputs
        if not _handled(operands) or not _handled(kwargs.values()):
            return NotImplemented
        out = kwargs.get("out")
        result = getattr(ufunc, method)(*unwrap(inputs), **unwrap(kwargs))
        return out[0] if isinstance(out, tuple) and len(out) == 1 else wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        if any(not issubclass(t, (FakeArray, np.ndarray)) for t in types):
            return NotImplemented
        if func in _HOST_TO_DEVICE:  # cupy.asarray(a): the sanctioned host-to-device copy
            return wrap(np.array(unwrap(args[0]), *args[1:], **unwrap(kwargs)))
        if not _handled(args) or not _handled(kwargs.values()):
            return NotImplemented
        return wrap(func(*unwrap(args), **unwrap(kwargs)))


_HOST_TO_DEVICE = (np.asarray, np.array, np.asanyarray)


def _sync():
    global syncs
    syncs += 1


def _handled(items):
    """Whether every array among ``items`` (looking into lists and tuples) is a FakeArray;
    a ``numpy.ndarray`` raises, as CuPy does; another library's array gets NotImplemented
    (so that its own protocol runs)."""
    for x in items:
        if x.__class__ is np.ndarray:
            raise TypeError(
                "FakeArray: an operand is a numpy.ndarray; CuPy does not mix host and "
                f"device arrays (shape {x.shape}, dtype {x.dtype})")
        if type(x) in (list, tuple):
            if not _handled(x):
                return False
        elif not isinstance(x, FakeArray) and hasattr(x, "__array_function__") and (
                not isinstance(x, np.generic)):
            return False
    return True


def unwrap(x):
    """The ndarrays under the FakeArrays in ``x`` (looking into lists, tuples and dicts)."""
    if isinstance(x, FakeArray):
        return x._a
    if type(x) in (list, tuple):
        return type(x)(unwrap(v) for v in x)
    if type(x) is dict:
        return {k: unwrap(v) for k, v in x.items()}
    if isinstance(x, slice):
        return slice(unwrap(x.start), unwrap(x.stop), unwrap(x.step))
    return x


def wrap(x):
    """``x`` with its ndarrays and NumPy scalars on the device (in tuples and namedtuples
    too); Python values (shapes, flags) are left alone."""
    if isinstance(x, (np.ndarray, np.generic)):
        return FakeArray(np.asarray(x))
    if isinstance(x, tuple):
        items = [wrap(v) for v in x]
        return type(x)(*items) if hasattr(type(x), "_fields") else tuple(items)
    if isinstance(x, list):
        return [wrap(v) for v in x]
    return x


def to_device(x):
    """``x`` (an ndarray, or a pytree of them) as FakeArrays; other leaves unchanged."""
    if isinstance(x, np.ndarray):
        return FakeArray(x.copy())
    if isinstance(x, (tuple, list)):
        return _rebuild(x, [to_device(v) for v in x])
    if isinstance(x, dict):
        return {k: to_device(v) for k, v in x.items()}
    return x


def to_host(x):
    """``x`` with its FakeArrays copied back to ndarrays (without counting a sync: this is
    the test's own look at the result)."""
    if isinstance(x, FakeArray):
        return x._a
    if isinstance(x, (tuple, list)):
        return _rebuild(x, [to_host(v) for v in x])
    if isinstance(x, dict):
        return {k: to_host(v) for k, v in x.items()}
    return x


def _rebuild(x, items):
    """A list, tuple or namedtuple (``QRResult``) like ``x`` holding ``items``."""
    return type(x)(*items) if hasattr(type(x), "_fields") else type(x)(items)
