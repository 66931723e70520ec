"""One workload of `python -m bench` run end to end at its tiny size, as the workloads' own tests run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def missing_bench_extra() -> None:
    """Skip, or fail under CI (which installs it), when the `bench` extra is not installed."""
    message = "the bench extra is not installed (pip install -e '.[bench]')"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def run_tiny(workload: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    """`python -m bench --tiny --only WORKLOAD` on the test databases (it must exit 0): its JSON document and
    the table it printed."""
    out_json = tmp_path / "results.json"
    run = subprocess.run(
        [sys.executable, "-m", "bench", "--tiny", "--only", workload, "--json", str(out_json)],
        cwd=ROOT,
        env=dict(os.environ, FLOWDECK_BENCH_DB_SUFFIX="_test"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    doc: dict[str, Any] = json.loads(out_json.read_text())
    return doc, run.stdout
