"""CPU seconds of processes, read from /proc: what W1's "CPU per node" divides by the nodes recorded."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

__all__ = ["Meter"]

_TICKS = os.sysconf("SC_CLK_TCK")


def _process_seconds(pid: int) -> float:
    """User + system CPU seconds of every thread of `pid` so far (/proc/PID/stat's utime and stime)."""
    with open(f"/proc/{pid}/stat") as stat:
        # the command name may hold spaces and parentheses: the fields start after its closing one
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _database_seconds(sessions_of: str | None = None) -> dict[int, float]:
    """CPU seconds so far of every PostgreSQL server process on this machine, by pid (the server runs
    here: the bench's database is on 127.0.0.1); with `sessions_of`, only the sessions on that database
    (a backend's title names its database), which other sessions' work on a shared machine leaves out."""
    found: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/comm") as comm:
                if comm.read().strip() != "postgres":
                    continue
            if sessions_of is not None:
                with open(f"/proc/{entry.name}/cmdline") as cmdline:
                    if f" {sessions_of} " not in cmdline.read():
                        continue
            found[int(entry.name)] = _process_seconds(int(entry.name))
        except OSError:  # ended while we looked
            continue
    return found


def _database_spent(before: dict[int, float], sessions_of: str | None = None) -> float:
    """The server's CPU seconds since `before` (a process started since counts from zero; one that ended
    meanwhile is not counted: the workers' own sessions are still open when this is read)."""
    return sum(now - before.get(pid, 0.0) for pid, now in _database_seconds(sessions_of).items())


class Meter:
    """The CPU seconds spent since it was made, by named groups of processes and by the database server
    (`spent()["database"]`; with `sessions_of`, also `spent()["sessions"]`, the sessions on that database
    alone): a timed window's accounting, read before and after."""

    def __init__(self, parties: Mapping[str, Iterable[int]], sessions_of: str | None = None) -> None:
        self._pids = {name: list(pids) for name, pids in parties.items()}
        self._before = self._now()
        self._database = _database_seconds()
        self._sessions_of = sessions_of
        self._sessions = _database_seconds(sessions_of) if sessions_of is not None else {}

    def _now(self) -> dict[str, float]:
        return {name: sum(_process_seconds(pid) for pid in pids) for name, pids in self._pids.items()}

    def spent(self) -> dict[str, float]:
        now = self._now()
        by_party = {name: now[name] - self._before[name] for name in now}
        found = by_party | {"database": _database_spent(self._database)}
        if self._sessions_of is not None:
            found["sessions"] = _database_spent(self._sessions, self._sessions_of)
        return found
