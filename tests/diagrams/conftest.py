from __future__ import annotations

import pytest

from engine.flow import Flow
from examples import seed
from tests.diagrams.sample_flows import SAMPLES

ALL: dict[str, Flow] = {**seed.ALL_FLOWS, **SAMPLES}


@pytest.fixture(scope="session")
def all_flows() -> dict[str, Flow]:
    """Every seed example and every sample flow, by name."""
    return ALL
