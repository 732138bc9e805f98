"""One module per library; each has ``build(workload, data) -> (run, to_numpy)``.

``run()`` computes the workload's derivative (with all work finished, so that it can be
timed) and ``to_numpy(result)`` turns its result into a list of ndarrays for the check
against pullback. This module imports no library, so the driver can read the tables.
"""

LIBS = ("pullback", "pullback_jit", "numpy", "autograd", "mygrad", "torch", "jax", "jax_jit")

MODULES = {
    "pullback": "pullback_lib", "pullback_fn": "pullback_lib", "numpy": "numpy_lib",
    "pullback_jit": "pullback_jit_lib",
    "autograd": "autograd_lib", "mygrad": "mygrad_lib", "torch": "torch_lib",
    "jax": "jax_lib", "jax_jit": "jax_lib",
    "tape": "tape_lib",  # the floor of a Python tape, for bench.floor (not in the table)
}

# Pairs that cannot be run, with the reason shown in the table.
UNSUPPORTED = {
    ("mygrad", "hessian"): "MyGrad has no higher-order derivatives",
}

# Libraries only run on some workloads.
EXTRA = {
    # training_loop with pb.value_and_grad, to set the Tracker API against the functional one
    "pullback_fn": ("training_loop",),
}


def pairs(workloads, libs):
    """The (workload, library) pairs to run, with the reason for those left out."""
    run, skipped = [], {}
    for w in workloads:
        for lib in libs:
            if lib in EXTRA and w not in EXTRA[lib]:
                continue
            if (lib, w) in UNSUPPORTED:
                skipped[(w, lib)] = UNSUPPORTED[(lib, w)]
            else:
                run.append((w, lib))
    return run, skipped
