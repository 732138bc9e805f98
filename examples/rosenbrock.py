"""Minimise SciPy's Rosenbrock function with derivatives taken by pullback.

``scipy.optimize.rosen`` is plain NumPy code written by others (its first line is
``x = np.asanyarray(x)``); pullback differentiates it unchanged. ``scipy.optimize.minimize``
runs Newton-CG with ``jac=pb.grad(rosen)`` and ``hess=pb.hessian(rosen)``, and the script
compares both with SciPy's hand-written ``rosen_der`` and ``rosen_hess``. Saves
``rosenbrock_path.png``: the iterates over the function's contours in its first two
coordinates.

    python examples/rosenbrock.py            # 20 dimensions
    python examples/rosenbrock.py --quick    # 5 dimensions
"""

import argparse
from pathlib import Path

import numpy as np
from scipy.optimize import minimize, rosen, rosen_der, rosen_hess

import pullback as pb


def save_plot(path, points):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(-2.0, 2.0, 200)
    X, Y = np.meshgrid(grid, np.linspace(-1.0, 3.0, 200))
    Z = 100.0 * (Y - X ** 2) ** 2 + (1.0 - X) ** 2  # rosen in two dimensions
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.contour(X, Y, np.log1p(Z), levels=20, cmap="viridis")
    ax.plot(points[:, 0], points[:, 1], "o-", color="C3", markersize=3, label="iterates")
    ax.plot([1.0], [1.0], "k*", markersize=10, label="minimum (1, 1)")
    ax.set_xlabel("x[0]")
    ax.set_ylabel("x[1]")
    ax.set_title("Newton-CG on rosen, derivatives by pullback")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"saved {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 dimensions instead of 20")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out",
                        help="folder for the picture (default: examples/out/)")
    args = parser.parse_args()
    n = 5 if args.quick else 20
    x0 = np.linspace(-1.2, 1.2, n)

    jac, hess = pb.grad(rosen), pb.hessian(rosen)
    print(f"largest difference from rosen_der at x0:  "
          f"{np.max(np.abs(jac(x0) - rosen_der(x0))):.1e}")
    print(f"largest difference from rosen_hess at x0: "
          f"{np.max(np.abs(hess(x0) - rosen_hess(x0))):.1e}")

    points = [x0]
    result = minimize(rosen, x0, method="Newton-CG", jac=jac, hess=hess,
                      callback=lambda xk: points.append(np.copy(xk)), options={"xtol": 1e-10})
    print(f"Newton-CG in {n} dimensions: {result.nit} iterations, rosen = {result.fun:.3e}")
    print(f"largest distance from the minimum (1, ..., 1): {np.max(np.abs(result.x - 1.0)):.1e}")
    args.out.mkdir(parents=True, exist_ok=True)
    save_plot(args.out / "rosenbrock_path.png", np.array(points))


if __name__ == "__main__":
    main()
