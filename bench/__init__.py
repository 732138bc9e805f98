"""Benchmarks of pullback against hand-written NumPy and peer libraries (`make bench`)."""
