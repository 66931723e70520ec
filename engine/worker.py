"""Workers: one claim loop per engine feeds attempt slots; each attempt runs under a lease it keeps alive.

Lifecycle as in procrastinate's worker: one stop `asyncio.Event` shared by the pool; named tasks for the
claim loop, each attempt, and each attempt's lease renewal; graceful shutdown with a grace period.

Slots. The engine runs up to `workers × batch_size` attempts at once (each of the `workers` draws up to a
batch, as before). One claim loop per engine asks `claim_ready` for as many rows as there are free slots
and hands each claimed row to an attempt task; while every slot is busy it waits for one to free up rather
than polling. So an idle engine has exactly one blocked poll, and a store wake-up (one new execution, one
signal) costs one claim query, not one per worker. `Health.workers_alive` counts the workers the claim loop
serves: all of them while it runs, none once it died (then nothing of this engine gets work).

One attempt, as the store spec's §5.1 says: resolve the claimed row's definition by its own
`(workflow_id, hash)` (none: leave the row alone), then run `interpreter.run_attempt` while a side task
renews the claim every `renew_every`. A refused renewal means another executor owns the row now, so the
attempt is cancelled ("stop a body whose claim was lost"); a renewal the store could not answer is recorded
in health and retried on the next tick. Whatever an attempt does not finish it hands back by writing
nothing: its claim lapses after `lease` and the store offers the execution again.

The confirming renewal. The seed confirmed every claim with an immediate `renew_claim` before the attempt,
a commit per attempt. It is skipped when the attempt starts within `renew_every / 2` of the moment the claim
was handed over (on the worker's clock): the claim was just written with a fresh token and expiry, every
write through it is judged by token AND expiry, and the renewal task's first tick comes `renew_every` later,
well inside the lease, so nothing is lost. An attempt that starts later than that (a loop too busy to start
it) confirms first, as the seed did: refused, it writes nothing; unanswered, the failure is recorded and the
row is left to lapse.

Adopted claims. A start that runs here (`engine.workflows.start(..., run_here=True)`) creates its row
already claimed by this engine, and a signal sent in this process claims the execution it makes ready
(`engine.executions.signal`); either hands the claim to `adopt`, which runs it as it runs a claimed row:
the attempt starts at once, from the record the store handed back, with no poll, no wake-up and no read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from flowdeck.engine import interpreter, tracing
from flowdeck.engine.config import EngineConfig
from flowdeck.engine.rate_limits import RateLimit
from flowdeck.engine.registry import Registry, Version
from flowdeck.store.clock import Clock
from flowdeck.store.spi import Claimed, FlowStore, FlowStoreError

__all__ = ["Health", "WorkerPool"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

POLL_BACK_OFF = 0.05
"""Seconds of the first pause after a poll failed transiently (doubling while it keeps failing)."""


@dataclass(frozen=True)
class Health:
    """How the ENGINE is doing (not any execution).

    A worker that cannot reach the store counts the failure and keeps polling, so `is_healthy`
    (every configured worker alive) catches a process that is up while nothing runs, and
    `last_poll_failure` stays visible after the store came back. `store_failures` counts the store
    failures met while running attempts (renewals included); `claims_held` lists the executions this engine
    is running right now.
    """

    workers_alive: int
    workers_configured: int
    poll_failures: int
    last_poll_failure: str | None
    executor_id: str
    claims_held: tuple[str, ...] = ()
    last_poll_failure_at: datetime | None = None
    store_failures: int = 0
    last_store_failure: str | None = None

    @property
    def is_healthy(self) -> bool:
        return self.workers_alive == self.workers_configured


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _transient(exc: BaseException, config: EngineConfig) -> bool:
    """A poll's failure the world caused: the store says so (`retryable`), or the engine's predicate."""
    return (isinstance(exc, FlowStoreError) and exc.retryable) or config.transient(exc)


class WorkerPool:
    """The engine's workers and the attempts they run. `start` and `stop` bracket its life."""

    def __init__(
        self,
        *,
        store: FlowStore,
        registry: Registry,
        config: EngineConfig,
        clock: Clock,
        executor_id: str,
        runner: interpreter.Runner | None = None,
        traces: tracing.Tracing | None = None,
        rate_limits: Mapping[str, RateLimit] | None = None,
    ) -> None:
        self._store = store
        self._traces = traces
        self._rate_limits = config.rate_limits if rate_limits is None else rate_limits
        self._registry = registry
        self._config = config
        self._clock = clock
        self._executor_id = executor_id
        self._runner = runner
        self._stop = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the pool runs on, once started
        self._claimer: asyncio.Task[None] | None = None
        self._attempts: dict[str, asyncio.Task[None]] = {}
        # set whenever an attempt ends: the claim loop, waiting with every slot busy, claims again
        self._room = asyncio.Event()
        self._slots = config.workers * config.batch_size
        self._confirm_after = config.renew_every.total_seconds() / 2
        self._poll_failures = 0
        self._pause: float | None = None  # the last back-off after a transient poll failure, in a run
        self._last_poll_failure: str | None = None
        self._last_poll_failure_at: datetime | None = None
        self._store_failures = 0
        self._last_store_failure: str | None = None

    # ------------------------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._stop.clear()
        self._loop = asyncio.get_running_loop()
        self._claimer = asyncio.create_task(self._claim_loop(), name=f"flowdeck:claimer:{self._executor_id}")
        self._claimer.add_done_callback(self._claimer_ended)
        logger.info(
            "engine %s started %d worker(s), %d attempt slot(s)",
            self._executor_id,
            self._config.workers,
            self._slots,
            extra={"action": "start_workers", "executor_id": self._executor_id},
        )

    async def stop(self) -> None:
        """Stop polling, give in-flight attempts `shutdown_grace` to finish, then cancel the rest.

        A cancelled attempt writes nothing more: its claim lapses after `lease` and the execution is
        offered again, to this engine's successor or to another one.
        """
        self._stop.set()
        if self._claimer is not None:
            await asyncio.gather(self._claimer, return_exceptions=True)
        attempts = list(self._attempts.values())
        if attempts:
            grace = self._config.shutdown_grace.total_seconds()
            _, pending = await asyncio.wait(attempts, timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                logger.warning(
                    "cancelled %d attempt(s) still running after %gs; their claims will lapse",
                    len(pending),
                    grace,
                    extra={"action": "cancel_attempts", "executor_id": self._executor_id},
                )
                await asyncio.gather(*pending, return_exceptions=True)
        logger.info(
            "engine %s stopped",
            self._executor_id,
            extra={"action": "stop_workers", "executor_id": self._executor_id},
        )

    def health(self) -> Health:
        return Health(
            workers_alive=self._config.workers if self._serving() else 0,
            workers_configured=self._config.workers,
            poll_failures=self._poll_failures,
            last_poll_failure=self._last_poll_failure,
            executor_id=self._executor_id,
            claims_held=tuple(sorted(self._attempts)),
            last_poll_failure_at=self._last_poll_failure_at,
            store_failures=self._store_failures,
            last_store_failure=self._last_store_failure,
        )

    def _serving(self) -> bool:
        return self._claimer is not None and not self._claimer.done()

    @property
    def running(self) -> bool:
        """Whether the pool takes work now, from the caller's event loop: its claim loop is alive, it is not
        stopping, and the caller runs on the pool's loop (its attempts are tasks of that loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self._serving() and not self._stop.is_set() and loop is self._loop

    def adopt(self, claimed: Claimed, opened: str | None = None) -> bool:
        """Run a claim this engine made itself (`create_claimed_if_absent`, `signal_and_claim`) exactly as a
        claimed row: the same attempt task, lease renewal, `claims_held` and shutdown grace. False, taking
        nothing, when the pool is not `running`; the caller then hands the claim back. `opened`: the claim's
        write recorded the attempt's opening too (`interpreter.opening`).

        Adopted attempts come on top of the `workers × batch_size` slots: the caller chose to run here, and
        making it wait for a slot would only delay what a poll would not hand out anyway (the row is claimed
        already). The claim loop asks for no more rows until the total is back under the slot count."""
        return self.running and self._take(claimed, self._clock.monotonic(), opened)

    def _claimer_ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        logger.error(
            "claim loop %s died: %s",
            task.get_name(),
            _describe(task.exception()),  # type: ignore[arg-type]
            exc_info=task.exception(),
            extra={"action": "worker_died", "executor_id": self._executor_id},
        )

    # ----------------------------------------------------------------------------------- claim loop

    async def _claim_loop(self) -> None:
        poll_timeout = self._config.poll_timeout
        while not self._stop.is_set():
            free = self._slots - len(self._attempts)
            if free <= 0:
                self._room.clear()  # set again by the next attempt to end
                await self._until_stop(self._room.wait())
                continue
            registered = self._registry.next_change()
            served = self._registry.served()
            if not served:
                await self._until_stop(registered.wait(), self._clock.sleep(poll_timeout.total_seconds()))
                continue
            try:
                claims = await self._claim(served, registered, free)
            except Exception as exc:
                await self._until_stop(self._clock.sleep(self._poll_failed(exc)))
                continue
            self._pause = None
            if claims:
                handed_over = self._clock.monotonic()
                for claimed in claims:
                    self._take(claimed, handed_over)

    async def _claim(
        self, served: frozenset[tuple[str, str]], registered: asyncio.Event, free: int
    ) -> Sequence[Claimed]:
        """One poll for the versions `served`, given up (nothing claimed) when a registration changes what
        is served. The store's poll ends at a registration too, but only at one made after it began: a
        version registered while the poll was still starting (a PostgreSQL store opening its LISTEN
        connection) would leave it blocked with the older set, deaf to the new version's starts until its
        timeout. A claim the poll made as it was given up is handed back by the store."""
        config = self._config
        polled = self._store.claim_ready(served, self._executor_id, config.lease, free, config.poll_timeout)
        polling = asyncio.ensure_future(polled)
        await self._until_stop(polling, registered.wait())  # raises what the poll raised
        return polling.result() if polling.done() and not polling.cancelled() else ()

    async def _until_stop(self, *waits: Awaitable[T]) -> T | None:
        """The first of `waits` to finish (its result, or its exception), or None once the pool stops."""
        stop = asyncio.ensure_future(self._stop.wait())
        tasks = [asyncio.ensure_future(w) for w in waits]
        try:
            done, _ = await asyncio.wait([stop, *tasks], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (stop, *tasks):
                task.cancel()
        for task in tasks:
            if task in done:
                return task.result()
        return None

    def _poll_failed(self, exc: Exception) -> float:
        """Note a failed poll; answers how long to pause. A transient store error (a locked database, a
        lost connection) is the world busy for a moment: from POLL_BACK_OFF doubling, up to the poll
        timeout, while it lasts. Anything else pauses the whole poll timeout."""
        self._poll_failures += 1
        self._last_poll_failure = _describe(exc)
        self._last_poll_failure_at = self._clock.now()
        longest = self._config.poll_timeout.total_seconds()
        if _transient(exc, self._config):
            self._pause = min(longest, 2 * self._pause if self._pause is not None else POLL_BACK_OFF)
            pause = self._pause
        else:
            pause = longest
        logger.warning(
            "poll failed (%s); pausing %gs",
            self._last_poll_failure,
            pause,
            exc_info=exc,
            extra={"action": "poll_failed", "executor_id": self._executor_id},
        )
        return pause

    def _store_failed(self, exc: Exception, execution_id: str) -> None:
        self._store_failures += 1
        self._last_store_failure = _describe(exc)
        logger.warning(
            "store failure while running %s: %s",
            execution_id,
            self._last_store_failure,
            extra={"action": "store_failed", "execution_id": execution_id, "executor_id": self._executor_id},
        )

    # ------------------------------------------------------------------------------ one claimed row

    def _take(self, claimed: Claimed, handed_over: float, opened: str | None = None) -> bool:
        state = claimed.state
        eid = state.execution_id
        version = self._registry.resolve(state.flow_id, state.hash)
        if version is None:
            # Served when we polled, so this cannot normally happen; leave the row, the claim lapses.
            logger.warning(
                "claimed %s of %s@%s, which this engine does not serve; leaving it",
                eid,
                state.flow_id,
                state.hash,
                extra={"action": "leave_claim", "execution_id": eid, "executor_id": self._executor_id},
            )
            return False
        logger.info(
            "claimed %s (%s@%s)",
            eid,
            state.flow_id,
            state.hash,
            extra={"action": "claim", "execution_id": eid, "executor_id": self._executor_id},
        )
        task = asyncio.create_task(
            self._supervise(version, claimed, handed_over, opened), name=f"flowdeck:attempt:{eid}"
        )
        self._attempts[eid] = task
        task.add_done_callback(lambda done: self._attempt_ended(eid, done))
        return True

    async def _confirmed(self, claimed: Claimed, handed_over: float) -> bool:
        """Whether the attempt may start: at once for a fresh claim, after a confirming renewal for one
        handed over more than `renew_every / 2` ago (see the module docstring)."""
        if self._clock.monotonic() - handed_over <= self._confirm_after:
            return True
        eid = claimed.state.execution_id
        try:
            confirmed = await claimed.renew_claim(self._config.lease)
        except FlowStoreError as exc:
            self._store_failed(exc, eid)
            return False
        if not confirmed:
            logger.info(
                "claim on %s was lost before it started; writing nothing",
                eid,
                extra={"action": "claim_lost", "execution_id": eid, "executor_id": self._executor_id},
            )
        return confirmed

    def _attempt_ended(self, execution_id: str, task: asyncio.Task[None]) -> None:
        if self._attempts.get(execution_id) is task:
            del self._attempts[execution_id]
        self._room.set()

    async def _supervise(
        self, version: Version, claimed: Claimed, handed_over: float, opened: str | None
    ) -> None:
        eid = claimed.state.execution_id
        if not await self._confirmed(claimed, handed_over):
            return
        attempt = asyncio.create_task(
            interpreter.run_attempt(
                version.flow,
                claimed,
                store=self._store,
                clock=self._clock,
                executor_id=self._executor_id,
                runner=self._runner,
                opened=opened,
                transient=self._config.transient,
                traces=self._traces,
                rate_limits=self._rate_limits,
            ),
            name=f"flowdeck:run:{eid}",
        )
        lost = asyncio.Event()
        renewal = asyncio.create_task(self._renew(claimed, attempt, lost), name=f"flowdeck:renew:{eid}")
        try:
            report = await attempt
        except asyncio.CancelledError:
            if not lost.is_set():
                raise  # the pool is shutting down: the attempt is cancelled with us
            logger.warning(
                "claim on %s was lost while running; the attempt was stopped",
                eid,
                extra={"action": "claim_lost", "execution_id": eid, "executor_id": self._executor_id},
            )
        except FlowStoreError as exc:
            self._store_failed(exc, eid)
        except Exception:
            logger.exception(
                "attempt on %s crashed; its claim will lapse",
                eid,
                extra={"action": "attempt_crashed", "execution_id": eid, "executor_id": self._executor_id},
            )
        else:
            logger.info(
                "attempt on %s ended: %s",
                eid,
                report,
                extra={"action": "attempt_done", "execution_id": eid, "executor_id": self._executor_id},
            )
        finally:
            renewal.cancel()
            await asyncio.gather(renewal, return_exceptions=True)

    async def _renew(self, claimed: Claimed, attempt: asyncio.Task[Any], lost: asyncio.Event) -> None:
        eid = claimed.state.execution_id
        every = self._config.renew_every.total_seconds()
        while not attempt.done():
            await self._clock.sleep(every)
            try:
                renewed = await claimed.renew_claim(self._config.lease)
            except FlowStoreError as exc:
                self._store_failed(exc, eid)
                continue
            if not renewed:
                lost.set()
                attempt.cancel()
                return
