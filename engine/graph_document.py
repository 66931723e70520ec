"""A version's plan as a JSON document, kept by the store at registration so the version still draws once
no process has its code.

The document describes the plan, not a drawing: each node's kind, name, value type, knobs' description and
tags, sleep duration, loop schedule, foreach concurrency, dispatch arms, and the nesting of parallels and
subflows. `flow_of` rebuilds a skeleton `Flow` from it whose bodies only refuse to run, so the one fold
(engine/graph.py), the one progress reader (engine/progress.py) and every renderer (engine/render/) draw a
stored version exactly as they draw a served one, whatever those learn to paint later.

A stored document is read by code newer than its writer: unknown keys are ignored, a missing optional
key takes its default, and a shape it cannot read is refused with `GraphDocumentError` naming where.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from flowdeck.engine import errors, nodes, traversal, values
from flowdeck.engine.flow import Flow
from flowdeck.engine.nodes import NO_STATE, Body, Knobs, Node
from flowdeck.engine.schedule import Schedule

__all__ = ["FORMAT", "GraphDocumentError", "document_of", "flow_of", "type_tag"]

FORMAT = 1
"""The document's format number; a reader refuses a newer one rather than drawing it wrongly."""


class GraphDocumentError(errors.FlowError):
    """The stored graph document cannot be read."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"stored graph document, at {where}: {problem}")
        self.where = where
        self.problem = problem


# ------------------------------------------------------------------------------------------- write


def _type_name(t: Any) -> str:
    """The name a diagram shows for a value type (engine/graph.py's `type_name`)."""
    if t is None:
        return ""
    return getattr(t, "__name__", None) or repr(t)


def _about(description: str, tags: tuple[str, ...], location: str) -> dict[str, Any]:
    found: dict[str, Any] = {"description": description, "tags": list(tags), "location": location}
    return {key: value for key, value in found.items() if value}


def _schedule(schedule: Schedule) -> dict[str, Any]:
    maximum = schedule.maximum.total_seconds() if schedule.maximum is not None else None
    return {
        "kind": schedule.kind,
        "initial": schedule.initial.total_seconds(),
        "factor": schedule.factor,
        "maximum": maximum,
        "limit": schedule.limit,
    }


class _Write(traversal.Visitor[dict[str, Any]]):
    def chain(self, flow: Flow) -> dict[str, Any]:
        return {"name": flow.name, "nodes": [self.visit(node) for node in flow.nodes]}

    def typed(self, kind: str, node: Any, **more: Any) -> dict[str, Any]:
        """A node holding a value: its type's shown name and its tag (the hash's spelling)."""
        knobs: Knobs | None = getattr(node, "knobs", None)
        description = knobs.description if knobs is not None else getattr(node, "description", "")
        tags = knobs.tags if knobs is not None else getattr(node, "tags", ())
        found = {"kind": kind, "name": node.name, **more, **_about(description, tags, node.location)}
        if hasattr(node, "type"):
            found |= {"type": _type_name(node.type), "tag": type_tag(node.type)}
        return found

    def visit_input(self, node: nodes.Input) -> dict[str, Any]:
        return self.typed("input", node)

    def visit_output(self, node: nodes.Output) -> dict[str, Any]:
        return self.typed("output", node)

    def visit_step(self, node: nodes.Step) -> dict[str, Any]:
        return self.typed("step", node)

    def visit_sleep(self, node: nodes.Sleep) -> dict[str, Any]:
        return self.typed("sleep", node, seconds=node.duration.total_seconds())

    def visit_dispatch(self, node: nodes.Dispatch) -> dict[str, Any]:
        arms = [{"name": a.name, **_about("", (), a.location)} for a in node.branches]
        if node.default is not None:
            arms.append({"name": node.default.name, "default": True, **_about("", (), node.default.location)})
        return self.typed("dispatch", node, arms=arms)

    def visit_loop(self, node: nodes.Loop) -> dict[str, Any]:
        return self.typed("loop", node, stateful=node.initial is not NO_STATE)

    def visit_loop_on(self, node: nodes.LoopOn) -> dict[str, Any]:
        stateful = node.initial is not NO_STATE
        return self.typed("loop_on", node, schedule=_schedule(node.schedule), stateful=stateful)

    def visit_foreach(self, node: nodes.ForEach) -> dict[str, Any]:
        return self.typed("foreach", node, concurrency=node.concurrency)

    def visit_subflow(self, node: nodes.Subflow) -> dict[str, Any]:
        return self.typed("subflow", node, child=self.chain(node.child))

    def visit_parallel(self, node: nodes.Parallel) -> dict[str, Any]:
        found = {
            "kind": "parallel",
            "parallel": node.kind,
            "branches": [self.chain(b) for b in node.branches],
        }
        return found | _about("", (), node.location)


def document_of(flow: Flow) -> dict[str, Any]:
    """The plan of `flow` as plain JSON (what `WorkflowInfo.graph` keeps)."""
    return {"format": FORMAT, **_Write().chain(flow)}


# -------------------------------------------------------------------------------------------- read


def _not_served(*args: Any) -> Any:
    raise errors.FlowNotRegistered("a version drawn from its stored graph document runs nothing")


_NOTHING = Body.of(_not_served)
_TYPES: dict[tuple[str, str], type] = {}


def _type(name: str, tag: str) -> Any:
    """A stand-in class carrying the type's shown name and its tag (one per pair, so equal documents
    rebuild equal)."""
    if not name:
        return None
    if (name, tag) not in _TYPES:
        _TYPES[name, tag] = type(name, (), {"__module__": __name__, "flowdeck_tag": tag})
    return _TYPES[name, tag]


def type_tag(t: Any) -> str:
    """A value type's tag (`values.type_tag`), a stand-in's being the tag it was stored with."""
    if isinstance(t, type) and t.__module__ == __name__ and hasattr(t, "flowdeck_tag"):
        return str(t.flowdeck_tag)
    return values.type_tag(t)


class _Reader:
    def __init__(self) -> None:
        self.where: list[str] = []

    def fail(self, problem: str) -> GraphDocumentError:
        return GraphDocumentError("/".join(self.where) or "the top", problem)

    def get(
        self, data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], default: Any = None
    ) -> Any:
        """`data[key]` when it is a `kind` (a bool is no number here), `default` when absent or null."""
        value = data.get(key)
        if value is None:
            return default
        wanted = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
            names = " or ".join(k.__name__ for k in wanted)
            raise self.fail(f"{key!r} should be {names}, found {type(value).__name__}")
        return value

    def chain(self, data: Any) -> Flow:
        if not isinstance(data, Mapping):
            raise self.fail(f"a chain should be an object, found {type(data).__name__}")
        listed = self.get(data, "nodes", list, [])
        built = []
        for index, item in enumerate(listed):
            self.where.append(str(index))
            built.append(self.node(item))
            self.where.pop()
        return Flow(str(self.get(data, "name", str, "")), tuple(built))

    def node(self, data: Any) -> Node:
        if not isinstance(data, Mapping):
            raise self.fail(f"a node should be an object, found {type(data).__name__}")
        kind = self.get(data, "kind", str, "")
        read = getattr(self, f"read_{kind}", None)
        if read is None:
            raise self.fail(f"unknown node kind {kind!r}")
        node: Node = read(data)
        return node

    def about(self, data: Mapping[str, Any]) -> tuple[str, str, tuple[str, ...], str]:
        tags = tuple(str(t) for t in self.get(data, "tags", list, []))
        return (
            self.get(data, "name", str, ""),
            self.get(data, "description", str, ""),
            tags,
            self.get(data, "location", str, ""),
        )

    def knobs(self, data: Mapping[str, Any]) -> tuple[str, Any, Knobs, str]:
        name, description, tags, location = self.about(data)
        return name, self.type(data), Knobs(description, tags), location

    def type(self, data: Mapping[str, Any]) -> Any:
        return _type(self.get(data, "type", str, ""), self.get(data, "tag", str, ""))

    def read_input(self, data: Mapping[str, Any]) -> Node:
        name, description, tags, location = self.about(data)
        return nodes.Input(name, self.type(data), description, tags, location=location)

    def read_output(self, data: Mapping[str, Any]) -> Node:
        name, t, knobs, location = self.knobs(data)
        return nodes.Output(name, _NOTHING, t, knobs=knobs, location=location)

    def read_step(self, data: Mapping[str, Any]) -> Node:
        name, _, knobs, location = self.knobs(data)
        return nodes.Step(name, _NOTHING, knobs=knobs, location=location)

    def read_sleep(self, data: Mapping[str, Any]) -> Node:
        name, description, tags, location = self.about(data)
        seconds = self.get(data, "seconds", (int, float), 0)
        return nodes.Sleep(name, timedelta(seconds=seconds), description, tags, location=location)

    def read_dispatch(self, data: Mapping[str, Any]) -> Node:
        name, t, knobs, location = self.knobs(data)
        arms, default = [], None
        for arm in self.get(data, "arms", list, []):
            if not isinstance(arm, Mapping):
                raise self.fail("a dispatch arm should be an object")
            arm_name, _, _, arm_at = self.about(arm)
            if arm.get("default") is True:
                default = nodes.Branch(arm_name, None, _NOTHING, arm_at)
            else:
                arms.append(nodes.Branch(arm_name, _NOTHING, _NOTHING, arm_at))
        return nodes.Dispatch(name, t, tuple(arms), default, knobs=knobs, location=location)

    def read_loop(self, data: Mapping[str, Any]) -> Node:
        name, t, knobs, location = self.knobs(data)
        initial = None if self.get(data, "stateful", bool, False) else NO_STATE
        return nodes.Loop(name, _NOTHING, initial, t, knobs=knobs, location=location)

    def read_loop_on(self, data: Mapping[str, Any]) -> Node:
        name, t, knobs, location = self.knobs(data)
        initial = None if self.get(data, "stateful", bool, False) else NO_STATE
        schedule = self.schedule(self.get(data, "schedule", Mapping, {}))
        return nodes.LoopOn(name, schedule, _NOTHING, initial, t, knobs=knobs, location=location)

    def schedule(self, data: Mapping[str, Any]) -> Schedule:
        maximum = self.get(data, "maximum", (int, float))
        return Schedule(
            self.get(data, "kind", str, "fixed"),
            timedelta(seconds=self.get(data, "initial", (int, float), 0)),
            float(self.get(data, "factor", (int, float), 1.0)),
            timedelta(seconds=maximum) if maximum is not None else None,
            self.get(data, "limit", int),
        )

    def read_foreach(self, data: Mapping[str, Any]) -> Node:
        name, t, knobs, location = self.knobs(data)
        concurrency = self.get(data, "concurrency", int)
        return nodes.ForEach(name, _NOTHING, _NOTHING, t, concurrency, knobs=knobs, location=location)

    def read_subflow(self, data: Mapping[str, Any]) -> Node:
        name, _, _, location = self.about(data)
        self.where.append(f"{name}~")
        child = self.chain(self.get(data, "child", Mapping, {}))
        self.where.pop()
        return nodes.Subflow(name, child, _NOTHING, location)

    def read_parallel(self, data: Mapping[str, Any]) -> Node:
        kind = self.get(data, "parallel", str, "")
        if kind not in ("zip", "gather", "race"):
            raise self.fail(f"a parallel's kind should be zip, gather or race, found {kind!r}")
        branches = []
        for index, branch in enumerate(self.get(data, "branches", list, [])):
            self.where.append(f"{kind}[{index}]")
            branches.append(self.chain(branch))
            self.where.pop()
        return nodes.Parallel(kind, tuple(branches), self.get(data, "location", str, ""))


def flow_of(document: Mapping[str, Any]) -> Flow:
    """The skeleton of the stored version: its plan, with bodies that refuse to run. Draw it with
    `flowdeck.engine.render`, paint it with `flowdeck.engine.progress.build_progress`, as a served flow."""
    reader = _Reader()
    if not isinstance(document, Mapping):
        raise reader.fail(f"the document should be an object, found {type(document).__name__}")
    found = document.get("format")
    if not isinstance(found, int) or isinstance(found, bool) or found > FORMAT or found < 1:
        raise reader.fail(f"format {found!r} is not one this engine reads (it reads 1 to {FORMAT})")
    return reader.chain(document)
