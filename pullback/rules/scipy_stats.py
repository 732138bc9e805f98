"""Rules for scipy.stats."""
