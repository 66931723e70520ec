"""Rate limits: named limits a flows module declares (`RATE_LIMITS`), the node knob that uses one
(`rate_limit=`), and the gate a node passes before its body runs.

```python
RATE_LIMITS = {"carrier-api": RateLimit(50, per="minute")}
...
.step("ship", ship, rate_limit="carrier-api")
.step("track", track, rate_limit=("carrier-quota", lambda ctx: ctx.order.carrier))  # per key
```

Tokens are the store's (`FlowStore.take_token`, store/rate_limits.py): shared by every worker process
and host. A node that finds its limit spent does not wait in a thread or hold its claim: its take reserved
the slot its token is due at, the attempt records a durable wait row (`<path>#rate:<limit>`, due then, with a
RateLimited event saying until when) and parks; the execution is woken at that slot and the node runs on
the token it reserved, asking nothing again. A node already recorded is skipped by the replay before this
gate, so a replay never takes a token. One token per run of the node: its first try, and each try after
a durable retry back-off (an in-process back-off under a second keeps the token it has).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from flowdeck.engine import traversal
from flowdeck.engine.errors import FlowRateLimitUnknown
from flowdeck.engine.nodes import Body, RateUse
from flowdeck.engine.outcomes import Parked
from flowdeck.store import rate_limits as store_rates
from flowdeck.store import spi
from flowdeck.store.rate_limits import RATE_MARK

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow
    from flowdeck.engine.recorder import Recorder

__all__ = ["RATE_MARK", "Per", "RateLimit", "RateUse", "Tokens", "admit", "check", "limits_of", "use_of"]

Per = Literal["second", "minute", "hour", "day"]
PERIODS: Mapping[str, timedelta] = {
    "second": timedelta(seconds=1),
    "minute": timedelta(minutes=1),
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
}


@dataclass(frozen=True)
class RateLimit:
    """At most `count` tokens per `per` ("second", "minute", "hour", "day" or a timedelta), spaced evenly
    (`burst` of them may be taken at once; 1 by default). `per_key`: one such budget per key, the key
    computed by each node that uses the limit (`rate_limit=(name, key_of_ctx)`)."""

    count: int
    per: Per | timedelta = "second"
    per_key: bool = False
    burst: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"RateLimit: count must be a positive int, got {self.count!r}")
        if isinstance(self.burst, bool) or not isinstance(self.burst, int) or self.burst < 1:
            raise ValueError(f"RateLimit: burst must be a positive int, got {self.burst!r}")
        if not isinstance(self.per_key, bool):
            raise ValueError(f"RateLimit: per_key must be a bool, got {self.per_key!r}")
        if isinstance(self.per, timedelta):
            if self.per <= timedelta(0):
                raise ValueError(f"RateLimit: per must be a positive duration, got {self.per}")
        elif self.per not in PERIODS:
            raise ValueError(
                f"RateLimit: per must be one of {', '.join(PERIODS)} or a timedelta, got {self.per!r}"
            )

    @property
    def period(self) -> timedelta:
        return self.per if isinstance(self.per, timedelta) else PERIODS[self.per]

    @property
    def rate(self) -> store_rates.Rate:
        """How the store spaces this limit's tokens."""
        return store_rates.Rate(self.period / self.count, self.burst)

    @property
    def per_second(self) -> float:
        return self.count / self.period.total_seconds()

    def describe(self) -> str:
        """`50 per minute`, `10 per 0:00:30`, with `per key` and the burst when they are set."""
        per = self.per if isinstance(self.per, str) else str(self.per)
        words = f"{self.count} per {per}"
        if self.per_key:
            words += " per key"
        return f"{words} (burst {self.burst})" if self.burst > 1 else words


def use_of(value: Any, what: str) -> RateUse | None:
    """The `rate_limit=` knob: None, a limit's name, or `(name, key_of_ctx)`."""
    if value is None:
        return None
    if isinstance(value, str) and value:
        return RateUse(value)
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], str)
        and value[0]
        and callable(value[1])
    ):
        return RateUse(value[0], Body.of(value[1]))
    raise TypeError(f"{what}: rate_limit must be a limit's name or (name, key_of_ctx), got {value!r}")


def uses(flow: Flow) -> Iterable[tuple[str, RateUse]]:
    """Every (path, use) of a rate limit in `flow`, subflows included."""
    for place in traversal.walk(flow):
        knobs = getattr(place.node, "knobs", None)
        use = getattr(knobs, "rate_limit", None)
        if use is not None:
            yield place.path, use


def check(flow: Flow, limits: Mapping[str, RateLimit]) -> None:
    """Refuse a flow that uses a limit `limits` does not declare, or a per-key limit without a key (or a
    key for one that is not per key): at registration, not at the node's first run."""
    for path, use in uses(flow):
        limit = limits.get(use.name)
        if limit is None:
            known = ", ".join(sorted(limits)) or "none"
            raise FlowRateLimitUnknown(path, use.name, f"is not declared (RATE_LIMITS declares: {known})")
        if limit.per_key and use.key is None:
            raise FlowRateLimitUnknown(path, use.name, "is per key: give rate_limit=(name, key_of_ctx)")
        if not limit.per_key and use.key is not None:
            raise FlowRateLimitUnknown(path, use.name, "is not per key: give its name alone")


@dataclass(frozen=True)
class Tokens:
    """What an attempt takes tokens with: the declared limits and the store's take."""

    limits: Mapping[str, RateLimit]
    take: Callable[[str, str, store_rates.Rate], Awaitable[store_rates.Take]]


async def admit(
    rec: Recorder, path: str, use: RateUse, key_of: Callable[[], Awaitable[Any]]
) -> datetime | None:
    """Let the node at `path` run once it holds a token of `use`, answering the token's slot (the node's
    StepStarted names it: the history shows which token each run spent); else park it until its slot.

    A row left by an earlier attempt is that attempt's reservation: due (or satisfied), it is this run's
    token, spent here (dropped from what this attempt knows, so a loop's next iteration takes its own);
    not due yet, the attempt parks on it again. Unless a start already ran on it (a run killed mid-body,
    or its claim lost): the re-run takes a token of its own, so one token never pays for two calls (the
    store replaces the row's instant with the new reservation's). `key_of` computes a per-key limit's
    key (a failure in it is the program's mistake at `path`)."""
    row = store_rates.rate_row(path, use.name)
    if row in rec.spent_reservations:  # a start (killed, or its claim lost) ran on it: take a new one
        rec.waits.pop(row, None)
        rec.spent_reservations.discard(row)
    wake = rec.waits.get(row)
    if wake is not None:
        due = isinstance(wake, spi.WakeAt) and rec.clock.now() >= wake.at
        if row in rec.satisfied or due:
            del rec.waits[row]
            return wake.at if isinstance(wake, spi.WakeAt) else None
        raise Parked({row})
    tokens = rec.tokens
    if tokens is None or use.name not in tokens.limits:
        raise FlowRateLimitUnknown(path, use.name, "is not declared to this engine")
    key = "" if use.key is None else str(await key_of())
    take = await tokens.take(use.name, key, tokens.limits[use.name].rate)
    if take.taken:
        return take.slot
    until = take.slot.isoformat()
    event = rec.event(spi.EventKind.RATE_LIMITED, step_name=path, limit=use.name, key=key, until=until)
    await rec.wait(row, spi.WakeAt(take.slot), event)
    raise Parked({row})


def limits_of(where: str, declared: Any) -> dict[str, RateLimit]:
    """A declaration of named limits (a flows module's `RATE_LIMITS`, the `FLOWDECK_RATE_LIMITS` setting):
    a mapping of name to `RateLimit`, or to the mapping of its fields (`{"count": 50, "per": "minute"}`).
    Anything else raises ValueError naming `where` and the entry."""
    if not isinstance(declared, Mapping):
        raise ValueError(f"{where} is not a mapping of names to rate limits (RateLimit(...)): {declared!r}")
    found: dict[str, RateLimit] = {}
    for name, value in declared.items():
        if not isinstance(name, str) or not name or "#" in name or len(name) > 200:
            raise ValueError(f"{where}: {name!r} is not a limit's name (a non-empty str without '#')")
        if isinstance(value, Mapping):
            try:
                value = RateLimit(**value)
            except TypeError as error:
                raise ValueError(f"{where}[{name!r}]: {error}") from None
        if not isinstance(value, RateLimit):
            raise ValueError(f"{where}[{name!r}] is not a rate limit (RateLimit(...)): {value!r}")
        found[name] = value
    return found
