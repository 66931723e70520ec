"""How a measuring child process hands its result back to `python -m bench`.

Each workload runs in a fresh interpreter (DBOS and Django are both configured once per process), prints
its progress to stderr and, last, one line `BENCH_RESULT <json>` on stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
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
    """Run `python -m module args…` and return the JSON it emitted; its stderr passes through.

    The child leads a process group of its own, with every process it starts: past `timeout`, or if this
    process is interrupted, the whole group is killed (a hung grandchild cannot outlive the bench), and
    once the child is done any process it left behind is killed too."""
    command = [sys.executable, "-m", module, *args]
    proc = subprocess.Popen(
        command, cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise TimeoutError(
            f"{module} {' '.join(args)} ran over {timeout:g} s: killed with its children"
        ) from None
    except BaseException:
        kill_group(proc)
        raise
    kill_group(proc)
    for line in reversed(out.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    raise RuntimeError(f"{module} {' '.join(args)} exited {proc.returncode} without a result")


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the process group `proc` leads (it was started with `start_new_session`), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    if proc.stdout:
        with contextlib.suppress(OSError):
            proc.stdout.close()


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


def go(proc: subprocess.Popen[str]) -> None:
    """Tell a worker that waits for it (W1's `--wait-go`) to begin."""
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()


def wait_ready(proc: subprocess.Popen[str], timeout: float = 120) -> str:
    """The detail of the worker's ready line; a worker that is not ready within `timeout` is killed
    (TimeoutError), one that exits first is a RuntimeError."""
    found: list[str | BaseException] = []

    def read() -> None:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                if line.startswith(READY):
                    found.append(line[len(READY) :].strip())
                    return
            found.append(RuntimeError(f"worker {proc.args} exited {proc.wait()} before it was ready"))
        except (OSError, ValueError) as error:  # the pipe closed under the reader: the worker is gone
            found.append(RuntimeError(f"worker {proc.args} lost before it was ready ({error})"))

    reader = threading.Thread(target=read, name="bench-wait-ready", daemon=True)
    reader.start()
    reader.join(timeout)
    if not found:
        proc.kill()
        proc.wait()
        raise TimeoutError(f"worker {proc.args} not ready after {timeout:g} s: killed")
    if isinstance(found[0], BaseException):
        raise found[0]
    return found[0]


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
