"""Which families of scipy.stats differentiate: each continuous and discrete family of
SciPy's own test parameters (``scipy.stats._distr_params``), its log-density (log-mass)
and its cdf differentiated in the variate (continuous), the shape parameters whose test
value is not an integer (an integer one is often a count: binom's n, ksone's n), loc and
scale (continuous), against central finite differences:

    PYTHONPATH=. python -m bench.sweep_stats            # the counts
    PYTHONPATH=. python -m bench.sweep_stats --verbose  # and each family's outcome

A family *differentiates* where its logpdf (logpmf) does in all those arguments; the cdf
is counted apart. Families whose value is refused on tracked values are listed with the
first line of pullback's error.
"""

import argparse
import warnings

import numpy as np
import scipy.stats as st
from scipy.stats._distr_params import distcont, distdiscrete

import pullback as pb


def arguments(dist, params, discrete):
    """The plain arguments of a method call: the variate at quantiles 0.3 and 0.7 of the
    family, the shape parameters, loc and scale (continuous); and which are differentiated
    (the variate of a discrete family and its integer shape parameters are not)."""
    shapes = [float(p) != int(p) for p in params]
    if discrete:
        return [dist.ppf(np.array([0.3, 0.7]), *params), *map(float, params)], [False, *shapes]
    x = 0.1 + 1.3 * dist.ppf(np.array([0.3, 0.7]), *params)
    return [x, *map(float, params), 0.1, 1.3], [True, *shapes, True, True]


def outcome(dist, method, params, discrete):
    """"ok", "wrong" (the derivatives differ from finite differences) or the error."""
    args, tracked = arguments(dist, params, discrete)
    which = [i for i, t in enumerate(tracked) if t]
    if not which:
        return "ok"

    def f(*free):
        full = list(args)
        for i, v in zip(which, free):
            full[i] = v
        return np.sum(getattr(dist, method)(*full))

    free = [args[i] for i in which]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value, _ = pb.value_and_grad(f)(*free)
            if not np.isfinite(f(*free)):
                return "ok"  # nothing to differentiate at these points
            pb.check_grads(f, *free, order=1, rtol=1e-4)
    except AssertionError:
        return "wrong"
    except Exception as error:  # noqa: BLE001 (the sweep reports every kind of refusal)
        return f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
    return "ok"


def sweep():
    table = {}
    for names, discrete in ((distcont, False), (distdiscrete, True)):
        for name, params in names:
            if not isinstance(name, str) or not hasattr(st, name):
                continue  # (rv_histogram instances and the like)
            dist = getattr(st, name)
            if not all(np.ndim(p) == 0 for p in params):
                continue  # a family of arrays of values (rv_discrete's values=)
            methods = ("logpmf", "cdf") if discrete else ("logpdf", "cdf")
            table.setdefault(name, {m: outcome(dist, m, params, discrete) for m in methods})
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true")
    table = sweep()
    if parser.parse_args().verbose:
        for name, row in sorted(table.items()):
            print(f"{name:22s} " + "  ".join(f"{m}: {o}" for m, o in row.items()))
    density = sum(next(iter(row.values())) == "ok" for row in table.values())
    cdf = sum(row["cdf"] == "ok" for row in table.values())
    wrong = sorted(n for n, row in table.items() if "wrong" in row.values())
    print(f"{len(table)} families: {density} differentiate (logpdf/logpmf), {cdf} in the cdf; "
          f"derivatives that differ from finite differences: {wrong or 'none'}")


if __name__ == "__main__":
    main()
