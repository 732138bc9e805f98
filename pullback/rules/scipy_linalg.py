"""Rules for scipy.linalg."""
