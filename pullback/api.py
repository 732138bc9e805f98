"""The functional face: grad, value_and_grad and vjp, built on ``backward.linearize``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal, overload

import numpy as np

from ._engine.arguments import (
    described,
    dtype_of,
    function_named,
    normalize_argnums,
    require_outputs,
    scalar_seed,
)
from ._engine.lazy import after, checked, is_lazy
from ._engine.registry import LossError
from ._engine.vjp import VJP, Linearized, strip
from .debug.anomaly import loss_error
from .tree import tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "value_and_grad", "vjp"]


def value_and_grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
                   has_aux: bool = False,
                   losscheck: bool = True) -> Callable[..., tuple[Any, Any]]:
    """``f``'s value and its gradient with respect to ``argnums``, as plain arrays.

    The gradient has each argument's structure, shape and dtype. A loss over Dask arrays
    is not computed: the value and the gradient come back as Dask arrays (one graph, for
    ``dask.compute(value, grad)``), and the loss is checked when they are computed.

    Args:
        f: the function, written with NumPy. It must return a real scalar (a float, a 0-d
            array or a one-element array), or ``(scalar, aux)`` with ``has_aux=True``.
        argnums: the position of the argument to differentiate with respect to, or a
            tuple of positions (the gradient is then a tuple). Each argument may be a
            pytree (nested tuples, lists, dicts, namedtuples, registered classes) of
            floating-point or complex arrays and numbers; a list of numbers is a pytree
            of scalars, so pass ``np.array(list)`` to differentiate it as one array.
        has_aux: ``f`` returns ``(loss, aux)``; only the loss is differentiated, and
            ``aux`` is handed back as it is (its tracked values made plain).
        losscheck: check the loss before differentiating it. A NaN or infinite loss
            raises ``pb.LossError``, naming the first operation (with its line) where a
            non-finite value was born from finite inputs. ``losscheck=False``
            differentiates it anyway, as autograd and JAX do (the gradient is then
            usually NaN too).

    Returns:
        A function of ``f``'s arguments returning ``(value, gradient)``, or
            ``((value, aux), gradient)`` with ``has_aux=True``.

    >>> value, g = pb.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    >>> value, g
    (np.float64(5.0), array([2., 4.]))
    """
    function_named(f, "pb.value_and_grad")
    return named_value_and_grad(f, argnums, has_aux, losscheck, "value_and_grad")


def named_value_and_grad(f: Callable[..., Any], argnums: int | Sequence[int], has_aux: bool,
                         losscheck: bool, transform: str) -> Callable[..., tuple[Any, Any]]:
    """``value_and_grad``, its messages naming ``transform`` (``"hessian"`` for the gradient
    a Hessian is the Jacobian of)."""
    fname = function_named(f, f"pb.{transform}")
    _require_flag(has_aux, "has_aux", transform)
    _require_flag(losscheck, "losscheck", transform)

    @functools.wraps(f)
    def value_and_grad_f(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        single, nums = normalize_argnums(argnums, len(args), fname)
        lin = Linearized(f, args, kwargs, nums)
        out = lin.out
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(
                    f"pullback: {fname} was differentiated with has_aux=True, so it must "
                    f"return a pair (loss, aux); it returned {described(out)}"
                )
            out, aux = out
        try:
            seed = scalar_seed(out, fname, losscheck, transform)
        except LossError as error:  # where the first non-finite value was born
            raise loss_error(error, f, args, kwargs, nums) from None
        grads = lin.pull([out], [seed])
        value = strip(out)
        if losscheck and is_lazy(value):  # checked when computed (lazy.py)
            value = checked(value, fname)
            grads = [tree_map(lambda g: after(g, value), tree) for tree in grads]
        if has_aux:
            value = (value, tree_map(strip, aux))
        return value, (grads[0] if single else tuple(grads))

    return value_and_grad_f


def _require_flag(flag: Any, name: str, transform: str) -> None:
    """``has_aux`` and ``losscheck`` are True or False: a truthy string would turn one on."""
    if not isinstance(flag, (bool, np.bool_)):
        raise TypeError(f"pullback: {transform}'s {name} must be True or False, got "
                        f"{flag!r}")


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
         losscheck: bool = True) -> Callable[..., Any]:
    """The gradient of scalar-valued ``f`` with respect to argument(s) ``argnums``.

    Nest freely: ``pb.grad(pb.grad(f))`` is a second derivative.

    Args:
        f: the function, written with NumPy. It must return a real scalar (a float, a 0-d
            array or a one-element array), or ``(scalar, aux)`` with ``has_aux=True``.
        argnums: the position of the argument to differentiate with respect to, or a
            tuple of positions (the gradient is then a tuple). Each argument may be a
            pytree (nested tuples, lists, dicts, namedtuples, registered classes) of
            floating-point or complex arrays and numbers; a list of numbers is a pytree
            of scalars, so pass ``np.array(list)`` to differentiate it as one array.
        has_aux: ``f`` returns ``(loss, aux)``; only the loss is differentiated, and
            ``aux`` is handed back as it is (its tracked values made plain).
        losscheck: check the loss before differentiating it. A NaN or infinite loss
            raises ``pb.LossError``, naming the first operation (with its line) where a
            non-finite value was born from finite inputs. ``losscheck=False``
            differentiates it anyway, as autograd and JAX do (the gradient is then
            usually NaN too).

    Returns:
        A function of ``f``'s arguments returning the gradient: plain arrays of the
            arguments' shapes and dtypes (a tuple for a tuple of argnums; ``(grad, aux)`` with
            ``has_aux=True``).

    >>> pb.grad(lambda x: np.sum(np.sin(x)))(np.array([0.0, np.pi]))
    array([ 1., -1.])
    >>> pb.grad(pb.grad(lambda x: x ** 3))(2.0)
    np.float64(12.0)
    >>> pb.grad(lambda x: x * np.inf, losscheck=False)(1.0)  # an infinite loss
    np.float64(inf)
    """
    function_named(f, "pb.grad")
    return named_grad(f, argnums, has_aux, losscheck, "grad")


def named_grad(f: Callable[..., Any], argnums: int | Sequence[int], has_aux: bool,
               losscheck: bool, transform: str) -> Callable[..., Any]:
    """``grad``, its messages naming ``transform`` (a Hessian's gradient, an hvp's)."""
    vg = named_value_and_grad(f, argnums, has_aux, losscheck, transform)

    @functools.wraps(f)
    def grad_f(*args: Any, **kwargs: Any) -> Any:
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


@overload
def vjp(f: Callable[..., Any], *primals: Any,
        has_aux: Literal[False] = False) -> tuple[Any, VJP]: ...


@overload
def vjp(f: Callable[..., Any], *primals: Any, has_aux: Literal[True]) -> tuple[Any, VJP, Any]: ...


def vjp(f: Callable[..., Any], *primals: Any,
        has_aux: bool = False) -> tuple[Any, VJP] | tuple[Any, VJP, Any]:
    """``(out, vjp_fn)``: ``f(*primals)`` and its pullback ``vjp_fn(cotangent)``, which
    returns one cotangent per primal and may be called as often as you like.

    Args:
        f: the function, written with NumPy; it may return any pytree of arrays.
        *primals: the arguments to call ``f`` with; each is differentiated.
        has_aux: ``f`` returns ``(out, aux)``; ``aux`` is returned third, not
            differentiated.

    Returns:
        ``(out, vjp_fn)``, or ``(out, vjp_fn, aux)``. ``vjp_fn`` takes a cotangent of
            ``out``'s structure and shapes and returns a tuple with one cotangent per primal.

    >>> out, vjp_fn = pb.vjp(lambda x, y: x * y, np.ones(3), np.arange(3.0))
    >>> vjp_fn(np.ones(3))
    (array([0., 1., 2.]), array([1., 1., 1.]))
    """
    fname = function_named(f, "pb.vjp")
    _require_flag(has_aux, "has_aux", "vjp")
    lin = Linearized(f, primals, {}, range(len(primals)))
    if has_aux and not (isinstance(lin.out, (tuple, list)) and len(lin.out) == 2):
        raise TypeError(
            f"pullback: {fname} was given to vjp with has_aux=True, so it must return a "
            f"pair (out, aux); it returned {described(lin.out)}"
        )
    out, aux = lin.out if has_aux else (lin.out, None)
    outs, treedef = tree_flatten(out)
    # None, a str or only integers would pull back as zeros without a word (an integer
    # output beside float ones has a zero cotangent, as JAX's; None beside arrays is an
    # empty entry, as SciPy's lstsq gives for its singular values with gelsy)
    arrays = [o for o in outs if o is not None] or outs
    require_outputs(arrays, fname, integers=True, out_def=treedef)
    if arrays and not any(dtype_of(o).kind in "fc" for o in arrays):
        require_outputs(arrays, fname, out_def=treedef)
    value = tree_unflatten(treedef, [_own(o) for o in outs])
    pullback = VJP(lin, outs, fname, treedef)
    if has_aux:
        return value, pullback, tree_map(_own, aux)
    return value, pullback


def _own(x):
    """``x`` without its boxes, an array of the caller's own: the graph ``vjp_fn`` pulls
    back through may have saved that array (np.exp saves its result), so a write into it
    (``r -= y``) must not reach the graph."""
    x = strip(x)
    return x.copy() if x.__class__ is np.ndarray else x


def __dir__() -> list[str]:
    return sorted(__all__)
