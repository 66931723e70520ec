"""schemathesis against the live server's `/api/openapi.json`, bounded in time: no 5xx, and every response
conforms to the document (status, content type, headers, body schema); schema-violating requests are refused.

It runs last in this package (file order): its cancel-alls and starts would disturb the other tests.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.api.client import Live

CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
        "negative_data_rejection",
        "ignored_auth",
    ]
)
MAX_SECONDS = 90


def test_schemathesis_finds_nothing(live: Live, tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        f"{live.base}/api/openapi.json",
        "--header",
        f"Authorization: Bearer {live.credentials['operator_token']}",
        "--checks",
        CHECKS,
        "--max-time",
        str(MAX_SECONDS),
        "--max-examples",
        "50",
        "--generation-database",
        "none",
        "--no-color",
        # Its body blocks a worker for a minute waiting for a file; nothing to learn there.
        "--exclude-operation-id",
        "start_gated",
    ]
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=MAX_SECONDS + 120, check=False
    )
    assert done.returncode == 0, "\n".join(
        [done.stdout[-8000:], done.stderr[-4000:], "server tracebacks:", *tracebacks(live.server_log)[:3]]
    )


def tracebacks(log: Path) -> list[str]:
    """The tracebacks in a server log, each up to its exception line."""
    found: list[str] = []
    current: list[str] | None = None
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("Traceback"):
            current = [line]
        elif current is not None:
            current.append(line)
            if not line.startswith((" ", "\t")) and not line.startswith("During handling"):
                found.append("\n".join(current))
                current = None
    return found
