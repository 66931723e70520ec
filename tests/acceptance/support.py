"""Running the project's commands as subprocesses: each gets DATABASE_URL, output is captured whole."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from tests.acceptance.warm_manage import WarmManage

ROOT = Path(__file__).resolve().parents[2]
MANAGE = str(ROOT / "manage.py")
PYTHON = sys.executable
# Generous: the machine may be busy with other suites, and Django's start-up is most of a CLI call.
CALL_TIMEOUT = 120


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def explain(self) -> str:
        return f"$ manage.py {' '.join(self.args)}\nrc={self.returncode}\n{self.stdout}\n{self.stderr}"


def ctrl_c_reaches_it() -> None:
    """A child's Ctrl-C as at a terminal: SIGINT back to its default. A suite started in the background
    by a non-interactive shell (`cmd &`) inherits SIGINT ignored, and so would every command it runs:
    the tests that press Ctrl-C would then wait for an end that never comes."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def environment(database_url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        DJANGO_SETTINGS_MODULE="flowdeck.console.settings",
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)  # may name other settings (DJANGO_SETTINGS_MODULE)
    return env


_warm = WarmManage(ROOT, Path(tempfile.mkdtemp(prefix="flowdeck-warm-manage-")))
warm_manage = _warm.call


def manage(database_url: str, *args: str, env: dict[str, str] | None = None, cold: bool = False) -> Result:
    """Run `manage.py ARGS` to its end: forked from a warm parent of the same environment
    (tests/acceptance/warm_manage.py), or as a plain subprocess when `cold` (a test of start-up itself)."""
    if not cold:
        code, out, err = warm_manage(env or environment(database_url), args, CALL_TIMEOUT)
        return Result(tuple(args), code, out, err)
    done = subprocess.run(
        [PYTHON, MANAGE, *args],
        cwd=ROOT,
        env=env or environment(database_url),
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT,
        check=False,
    )
    return Result(tuple(args), done.returncode, done.stdout, done.stderr)


def manage_many(database_url: str, calls: Sequence[Sequence[str]]) -> list[Result]:
    """Several independent calls at once (each is mostly Django's start-up)."""
    with ThreadPoolExecutor(max_workers=6) as pool:
        return list(pool.map(lambda args: manage(database_url, *args), calls))


def ok(result: Result) -> Result:
    assert result.returncode == 0, result.explain()
    return result


def refused(result: Result, *fragments: str) -> Result:
    """Bad input: exit code 2, one CommandError line naming what was wrong, no traceback."""
    assert result.returncode == 2, result.explain()
    assert "Traceback" not in result.stderr, result.explain()
    assert "CommandError:" in result.stderr, result.explain()
    for fragment in fragments:
        assert fragment in result.stderr, result.explain()
    return result


class Background:
    """A long-running manage.py process (flowdeck_workers, demo, daphne) with its output in files."""

    def __init__(
        self, name: str, argv: Sequence[str], env: dict[str, str], folder: Path, cwd: Path = ROOT
    ) -> None:
        self.name = name
        self.out_path = folder / f"{name}.out"
        self.err_path = folder / f"{name}.err"
        self._out: IO[str] = self.out_path.open("w")
        self._err: IO[str] = self.err_path.open("w")
        self.process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdout=self._out,
            stderr=self._err,
            text=True,
            preexec_fn=ctrl_c_reaches_it,
        )

    @classmethod
    def manage(cls, name: str, database_url: str, folder: Path, *args: str, **extra: str) -> Background:
        return cls(name, [PYTHON, MANAGE, *args], environment(database_url, **extra), folder)

    @property
    def stdout(self) -> str:
        return self.out_path.read_text()

    @property
    def stderr(self) -> str:
        return self.err_path.read_text()

    def explain(self) -> str:
        return f"[{self.name}] rc={self.process.poll()}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            if self.process.poll() is not None:
                pytest.fail(f"{self.name} exited before {what}\n{self.explain()}")
            time.sleep(0.2)
        pytest.fail(f"{self.name}: no {what} within {timeout:g}s\n{self.explain()}")

    def wait_for_count(self, count: Callable[[], int], target: int, what: str, stall: float = 60) -> None:
        """Wait for `count()` to reach `target` for as long as it keeps rising: a loaded machine is slower,
        not wrong; `stall` seconds without a rise (or this process's exit) fails, saying so."""
        seen, rose = count(), time.monotonic()
        while seen < target:
            if self.process.poll() is not None:
                pytest.fail(f"{self.name} exited at {seen} of {target} {what}\n{self.explain()}")
            if time.monotonic() - rose > stall:
                stuck = f"{what} stayed at {seen} of {target} for {stall:g}s"
                pytest.fail(f"{self.name}: {stuck}\n{self.explain()}")
            time.sleep(0.2)
            now = count()
            if now > seen:
                seen, rose = now, time.monotonic()

    def wait_for_output(self, text: str, timeout: float = 120) -> None:
        self.wait_for(lambda: text in self.stdout, repr(text), timeout)

    def signal(self, sig: signal.Signals) -> None:
        self.process.send_signal(sig)

    def finish(self, timeout: float = 60) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"{self.name} did not stop within {timeout:g}s\n{self.explain()}")
        finally:
            self._out.close()
            self._err.close()

    def close(self) -> None:
        """Make sure it is gone (a failing test must not leave processes behind)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._out.close()
        self._err.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


_templates: dict[str, Path] = {}


def migrated_sqlite(path: Path) -> str:
    """A SQLite database at `path` with the project's migrations applied, as `manage.py migrate` leaves it:
    a copy of one migrated once per test process (a migrate of every app is seconds of a test's time)."""
    template = _templates.get("project")
    if template is None:
        template = Path(tempfile.mkdtemp(prefix="flowdeck-migrated-")) / "template.sqlite3"
        ok(manage(sqlite_url(template), "migrate", "--verbosity", "0"))
        _templates["project"] = template
    shutil.copyfile(template, path)  # the migrate process ended: its WAL is checkpointed into the file
    return sqlite_url(path)
