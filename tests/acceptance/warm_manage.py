"""`manage.py` calls forked from a warm parent: each call is still a process of its own running
`manage.py ARGS` from its argv (Django's `execute_from_command_line`, its exit code, its stdout and stderr),
but the seconds of Django's start-up are paid once per environment instead of once per call.

The suite makes hundreds of CLI calls; start-up (settings, app loading, the commands' imports) was most of
each one's CPU. What the fork skips is what every call of one environment would repeat identically; what a
test of start-up itself needs (settings refused, a script's entry point, an installed wheel) runs as a
plain subprocess (`support.manage(..., cold=True)`, or its own `subprocess.run`).

The parent (`python -m tests.acceptance.warm_manage`, in the call's environment) sets Django up, imports
the commands, closes every database connection (no child inherits one), then serves one JSON line per call
on stdin ({"args": [...], "out": path, "err": path}) with a line holding the child's exit status.
`WarmManage` is the test side: one parent per distinct environment, kept for the test process's life.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path

KEPT = 4
"""Parents kept alive at once per test process (most tests make their calls on one database)."""
IGNORED = ("PYTEST_CURRENT_TEST",)
"""Environment variables that do not make a different parent (pytest rewrites this one per test)."""


def main() -> None:
    import django

    django.setup()
    from django.core.management import get_commands, load_command_class
    from django.db import connections

    import manage  # the project's manage.py, whose main() each child runs

    for name, app in get_commands().items():  # every command's module imported once, here
        if app.startswith(("flowdeck", "django.core", "django.contrib.auth")):
            load_command_class(app, name)
    connections.close_all()
    for line in sys.stdin:
        call = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(manage.__file__, call, manage.main)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


def _child(script: str, call: dict[str, object], main: object) -> None:
    """Run the call as `manage.py` would, with its output in the call's files; never returns."""
    signal.alarm(int(str(call["timeout"])))  # a call that hangs dies as a timed-out subprocess would
    out_text, err_text = (sys.stdout.encoding, sys.stdout.errors), (sys.stderr.encoding, sys.stderr.errors)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(os.open(str(call["out"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.dup2(os.open(str(call["err"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    sys.stdout = open(1, "w", encoding=out_text[0], errors=out_text[1], closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding=err_text[0], errors=err_text[1], closefd=False)  # noqa: SIM115
    code = 0
    try:
        sys.argv = [script, *call["args"]]  # type: ignore[list-item]
        main()  # type: ignore[operator]
    except SystemExit as exiting:
        code = exiting.code if isinstance(exiting.code, int) else (0 if exiting.code is None else 1)
        if isinstance(exiting.code, str):
            print(exiting.code, file=sys.stderr)
    except BaseException:  # as the interpreter does with an uncaught exception
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


class Parent:
    """One warm parent process, serving calls one at a time."""

    def __init__(self, env: Mapping[str, str], cwd: Path, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._calls = 0
        self._err = (folder / "parent.err").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.acceptance.warm_manage"],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
        )

    def call(self, args: Sequence[str], timeout: float) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) of `manage.py ARGS` in a child."""
        with self._lock:
            self._calls += 1
            out, err = self.folder / f"{self._calls}.out", self.folder / f"{self._calls}.err"
            assert self.process.stdin is not None
            assert self.process.stdout is not None
            line = json.dumps({"args": list(args), "out": str(out), "err": str(err), "timeout": timeout})
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
            answer = self.process.stdout.readline()
        if not answer:
            said = (self.folder / "parent.err").read_text()
            raise RuntimeError(f"the warm manage.py parent died:\n{said[-3000:]}")
        code = int(answer)
        if code == -signal.SIGALRM:
            raise subprocess.TimeoutExpired(["manage.py", *args], timeout)
        return code, _read(out), _read(err)

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        self._err.close()


def _read(path: Path) -> str:
    text = path.read_bytes().decode(errors="surrogateescape")  # as subprocess.run(text=True) would
    path.unlink()
    return text.replace("\r\n", "\n")


class WarmManage:
    """The test process's parents, one per environment (the least recently used closed past `KEPT`)."""

    def __init__(self, cwd: Path, folder: Path) -> None:
        self._cwd = cwd
        self._folder = folder
        self._parents: OrderedDict[tuple[tuple[str, str], ...], Parent] = OrderedDict()
        self._lock = threading.Lock()
        atexit.register(self.close)

    def call(self, env: Mapping[str, str], args: Sequence[str], timeout: float) -> tuple[int, str, str]:
        key = tuple(sorted((k, v) for k, v in env.items() if k not in IGNORED))
        with self._lock:
            parent = self._parents.pop(key, None)
            if parent is None or parent.process.poll() is not None:
                folder = self._folder / f"parent-{len(self._parents)}-{os.urandom(4).hex()}"
                folder.mkdir(parents=True)
                parent = Parent(env, self._cwd, folder)
            self._parents[key] = parent
            while len(self._parents) > KEPT:
                self._parents.popitem(last=False)[1].close()
        return parent.call(args, timeout)

    def close(self) -> None:
        with self._lock:
            while self._parents:
                self._parents.popitem()[1].close()
        shutil.rmtree(self._folder, ignore_errors=True)


if __name__ == "__main__":
    main()
