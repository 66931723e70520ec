"""A private PgBouncer: its ini written in a temporary folder, listening on a free port, started and stopped
by its caller. No system service: the tests (tests/store/test_pgbouncer.py) and W19 (bench/pooled_w1.py)
each run their own.

`python -m bench.pgbouncer [--port 6432]` runs one in the foreground in front of 127.0.0.1:5432 until
Ctrl-C, for trying Flowdeck behind it by hand (docs/pooling.md).

Every database name reaches the server's database of that name in transaction mode (`*`); a name ending in
`_session` reaches the same database in session mode (what the LISTEN connection needs, store/django/
pooling.py). Trust authentication for the users given (the test machine's PostgreSQL trusts local
connections too). PgBouncer refuses to run as root: as root, it drops to the `postgres` user.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

__all__ = ["SESSION_SUFFIX", "PgBouncer", "PgBouncerMissing", "binary", "running"]

SESSION_SUFFIX = "_session"
# Debian installs it in /usr/sbin, which is not on every PATH
_PLACES = ("/usr/sbin/pgbouncer", "/usr/local/sbin/pgbouncer", "/usr/local/bin/pgbouncer")


class PgBouncerMissing(RuntimeError):
    """No `pgbouncer` binary on this machine (Debian: apt-get install pgbouncer)."""


def binary() -> str:
    """The pgbouncer executable; PgBouncerMissing when there is none."""
    found = shutil.which("pgbouncer") or next((p for p in _PLACES if os.access(p, os.X_OK)), None)
    if found is None:
        raise PgBouncerMissing(PgBouncerMissing.__doc__)
    return found


def version() -> str:
    """`PgBouncer 1.18.0`: the first line of `pgbouncer --version`."""
    out = subprocess.run([binary(), "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0].strip()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class PgBouncer:
    """A running PgBouncer: where it listens, and its folder (ini, log)."""

    host: str
    port: int
    folder: Path
    process: subprocess.Popen[bytes]

    def url(self, database: str, user: str = "postgres", *, session: bool = False) -> str:
        """The URL of `database` through this pooler: its transaction pool, or its session pool."""
        name = database + SESSION_SUFFIX if session else database
        return f"postgresql://{user}@{self.host}:{self.port}/{name}"

    def transactions(self, user: str = "postgres") -> dict[str, int]:
        """Transactions served so far per pool entry (`SHOW STATS` on the admin console, which speaks only
        the simple query protocol: a client-side cursor)."""
        admin = f"postgresql://{user}@{self.host}:{self.port}/pgbouncer"
        with psycopg.connect(admin, autocommit=True, cursor_factory=psycopg.ClientCursor) as conn:
            cursor = conn.execute("SHOW STATS")
            names = [column.name for column in cursor.description or ()]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        return {str(row["database"]): int(row["total_xact_count"]) for row in rows}

    def log(self) -> str:
        path = self.folder / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""


def ini(
    port: int,
    folder: Path,
    *,
    server_host: str,
    server_port: int,
    databases: Sequence[str],
    pool_size: int,
    run_as: str | None,
    users: Sequence[str] = ("postgres",),
) -> str:
    """The configuration: `*` in transaction mode, each of `databases` also as `<name>_session`."""
    server = f"host={server_host} port={server_port}"
    entries = [f"{name}{SESSION_SUFFIX} = {server} dbname={name} pool_mode=session" for name in databases]
    lines = [
        "[databases]",
        *entries,
        f"* = {server}",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        f"listen_port = {port}",
        "unix_socket_dir =",
        "auth_type = trust",
        f"auth_file = {folder / 'users.txt'}",
        "pool_mode = transaction",
        # the admin console (`SHOW STATS`), for the users given: what went through which pool
        f"admin_users = {', '.join(users)}",
        f"default_pool_size = {pool_size}",
        "max_client_conn = 1000",
        f"logfile = {folder / 'pgbouncer.log'}",
        f"pidfile = {folder / 'pgbouncer.pid'}",
        "log_connections = 0",
        "log_disconnections = 0",
    ]
    if run_as:
        lines.append(f"user = {run_as}")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def running(
    *,
    server_host: str = "127.0.0.1",
    server_port: int = 5432,
    databases: Sequence[str] = (),
    users: Sequence[str] = ("postgres",),
    pool_size: int = 20,
    port: int | None = None,
    wait: float = 10.0,
) -> Iterator[PgBouncer]:
    """A PgBouncer in front of `server_host:server_port` for the block; stopped (SIGINT, then killed) at its
    end. PgBouncerMissing when the binary is absent; RuntimeError when it does not come up."""
    executable = binary()
    folder = Path(tempfile.mkdtemp(prefix="flowdeck-pgbouncer-"))
    run_as = "postgres" if os.geteuid() == 0 else None
    port = port or free_port()
    (folder / "users.txt").write_text("".join(f'"{user}" ""\n' for user in users))
    config = ini(
        port,
        folder,
        server_host=server_host,
        server_port=server_port,
        databases=databases,
        pool_size=pool_size,
        run_as=run_as,
        users=users,
    )
    (folder / "pgbouncer.ini").write_text(config)
    if run_as:  # it writes its log and pid file as that user
        owner = pwd.getpwnam(run_as)
        for path in (folder, *folder.iterdir()):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    # -q: its log goes to the file only (the log() of the answer), not to the caller's terminal
    process = subprocess.Popen([executable, "-q", str(folder / "pgbouncer.ini")], stdout=subprocess.DEVNULL)
    bouncer = PgBouncer("127.0.0.1", port, folder, process)
    try:
        _wait_listening(bouncer, wait)
        yield bouncer
    finally:
        _stop(process)
        shutil.rmtree(folder, ignore_errors=True)


def _wait_listening(bouncer: PgBouncer, wait: float) -> None:
    deadline = time.monotonic() + wait
    while True:
        if bouncer.process.poll() is not None:
            raise RuntimeError(f"pgbouncer exited ({bouncer.process.returncode}): {bouncer.log()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection((bouncer.host, bouncer.port), 0.2):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"pgbouncer did not listen within {wait:g}s: {bouncer.log()[-2000:]}")
        time.sleep(0.02)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)  # its "shut down now"
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pgbouncer", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=6432)
    parser.add_argument("--database", action="append", default=[], help="also as <name>_session")
    ns = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends through `running`'s finally: it stops
    with running(port=ns.port, databases=ns.database) as bouncer:
        print(f"{version()} on {bouncer.host}:{bouncer.port} (folder {bouncer.folder}); Ctrl-C stops it")
        with contextlib.suppress(KeyboardInterrupt):
            bouncer.process.wait()


if __name__ == "__main__":
    main()
