"""The command that creates console users, `manage.py createsuperuser`, typed at a terminal: Django's
password validators refuse a weak password (and nobody is created), and accept a strong one."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.support import (
    MANAGE,
    PYTHON,
    ROOT,
    ctrl_c_reaches_it,
    environment,
    manage,
    migrated_sqlite,
)

pytestmark = pytest.mark.slow

PROMPT_TIMEOUT = 60.0


class Terminal:
    """A command on a pseudo-terminal of its own (no controlling terminal: getpass reads the pty)."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [PYTHON, MANAGE, *args],
            cwd=ROOT,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=ctrl_c_reaches_it,
        )
        os.close(slave)
        self.seen = ""

    def expect(self, text: str) -> str:
        deadline = time.monotonic() + PROMPT_TIMEOUT
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r} in {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the command ended
                    chunk = b""
                assert chunk, f"the command ended before {text!r}: {self.seen!r}"
                self.seen += chunk.decode(errors="replace")
        return self.seen

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def close(self) -> int:
        """Wait for the command's end (reading what it still prints); answers its exit code."""
        try:
            deadline = time.monotonic() + PROMPT_TIMEOUT
            while self.process.poll() is None and time.monotonic() < deadline:
                ready, _, _ = select.select([self.master], [], [], 0.5)
                if ready:
                    with contextlib.suppress(OSError):
                        self.seen += os.read(self.master, 4096).decode(errors="replace")
            if self.process.poll() is None:
                self.process.kill()
            return self.process.wait(timeout=PROMPT_TIMEOUT)
        finally:
            os.close(self.master)


def _users(database: Path, username: str) -> int:
    with sqlite3.connect(database) as db:
        return int(db.execute("SELECT count(*) FROM auth_user WHERE username = ?", (username,)).fetchone()[0])


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "users.sqlite3"
    migrated_sqlite(path)
    return path


def test_createsuperuser_refuses_a_weak_password(database: Path) -> None:
    terminal = Terminal(
        environment(f"sqlite:///{database}"),
        "createsuperuser",
        "--username",
        "wendy",
        "--email",
        "wendy@example.com",
    )

    terminal.expect("Password: ")
    terminal.type("wendy1")
    terminal.expect("Password (again): ")
    terminal.type("wendy1")
    said = terminal.expect("Bypass password validation and create user anyway? [y/N]: ")
    terminal.type("N")
    terminal.expect("Password: ")
    terminal.process.send_signal(signal.SIGINT)  # Ctrl-C at the next prompt

    assert "This password is too short. It must contain at least 12 characters." in said
    assert "The password is too similar to the username." in said
    assert terminal.close() == 1
    assert "Operation cancelled." in terminal.seen
    assert _users(database, "wendy") == 0


def test_createsuperuser_takes_a_strong_password(database: Path) -> None:
    terminal = Terminal(
        environment(f"sqlite:///{database}"),
        "createsuperuser",
        "--username",
        "sam",
        "--email",
        "sam@example.com",
    )

    terminal.expect("Password: ")
    terminal.type("correct horse battery staple")
    terminal.expect("Password (again): ")
    terminal.type("correct horse battery staple")
    terminal.expect("Superuser created successfully.")

    assert terminal.close() == 0
    assert _users(database, "sam") == 1


def _noinput(database: Path, username: str, password: str) -> Any:
    return manage(
        f"sqlite:///{database}",
        *("createsuperuser", "--noinput", "--username", username, "--email", f"{username}@example.com"),
        env=environment(f"sqlite:///{database}", DJANGO_SUPERUSER_PASSWORD=password),
    )


def test_createsuperuser_noinput_refuses_a_weak_password_from_the_environment(database: Path) -> None:
    refused = _noinput(database, "walt", "12345")

    assert refused.returncode == 2, refused.explain()
    assert refused.stderr.splitlines() == [
        "CommandError: DJANGO_SUPERUSER_PASSWORD is refused:",
        "  This password is too short. It must contain at least 12 characters.",
        "  This password is too common.",
        "  This password is entirely numeric.",
    ]
    assert _users(database, "walt") == 0


def test_createsuperuser_noinput_takes_a_strong_password_from_the_environment(database: Path) -> None:
    created = _noinput(database, "vera", "correct horse battery staple")

    assert created.returncode == 0, created.explain()
    assert _users(database, "vera") == 1
