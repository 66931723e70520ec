"""How a measuring child process hands its result back to `python -m bench`.

Each workload runs in a fresh interpreter (DBOS and Django are both configured once per process), prints
its progress to stderr and, last, one line `BENCH_RESULT <json>` on stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MARK = "BENCH_RESULT "
READY = "BENCH_READY"
ROOT = Path(__file__).resolve().parent.parent


def emit(result: Mapping[str, Any]) -> None:
    print(MARK + json.dumps(result, default=str), flush=True)


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_child(module: str, args: Sequence[str], timeout: float = 900) -> dict[str, Any]:
    """Run `python -m module args…` and return the JSON it emitted; its stderr passes through."""
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.PIPE,
        text=True,
        timeout=timeout,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    raise RuntimeError(f"{module} {' '.join(args)} exited {proc.returncode} without a result")


def spawn_worker(
    module: str, args: Sequence[str], env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start a long-lived worker process; `wait_ready` blocks until it says it is serving."""
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=child_env() | dict(env or {}),
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
    )


def wait_ready(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(READY):
            return line[len(READY) :].strip()
    raise RuntimeError(f"worker {proc.args} exited {proc.wait()} before it was ready")


def announce_ready(detail: str = "") -> None:
    print(f"{READY} {detail}", flush=True)


def stop_worker(proc: subprocess.Popen[str], timeout: float = 10) -> None:
    """End a worker once its measurement is over: SIGTERM, then SIGKILL if it lingers.

    No orderly shutdown is needed (its work is done and durable), and its database sessions end with it,
    which is what flushes their commit counters into pg_stat_database.
    """
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream:
            with contextlib.suppress(OSError):
                stream.close()
