"""The derivative rules of NumPy's functions."""
