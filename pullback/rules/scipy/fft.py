"""scipy.fft's transforms on tracked values: np.fft's of the same arguments, whose rules
they then take (SciPy's transform is NumPy's, to rounding). ``overwrite_x``, ``workers``
and ``plan`` only say how to compute it, and are not used. A plain call is SciPy's own.
The cosine and sine transforms have no rule yet: on a tracked value they raise NoRuleError
naming themselves (pocketfft's own error named no function).

scipy.fft's functions are uarray multimethods (compiled objects), which call the backend
set for them: SciPy's own backend's ``__ua_function__`` (a Python function, whose code is
swapped while a differentiation runs) sends a call with tracked values to the rule, so a
transform bound before pullback was imported (``from scipy.fft import fft``) reaches it
too. Another backend set by the user (``scipy.fft.set_backend``) is left alone."""

import importlib

import numpy as np
from scipy import fft as scipy_fft

from ..._engine.core import apply
from ..._engine.interception import swap_code
from ..._engine.registry import primitive_bodies
from ...extend import composite
from .._util import live

_backend = importlib.import_module("scipy.fft._backend")
_with_rules: set = set()


def _transform(name):
    """scipy.fft's ``name``, to register its rule for: a primitive that is its own body."""
    func = getattr(scipy_fft, name)
    primitive_bodies[func] = func
    _with_rules.add(func)
    return func


def _through_rules(func, body, args, kwargs):
    """SciPy's backend's call of ``method(*margs, **mkwargs)``: its rule on tracked values."""
    method, margs, mkwargs = args
    if method in _with_rules and live(margs, mkwargs):
        return apply(method, margs, mkwargs)
    return body(*args, **kwargs)


swap_code(vars(_backend._ScipyBackend)["__ua_function__"].__func__, _through_rules)

ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
TWO_D = ("fft2", "ifft2", "rfft2", "irfft2")
N_D = ("fftn", "ifftn", "rfftn", "irfftn")


def _one_d(transform):
    def impl(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
        return transform(x, n, axis, norm)

    return impl


def _many_d(transform, default_axes):
    def impl(x, s=None, axes=default_axes, norm=None, overwrite_x=False, workers=None, *,
             plan=None):
        return transform(x, s, axes, norm)

    return impl


for _name in ONE_D:
    composite(_transform(_name), _one_d(getattr(np.fft, _name)))
for _name in TWO_D + N_D:
    composite(_transform(_name),
              _many_d(getattr(np.fft, _name), (-2, -1) if _name in TWO_D else None))
for _name in ("dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn"):
    _transform(_name)
