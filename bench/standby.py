"""A private primary and its streaming standby: two PostgreSQL clusters in a temporary folder, on free ports,
started and stopped by their caller; the primary can be killed and the standby promoted. No system service,
and never the machine's shared server: the failover test (tests/acceptance/test_failover.py), the replica
reads' tests and anyone trying the runbook (docs/failover.md) each run their own.

`python -m bench.standby` runs a pair in the foreground until Ctrl-C and prints their multi-host URL.

The primary is made by `initdb` (trust authentication, as the test machine's server has), the standby by
`pg_basebackup -R` from it, streaming; the primary commits synchronously (`synchronous_standby_names`
names the standby), so a commit a client heard of is on both. The standby is configured with no
synchronous standby of its own: promoted, it runs alone and its commits wait for nobody. As root, every
PostgreSQL program runs as the `postgres` OS user (`runuser`), which PostgreSQL requires.

`fsync = off`: the kills here are of processes, never of the machine, so the page cache keeps what was
written; it spares a shared test machine's disk.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from bench.pgbouncer import free_port

__all__ = ["BIN", "Cluster", "Pair", "StandbyMissing", "running"]


def _server_programs() -> Path:
    """FLOWDECK_PG_BIN, else the newest Debian server install (/usr/lib/postgresql/<version>/bin)."""
    if "FLOWDECK_PG_BIN" in os.environ:
        return Path(os.environ["FLOWDECK_PG_BIN"])
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else Path("/usr/lib/postgresql/15/bin")


BIN = _server_programs()
STANDBY_NAME = "flowdeck_standby"
OS_USER = "postgres"


class StandbyMissing(RuntimeError):
    """No PostgreSQL server programs (initdb, pg_ctl, pg_basebackup) in FLOWDECK_PG_BIN (by default the
    newest /usr/lib/postgresql/<version>/bin: Debian's postgresql package)."""


def _as_postgres(argv: Sequence[str]) -> list[str]:
    return ["runuser", "-u", OS_USER, "--", *argv] if os.geteuid() == 0 else list(argv)


def _run(*argv: str, timeout: float = 120) -> str:
    done = subprocess.run(_as_postgres(argv), capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stdout}{done.stderr}")
    return done.stdout


@dataclass
class Cluster:
    """One PostgreSQL cluster: its data folder and port."""

    name: str
    folder: Path
    port: int
    host: str = "127.0.0.1"
    running: bool = field(default=False)

    @property
    def log_path(self) -> Path:
        return self.folder.parent / f"{self.name}.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{OS_USER}@{self.host}:{self.port}/{database}"

    def start(self, wait: float = 60) -> None:
        _run(str(BIN / "pg_ctl"), "start", "-w", "-t", str(int(wait)), "-D", str(self.folder),
             "-l", str(self.log_path))  # fmt: skip
        self.running = True

    def kill(self) -> None:
        """Stop at once, as a crash would: `immediate` ends every backend without a checkpoint (a
        SIGKILL of the postmaster alone would leave its backends serving)."""
        if self.running:
            _run(str(BIN / "pg_ctl"), "stop", "-m", "immediate", "-w", "-D", str(self.folder))
            self.running = False

    def in_recovery(self) -> bool:
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=5) as conn:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
        return bool(row and row[0])

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class Pair:
    """A primary and its synchronous streaming standby."""

    primary: Cluster
    standby: Cluster

    @property
    def clusters(self) -> tuple[Cluster, Cluster]:
        return (self.primary, self.standby)

    def url(self, database: str) -> str:
        """The multi-host URL: both clusters, the one accepting writes chosen at each connect (libpq's form,
        which Flowdeck's DATABASE_URL reads too)."""
        hosts = ",".join(f"{c.host}:{c.port}" for c in self.clusters)
        return f"postgresql://{OS_USER}@{hosts}/{database}?target_session_attrs=read-write"

    def settings(self, database: str) -> dict[str, object]:
        """The same as a Django `DATABASES` entry."""
        return {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": ",".join(c.host for c in self.clusters),
            "PORT": ",".join(str(c.port) for c in self.clusters),
            "NAME": database,
            "USER": OS_USER,
            "OPTIONS": {"target_session_attrs": "read-write"},
        }

    def create_database(self, name: str) -> None:
        """A database on the primary (replicated to the standby like every other change)."""
        with psycopg.connect(self.primary.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def replayed(self, wait: float = 30) -> None:
        """Return once the standby has replayed everything the primary has written so far."""
        with psycopg.connect(self.primary.url(), autocommit=True) as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        target = row[0] if row else "0/0"
        deadline = time.monotonic() + wait
        with psycopg.connect(self.standby.url(), autocommit=True) as conn:
            while True:
                query = "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn"
                done = conn.execute(query, (target,)).fetchone()
                if done and done[0]:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the standby did not replay up to {target} within {wait:g}s")
                time.sleep(0.02)

    def kill_primary(self) -> None:
        self.primary.kill()

    def promote(self, wait: float = 60) -> None:
        """Promote the standby and return once it accepts writes."""
        _run(str(BIN / "pg_ctl"), "promote", "-w", "-t", str(int(wait)), "-D", str(self.standby.folder))


def _initdb(primary: Cluster) -> None:
    _run(str(BIN / "initdb"), "-D", str(primary.folder), "-U", OS_USER, "--auth=trust", "-E", "UTF8",
         "--no-sync", "--locale=C")  # fmt: skip
    _configure(primary, [
        "wal_level = replica",
        "max_wal_senders = 4",
        "hot_standby = on",
        f"synchronous_standby_names = '{STANDBY_NAME}'",
        "synchronous_commit = on",
    ])  # fmt: skip


def _configure(cluster: Cluster, lines: Sequence[str]) -> None:
    """Settings appended to the cluster's postgresql.conf (the last of a name wins)."""
    common = [
        f"port = {cluster.port}",
        f"listen_addresses = '{cluster.host}'",
        f"unix_socket_directories = '{cluster.folder.parent}'",
        "max_connections = 200",
        "shared_buffers = 32MB",
        "fsync = off",
        "full_page_writes = off",
        "wal_sender_timeout = 5s",
        "wal_receiver_status_interval = 1s",
    ]
    with (cluster.folder / "postgresql.conf").open("a") as conf:
        conf.write("\n".join([*common, *lines]) + "\n")


def _basebackup(primary: Cluster, standby: Cluster) -> None:
    conninfo = f"host={primary.host} port={primary.port} user={OS_USER} application_name={STANDBY_NAME}"
    _run(str(BIN / "pg_basebackup"), "-d", conninfo, "-D", str(standby.folder), "-R", "-X", "stream",
         "--no-sync", "-c", "fast")  # fmt: skip
    # promoted, it runs alone: a synchronous standby of its own would make every commit wait for nobody
    _configure(standby, ["synchronous_standby_names = ''"])
    # pg_basebackup -R wrote primary_conninfo in postgresql.auto.conf, which wins over postgresql.conf
    (standby.folder / "postgresql.auto.conf").write_text(f"primary_conninfo = '{conninfo}'\n")


def _wait_synchronous(pair: Pair, wait: float) -> None:
    deadline = time.monotonic() + wait
    with psycopg.connect(pair.primary.url(), autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s", (STANDBY_NAME,)
            ).fetchone()
            if row and row[0] == "sync":
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standby is not streaming synchronously after {wait:g}s: {row}")
            time.sleep(0.05)


@contextlib.contextmanager
def running(*, wait: float = 60) -> Iterator[Pair]:
    """A primary and its synchronous standby for the block, both stopped and their folder removed at its
    end. StandbyMissing when PostgreSQL's server programs are absent; RuntimeError when a step fails."""
    if not (BIN / "initdb").exists() or not (BIN / "pg_basebackup").exists():
        raise StandbyMissing(StandbyMissing.__doc__)
    folder = Path(tempfile.mkdtemp(prefix="flowdeck-standby-"))
    if os.geteuid() == 0:
        owner = pwd.getpwnam(OS_USER)
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    primary = Cluster("primary", folder / "primary", free_port())
    standby = Cluster("standby", folder / "standby", free_port())
    pair = Pair(primary, standby)
    try:
        _initdb(primary)
        primary.start(wait)
        _basebackup(primary, standby)
        standby.start(wait)
        _wait_synchronous(pair, wait)
        yield pair
    finally:
        for cluster in pair.clusters:
            with contextlib.suppress(Exception):
                cluster.kill()
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.standby", description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default="flowdeck", help="created on the primary")
    ns = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends through `running`'s finally
    with running() as pair:
        pair.create_database(ns.database)
        print(f"primary {pair.primary.port}, standby {pair.standby.port}: {pair.url(ns.database)}")
        print(f"promote: runuser -u postgres -- {BIN}/pg_ctl promote -D {pair.standby.folder}; Ctrl-C stops")
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":
    main()
