"""Bayesian logistic regression on the breast cancer data, sampled with Hamiltonian Monte Carlo.

The log posterior (Bernoulli likelihood, standard normal prior on the coefficients of
the standardised features) is plain NumPy; ``pb.value_and_grad`` gives it and its
gradient for the leapfrog integrator of a small HMC sampler written below. The step size
is tuned during warm-up towards an acceptance rate of about 0.8. Prints the acceptance
rate, the largest coefficients and the test accuracy of the posterior predictive. Saves
``bayes_trace.png``: traces of a few coefficients and of the log posterior.

    python examples/bayes.py            # full run, under half a minute
    python examples/bayes.py --quick    # a short chain, seconds
"""

import argparse
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import pullback as pb


def log_posterior(w, x, y):
    z = x @ w[1:] + w[0]
    log_likelihood = np.sum(y * z - np.logaddexp(0.0, z))
    return log_likelihood - 0.5 * np.sum(w ** 2)


def hmc(log_p, w, steps, n_samples, n_warmup, rng, target=0.8):
    """Hamiltonian Monte Carlo with leapfrog steps; the step size adapts during warm-up."""
    value_and_grad = pb.value_and_grad(log_p)
    lp, g = value_and_grad(w)
    step_size, accepted = 0.05, 0
    samples, traces = [], []
    for i in tqdm(range(n_warmup + n_samples), desc="HMC", unit="iteration"):
        p = rng.standard_normal(w.shape)
        w_new, p_new, lp_new, g_new = w, p + 0.5 * step_size * g, lp, g
        for leap in range(steps):
            w_new = w_new + step_size * p_new
            lp_new, g_new = value_and_grad(w_new)
            if leap < steps - 1:
                p_new = p_new + step_size * g_new
        p_new = p_new + 0.5 * step_size * g_new
        log_ratio = (lp_new - 0.5 * p_new @ p_new) - (lp - 0.5 * p @ p)
        accept = np.log(rng.uniform()) < log_ratio     # a NaN log_ratio is a rejection
        if accept:
            w, lp, g = w_new, lp_new, g_new
        if i < n_warmup:
            step_size *= np.exp(0.1 * (min(1.0, np.exp(min(log_ratio, 0.0))) - target))
        else:
            accepted += accept
            samples.append(w)
        traces.append(lp)
    return np.array(samples), np.array(traces), accepted / n_samples, step_size


def save_plot(samples, traces, n_warmup, names, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    iterations = n_warmup + np.arange(len(samples))
    for j, name in names:
        top.plot(iterations, samples[:, j], linewidth=0.6, alpha=0.8, label=name)
    top.set_ylabel("coefficient")
    top.legend(fontsize="small", loc="upper right")
    bottom.plot(np.arange(len(traces)), traces, color="k", linewidth=0.8)
    bottom.axvline(n_warmup, color="C3", linestyle="--", label="end of warm-up")
    bottom.set_ylim(np.percentile(traces, 1) - 10, traces.max() + 5)
    bottom.set_xlabel("iteration")
    bottom.set_ylabel("log posterior")
    bottom.legend(fontsize="small", loc="lower right")
    top.set_title("HMC on Bayesian logistic regression (load_breast_cancer)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short chain (seconds)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out",
                        help="folder for the picture (default: examples/out/)")
    args = parser.parse_args()
    n_warmup, n_samples, steps = (100, 100, 10) if args.quick else (500, 2000, 20)

    data = load_breast_cancer()
    x_train, x_test, y_train, y_test = train_test_split(
        data.data, data.target, test_size=0.25, random_state=0, stratify=data.target)
    mean, sd = x_train.mean(axis=0), x_train.std(axis=0)
    x_train, x_test = (x_train - mean) / sd, (x_test - mean) / sd
    names = ["intercept"] + list(data.feature_names)
    print(f"load_breast_cancer: {len(x_train)} train and {len(x_test)} test cases, "
          f"{x_train.shape[1]} standardised features + intercept")
    print(f"HMC: {n_warmup} warm-up and {n_samples} kept iterations, {steps} leapfrog steps")

    rng = np.random.default_rng(0)
    samples, traces, acceptance, step_size = hmc(
        lambda w: log_posterior(w, x_train, y_train), np.zeros(len(names)), steps,
        n_samples, n_warmup, rng)

    print(f"acceptance rate {acceptance:.2f} with step size {step_size:.4f}")
    post_mean, post_sd = samples.mean(axis=0), samples.std(axis=0)
    largest = np.argsort(-np.abs(post_mean))[:5]
    print("largest coefficients (posterior mean ± sd):")
    for j in largest:
        print(f"  {names[j]:24s} {post_mean[j]:+.2f} ± {post_sd[j]:.2f}")
    logits = x_test @ samples[:, 1:].T + samples[:, 0]
    probability = np.mean(1.0 / (1.0 + np.exp(-logits)), axis=1)
    accuracy = np.mean((probability > 0.5) == y_test)
    print(f"test accuracy of the posterior predictive: {accuracy:.3f}")

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "bayes_trace.png"
    save_plot(samples, traces, n_warmup, [(j, names[j]) for j in largest[:3]], path)
    print(f"saved {path}")


if __name__ == "__main__":
    main()
