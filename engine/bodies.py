"""Running a user's body: the call (async awaited, sync in a thread), its timeout, its retries.

A body's try is bounded by the node's timeout on the injected clock; what the world did not answer (a
timeout, FlowRetry, an exception the node lists in `retry_on`) is asked again under the node's schedule.
The retry count starts from the StepRetried events in history, so a restart does not reset the budget. A
back-off under a second sleeps in-process; a longer one is a durable wait row (`path#retry<n>`) and the
attempt parks on it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from engine import forks
from engine.body_threads import run_in_thread
from engine.errors import FlowDomainError, FlowRetry, FlowStepTimeout
from engine.nodes import Body, Knobs
from engine.outcomes import PASS_THROUGH, Parked, StopFor, describe
from engine.recorder import Recorder
from store import spi
from store.clock import Clock

__all__ = ["SHORT_RETRY", "BodyRunner", "call", "pure"]

SHORT_RETRY = timedelta(seconds=1)
"""Back-offs shorter than this sleep in-process; longer ones become a durable wait row."""


async def call(body: Body, *args: Any) -> Any:
    """Run a body: awaited when async, in a thread when sync; its arity picks the arguments."""
    args = args[: body.arity]
    if body.is_async:
        result = body.fn(*args)
    else:
        result = await run_in_thread(body.fn, *args)
    if inspect.isawaitable(result):  # a plain lambda handing back a coroutine
        result = await result
    return result


async def pure(body: Body, *args: Any) -> Any:
    """Run a pure part (a condition, a mapper, a collection, an on_cancel) inline: cheap, no thread."""
    result = body.fn(*args[: body.arity])
    if inspect.isawaitable(result):
        result = await result
    return result


class BodyRunner:
    """Tries a body under its node's timeout and retry schedule, noting what happens on `rec`."""

    def __init__(self, rec: Recorder, clock: Clock) -> None:
        self.rec = rec
        self.clock = clock

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
        """Run `once(attempt)` under the node's timeout, retrying what the world did not answer.

        `retry_any`: every exception is an accident (a compensation's); `exhausted` turns the last failure
        into what to raise once the schedule is spent (by default F0003)."""
        self._parked_retry(path)
        attempt = self.rec.retried[path]
        while True:
            after: timedelta | None = None
            try:
                return await self.timed(path, knobs.timeout, functools.partial(once, attempt))
            except PASS_THROUGH:
                raise
            except FlowStepTimeout as error:
                failure: BaseException = error
            except FlowRetry as error:
                failure, after = error, error.after
            except FlowDomainError as error:
                if not retry_any:
                    raise
                failure = error
            except Exception as error:
                if not retry_any and not isinstance(error, knobs.retry_on or ()):
                    raise
                failure = error
            delay = knobs.retry.delay(attempt) if knobs.retry is not None else None
            if delay is None:
                raise self._spent(path, attempt, failure, exhausted) from failure
            attempt = await self._back_off(path, attempt, failure, after if after is not None else delay)

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

    async def _back_off(self, path: str, attempt: int, failure: BaseException, delay: timedelta) -> int:
        """Note retry number `attempt + 1` and wait `delay` before it: in-process when short (answering
        the new count), else in a durable row the attempt parks on."""
        rec = self.rec
        attempt += 1
        rec.retried[path] = attempt
        retried = rec.event(
            spi.EventKind.STEP_RETRIED,
            step_name=path,
            error=str(failure),
            attempt=attempt,
            delay=delay.total_seconds(),
        )
        if delay < SHORT_RETRY:
            rec.note(retried)
            await self.clock.sleep(delay.total_seconds())
            return attempt
        row = f"{path}#retry{attempt}"
        await rec.wait(row, spi.WakeAt(self.clock.now() + delay), retried)
        raise Parked({row})
