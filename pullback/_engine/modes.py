"""What a user switches on and off around ordinary code: ``no_grad``. It sets the recording
state of ``core.py`` for the thread that enters it."""

import functools

from .core import state


class no_grad:
    """Record nothing inside: every result is a plain value (per thread). Also a decorator:
    ``@pb.no_grad`` or ``@pb.no_grad()`` on ``fn`` runs every call of ``fn`` inside it.

    >>> w = pb.param(np.zeros(2))
    >>> with pb.no_grad():
    ...     y = np.sin(w)
    >>> type(y)
    <class 'numpy.ndarray'>
    """

    def __new__(cls, fn=None):  # @pb.no_grad without parentheses decorates fn itself
        self = super().__new__(cls)
        if fn is None:
            return self
        if not callable(fn):
            raise TypeError(f"pullback: pb.no_grad takes no arguments (or, as a decorator, "
                            f"the function), got {type(fn).__name__}")
        return self(fn)

    def __enter__(self):
        state.no_grad += 1
        state.slow += 1
        return self

    def __exit__(self, *exc):
        state.no_grad -= 1
        state.slow -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def no_grad_wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)

        return no_grad_wrapper
