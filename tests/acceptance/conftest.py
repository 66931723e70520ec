"""Fixtures of the acceptance tests: the wheel, built once per test process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acceptance import wheel_support


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheel_support.build_wheel(tmp_path_factory.mktemp("wheel"))
