"""The derivative rules of SciPy's functions; each module loads when the program imports
the SciPy module it covers (``_engine/interception.py``'s ``SCIPY_RULES``)."""
