"""What a flow looks like from outside: its durable names, its registration checks, its structural hash and
the WorkflowInfo a store keeps per registered version.

Durable names: a node's name is the key its value, completion mark or wait row lives under. A subflow's
nodes live under `name~`; a parallel's branches share the parent's namespace, which is why two nodes in
different branches can collide, and why the two blessed cases (one input shared by parallel branches, one
result name shared by race branches) have to be told apart from real collisions.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from flowdeck.engine import errors, graph_document, nodes, traversal, values
from flowdeck.engine.nodes import NO_STATE, Node
from flowdeck.engine.schedule import Schedule
from flowdeck.engine.traversal import qualify
from flowdeck.store import spi

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow, Meta

__all__ = [
    "RESERVED",
    "Claim",
    "branch_collisions",
    "claims",
    "collisions",
    "durable_names",
    "node_tag",
    "node_type",
    "owner_of",
    "qualify",
    "reserved_names",
    "structural_hash",
    "validate",
    "workflow_info",
]

RESERVED = ("~", "#")
"""The characters the engine builds keys with: `~` joins a path, `#` numbers a repetition."""

_RESULTS = (nodes.Output, nodes.Dispatch, nodes.Loop, nodes.LoopOn)
"""Node kinds whose one value two race branches may share (first writer wins at the store)."""


# ------------------------------------------------------------------------------------------ claims


@dataclass(frozen=True)
class Claim:
    """One node's claim on a durable path. `branches` is where it sits among parallel branches:
    (parallel occurrence, parallel kind, branch index) from the root inwards."""

    path: str
    node: Node
    branches: tuple[tuple[int, str, int], ...] = ()

    @property
    def location(self) -> str:
        return self.node.location


def claims(flow: Flow) -> list[Claim]:
    """Every durable path a node claims, in walk order (subflow children under their instance path)."""
    return [Claim(place.path, place.node, place.branches) for place in traversal.walk(flow)]


def _blessed(a: Claim, b: Claim) -> bool:
    """Whether two claims on one path are one of the two cases the seed blesses rather than refuses."""
    for (a_at, kind, a_index), (b_at, _, b_index) in zip(a.branches, b.branches, strict=False):
        if a_at != b_at:
            return False  # two parallels one after the other: sequential, a real collision
        if a_index != b_index:
            if isinstance(a.node, nodes.Input) and isinstance(b.node, nodes.Input):
                # One wait, one field, two readers: only if they read it as the same type.
                return values.type_tag(a.node.type) == values.type_tag(b.node.type)
            return kind == "race" and isinstance(a.node, _RESULTS) and isinstance(b.node, _RESULTS)
    return False  # one encloses the other's position: they run one after the other


def collisions(flow: Flow) -> dict[str, list[Claim]]:
    """Every durable path claimed by nodes that would overwrite each other, with all its claimants."""
    by_path: dict[str, list[Claim]] = {}
    for claim in claims(flow):
        by_path.setdefault(claim.path, []).append(claim)
    return {
        path: group
        for path, group in by_path.items()
        if any(not _blessed(a, b) for a, b in itertools.combinations(group, 2))
    }


def branch_collisions(flow: Flow) -> dict[str, list[nodes.Branch]]:
    """Dispatch arms sharing a name: the recorded choice could not tell them apart on replay."""
    found: dict[str, list[nodes.Branch]] = {}
    for claim in claims(flow):
        if isinstance(claim.node, nodes.Dispatch):
            arms = [*claim.node.branches, *([claim.node.default] if claim.node.default else [])]
            for name in {a.name for a in arms}:
                same = [a for a in arms if a.name == name]
                if len(same) > 1:
                    found[f"{claim.path}#chosen={name}"] = same
    return found


def reserved_names(flow: Flow) -> list[tuple[str, str]]:
    """(name, location) of every node or dispatch-arm name using a reserved character."""
    found = []
    for claim in claims(flow):
        names = [(claim.node.name, claim.node.location)]
        if isinstance(claim.node, nodes.Dispatch):
            arms = [*claim.node.branches, *([claim.node.default] if claim.node.default else [])]
            names += [(arm.name, arm.location) for arm in arms]
        found += [(name, at) for name, at in names if any(c in name for c in RESERVED)]
    return found


def _waits(flow: Flow) -> Iterator[nodes.Input | nodes.Sleep]:
    """Every input or sleep the execution may sit in. A subflow's inputs never wait: its mapper
    supplies them on entry."""
    for place in traversal.walk(flow):
        node = place.node
        if isinstance(node, nodes.Sleep) or (isinstance(node, nodes.Input) and not place.nested):
            yield node


def listen_mismatch(flow: Flow) -> tuple[list[str], list[str]] | None:
    """(listening, deaf) wait names when some waits have on_cancel and some do not (F0006), else None."""
    listening, deaf = [], []
    for wait in _waits(flow):
        (listening if wait.on_cancel is not None else deaf).append(wait.name)
    if listening and deaf:
        return _unique(listening), _unique(deaf)
    return None


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def validate(flow: Flow) -> Flow:
    """The registration checks, in the seed's order: unnamed, reserved character, duplicate durable name,
    then F0006 (listening for cancellation in some waits but not all). Gives the flow back."""
    if not isinstance(flow.name, str) or not flow.name.strip():
        raise errors.FlowUnnamed()
    for name, location in reserved_names(flow):
        raise errors.FlowReservedName(name, location)
    for path, group in collisions(flow).items():
        raise errors.FlowDuplicateName(path, [c.location for c in group])
    for path, arms in branch_collisions(flow).items():
        raise errors.FlowDuplicateName(path, [a.location for a in arms])
    mismatch = listen_mismatch(flow)
    if mismatch:
        raise errors.FlowListenMismatch(*mismatch)
    return flow


# ------------------------------------------------------------------------------------ durable names


def durable_names(flow: Flow) -> dict[str, Node]:
    """Every durable path a node of this flow owns, mapped to its node (first claimant), in walk order.

    Recorded keys derive from these: `p#chosen`, `p#i`, `p##i`, `p~i`, `p~count`, `p#compensated`;
    `owner_of` resolves any recorded key back to the path it belongs to.
    """
    names: dict[str, Node] = {}
    for claim in claims(flow):
        names.setdefault(claim.path, claim.node)
    return names


def owner_of(key: str, names: Collection[str] | Flow) -> str | None:
    """The durable path a recorded key belongs to (cutting at the last `#` or `~` until a node's path
    matches: `pay#retry` → `pay`, `poll##3` → `poll`, `items~4` → `items`), or None when no node of the
    flow owns it (F0101 on resume). `names` is the flow's known paths, or the flow itself."""
    known = names if isinstance(names, Collection) else durable_names(names)
    candidate = key
    while candidate:
        if candidate in known:
            return candidate
        cut = max(candidate.rfind("#"), candidate.rfind("~"))
        if cut < 0:
            return None
        candidate = candidate[:cut]
    return None


# ------------------------------------------------------------------------------------- node facts


def node_type(node: Node) -> str:
    """output, input, step, sleep, dispatch, loop (loop and loop_on), foreach, subflow, or the parallel's
    kind (zip, gather, race)."""
    kinds: dict[type, str] = {
        nodes.Input: "input",
        nodes.Output: "output",
        nodes.Step: "step",
        nodes.Sleep: "sleep",
        nodes.Dispatch: "dispatch",
        nodes.Loop: "loop",
        nodes.LoopOn: "loop",
        nodes.ForEach: "foreach",
        nodes.Subflow: "subflow",
    }
    if isinstance(node, nodes.Parallel):
        return node.kind
    return kinds[type(node)]


def node_tag(node: Node) -> str:
    """The stored value's type: "None" for steps and sleeps, "Any" for a subflow, "list[T]" for a foreach,
    "json" for an undeclared value."""
    if isinstance(node, nodes.Step | nodes.Sleep | nodes.Parallel):
        return "None"
    if isinstance(node, nodes.Subflow):
        return "Any"
    if isinstance(node, nodes.ForEach):
        return f"list[{values.type_tag(node.type)}]"
    return values.type_tag(node.type)


def _state_tag(initial: Any) -> str:
    return "None" if initial is NO_STATE else values.type_tag(type(initial))


# ------------------------------------------------------------------------------------- the hash


def _seconds(duration: timedelta | None) -> str:
    return "none" if duration is None else repr(duration.total_seconds())


def _schedule(schedule: Schedule) -> str:
    return (
        f"{schedule.kind}/{_seconds(schedule.initial)}/{schedule.factor!r}/"
        f"{_seconds(schedule.maximum)}/{schedule.limit}"
    )


def _shape(flow: Flow, types: list[str]) -> str:
    """One walk builds both halves: the shape tokens (returned) and the type entries (appended)."""
    return _Shape(types).sequence(flow)


class _Shape(traversal.Visitor[str]):
    """A node's shape token; its type entry (if it has a value) goes to `types` on the way."""

    def __init__(self, types: list[str]) -> None:
        self.types = types

    def sequence(self, flow: Flow) -> str:
        tokens = ["INIT"]
        for node in flow.nodes:
            tokens.append(self.visit(node))
        return f"SEQ({','.join(tokens)})"

    def typed(self, node: Node) -> str:
        self.types.append(f"{node.name}:{node_tag(node)}")
        return node.name

    def visit_parallel(self, node: nodes.Parallel) -> str:
        inner = ",".join(self.sequence(branch) for branch in node.branches)
        return {"zip": "ZIP", "race": "RACE"}.get(node.kind, "ALL") + f"({inner})"

    def visit_subflow(self, node: nodes.Subflow) -> str:
        return f"INV:{node.name}({self.sequence(node.child)})"

    def visit_input(self, node: nodes.Input) -> str:
        return f"I:{self.typed(node)}:{node_tag(node)}"

    def visit_output(self, node: nodes.Output) -> str:
        return f"O:{self.typed(node)}:{node_tag(node)}"

    def visit_step(self, node: nodes.Step) -> str:
        return f"S:{node.name}"

    def visit_sleep(self, node: nodes.Sleep) -> str:
        return f"SL:{node.name}:{_seconds(node.duration)}"

    def visit_dispatch(self, node: nodes.Dispatch) -> str:
        arms = [*node.branches, *([node.default] if node.default else [])]
        return f"D:{self.typed(node)}:{','.join(a.name for a in arms)}"

    def visit_loop(self, node: nodes.Loop) -> str:
        self.types.append(f"{node.name}:{node_tag(node)}:{_state_tag(node.initial)}")
        return f"L:{node.name}"

    def visit_loop_on(self, node: nodes.LoopOn) -> str:
        self.types.append(f"{node.name}:{node_tag(node)}:{_state_tag(node.initial)}")
        return f"LO:{node.name}:{_schedule(node.schedule)}"

    def visit_foreach(self, node: nodes.ForEach) -> str:
        self.typed(node)
        return f"FE:{node.name}:{node.concurrency if node.concurrency is not None else 'unbounded'}"


def structure(flow: Flow) -> str:
    """The text the structural hash digests: `<shape>||<types joined by |>`."""
    types: list[str] = []
    shape = _shape(flow, types)
    return f"{shape}||{'|'.join(types)}"


def structural_hash(flow: Flow) -> str:
    """A version's identity: 16 hex digits over the flow's structure (node kinds, names, types, branch
    names, sleep durations, loop schedules, foreach concurrency, nesting). The flow's name and meta,
    descriptions, timeouts, retries, handlers and call sites are left out: changing them is not a new
    version."""
    return hashlib.sha256(structure(flow).encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------ WorkflowInfo


def meta_info(meta: Meta) -> spi.WorkflowMeta:
    return spi.WorkflowMeta(
        description=meta.description,
        tags=meta.tags,
        timeout=meta.timeout.total_seconds() if meta.timeout is not None else None,
        retry=meta.retry.describe() if meta.retry is not None else None,
        version=meta.version,
        concurrency=meta.concurrency.describe() if meta.concurrency is not None else None,
    )


def _node_meta(node: Node) -> spi.WorkflowMeta:
    knobs = getattr(node, "knobs", None)
    if knobs is not None:
        return spi.WorkflowMeta(
            description=knobs.description,
            tags=knobs.tags,
            timeout=knobs.timeout.total_seconds() if knobs.timeout is not None else None,
            retry=knobs.retry.describe() if knobs.retry is not None else None,
        )
    return spi.WorkflowMeta(description=getattr(node, "description", ""), tags=getattr(node, "tags", ()))


def _top_level(flow: Flow) -> Iterator[Node]:
    """The nodes whose names are top-level durable names: parallels flattened, subflows not expanded."""
    for place in traversal.walk(flow, subflows=False):
        yield place.node


def workflow_info(workflow_id: str, flow: Flow) -> spi.WorkflowInfo:
    """What the store keeps per registered version: meta, nodes, inputs (with JSON schemas), output names,
    the structural hash and the plan (its graph document). A name shared by parallel branches appears
    once in the node list."""
    seen: dict[str, Node] = {}
    for node in _top_level(flow):
        seen.setdefault(node.name, node)
    infos = tuple(
        spi.NodeInfo(
            name=name,
            node_type=node_type(node),
            tag=node_tag(node),
            location=node.location,
            meta=_node_meta(node),
        )
        for name, node in seen.items()
    )
    inputs = tuple(
        spi.InputInfo(name=name, tag=node_tag(node), json_schema=values.json_schema(node.type))
        for name, node in seen.items()
        if isinstance(node, nodes.Input)
    )
    outputs = tuple(
        name for name, node in seen.items() if isinstance(node, (*_RESULTS, nodes.ForEach, nodes.Subflow))
    )
    return spi.WorkflowInfo(
        id=workflow_id,
        meta=meta_info(flow.meta),
        nodes=infos,
        inputs=inputs,
        outputs=outputs,
        structural_hash=structural_hash(flow),
        graph=graph_document.document_of(flow),
    )
