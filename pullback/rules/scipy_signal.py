"""Rules for scipy.signal."""
