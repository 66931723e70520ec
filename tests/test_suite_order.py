"""The suite's file order: the costliest files first, each file's tests together and in their order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import suite_order

ROOT = Path(__file__).resolve().parent.parent


def test_every_costed_file_exists() -> None:
    missing = [name for name in suite_order.COSTS if not (ROOT / name).is_file()]
    assert missing == [], "renamed or removed test files still costed in tests/suite_order.py"


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


def _ordered(*nodeids: str) -> list[str]:
    items: list[Any] = [_Item(n) for n in nodeids]
    return [item.nodeid for item in suite_order.longest_first(items)]


def test_costliest_first_then_most_tests_and_each_file_together() -> None:
    cheap, costly = "tests/unlisted_a.py", "tests/bench/test_bench_smoke.py"
    costlier = max(suite_order.COSTS, key=suite_order.COSTS.__getitem__)
    assert _ordered(
        f"{cheap}::t1",
        f"{costly}::t1",
        "tests/unlisted_b.py::t1",
        "tests/unlisted_b.py::t2",
        f"{costlier}::t1",
        f"{costly}::t2",
    ) == [
        f"{costlier}::t1",
        f"{costly}::t1",
        f"{costly}::t2",
        "tests/unlisted_b.py::t1",
        "tests/unlisted_b.py::t2",
        f"{cheap}::t1",
    ]


def test_the_run_keeps_this_order(pytestconfig: pytest.Config) -> None:
    """xdist's own reorder (most tests first) would undo it: the suite's options turn it off."""
    assert pytestconfig.getoption("loadscopereorder") is False
