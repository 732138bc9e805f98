"""Doctests (``pytest --doctest-modules pullback``) run with ``np`` and ``pb`` in scope."""

import numpy as np
import pytest

import pullback as pb


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    doctest_namespace["np"] = np
    doctest_namespace["pb"] = pb
