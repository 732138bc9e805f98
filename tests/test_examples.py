"""Every example in examples/ runs with --quick, prints its report and saves its picture.

Each runs in a subprocess with this interpreter, as a user would run it; an example whose
extra packages are missing is skipped with the reason (``pip install pullback[examples]``).
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# script -> (the modules it imports beyond numpy and pullback, the picture it saves)
CASES = {
    "digits.py": (["sklearn", "tqdm", "matplotlib", "pullback.optim"], "digits_loss.png"),
    "gaussian_process.py": (["scipy", "matplotlib", "pullback.optimize"], "gp_fit.png"),
    "oscillator.py": (["scipy", "matplotlib", "pullback.optimize"], "oscillator_fit.png"),
    "bayes.py": (["sklearn", "tqdm", "matplotlib"], "bayes_trace.png"),
    "tracker_loop.py": (["sklearn", "matplotlib", "pullback.optim"], "tracker_loss.png"),
    "rosenbrock.py": (["scipy", "matplotlib"], "rosenbrock_path.png"),
    "dask_logistic.py": (["dask", "distributed", "scipy", "matplotlib"], "dask_logistic.png"),
    "ode_net.py": (["scipy", "matplotlib", "pullback.optim"], "ode_net.png"),
}


def number(pattern, text):
    match = re.search(pattern, text)
    assert match, f"no match for {pattern!r} in the output:\n{text}"
    return [float(g) for g in match.groups()]


def run_example(name, tmp_path):
    modules, picture = CASES[name]
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        extras = "examples,dask" if "dask" in modules else "examples"
        pytest.skip(f"{name} needs {', '.join(missing)}: pip install 'pullback[{extras}]'")
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--quick", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    path = tmp_path / picture
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{name} saved no PNG at {path}"
    assert f"saved {path}" in done.stdout
    return done.stdout


def test_every_example_is_tested():
    scripts = {p.name for p in EXAMPLES.glob("*.py")} - {"train_mlp.py"}
    assert scripts == set(CASES)


def test_digits(tmp_path):
    out = run_example("digits.py", tmp_path)
    (logistic,) = number(r"logistic +[\d.]+ +[\d.]+ +[\d.]+ +([\d.]+)", out)
    (mlp,) = number(r"mlp +[\d.]+ +[\d.]+ +[\d.]+ +([\d.]+)", out)
    assert logistic > 0.8 and mlp > 0.8        # three epochs already learn most digits


def test_gaussian_process(tmp_path):
    out = run_example("gaussian_process.py", tmp_path)
    lbfgs, exact = number(r"negative log lik\. +(-?[\d.]+) +(-?[\d.]+)", out)
    assert lbfgs == pytest.approx(exact, abs=1e-4)
    (gap,) = number(r"largest difference in log-hyperparameters: ([\d.e+-]+)", out)
    assert gap < 1e-3


def test_oscillator(tmp_path):
    out = run_example("oscillator.py", tmp_path)
    _, _, zeta = number(r"zeta +([\d.]+) +([\d.]+) +([\d.]+)", out)
    _, _, omega = number(r"omega +([\d.]+) +([\d.]+) +([\d.]+)", out)
    assert zeta == pytest.approx(0.15, abs=0.02) and omega == pytest.approx(2.0, abs=0.05)


def test_bayes(tmp_path):
    out = run_example("bayes.py", tmp_path)
    (acceptance,) = number(r"acceptance rate ([\d.]+)", out)
    (accuracy,) = number(r"test accuracy of the posterior predictive: ([\d.]+)", out)
    assert 0.3 < acceptance < 1.0 and accuracy > 0.9


def test_tracker_loop(tmp_path):
    out = run_example("tracker_loop.py", tmp_path)
    rows = [[float(v) for v in line.split()] for line in out.splitlines()
            if re.fullmatch(r" *\d+ +[\d.]+ +[\d.]+", line)]
    assert len(rows) >= 2 and rows[-1][1] < rows[0][1]   # the train error falls


def test_rosenbrock(tmp_path):
    out = run_example("rosenbrock.py", tmp_path)
    (der,) = number(r"rosen_der at x0: +([\d.e+-]+)", out)
    (hess,) = number(r"rosen_hess at x0: +([\d.e+-]+)", out)
    (distance,) = number(r"from the minimum \(1, \.\.\., 1\): ([\d.e+-]+)", out)
    assert der < 1e-9 and hess < 1e-9 and distance < 1e-6


def test_dask_logistic(tmp_path):
    out = run_example("dask_logistic.py", tmp_path)   # a LocalCluster, started and stopped
    (difference,) = number(r"difference between the gradients at w0: ([\d.e+-]+)", out)
    assert difference < 1e-12
    pullback = number(r"pullback +(\d+) +([\d.]+) +[\d.]+ +[\d.]+ +(\d+) (\d+)", out)
    by_hand = number(r"by hand +(\d+) +([\d.]+) +[\d.]+ +[\d.]+ +(\d+) (\d+)", out)
    assert pullback[1] == pytest.approx(by_hand[1], rel=1e-10)   # the same optimum
    assert max(pullback[2:] + by_hand[2:]) < 400                 # within the memory limit
    (gap,) = number(r"difference between the fitted weights: ([\d.e+-]+)", out)
    assert gap < 1e-6


def test_ode_net(tmp_path):
    # autograd's example, ported by its imports: odeint's args a list of (W, b) tuples
    out = run_example("ode_net.py", tmp_path)
    losses = [float(v) for v in re.findall(r"Iteration \d+ train loss ([\d.]+)", out)]
    assert len(losses) == 11 and all(b < a for a, b in zip(losses, losses[1:]))
