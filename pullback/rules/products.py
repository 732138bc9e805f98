"""Rules for products."""
