"""Rate limits in the store: one GCRA bucket per (limit, key), its one transition, and what is shown of it.

A limit of `count` per `period` spaces its tokens `interval = period / count` apart, with a `burst` of
tokens that may be taken at once (1 by default: evenly spaced). The store keeps ONE number per limit key,
its *theoretical arrival time* (`tat`, GCRA), and moves it in one atomic step per take:

- `slot = max(now, tat - tolerance)` where `tolerance = (burst - 1) * interval`: the time this take's token
  is due; `tat` becomes `max(tat, now) + interval`.
- `slot == now`: the token is taken, the body may call now.
- `slot > now`: the limit is spent until then. The take *reserves* that slot: the caller waits durably
  until it and then runs without asking again. So N waiters get N distinct slots an interval apart and
  wake one at a time, instead of all waking at the same instant to find one token between them.

Whatever the takers, in any span of `d` at most `burst + d / interval` slots fall (GCRA's guarantee): a
limit is never over-spent, across every worker process and host, because each take is one atomic change
of one row (memory: under the lock; SQLite: under its write lock; PostgreSQL: one INSERT … ON CONFLICT
DO UPDATE … RETURNING). A reserved slot whose execution is cancelled first is not given back: the limit
errs on the side of fewer calls.

What is shown (`Bucket`): the slots taken at once and reserved, and per `WINDOW` of slot time the slots
falling in it (the latest window and the one before), from which the observed rate is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = [
    "RATE_MARK",
    "WINDOW",
    "Bucket",
    "Rate",
    "Take",
    "observed_per_second",
    "rate_row",
    "rate_row_matches",
    "step",
]

RATE_MARK = "#rate:"
"""A rate-limited node's wait row is at `<path>#rate:<limit>` (`#` is in no node's name nor limit's)."""

WINDOW = timedelta(minutes=1)
"""The span the observed rate is counted over."""

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def rate_row(path: str, limit: str) -> str:
    """The wait row of the node at `path` waiting for a token of `limit`."""
    return f"{path}{RATE_MARK}{limit}"


def rate_row_matches(row: str, limit: str | None = None) -> bool:
    """Is `row` a rate limit's wait row (of `limit`, when given)?"""
    _, mark, name = row.rpartition(RATE_MARK)
    return bool(mark) and (limit is None or name == limit)


def micros(at: datetime) -> int:
    """An instant as whole microseconds since the epoch (the SQL stores' integer columns)."""
    return (at - EPOCH) // timedelta(microseconds=1)


def instant(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


@dataclass(frozen=True)
class Rate:
    """How a limit spaces its tokens: one every `interval`, `burst` of them at once."""

    interval: timedelta
    burst: int = 1

    def __post_init__(self) -> None:
        if self.interval <= timedelta(0):
            raise ValueError(f"a rate's interval must be positive, got {self.interval}")
        if self.burst < 1:
            raise ValueError(f"a rate's burst must be at least 1, got {self.burst}")

    @property
    def tolerance(self) -> timedelta:
        return self.interval * (self.burst - 1)


@dataclass(frozen=True)
class Take:
    """What a take answered: the instant its token is due (`slot`), and whether that is now."""

    slot: datetime
    taken: bool


@dataclass(frozen=True)
class Bucket:
    """One limit key's state: its theoretical arrival time, its counts, its two latest windows."""

    name: str
    key: str
    tat: datetime
    taken: int = 0
    reserved: int = 0
    window_start: datetime = EPOCH
    window_slots: int = 0
    previous_slots: int = 0


def _slot_window(b: Bucket, slot: datetime) -> tuple[datetime, int, int]:
    """The (window start, its slots, the previous window's) after one more slot at `slot` (slots only go
    forward, so the windows roll forward by slot time)."""
    if slot >= b.window_start + 2 * WINDOW:
        return slot, 1, 0
    if slot >= b.window_start + WINDOW:
        return b.window_start + WINDOW, 1, b.window_slots
    return b.window_start, b.window_slots + 1, b.previous_slots


def step(found: Bucket | None, name: str, key: str, rate: Rate, now: datetime) -> tuple[Bucket, Take]:
    """One take at `now`: the bucket after it and what it answers. The reference transition: the memory
    store runs it under its lock, the SQL stores mirror it in one statement."""
    b = found or Bucket(name, key, tat=now, window_start=now)
    slot = max(now, b.tat - rate.tolerance)
    taken = slot <= now
    start, slots, previous = _slot_window(b, slot)
    after = Bucket(
        name,
        key,
        tat=max(b.tat, now) + rate.interval,
        taken=b.taken + int(taken),
        reserved=b.reserved + int(not taken),
        window_start=start,
        window_slots=slots,
        previous_slots=previous,
    )
    return after, Take(slot, taken)


def observed_per_second(b: Bucket, now: datetime) -> float:
    """The slots per second over the last whole `WINDOW` before `now`: the latest window once it is over,
    else the one before it (also while a backlog of reservations puts the latest window ahead of now);
    0 when the latest window ended a whole window ago."""
    seconds = WINDOW.total_seconds()
    end = b.window_start + WINDOW
    if now >= end + WINDOW:
        return 0.0
    if now >= end:
        return b.window_slots / seconds
    return b.previous_slots / seconds
