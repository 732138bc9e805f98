"""pb.jit on the likelihood of a real model object: ``pb.jit(pb.grad(model.loglike))`` for
statsmodels' Logit, Poisson and a Gamma GLM (log link) on 20,000 rows, against the eager
``pb.grad(model.loglike)`` and the library's own ``model.score``.

    python -m bench.jit_models [--rows 20000] [--calls 30] [--rounds 15]

With one BLAS thread; each figure is the minimum over ``rounds`` rounds of the mean of
``calls`` calls, the three of a model timed in interleaved rounds (load on a shared machine
can only raise a minimum). Each jitted gradient is checked against ``score`` first (the
GLM's at the fixed scale 1, score's own convention; timed at the scale the likelihood
estimates and at scale 1). Needs statsmodels (the ``interop`` extra).
"""

import argparse
import functools
import os
import time

from bench.one import ONE_THREAD


def _models(rows):
    import numpy as np
    import statsmodels.api as sm

    rng = np.random.default_rng(0)
    X = sm.add_constant(rng.normal(size=(rows, 4)))
    beta = rng.normal(size=5) * 0.3
    mu = np.exp(X @ beta)
    gamma = sm.GLM(rng.gamma(2.0, mu / 2.0), X,
                   family=sm.families.Gamma(sm.families.links.Log()))
    return beta * 0.5, [
        ("Logit", sm.Logit((rng.random(rows) < mu / (1 + mu)).astype(float), X), {}),
        ("Poisson", sm.Poisson(rng.poisson(mu).astype(float), X), {}),
        ("GLM Gamma", gamma, {}),
        ("GLM Gamma, scale=1", gamma, {"scale": 1.0}),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    os.environ.update(ONE_THREAD)

    import numpy as np

    import pullback as pb

    w, models = _models(args.rows)
    print(f"{args.rows} rows; ms per call (minimum over {args.rounds} rounds of "
          f"{args.calls} calls)")
    print(f"{'model':<20} {'jitted':>8} {'eager':>8} {'score':>8} {'jit/eager':>10} "
          f"{'jit/score':>10}")
    for name, model, kw in models:
        calls = {"jitted": functools.partial(pb.jit(pb.grad(model.loglike)), w, **kw),
                 "eager": functools.partial(pb.grad(model.loglike), w, **kw),
                 "score": functools.partial(model.score, w, **kw)}
        if name != "GLM Gamma":  # (score's convention for a GLM: the scale fixed)
            np.testing.assert_allclose(calls["jitted"](), calls["score"](), rtol=1e-9)
        np.testing.assert_allclose(calls["jitted"](), calls["eager"](), rtol=1e-12)
        best = dict.fromkeys(calls, float("inf"))
        for _ in range(args.rounds):
            for key, call in calls.items():
                start = time.perf_counter()
                for _ in range(args.calls):
                    call()
                best[key] = min(best[key], (time.perf_counter() - start) / args.calls)
        j, e, s = (best[k] * 1e3 for k in ("jitted", "eager", "score"))
        print(f"{name:<20} {j:8.3f} {e:8.3f} {s:8.3f} {j / e:10.2f} {j / s:10.2f}")


if __name__ == "__main__":
    main()
