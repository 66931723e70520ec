"""Shared test configuration: the order files are handed out in, and the conformance summary per backend."""

from __future__ import annotations

from collections import defaultdict

import pytest

from tests import suite_order


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Hand the costliest files out first (`tests/suite_order.py` says why)."""
    items[:] = suite_order.longest_first(items)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print, per backend (the conformance test class), how many conformance cases passed and failed."""
    outcomes: dict[str, dict[str, str]] = defaultdict(dict)
    for reports in terminalreporter.stats.values():
        for report in reports:
            if not isinstance(report, pytest.TestReport) or "conformance" not in report.keywords:
                continue
            parts = report.nodeid.split("::")
            if len(parts) < 3:
                continue
            seen = outcomes[parts[-2]]
            if report.failed:
                seen[report.nodeid] = "failed"
            elif report.skipped and seen.get(report.nodeid) != "failed":
                seen[report.nodeid] = "skipped"
            elif report.when == "call" and report.passed:
                seen.setdefault(report.nodeid, "passed")
    if not outcomes:
        return
    terminalreporter.section("conformance cases per backend")
    for backend in sorted(outcomes):
        counts = list(outcomes[backend].values())
        line = f"conformance: {backend} {counts.count('passed')} passed, {counts.count('failed')} failed"
        if counts.count("skipped"):
            line += f", {counts.count('skipped')} skipped"
        terminalreporter.write_line(line)
