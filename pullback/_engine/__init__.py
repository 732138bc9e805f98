"""The engine: tracked values, dispatch and recording, the backward pass, the rule
registry, refusals and the interception of NumPy's and SciPy's functions. Private: users
import from ``pullback``."""
