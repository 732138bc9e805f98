"""Rules for scipy.special."""
