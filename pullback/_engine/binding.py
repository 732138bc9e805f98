"""Binding a call's keyword arguments to positional places by the function's signature, so
that a rule (which takes its differentiated arguments positionally) can see them."""

import inspect

import numpy as np

from .registry import body_of, name_of


def _bincount(x, /, weights=None, minlength=0):
    """np.bincount's signature, which its C function does not carry on NumPy 1.26."""


def _dot(a, b, out=None):
    """np.dot's, likewise (a positional out, np.dot(a, b, out), is read by it)."""


# NumPy's C functions whose signature inspect cannot read on NumPy 1.26 (NumPy 2's carry it)
_C_SIGNATURES = {np.bincount: inspect.signature(_bincount), np.dot: inspect.signature(_dot)}


def signature_of(func):
    """``func``'s signature: its Python body's, NumPy's dispatcher's, or the table's."""
    body = body_of(func)
    target = body if body is not func else getattr(func, "_implementation", func)
    for candidate in (target, func):
        try:
            return inspect.signature(candidate)
        except (TypeError, ValueError):  # a C function (np.bincount's implementation)
            continue
    if func in _C_SIGNATURES:
        return _C_SIGNATURES[func]
    raise ValueError(f"no signature for {name_of(func)}")


def bind_positional(func, args, kwargs, boxed):
    """Move keyword arguments that are ``boxed`` instances (tracked values) into positional
    places using ``func``'s signature."""
    try:
        sig = signature_of(func)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        name = next(k for k, v in kwargs.items() if isinstance(v, boxed))
        raise TypeError(
            f"pullback: pass the tracked argument {name!r} of {name_of(func)} positionally"
        ) from None
    names = list(sig.parameters)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    pos, kw = [], {}
    for k, p in enumerate(sig.parameters.values()):
        if p.name not in bound.arguments:
            # a default that a later positional argument needs in front of it
            if p.kind in positional and any(
                    n in bound.arguments and sig.parameters[n].kind in (
                        *positional, inspect.Parameter.VAR_POSITIONAL)
                    for n in names[k + 1:]):
                pos.append(p.default)
            continue
        v = bound.arguments[p.name]
        if p.kind == p.VAR_POSITIONAL:
            pos.extend(v)
        elif p.kind == p.VAR_KEYWORD:
            kw.update(v)
        elif p.kind == p.KEYWORD_ONLY:
            kw[p.name] = v
        else:
            pos.append(v)
    # (a traced boolean or integer, pb.jit's where=x > 0, is a constant of the call)
    stuck = [k for k, v in kw.items() if isinstance(v, boxed) and v.dtype.kind in "fc"]
    if stuck:
        raise TypeError(
            f"pullback: {name_of(func)} takes {stuck[0]!r} by keyword only, and its rule "
            "differentiates positional arguments alone: it cannot be a tracked value. Pass "
            f"a constant (pb.stop_gradient of it), or register a rule of {name_of(func)} "
            f"that takes {stuck[0]!r} positionally"
        )
    return tuple(pos), kw


_out_places: dict = {}  # func -> (index of out, names from there on), or None: no such out


def positional_out(func, args, kwargs):
    """``(args, kwargs)`` of ``func(*args, **kwargs)``, where an ``out`` given positionally
    (np.clip(a, lo, hi, out), np.dot(a, b, out)) and the arguments after it become
    keywords, so that the write into ``out`` is recorded or refused as ``out=`` is."""
    place = _out_places.get(func, False)
    if place is False:
        try:
            params = list(signature_of(func).parameters.values())
        except (TypeError, ValueError):
            params = []
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]
        place = _out_places[func] = ((names.index("out"), names[names.index("out"):])
                                     if "out" in names else None)
    if place is None or len(args) <= place[0]:
        return args, kwargs
    k, names = place
    return args[:k], {**kwargs, **dict(zip(names, args[k:]))}
