"""Running a user's body: the call (async awaited, sync in a thread), its timeout, its retries.

A body's try is bounded by the node's timeout on the injected clock; what the world did not answer (a
timeout, FlowRetry, an exception the node lists in `retry_on`, one the engine's `transient` predicate calls
the world's: a locked database) is asked again under the node's schedule (a transient one, when the node
has none, under TRANSIENT_RETRY).
The retry count starts from the StepRetried events in history, so a restart does not reset the budget. A
back-off under a second sleeps in-process; a longer one is a durable wait row (`path#retry<n>`) and the
attempt parks on it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from flowdeck.engine import context, forks, tracing
from flowdeck.engine.body_threads import run_in_thread
from flowdeck.engine.errors import FlowDomainError, FlowRetry, FlowStepTimeout
from flowdeck.engine.nodes import Body, Knobs
from flowdeck.engine.outcomes import PASS_THROUGH, Parked, StopFor, describe
from flowdeck.engine.recorder import Recorder
from flowdeck.engine.schedule import Schedule
from flowdeck.store import spi
from flowdeck.store.clock import Clock

__all__ = ["SHORT_RETRY", "TRANSIENT_RETRY", "BodyRunner", "call", "pure"]

logger = logging.getLogger(__name__)

SHORT_RETRY = timedelta(seconds=1)
"""Back-offs shorter than this sleep in-process; longer ones become a durable wait row."""

# Sixteen retries, about 50 s in all: a lock storm (many executions whose steps meet one SQLite writer,
# retrying close together) outlasts a shorter budget on a busy machine, and F0003 is for a database that
# stays away, not for contention.
TRANSIENT_RETRY = Schedule.exponential(timedelta(milliseconds=50), 2.0, timedelta(seconds=5)).take(16)
"""How a node with no retry schedule of its own asks again after a transient exception (a locked
database): 50 ms doubling to 5 s, eight retries (about 11 s in all) before F0003."""


async def call(body: Body, *args: Any) -> Any:
    """Run a body: awaited when async, in a thread when sync; its arity picks the arguments. While it
    runs, `context.current_step()` answers its ctx (the thread of a sync body copies the mark)."""
    token = context.stepping(next((arg for arg in args if isinstance(arg, context.Context)), None))
    try:
        args = args[: body.arity]
        if body.is_async:
            result = body.fn(*args)
        else:
            result = await run_in_thread(body.fn, *args)
        if inspect.isawaitable(result):  # a plain lambda handing back a coroutine
            result = await result
        return result
    finally:
        context.stepped(token)


async def pure(body: Body, *args: Any) -> Any:
    """Run a pure part (a condition, a mapper, a collection, an on_cancel) inline: cheap, no thread."""
    result = body.fn(*args[: body.arity])
    if inspect.isawaitable(result):
        result = await result
    return result


class BodyRunner:
    """Tries a body under its node's timeout and retry schedule, noting what happens on `rec`."""

    def __init__(self, rec: Recorder, clock: Clock, trace: tracing.Attempt = tracing.OFF) -> None:
        self.rec = rec
        self.clock = clock
        self.trace = trace

    async def timed(self, path: str, timeout: timedelta | None, run: Callable[[], Awaitable[Any]]) -> Any:
        """One attempt of a body, bounded by the injected clock; a sync body's thread is abandoned."""
        if timeout is None:
            return await run()
        task = asyncio.ensure_future(run())
        timer = asyncio.ensure_future(self.clock.sleep(timeout.total_seconds()))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            timer.cancel()
        if task.done():
            return task.result()
        task.cancel()
        task.add_done_callback(forks.swallow)
        rec = self.rec
        rec.note(rec.event(spi.EventKind.STEP_TIMED_OUT, step_name=path, timeout=timeout.total_seconds()))
        raise FlowStepTimeout(path, timeout)

    async def with_retry(
        self,
        path: str,
        knobs: Knobs,
        once: Callable[[int], Awaitable[Any]],
        *,
        retry_any: bool = False,
        exhausted: Callable[[BaseException], BaseException] | None = None,
    ) -> Any:
        """Run `once(attempt)` under the node's timeout, retrying what the world did not answer. Each try is
        a node of the attempt's trace (`tracing.Node`: its span, and the log context of its body).

        `retry_any`: every exception is an accident (a compensation's); `exhausted` turns the last failure
        into what to raise once the schedule is spent (by default F0003)."""
        self._parked_retry(path)
        attempt = self.rec.retried[path]
        while True:
            node = self.trace.node(path, attempt, compensation=retry_any)
            node.enter()
            try:
                result = await self.timed(path, knobs.timeout, functools.partial(once, attempt))
            except BaseException as error:
                node.leave()
                failure, after, transient = self._judged(node, error, knobs, retry_any)
            else:
                node.leave()
                node.end()
                return result
            schedule = knobs.retry or (TRANSIENT_RETRY if transient else None)
            delay = schedule.delay(attempt) if schedule is not None else None
            if delay is None:
                spent = self._spent(path, attempt, failure, exhausted)
                code = spent.stopped.code if isinstance(spent, StopFor) else ""
                node.end(failure, outcome="stopped" if code else "", code=code)
                raise spent from failure
            node.end(failure, outcome="retried")
            delay = after if after is not None else delay
            attempt = await self._back_off(path, attempt, failure, delay, transient=transient)

    def _judged(
        self, node: tracing.Node, error: BaseException, knobs: Knobs, retry_any: bool
    ) -> tuple[BaseException, timedelta | None, bool]:
        """A try's exception the schedule may ask again: (the failure, the back-off it asked for, whether
        transient). What it may not is raised again, its node ended (a body's other exception is a
        mistake). Called while with_retry handles `error`, so a bare `raise` re-raises it untouched."""
        if isinstance(error, FlowStepTimeout):
            return error, None, False
        if isinstance(error, FlowRetry):
            return error, error.after, False
        if isinstance(error, PASS_THROUGH) or not isinstance(error, Exception):
            node.end(error)
            raise
        if isinstance(error, FlowDomainError):
            if not retry_any:
                node.end(error)
                raise
            return error, None, False
        transient = self.rec.transient(error)
        if not (retry_any or transient or isinstance(error, knobs.retry_on or ())):
            node.end(error, outcome="stopped", code="F0001")
            raise
        return error, None, transient

    def _parked_retry(self, path: str) -> None:
        """An earlier attempt's back-off row for this node that is not yet due: park on it again."""
        rec = self.rec
        for wait_path, wake in rec.waits.items():
            due = isinstance(wake, spi.WakeAt) and self.clock.now() >= wake.at
            if wait_path.startswith(f"{path}#retry") and wait_path not in rec.satisfied and not due:
                raise Parked({wait_path})

    def _spent(
        self,
        path: str,
        attempt: int,
        failure: BaseException,
        exhausted: Callable[[BaseException], BaseException] | None,
    ) -> BaseException:
        if exhausted is not None:
            return exhausted(failure)
        self.rec.note(self.rec.failed_event(path, failure))
        return StopFor(
            "F0003",
            path,
            f"the world did not answer after {attempt + 1} tries: {failure}",
            describe(failure),
        )

    async def _back_off(
        self, path: str, attempt: int, failure: BaseException, delay: timedelta, *, transient: bool
    ) -> int:
        """Note retry number `attempt + 1` and wait `delay` before it: in-process when short (answering
        the new count), else in a durable row the attempt parks on. A transient failure's retry says so
        in its event (`transient`: the metrics count them) and in the log."""
        rec = self.rec
        attempt += 1
        rec.retried[path] = attempt
        data: dict[str, Any] = {"error": str(failure), "attempt": attempt, "delay": delay.total_seconds()}
        if transient:
            data["transient"] = True
            logger.warning(
                "%s %s: %s (%s); retry %d in %gs",
                rec.execution_id, path, type(failure).__name__, failure, attempt, delay.total_seconds(),
                extra={"action": "transient_retry", "execution_id": rec.execution_id, "node": path},
            )  # fmt: skip
        retried = rec.event(spi.EventKind.STEP_RETRIED, step_name=path, **data)
        if delay < SHORT_RETRY:
            rec.note(retried)
            await self.clock.sleep(delay.total_seconds())
            return attempt
        row = f"{path}#retry{attempt}"
        wake = spi.WakeAt(self.clock.now() + delay)
        self.trace.wait(row, retried, wake)
        await rec.wait(row, wake, retried)
        raise Parked({row})
