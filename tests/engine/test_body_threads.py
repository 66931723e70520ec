"""Sync bodies run on the engine's body threads (`engine.body_threads`): off the loop, in the caller's
context, concurrently when they block, and a caller that stops waiting leaves the thread to finish."""

from __future__ import annotations

import asyncio
import contextvars
import os
import subprocess
import sys
import threading
import warnings

import pytest

from flowdeck.engine import body_threads
from flowdeck.engine.flow import Flow
from flowdeck.engine.local import run_local

REQUEST = contextvars.ContextVar("REQUEST", default="none")


def test_a_sync_body_runs_off_the_loop_thread_and_its_result_comes_back() -> None:
    async def main() -> tuple[str, str]:
        loop_thread = threading.current_thread().name
        body_thread = await body_threads.run_in_thread(lambda: threading.current_thread().name)
        return loop_thread, body_thread

    loop_thread, body_thread = asyncio.run(main())
    assert body_thread != loop_thread
    assert body_thread.startswith("flowdeck:body:")


def test_the_body_sees_the_callers_context_variables() -> None:
    async def main() -> str:
        REQUEST.set("order-7")
        return await body_threads.run_in_thread(REQUEST.get)

    assert asyncio.run(main()) == "order-7"


def test_every_body_thread_is_prepared_before_its_next_body() -> None:
    """A composition root's preparation (`prepare_threads`) reaches threads already started as well as
    new ones, before the body runs; a preparation of the same name replaces the earlier one."""
    prepared = threading.local()

    def body() -> str:
        return getattr(prepared, "mark", "unprepared")

    async def main() -> list[str]:
        await body_threads.run_in_thread(body)  # a thread started before any preparation
        body_threads.prepare_threads("test", lambda: setattr(prepared, "mark", "first"))
        first = await asyncio.gather(*(body_threads.run_in_thread(body) for _ in range(4)))
        body_threads.prepare_threads("test", lambda: setattr(prepared, "mark", "second"))
        second = await asyncio.gather(*(body_threads.run_in_thread(body) for _ in range(4)))
        return [*first, *second]

    try:
        assert asyncio.run(main()) == ["first"] * 4 + ["second"] * 4
    finally:
        body_threads.prepare_threads("test", None)


def test_an_exception_in_the_body_reaches_the_caller_as_it_was() -> None:
    class Declined(Exception):
        pass

    def body() -> None:
        raise Declined("card declined")

    async def main() -> None:
        await body_threads.run_in_thread(body)

    with pytest.raises(Declined, match="card declined"):
        asyncio.run(main())


def test_blocking_bodies_run_at_the_same_time_not_one_after_another() -> None:
    # Twelve bodies that each wait for all twelve: they finish only if twelve threads run them at once.
    together = threading.Barrier(12, timeout=10)

    async def main() -> list[int]:
        return await asyncio.gather(*(body_threads.run_in_thread(together.wait) for _ in range(12)))

    assert sorted(asyncio.run(main())) == list(range(12))


def test_a_caller_that_stops_waiting_leaves_the_body_to_finish_and_the_threads_serve_on() -> None:
    release, finished = threading.Event(), threading.Event()

    def slow() -> str:
        release.wait(10)
        finished.set()
        return "late"

    async def main() -> str:
        waiting = asyncio.ensure_future(body_threads.run_in_thread(slow))
        await asyncio.sleep(0.01)
        waiting.cancel()
        release.set()
        assert await asyncio.to_thread(finished.wait, 10)
        return await body_threads.run_in_thread(lambda: "next")

    assert asyncio.run(main()) == "next"


def test_a_flows_sync_steps_run_on_body_threads() -> None:
    seen: list[str] = []
    flow = (
        Flow.init("threads")
        .step("one", lambda ctx: seen.append(threading.current_thread().name))
        .output("two", lambda ctx: threading.current_thread().name, type=str)
    )
    result = asyncio.run(run_local(flow))
    assert seen[0].startswith("flowdeck:body:")
    assert result.two.startswith("flowdeck:body:")


BOUND_SCRIPT = """
import asyncio, threading
from flowdeck.engine import body_threads

body_threads.limit(2)
running, most, gate, release = 0, 0, threading.Lock(), threading.Event()

def body():
    global running, most
    with gate:
        running += 1
        most = max(most, running)
    release.wait(10)
    with gate:
        running -= 1

async def main():
    started = [body_threads.run_in_thread(body) for _ in range(5)]
    await asyncio.sleep(0.2)
    print("while held:", most)
    release.set()
    await asyncio.gather(*started)
    print("threads:", body_threads._started)

asyncio.run(main())
"""


def test_the_bound_holds_extra_bodies_until_a_thread_is_free() -> None:
    # A fresh process, so no thread of another test serves: five bodies, room for two.
    done = subprocess.run([sys.executable, "-c", BOUND_SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["while held: 2", "threads: 2"]


def test_a_forked_child_starts_its_own_body_threads() -> None:
    # The parent's threads do not survive a fork; a child that ran bodies on them would wait forever.
    async def body(answer: str) -> str:
        return await asyncio.wait_for(body_threads.run_in_thread(lambda: answer), 10)

    assert asyncio.run(body("parent")) == "parent"
    with warnings.catch_warnings():  # Python 3.12+ warns that forking a process with threads may deadlock
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: a body must run, on a thread of its own
        try:
            os._exit(0 if asyncio.run(body("child")) == "child" else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_recovery_runs_on_the_body_thread_after_a_body_raised_and_only_then() -> None:
    recovered: list[str] = []

    def recover() -> None:
        recovered.append(threading.current_thread().name)

    def fails() -> None:
        raise ConnectionError("the server ended the connection")

    async def main() -> type[BaseException] | None:
        await body_threads.run_in_thread(lambda: None)
        assert recovered == []  # a body that returned needs no repair
        try:
            await body_threads.run_in_thread(fails)
        except ConnectionError as error:  # the body's own error still reaches its caller
            return type(error)
        return None

    replaced = body_threads.recover_threads("test", recover)
    try:
        raised = asyncio.run(main())
    finally:
        body_threads.recover_threads("test", replaced)
    assert raised is ConnectionError
    assert len(recovered) == 1
    assert recovered[0].startswith("flowdeck:body:")
