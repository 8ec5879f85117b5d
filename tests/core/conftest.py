"""Every core test runs on both backends: the numpy reference and the compiled numba kernels
(core/backend.py). Module scope, so hypothesis's @given tests take part too."""

import pytest

from geometry_queries.core.backend import use


@pytest.fixture(scope="module", params=["numpy", "numba"], autouse=True)
def backend(request):
    """The backend every query in the test runs on."""
    with use(request.param):
        yield request.param
