"""The walk: one visit over a flow's nodes against the record, skipping what is recorded.

A node whose record the walk finds is skipped and its value read back (its compensations noted again); the
first node without one runs its body (through the body runner, engine/bodies.py) and is recorded (through
the recorder it was handed, engine/recorder.py) before the next begins. The walk does not know whether it
writes: a dry run hands it a recorder that never does.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from flowdeck.engine import bodies, compensation, nodes, rate_limits, tracing, traversal, values
from flowdeck.engine.context import Context
from flowdeck.engine.errors import FlowDomainError, FlowLoopExhausted
from flowdeck.engine.flow import LoopAgain, LoopDone
from flowdeck.engine.nodes import NO_STATE, Body, Knobs
from flowdeck.engine.outcomes import PASS_THROUGH, Parked, StopFor, describe, mistake
from flowdeck.engine.recorder import Recorder
from flowdeck.engine.traversal import qualify
from flowdeck.store import spi

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow

__all__ = ["Scope", "Walker", "child_inputs", "list_type", "state_type"]


def list_type(declared: Any) -> Any:
    return None if declared is None else list[declared]


def state_type(initial: Any) -> Any:
    """A loop's state is recorded as JSON unless its initial value is a pydantic model."""
    return type(initial) if isinstance(initial, BaseModel) else None


def child_inputs(flow: Flow) -> list[nodes.Input]:
    """The inputs a subflow's mapper may supply: the child's own, outside nested subflows."""
    seen: dict[str, nodes.Input] = {}
    for place in traversal.walk(flow, subflows=False):
        if isinstance(place.node, nodes.Input):
            seen.setdefault(place.node.name, place.node)
    return list(seen.values())


@dataclass
class Scope:
    """Where a walk is: the durable prefix (a subflow's `name~`) and the values its bodies can read."""

    prefix: str
    values: dict[str, Any] = field(default_factory=dict)

    def child(self) -> Scope:
        return Scope(self.prefix, dict(self.values))


class Walker(traversal.Visitor[Awaitable[None]]):
    """One walk of a flow against the record `rec` holds, noting compensation handlers as it goes."""

    def __init__(self, flow: Flow, rec: Recorder, trace: tracing.Attempt = tracing.OFF) -> None:
        self.flow = flow
        self.rec = rec
        self.trace = trace
        self.runner = bodies.BodyRunner(rec, rec.clock, trace)
        # the record's own containers, read on every node (never rebound by the recorder)
        self.fields = rec.fields
        self.completed = rec.completed
        self.waits = rec.waits
        self.handlers: list[compensation.Handler] = []

    async def walk(self, items: Sequence[nodes.Node], scope: Scope) -> None:
        for node in items:
            await self.visit(node, scope)

    def context(self, scope: Scope, path: str, attempt: int = 0, undos: list[Any] | None = None) -> Context:
        return Context(
            scope.values, execution_id=self.rec.execution_id, path=path, attempt=attempt, undos=undos
        )

    # --------------------------------------------------------------------------------- node runs

    async def execute(
        self,
        path: str,
        knobs: Knobs,
        scope: Scope,
        body: Callable[[Context], Awaitable[Any]],
        undos: list[Any] | None = None,
        *,
        announce: bool = True,
    ) -> tuple[Any, list[Any]]:
        """Start a node at `path` and run its body under timeout and retry; answer (result, undo notes).

        `announce` False: a loop's later iteration, which passes the guard again but is not a new start."""
        rec = self.rec
        rec.guard(path)  # first: a cancel request (or a resumed unwind) wins over an unknown outcome
        if knobs.at_most_once and path in rec.unfinished and path not in self.completed:
            raise StopFor(
                "F0004",
                path,
                "an at-most-once node was started and never finished: nobody knows whether it acted",
            )
        # a rate-limited start names the token it runs on (its slot): the history shows each token's use
        token = None if knobs.rate_limit is None else await self.rate_limited(path, knobs.rate_limit, scope)
        notes: list[Any] = [] if undos is None else undos
        if path == rec.opened:  # its start went with the claim (interpreter.opening)
            announce, rec.opened = False, None
        start = rec.started(path, token) if announce else None
        if start is not None or rec.unflushed or rec.deferred is not None:
            if start is not None:
                rec.pending.append(start)
            # ONE write before the body: the previous node's record, what is pending, and this start. It
            # answers the cancel flag as of this start: a request recorded before it stops the body here,
            # one recorded after it is heard by the next start or refuses the Completed ending.
            await rec.flush(start)
            rec.guard(path)

        async def once(attempt: int) -> Any:
            return await body(self.context(scope, path, attempt, notes))

        try:
            result = await self.runner.with_retry(path, knobs, once)
        except PASS_THROUGH:
            raise
        except FlowDomainError as error:
            rec.pending.append(rec.failed_event(path, error))
            raise
        except Exception as error:
            rec.pending.append(rec.failed_event(path, error))
            raise mistake(path, error) from error
        return result, notes

    async def rate_limited(self, path: str, use: nodes.RateUse, scope: Scope) -> datetime | None:
        """Hold a token of the node's rate limit before its start (answering its slot), or park until its
        slot (`rate_limits.admit`); a key function's failure, or a limit no longer declared, is a mistake."""
        key = use.key

        async def key_of() -> Any:
            assert key is not None
            return await bodies.pure(key, self.context(scope, path))

        try:
            return await rate_limits.admit(self.rec, path, use, key_of)
        except PASS_THROUGH:
            raise
        except Exception as error:
            raise mistake(path, error) from error

    def note_handlers(self, path: str, knobs: Knobs, compensate: Body | None, scope: Scope) -> None:
        """Note a completed (or replayed) node's undos, then its compensate= handler, which gets the ctx
        as it stands now (built only then: most nodes have no handler, and a ctx copies the scope)."""
        undo = self.fields.get(f"{path}#undo")
        if undo is not None:
            self.handlers.extend(compensation.undo_handlers(path, undo, knobs))
        if compensate is not None:
            args = (self.context(scope, path),)
            self.handlers.append(compensation.Handler(path, path, knobs, body=compensate, args=args))

    def read(self, path: str, declared: Any) -> Any:
        """A recorded value, decoded as the running version declares it. One that no longer decodes was
        recorded for another question (F0102: a resume onto an incompatible version)."""
        try:
            return values.decode(self.fields[path], declared)
        except Exception as error:
            raise StopFor(
                "F0102",
                path,
                f"the recorded value no longer decodes as {values.type_tag(declared)}: {error}",
                describe(error),
            ) from error

    async def ask(self, body: Body, path: str, *args: Any) -> Any:
        """A pure part's answer; its failure is a mistake in the program at `path`."""
        try:
            return await bodies.pure(body, *args)
        except PASS_THROUGH:
            raise
        except Exception as error:
            raise mistake(path, error) from error

    # ---------------------------------------------------------------------------------- the nodes

    async def visit_input(self, node: nodes.Input, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        rec = self.rec
        if path in self.fields:
            scope.values[node.name] = self.read(path, node.type)
            rec.keep(path)
            rec.discharge(path)
            return
        reason = rec.heard_cancel()
        if reason is not None and node.on_cancel is not None:
            heard = rec.event(spi.EventKind.INPUT_DISCHARGED, input_name=path, reason=reason)
            scope.values[node.name] = await self.hear_cancel(
                node.on_cancel, node.type, path, scope, heard, reason
            )
            return
        rec.guard(path)
        if path not in self.waits:
            waiting, wake = rec.event(spi.EventKind.INPUT_WAITING, input_name=path), spi.WakeOnField(path)
            self.trace.wait(path, waiting, wake)
            await rec.wait(path, wake, waiting)
        raise Parked({path})

    async def hear_cancel(
        self, on_cancel: Body, declared: Any, path: str, scope: Scope, event: spi.Event, reason: str
    ) -> Any:
        """A listening wait hears the cancel: `on_cancel(ctx, reason)` becomes the node's value, and the
        request is withdrawn in the same write (the flow goes on its own way)."""
        try:
            value = await bodies.pure(on_cancel, self.context(scope, path), reason)
            data = values.encode(path, value, declared)
        except PASS_THROUGH:
            raise
        except Exception as error:
            raise mistake(path, error) from error
        await self.rec.progress(path, data, event, clear_cancel=True)
        self.completed.add(path)
        return values.decode(data, declared)

    async def atomic(
        self, path: str, knobs: Knobs, body: Body, declared: Any, scope: Scope, *, valued: bool
    ) -> Any:
        """An atomic node: its body and its record in one store transaction, on the store's thread (each
        try its own transaction); answers its value as recorded."""
        notes: list[Any] = []
        rec = self.rec

        def run(ctx: Context) -> Awaitable[Any]:
            notes.clear()  # a rolled-back try's undo notes went with its effects
            call = (lambda: body.fn(ctx)) if body.arity else body.fn
            # on the store's thread in this try's context (its span, its log context), as a sync body's
            in_context = functools.partial(contextvars.copy_context().run, call)
            return rec.atomically(path, in_context, declared, notes, valued=valued)

        value, _ = await self.execute(path, knobs, scope, run, notes)
        return value

    async def visit_output(self, node: nodes.Output, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        if path not in self.fields and node.knobs.atomic:
            scope.values[node.name] = await self.atomic(
                path, node.knobs, node.body, node.type, scope, valued=True
            )
        elif path not in self.fields:
            result, notes = await self.execute(
                path, node.knobs, scope, lambda ctx: bodies.call(node.body, ctx)
            )
            at_once = node.knobs.at_most_once
            scope.values[node.name] = await self.rec.record(path, result, node.type, notes, at_once=at_once)
        else:
            scope.values[node.name] = self.read(path, node.type)
            self.rec.keep(path)
        self.note_handlers(path, node.knobs, node.compensate, scope)

    async def visit_step(self, node: nodes.Step, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        if path not in self.completed and node.knobs.atomic:
            await self.atomic(path, node.knobs, node.body, None, scope, valued=False)
        elif path not in self.completed:
            _, notes = await self.execute(path, node.knobs, scope, lambda ctx: bodies.call(node.body, ctx))
            if notes or node.knobs.at_most_once:
                await self.rec.record(path, None, None, notes, valued=False, at_once=node.knobs.at_most_once)
            else:
                self.rec.defer_completion(path)
        else:
            self.rec.keep(path)
        self.note_handlers(path, node.knobs, node.compensate, scope)

    async def visit_sleep(self, node: nodes.Sleep, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        if path in self.fields:  # a cancellation heard here became its value
            scope.values[node.name] = self.read(path, None)
            self.rec.keep(path)
            return
        if node.duration <= timedelta(0):
            return
        reason = self.rec.heard_cancel()
        if path not in self.completed and reason is not None and node.on_cancel is not None:
            heard = self.rec.event(spi.EventKind.SLEEP_COMPLETED, step_name=path, reason=reason)
            scope.values[node.name] = await self.hear_cancel(node.on_cancel, None, path, scope, heard, reason)
            return
        await self.sleep(path, node.duration)

    async def sleep(self, path: str, duration: timedelta) -> None:
        """A durable wait: skipped once completed; woken (its row satisfied) it completes, the event
        riding on the next write; otherwise a put-if-absent row keeps the first deadline, and we park."""
        rec = self.rec
        if path in self.completed:
            rec.keep(path)
            return
        if duration <= timedelta(0):
            return
        if rec.woken(path, self.waits.get(path)):
            rec.note(rec.event(spi.EventKind.SLEEP_COMPLETED, step_name=path))
            self.completed.add(path)
            rec.keep(path)
            return
        rec.guard(path)
        if path not in self.waits:
            # a sleep started by an earlier attempt whose row was since retired (a stop) keeps its first
            # deadline; one already past is satisfied at the next claim
            until = rec.sleep_until.get(path) or rec.clock.now() + duration
            started = rec.event(spi.EventKind.SLEEP_STARTED, step_name=path, until=until.isoformat())
            self.trace.wait(path, started, spi.WakeAt(until))
            await rec.wait(path, spi.WakeAt(until), started)
        raise Parked({path})

    async def visit_dispatch(self, node: nodes.Dispatch, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        rec = self.rec
        arms = (*node.branches, *((node.default,) if node.default is not None else ()))
        chosen_path = f"{path}#chosen"
        recorded = self.fields.get(chosen_path)
        if rec.reasks and recorded is not None:
            rec.question_choice(path, values.decode(recorded), (await self.choose(arms, scope, path)).name)
        if path in self.fields:
            scope.values[node.name] = self.read(path, node.type)
            rec.keep(path)
        else:
            if recorded is not None:
                name = values.decode(recorded)
                arm = next((a for a in arms if a.name == name), None)
                if arm is None:
                    raise StopFor("F0102", path, f"the recorded branch {name!r} no longer exists")
                rec.keep(chosen_path)
            else:
                arm = await self.choose(arms, scope, path)
                rec.guard(path)
                chosen = rec.event(spi.EventKind.BRANCH_CHOSEN, dispatch_name=path, branch_name=arm.name)
                await rec.defer(chosen_path, values.encode(chosen_path, arm.name), chosen)
            result, notes = await self.execute(
                path, node.knobs, scope, lambda ctx: bodies.call(arm.body, ctx)
            )
            at_once = node.knobs.at_most_once
            scope.values[node.name] = await rec.record(path, result, node.type, notes, at_once=at_once)
        self.note_handlers(path, node.knobs, node.compensate, scope)

    async def choose(self, arms: Sequence[nodes.Branch], scope: Scope, path: str) -> nodes.Branch:
        """The first arm whose condition holds (the default has none): a pure part, outside the guard."""
        ctx = self.context(scope, path)
        for arm in arms:
            if arm.condition is None:
                return arm
            if await self.ask(arm.condition, path, ctx):
                return arm
        raise StopFor("F0001", path, "no branch of the dispatch applies and it has no default")

    async def visit_loop(self, node: nodes.Loop, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        if path in self.fields:
            scope.values[node.name] = self.read(path, node.type)
            self.rec.keep(path)
        else:
            stateful = node.initial is not NO_STATE
            state = node.initial
            notes: list[Any] = []
            iterations = 0
            while True:

                async def iteration(ctx: Context, state: Any = state) -> Any:
                    return await (
                        bodies.call(node.body, state, ctx) if stateful else bodies.call(node.body, ctx)
                    )

                result, _ = await self.execute(
                    path, node.knobs, scope, iteration, notes, announce=iterations == 0
                )
                iterations += 1
                if isinstance(result, LoopDone):
                    break
                if not isinstance(result, LoopAgain):
                    error = TypeError(f"loop {path!r}: the body must answer Loop.done(v) or Loop.again(...)")
                    raise mistake(path, error)
                state = result.state if stateful else state
            at_once = node.knobs.at_most_once
            # Its iterations leave no field of their own: the count rides on its StepCompleted.
            scope.values[node.name] = await self.rec.record(
                path, result.value, node.type, notes, at_once=at_once, told={"iterations": iterations}
            )
        self.note_handlers(path, node.knobs, node.compensate, scope)

    async def visit_loop_on(self, node: nodes.LoopOn, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        rec = self.rec
        i = 0
        state = node.initial
        while path not in self.fields:
            checkpoint = f"{path}#{i}"
            state, done = await self.iterate(node, scope, checkpoint, state)
            if done:
                break
            self.handlers.extend(
                compensation.undo_handlers(checkpoint, self.fields.get(f"{checkpoint}#undo"), node.knobs)
            )
            delay = node.schedule.delay(i)
            if delay is None:
                error = FlowLoopExhausted(f"loop_on {path!r} ran out of schedule after {i + 1} iterations")
                rec.note(rec.failed_event(path, error))
                raise error
            await self.sleep(f"{path}##{i}", delay)
            i += 1
        else:
            scope.values[node.name] = self.read(path, node.type)
            rec.keep(path)
        self.note_handlers(path, node.knobs, node.compensate, scope)

    async def iterate(
        self, node: nodes.LoopOn, scope: Scope, checkpoint: str, state: Any
    ) -> tuple[Any, bool]:
        """One iteration of a loop_on, replayed from its checkpoint or run and checkpointed; answers the
        state after it and whether the loop is done (its value then recorded in `scope`)."""
        path = qualify(scope.prefix, node.name)
        stateful = node.initial is not NO_STATE
        declared_state = state_type(node.initial)
        if checkpoint in self.fields:
            state = self.read(checkpoint, declared_state) if stateful else state
            self.rec.keep(checkpoint)
            return state, False

        async def iteration(ctx: Context, state: Any = state) -> Any:
            return await (bodies.call(node.body, state, ctx) if stateful else bodies.call(node.body, ctx))

        result, notes = await self.execute(checkpoint, node.knobs, scope, iteration)
        if isinstance(result, LoopDone):
            scope.values[node.name] = await self.rec.record(path, result.value, node.type, notes)
            return state, True
        if not isinstance(result, LoopAgain):
            error = TypeError(f"loop_on {path!r}: the body must answer Loop.done(v) or Loop.again(...)")
            raise mistake(checkpoint, error)
        recorded = await self.rec.record(
            checkpoint, result.state if stateful else None, declared_state, notes
        )
        return (recorded if stateful else state), False

    async def visit_foreach(self, node: nodes.ForEach, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        rec = self.rec
        done = path in self.fields
        has_undos = any(p.startswith(f"{path}~") and p.endswith("#undo") for p in self.fields)
        if done and node.compensate is None and not has_undos and not rec.reasks:
            scope.values[node.name] = self.read(path, list_type(node.type))
            rec.keep(path)
            return
        items = await self.collection(node, scope, path)
        count_path = f"{path}~count"
        recorded = self.fields.get(count_path)
        if recorded is not None and values.decode(recorded) != len(items):
            raise rec.miscounted(path, values.decode(recorded), len(items))
        if done:
            scope.values[node.name] = self.read(path, list_type(node.type))
            rec.keep(path)
            for i, item in enumerate(items):
                self.note_item(node, path, i, item, self.read(f"{path}~{i}", node.type))
            return
        if recorded is None:
            rec.note_field(count_path, spi.FieldData.of(len(items), "int"))  # rides on the first write
        results = await self.items(node, scope, path, items)
        scope.values[node.name] = await rec.record(path, results, list_type(node.type), ())

    async def collection(self, node: nodes.ForEach, scope: Scope, path: str) -> list[Any]:
        try:
            return list(await bodies.pure(node.items, self.context(scope, path)))
        except PASS_THROUGH:
            raise
        except Exception as error:
            raise mistake(path, error) from error

    async def items(self, node: nodes.ForEach, scope: Scope, path: str, items: list[Any]) -> list[Any]:
        """Every item's value, replayed or run (at most `concurrency` at once); the first failure stops
        the items not yet started."""
        results: list[Any] = [None] * len(items)
        bound = asyncio.Semaphore(node.concurrency or max(len(items), 1))
        failed: list[int] = []

        async def one(i: int, item: Any) -> None:
            item_path = f"{path}~{i}"
            if item_path in self.fields:
                results[i] = self.read(item_path, node.type)
                self.rec.keep(item_path)
            else:
                async with bound:
                    if failed:  # a sibling failed while this item queued: start nothing new
                        raise asyncio.CancelledError
                    try:
                        result, notes = await self.execute(
                            item_path, node.knobs, scope, lambda ctx: bodies.call(node.body, item, ctx)
                        )
                        at_once = node.knobs.at_most_once
                        results[i] = await self.rec.record(
                            item_path, result, node.type, notes, at_once=at_once
                        )
                    except BaseException:
                        failed.append(i)
                        raise
            self.note_item(node, path, i, item, results[i])

        await self.rec.join([lambda i=i, item=item: one(i, item) for i, item in enumerate(items)])
        return results

    def note_item(self, node: nodes.ForEach, path: str, i: int, item: Any, value: Any) -> None:
        item_path = f"{path}~{i}"
        self.handlers.extend(
            compensation.undo_handlers(item_path, self.fields.get(f"{item_path}#undo"), node.knobs)
        )
        if node.compensate is not None:
            self.handlers.append(
                compensation.Handler(
                    item_path, item_path, node.knobs, body=node.compensate, args=(item, value)
                )
            )

    async def visit_subflow(self, node: nodes.Subflow, scope: Scope) -> None:
        prefix = qualify(scope.prefix, node.name)
        rec = self.rec
        inputs = child_inputs(node.child)
        owed = [i for i in inputs if qualify(prefix, i.name) not in self.fields]
        if owed or rec.reasks:
            mapped = await self.mapped(node, scope, prefix)
            if rec.reasks:
                rec.question_inputs(prefix, inputs, mapped)
            supplied: dict[str, spi.FieldData] = {}
            for child_input in owed:
                if child_input.name in mapped:
                    input_path = qualify(prefix, child_input.name)
                    try:
                        supplied[input_path] = values.encode(
                            input_path, mapped[child_input.name], child_input.type
                        )
                    except Exception as error:
                        raise mistake(input_path, error) from error
            if supplied:
                await rec.supply(prefix, supplied)
        child = Scope(prefix)
        await self.walk(node.child.nodes, child)
        scope.values[node.name] = values.Record(child.values)

    async def mapped(self, node: nodes.Subflow, scope: Scope, prefix: str) -> Mapping[str, Any]:
        result = await self.ask(node.mapper, prefix, self.context(scope, prefix))
        if isinstance(result, values.Record):
            return dict(result._asdict())
        if not isinstance(result, Mapping):
            raise mistake(
                prefix, TypeError(f"subflow {prefix!r}: the mapper must answer a dict, got {result!r}")
            )
        return result

    async def visit_parallel(self, node: nodes.Parallel, scope: Scope) -> None:
        scopes = [scope.child() for _ in node.branches]
        jobs = [lambda b=b, s=s: self.walk(b.nodes, s) for b, s in zip(node.branches, scopes, strict=True)]
        if node.kind == "race":
            winner = await self.rec.race(jobs)
            scope.values.update(scopes[winner].values)
        else:
            await self.rec.join(jobs)
            for branch_scope in scopes:
                scope.values.update(branch_scope.values)
