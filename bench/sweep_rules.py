"""The public functions of NumPy (``numpy``, ``numpy.linalg``, ``numpy.fft``) and of
``scipy.special`` that take floating-point inputs and have neither a rule nor a
declaration as non-differentiable in pullback's registry:

    PYTHONPATH=. python -m bench.sweep_rules            # the counts
    PYTHONPATH=. python -m bench.sweep_rules --verbose  # and the names

A ufunc takes floating-point inputs where one of its loops reads a float or complex
argument: without a rule it cannot run on tracked values at all. A Python function (not
a class, a module, a constant, one of the helpers in ``NOT_MATH``: printing, file
input/output, error settings, dtype queries, integer and bit functions, nor one of
NumPy's constructors in ``CONSTRUCTORS``) is listed apart: it runs its own code on tracked
values, and differentiates where the functions it calls have rules (``scipy.special.jvp``
and ``softplus`` do; ``h1vp`` stops at ``hankel1``). The registry is
``pb.registered_rules()`` and ``pb.registered_nondifferentiable()`` (which includes what
rules/nondiff.py lists), each function under the name users call it by.
"""

import argparse
import inspect
import types

import numpy as np
import scipy.special as special

import pullback as pb
from pullback._engine.register import registered_nondifferentiable, registered_rules
from pullback._engine.registry import body_of

# NumPy's array constructors: array, asarray and the like are pullback's own (construct.py);
# the others take shapes and lengths, or build from a start and step (arange, full), on
# tracked values through construct.py's conversions
CONSTRUCTORS = {
    "array", "asarray", "asanyarray", "asarray_chkfinite", "ascontiguousarray",
    "asfortranarray", "arange", "empty", "eye", "full", "identity", "ones", "zeros", "tri",
    "bartlett", "blackman", "hamming", "hanning", "row_stack",
}


# public NumPy callables that are not functions of arrays of numbers
NOT_MATH = {
    "array2string", "array_repr", "array_str", "base_repr", "binary_repr",
    "format_float_positional", "format_float_scientific", "get_printoptions",
    "set_printoptions", "printoptions",
    "geterr", "seterr", "geterrcall", "seterrcall", "errstate", "getbufsize", "setbufsize",
    "load", "save", "savez", "savez_compressed", "loadtxt", "savetxt", "genfromtxt", "fromfile",
    "fromregex", "frombuffer", "fromiter", "fromstring", "fromfunction", "info", "show_config",
    "show_runtime", "get_include", "test", "typename", "mintypecode", "common_type",
    "result_type", "promote_types", "can_cast", "min_scalar_type", "issubdtype", "isdtype",
    "iterable", "isscalar", "ndim", "shape", "size", "may_share_memory", "shares_memory",
    "broadcast_shapes", "nested_iters", "from_dlpack", "asmatrix", "bmat", "busday_count",
    "busday_offset", "is_busday", "datetime_as_string", "datetime_data", "apply_along_axis",
    "apply_over_axes", "vectorize", "frompyfunc", "piecewise", "einsum_path", "require",
    "get_state", "set_state", "seterrobj", "geterrobj", "add_newdoc", "deprecate",
    "byte_bounds", "safe_eval", "lookfor", "who", "source", "disp", "recfromcsv",
    "recfromtxt", "getlimits", "set_string_function", "histogram_bin_edges", "ravel_multi_index",
    "unravel_index", "indices", "tril_indices", "triu_indices", "tril_indices_from",
    "triu_indices_from", "diag_indices", "diag_indices_from", "mask_indices", "ix_",
    "isfortran", "packbits", "unpackbits", "bitwise_count", "gcd", "lcm", "left_shift",
    "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "invert",
    "bitwise_left_shift", "bitwise_right_shift", "bitwise_invert", *CONSTRUCTORS,
}


def _is_function(obj):
    return isinstance(obj, np.ufunc) or (
        callable(obj) and not inspect.isclass(obj) and not isinstance(obj, types.ModuleType))


def _takes_floats(obj):
    if isinstance(obj, np.ufunc):
        return any(any(c in "efdgFDG" for c in t.split("->")[0]) for t in obj.types)
    return True


def _known():
    """The ids of the functions the registry knows, and of what they wrap."""
    known = set()
    for func in [*registered_rules(), *registered_nondifferentiable()]:
        for f in (func, body_of(func), getattr(func, "__wrapped__", None),
                  getattr(func, "_implementation", None)):
            if f is not None:
                known.add(id(f))
    return known


def missing(module, prefix):
    """``module``'s public float functions without a rule or a declaration: the ufuncs, and
    the Python functions."""
    known = _known()
    found = {"ufuncs": [], "python": []}
    for name in sorted(getattr(module, "__all__", None) or dir(module)):
        if name.startswith("_") or name in NOT_MATH:
            continue
        obj = getattr(module, name, None)
        if not _is_function(obj) or not _takes_floats(obj):
            continue
        if {id(obj), id(getattr(obj, "_implementation", None)),
                id(getattr(obj, "_pb_body", None))} & known:
            continue
        found["ufuncs" if isinstance(obj, np.ufunc) else "python"].append(name)
    return found


def sweep():
    modules = [(np, "np"), (np.linalg, "np.linalg"), (np.fft, "np.fft"),
               (special, "scipy.special")]
    return {prefix: missing(module, prefix) for module, prefix in modules}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true")
    verbose = parser.parse_args().verbose
    assert pb.__file__  # (the pullback that PYTHONPATH selects)
    table = sweep()
    for prefix, found in table.items():
        print(f"{prefix}: {len(found['ufuncs'])} ufuncs of floating-point inputs without a "
              f"rule, {len(found['python'])} Python functions not in the registry")
        for kind, names in found.items():
            if verbose and names:
                print(f"  {kind}: " + " ".join(names))
    ufuncs = sum(len(f["ufuncs"]) for f in table.values())
    python = sum(len(f["python"]) for f in table.values())
    print(f"total: {ufuncs} ufuncs without a rule, {python} Python functions not in the "
          "registry")


if __name__ == "__main__":
    main()
