"""The errors a misuse meets where the engine records: each says what went wrong and what to
do, and, when a library's code (SciPy's) triggered it, names that code's function and line.
It sits beside the rule table, below the engine."""

from __future__ import annotations

import dis
import os
import re
import sys
import threading
from typing import Any

import numpy as np

from .registry import NoRuleError, name_of

_LIBRARY_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (np,) if m.__file__)


def called_from() -> str:
    """``module.function (file:line)`` of the innermost frame outside pullback and NumPy
    when that is a library's code (SciPy's), not the user's, for the messages of refusals
    that a library's internals trigger; else the empty string (the traceback's last line is
    the user's own)."""
    here = os.path.dirname(__file__) + os.sep
    frame: Any = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith((here, *_LIBRARY_DIRS)):
        frame = frame.f_back
    if frame is None or "-packages" + os.sep not in frame.f_code.co_filename:
        return ""
    module = frame.f_globals.get("__name__", "?")
    return (f"{module}.{frame.f_code.co_name} at "
            f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}")


def refuse_pandas() -> None:
    """Refuse a tracked value that pandas makes an array of (``pd.Series(x)``): pandas keeps
    plain NumPy arrays, and its own conversion would loop on a tracked value."""
    where = called_from()
    if where.startswith("pandas."):
        raise TypeError(
            f"pullback: pandas ({where}) got a tracked value: pandas holds plain NumPy "
            "arrays, and its objects cannot carry a gradient. Compute the differentiated "
            "part with NumPy on arrays (np.sum(x), not pd.Series(x).sum()), and give pandas "
            "plain values (pb.stop_gradient(x), or the result after differentiation).")


def line_of_caller() -> str:
    """``file:line (function)`` of the innermost frame outside pullback and NumPy: the line
    of the user's or a library's code that called into them."""
    here = os.path.dirname(__file__) + os.sep
    frame: Any = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith((here, *_LIBRARY_DIRS)):
        frame = frame.f_back
    if frame is None:
        return "an unknown line"
    module = frame.f_globals.get("__name__", "?")
    return (f"{module}.{frame.f_code.co_name} ({os.path.basename(frame.f_code.co_filename)}:"
            f"{frame.f_lineno})")


def came_back(where: str) -> Any:
    """Refuse a number that ``x.item()`` or ``x.tolist()`` took out of a differentiated
    computation (``where`` says which and where) coming back into it: the gradient through
    it would be lost without a word."""
    raise ValueError(
        f"pullback: {where} took a plain number out of a computation being differentiated, "
        f"and the number comes back into it at {line_of_caller()}: the gradient through it "
        "would be lost without a word. Keep the value tracked (x[()] or x[i] instead of "
        "x.item(); np.asarray(x) instead of x.tolist()); where no gradient should flow "
        "through it, write pb.stop_gradient(x). A library's function that does this (SciPy's "
        "np.asarray(fx).item()) needs a rule of its own (pb.rrule), or plain values.")


def _by(where: str) -> str:
    return f" (called by {where})" if where else ""


def no_rule(func: Any) -> NoRuleError:
    """The error for a function with no rule called on a tracked value (``apply``)."""
    if isinstance(func, np.ufunc) and func.types and func.types[0].endswith("->O"):
        return NoRuleError(  # np.frompyfunc's: object arrays, whose elements are plain
            f"pullback: {name_of(func)} is np.frompyfunc's, which works on object arrays; "
            "use np.vectorize(f) instead, which calls f on tracked elements")
    return NoRuleError(
        f"pullback: no derivative rule for {name_of(func)}{_by(called_from())}, called on a "
        f"tracked value. Register one with @pb.rrule({name_of(func)}), or call it on plain "
        "values (x.value) if no gradient should flow through it."
    )


def _innermost(rule: Any) -> Any:
    """The function a record holds (a product's general rule's, a pullback's)."""
    for _ in range(3):
        inner = getattr(rule, "rule", None)
        if inner is None:
            break
        rule = inner
    return rule


def library_rule(rule: Any) -> bool:
    """Whether the rule or pullback ``rule`` (or the one a record holds) is pullback's own."""
    return (getattr(_innermost(rule), "__module__", None) or "").startswith("pullback")


def pullback_name(rule: Any) -> str:
    """A pullback's name for a message (the one a record holds)."""
    rule = _innermost(rule)
    return getattr(rule, "__qualname__", None) or repr(rule)


def no_derivative(rule: Any, i: int, ct: Any) -> Any:
    """The error for a pullback whose cotangent ``i`` is a NotImplementedCotangent."""
    raise NoRuleError(f"pullback: {pullback_name(rule)} has no derivative with respect to "
                      f"argument {i} ({ct.reason}); pass it as a plain value")


def refuse_in_place(func: Any) -> TypeError:
    """The error for a NumPy function that writes into its argument (np.put, np.place)."""
    return TypeError(
        f"pullback: {name_of(func)}{_by(called_from())} writes into an array in place, "
        "which cannot record a gradient. Build the result out of place instead: "
        "np.where(mask, v, a), np.concatenate/np.stack, or a + pb.index_add(v, index, "
        "a.shape)."
    )


def refuse_rule_write(rule: Any, error: BaseException) -> TypeError:
    """The error for a user's rule (or the pb.primitive it calls) that writes into one of
    its arguments, which are the graph's arrays, given read-only."""
    return TypeError(
        f"pullback: {pullback_name(rule)} writes into one of its arguments (NumPy: "
        f"{error}); they are arrays the recorded graph uses, so a write would change values "
        "under it. Compute into a new array instead (x = x - np.max(x), not x -= ...)."
    )


def refuse_no_grad_write(func: Any) -> TypeError:
    """The error for a call inside ``pb.no_grad()`` that writes into a tracked value a
    node computed (its array is read-only there: a pullback may have saved it)."""
    return TypeError(
        f"pullback: {name_of(func)} inside pb.no_grad() writes into a tracked value computed "
        "with a gradient, whose array a recorded node may need for its derivative. Write "
        "outside no_grad (the write is then recorded), or into a copy (y = h.copy())."
    )


# the last conversion refused on this thread, for a caller that gets another error instead:
# NumPy's iterator (np.nditer) and some of its C paths catch __array__'s error and raise
# their own
_last = threading.local()


def forget_refusals() -> None:
    """Start a call afresh (a transform's): no refusal seen yet."""
    _last.message = None


# a library's error that names its argument's type where compiled code asked for memory
_COMPILED = re.compile(r"bytes-like|buffer|memoryview|Cannot convert|No matching signature")
_LIBRARY_ADVICE = (
    "Pass it plain values (pb.stop_gradient(x)) where no gradient should flow, or give that "
    "function a rule (pb.primitive and pb.rrule).")


def _raised_in(tb: Any) -> tuple[str, str, bool] | None:
    """``(module.function, file:line, in a library)`` of the innermost frame of the
    traceback ``tb`` outside pullback and NumPy (a library's is in site-packages)."""
    here = os.path.dirname(__file__) + os.sep
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith((here, *_LIBRARY_DIRS)):
            module = tb.tb_frame.f_globals.get("__name__", "?")
            name = code.co_name if code.co_name.startswith(module) else (  # (Cython's
                f"{module}.{code.co_name}")                                 # are qualified)
            found = (name,  # (a Cython function's file is its .pyx)
                     f"{os.path.basename(code.co_filename)}:{tb.tb_lineno}",
                     "-packages" + os.sep in code.co_filename
                     or code.co_filename.endswith((".pyx", ".pxd", ".pxi")))
        tb = tb.tb_next
    return found


def swallowed(error: BaseException) -> BaseException | None:
    """pullback's sentence, first, for an error that a tracked value caused in code that is
    not pullback's (a user's function, a library's, NumPy's): a conversion refused just
    before it (np.nditer, a plain array's a[i] = x and compiled code catch the refusal and
    raise their own), or a message naming the tracked value's type (a Cython memoryview's
    "not 'Tracked'", a validation's "Got Tracked(...) instead"). None for another error."""
    text = str(error)
    if not isinstance(error, (TypeError, ValueError)) or text.startswith("pullback:"):
        return None
    message = getattr(_last, "message", None)
    if message is None and "Tracked" not in text:
        return None
    name, line, library = _raised_in(error.__traceback__) or ("?", "?", False)
    if library and (line.split(":")[0].endswith(".pyx") or message is None
                    and _COMPILED.search(text)):
        sentence = (f"a tracked value reached compiled code in {name} ({line}), which needs "
                    f"a plain array and cannot carry a gradient. {_LIBRARY_ADVICE}")
    elif library and message is None:  # a check of the arguments (isinstance, a type)
        sentence = (f"{name} ({line}) refused a tracked value: it checks its arguments "
                    "(isinstance(x, np.ndarray), a type or a range), and a tracked value is "
                    f"not a NumPy array. {_LIBRARY_ADVICE}")
    elif library and message is not None:
        sentence = (f"{message[len('pullback: '):]} {name} ({line}) raised the error below "
                    "in its place: it writes a tracked value into a plain array it "
                    "allocated, calls a plain array's method with it, or hands it to "
                    f"compiled code, none of which can carry a gradient. {_LIBRARY_ADVICE}")
    else:
        sentence = (f"{message[len('pullback: '):] if message else ''} The line {line} "
                    "raised the error below in its place: np.nditer does so (iterate over "
                    "x[i] or x.flat instead), and so does a plain array's a[i] = x (make the "
                    "buffer tracked: a = np.zeros_like(x)).").lstrip()
    return type(error)(f"pullback: {sentence} ({type(error).__name__}: {text})") if type(
        error) in (TypeError, ValueError) else TypeError(
        f"pullback: {sentence} ({type(error).__name__}: {text})")


def refuse_conversion(shape: tuple, dtype: Any) -> Any:
    """Refuse to make a tracked value a plain NumPy array (``Tracked.__array__``)."""
    frame: Any = sys._getframe(1)
    while frame is not None:  # np.matrix(x): NumPy's constructor converts x
        if frame.f_code.co_filename.endswith("defmatrix.py"):
            raise TypeError(
                "pullback: np.matrix(x) of a tracked value: pullback differentiates plain "
                "arrays, and an np.matrix's * is a matrix product and its reductions keep two "
                "axes. Keep x an array and write x @ y for the matrix product.")
        if _building_sparse(frame):
            raise TypeError(
                f"pullback: a scipy.sparse matrix or array built from a tracked value (shape "
                f"{shape}, dtype {dtype}): a sparse matrix holds plain numbers, so its entries "
                "cannot carry a gradient. Build it from plain values and multiply it with "
                "the tracked ones (A @ x differentiates in x), or keep tracked nonzeros "
                "dense: the product of the matrix (data, (i, j)) with x is "
                "np.bincount(i, weights=data * x[j], minlength=m), and the matrix itself "
                "pb.index_add(data, (i, j), (m, n)); or give your function a rule with "
                "pb.primitive and pb.rrule.")
        frame = frame.f_back
    where = called_from()
    _last.message = f"pullback: a tracked value (shape {shape}, dtype {dtype}) was refused " + (
        f"as a plain NumPy array (by {where})." if where else "as a plain NumPy array.")
    if where:  # a library's function that converts its arguments (to run compiled code)
        raise TypeError(
            f"pullback: a tracked value (shape {shape}, dtype {dtype}) reached {where}, "
            "which makes it a plain NumPy array and would drop its gradient: the function "
            "called there has no derivative rule. Give it one (pb.primitive and pb.rrule), "
            "or pass it plain values (pb.stop_gradient(x)) if no gradient should flow "
            "through it."
        )
    raise TypeError(
        "pullback: a tracked value cannot become a plain NumPy array here "
        f"(shape {shape}, dtype {dtype}): that would drop its gradient. This is a plain "
        "array's a[i] = x (make the buffer tracked: a = np.zeros_like(x)), a plain array's "
        "method (A.dot(x): write np.dot(A, x) or A @ x), a random draw with tracked "
        "parameters (rng.normal(mu, sigma): write mu + sigma * rng.standard_normal(shape)), "
        "or a list holding x given to a function with no rule or an operator "
        "(x * [x, 1.0]: np.array([x, 1.0]) first)." + (
            " For a scalar, also NumPy's scalar types: np.float64(x) or np.float32(x) "
            "(write x.astype(np.float64), which keeps the gradient)." if shape == () else "")
    )


def _building_sparse(frame: Any) -> bool:
    """Whether ``frame`` builds a scipy.sparse matrix (its constructor), or computes with one
    that took a tracked value as its nonzeros (a coo matrix keeps them as given)."""
    if not frame.f_globals.get("__name__", "").startswith("scipy.sparse._"):
        return False
    data = getattr(frame.f_locals.get("self"), "data", None)
    return frame.f_code.co_name == "__init__" or hasattr(data, "level")


def refuse_scalar(kind: str, x: Any = None) -> Any:
    """Refuse ``float()``, ``int()`` or ``complex()`` of a tracked value ``x``, but for
    %-formatting (``"%.3f" % loss``, logging's ``log.info("loss %.3f", loss)``): a string
    needs no gradient, so ``x``'s plain value is converted, as f-strings format it."""
    if x is not None and _formatting(sys._getframe(2)):
        v = x
        while getattr(v, "traced", True) is False:  # (a pb.jit trace formats its box)
            v = v.value
        return {"float": float, "int": int, "complex": complex}[kind](v)
    where = called_from()
    _last.message = f"pullback: {kind}() of a tracked value was refused{_by(where)}."
    if where:  # a library's code: nothing to change there, only how it is called
        raise TypeError(
            f"pullback: {kind}() of a tracked value (called by {where}) would drop its "
            "gradient: that code computes with Python numbers (math, a[i] = x into a plain "
            f"array it allocated), which cannot carry a gradient. {_LIBRARY_ADVICE}")
    raise TypeError(
        f"pullback: {kind}() of a tracked value{_by(where)} would drop its "
        "gradient. The math module calls it (math.exp(x): use np.exp), and so does a[i] = x "
        "into a plain array (make the buffer tracked: a = np.zeros_like(x)); x.item() "
        "leaves the graph on purpose." + (" For complex(a, b), write a + 1j * b."
                                          if kind == "complex" else "")
    )


def _formatting(frame: Any) -> bool:
    """Whether ``frame`` is running a ``%`` operation: the conversion was asked for by
    %-formatting (a ``%`` between numbers meets the operators, never ``float()``)."""
    code, at = frame.f_code, frame.f_lasti
    for ins in dis.get_instructions(code):
        if ins.offset in (at, 2 * at):  # (Python 3.10 counts instructions, later bytes)
            return (ins.opname in ("BINARY_MODULO", "INPLACE_MODULO") or ins.opname ==
                    "BINARY_OP" and ins.argrepr in ("%", "%="))
    return False


def refuse_cast(have: Any, want: Any, casting: Any) -> None:
    """Refuse ``x.astype(want, casting=casting)`` of a tracked ``x`` of dtype ``have`` where
    NumPy refuses it (``casting='safe'`` from float64 to float32)."""
    if casting != "unsafe" and not np.can_cast(have, want, casting):
        raise TypeError(
            f"pullback: x.astype({np.dtype(want)}, casting={casting!r}) of a tracked value of "
            f"dtype {have}: NumPy cannot cast it under the rule {casting!r}; pass "
            "casting='unsafe' (the default) to convert anyway"
        )


def refuse_objects(func: Any) -> Any:
    """Refuse an object array made of a tracked value (``x.astype(object)``): it holds plain
    Python numbers, so the gradient would be lost without a word."""
    name = "a function" if func is None else name_of(func)
    raise TypeError(
        f"pullback: {name} made an object array (dtype=object) of a tracked value: it "
        "holds plain Python numbers, which would drop the gradient. Keep a float dtype; "
        "to apply a Python function to each element, use np.vectorize(f)(x)."
    )


def refuse_subclass(func: Any, value: Any) -> Any:
    """Refuse an ``np.matrix`` or a masked array (``value``, or its class) meeting a tracked
    value: their operators and reductions follow other rules than an ndarray's (``*`` a
    matrix product, a mask that hides entries), which the recorded graph would not follow,
    so the gradient would be wrong without a word."""
    name = "an operation" if func is None else name_of(func)
    cls = value if isinstance(value, type) else type(value)
    shape = "" if isinstance(value, type) else f" of shape {np.shape(value)}"
    if issubclass(cls, np.matrix):
        what, fix = "an np.matrix", "np.asarray(m) (and @ for the matrix product)"
    else:
        what, fix = "a masked array", (
            "its data, m.filled(0.0), and multiply by ~m.mask where masked entries must not "
            "count")
    raise TypeError(
        f"pullback: {name} met {what}{shape} and a tracked value; pullback records plain "
        f"ndarray semantics, which {what} does not follow, so the gradient would be wrong. "
        f"Instead, pass {fix}."
    )


def _list_shape(items: Any) -> tuple:
    """The shape of the array NumPy makes of a (nested) list of values, tracked or not."""
    if type(items) is list or type(items) is tuple:
        return (len(items),) + (_list_shape(items[0]) if items else ())
    return tuple(getattr(items, "shape", ()))


def fitted_list(items: Any, ct: Any, rule: Any, i: int) -> Any:
    """``ct``, the cotangent a rule returned for its argument ``i``, a list or tuple
    ``items`` holding tracked values, after checking that it is one entry per item: an
    array of the list's shape (a list of cotangents passes), not one with batch axes or
    broadcast axes, which pairing by the first axis would misread."""
    shape = getattr(ct, "shape", None)
    if type(ct) in (list, tuple) or shape is None or tuple(shape) == _list_shape(items):
        return ct
    raise ValueError(
        f"pullback: {pullback_name(rule)} got a list holding tracked values as argument "
        f"{i}, and its cotangent has shape {tuple(shape)} where the list's array has shape "
        f"{_list_shape(items)} (batch or broadcast axes, which a list cannot take): pass "
        "np.array(the list) instead"
    )


def misfit(rule: str, cshape: tuple, target: tuple, nb: int) -> ValueError:
    """The error for a cotangent of shape ``cshape`` that does not fit its input's
    ``target`` shape (after ``nb`` batch axes), or for shapes a Dask array does not know."""
    if any(n != n for n in (*cshape, *target)):  # NaN: chunks of unknown sizes (x[mask])
        return ValueError(
            f"pullback: the backward pass needs the shape of a Dask array whose chunk sizes "
            f"are unknown (shape {cshape if any(n != n for n in cshape) else target}, as "
            "after x[mask] of a Dask mask); call x.compute_chunk_sizes() on it first, or "
            "keep every row and weight the loss by the mask (np.where(mask, ..., 0))")
    return ValueError(
        f"pullback: {rule} returned a cotangent of shape {cshape} for an input of shape "
        f"{target[nb:]}" + (f" (with batch axes {target[:nb]})" if nb else ""))
