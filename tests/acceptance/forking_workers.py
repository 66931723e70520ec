"""A warm parent that forks `flowdeck_workers` processes on demand, so a test can SIGKILL and replace workers
a hundred times without paying Django's start-up each time (seconds on a loaded machine).

Run as `python -m tests.acceptance.forking_workers FOLDER -- RUNWORKERS-ARGS…` with DJANGO_SETTINGS_MODULE
and DATABASE_URL set. Each line "spawn" on stdin forks one child, which runs `flowdeck_workers` with the given
arguments, its output in FOLDER/worker-<pid>.out and .err; the parent answers the child's pid on a line of
its own. The children are real processes (killed by the test with SIGKILL); the parent reaps them. It
forks before any database connection is opened, so no child inherits one.
"""

from __future__ import annotations

import os
import signal
import sys


def main(argv: list[str]) -> None:
    folder, args = argv[0], argv[argv.index("--") + 1 :]
    import django

    django.setup()
    from django.core.management import call_command

    from flowdeck.console.management.commands import flowdeck_workers  # noqa: F401  (imported once, here)

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    for line in sys.stdin:
        if line.strip() != "spawn":
            continue
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            _child(folder, args, call_command, parent)
        print(pid, flush=True)


def _die_with(parent: int) -> None:
    """SIGKILL this child when its parent dies (Linux's PR_SET_PDEATHSIG): a test closes the forker by
    killing it, and a worker it had just spawned would otherwise live on, adopted by init, retrying a
    database the test has dropped."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the request took
        os._exit(1)


def _child(folder: str, args: list[str], call_command: object, parent: int) -> None:
    _die_with(parent)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.getpid()
    out = os.open(f"{folder}/worker-{pid}.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    err = os.open(f"{folder}/worker-{pid}.err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    code = 0
    try:
        call_command("flowdeck_workers", *args)  # type: ignore[operator]
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
