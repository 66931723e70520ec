"""BPMN 2.0 XML with diagram interchange (spec §4.6), so bpmn-js and Camunda Modeler open a drawn process.

Every flow element gets a BPMNShape and every sequence flow a BPMNEdge, laid out left to right by
engine/render/layout.py. A subflow is an expanded subProcess holding the child's elements between its own
start and end events. Loops carry a loop marker instead of a back edge (BPMN has no self-flow idiom).
Progress is painted with the BPMN non-normative colour extension (`color:background-color` on a shape),
which bpmn-js and Camunda Modeler draw and other readers ignore, and told in each element's
`documentation` (the label's progress lines: counts, stop code, error). Names are attribute values written by
ElementTree, which escapes them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from flowdeck.engine.graph import FlowGraph, GraphNode
from flowdeck.engine.render.common import colour, progress_lines, title
from flowdeck.engine.render.layout import Box, layered, waypoints

__all__ = ["NS", "render"]

NS = {
    "bpmn": "http://www.omg.org/spec/BPMN/20100524/MODEL",
    "bpmndi": "http://www.omg.org/spec/BPMN/20100524/DI",
    "dc": "http://www.omg.org/spec/DD/20100524/DC",
    "di": "http://www.omg.org/spec/DD/20100524/DI",
    "xsi": "http://www.w3.org/2001/XMLSchema-instance",
    "color": "http://www.omg.org/spec/BPMN/non-normative/color/1.0",
}
for _prefix, _uri in NS.items():
    ET.register_namespace(_prefix, _uri)

_ELEMENTS = {
    "input": "userTask",
    "output": "serviceTask",
    "step": "task",
    "sleep": "intermediateCatchEvent",
    "dispatch": "exclusiveGateway",
    "branch": "task",
    "join-dispatch": "exclusiveGateway",
    "loop": "serviceTask",
    "loop_on": "serviceTask",
    "foreach": "serviceTask",
    "subflow": "subProcess",
    "fork": "parallelGateway",
    "join": "parallelGateway",
    # As the spec maps a race (§4.6): the branches wait for whichever happens first (an event-based split,
    # not a parallel (+) one, which would say every branch is awaited), and one of them goes on (an
    # exclusive merge). The fork is named "race".
    "race-fork": "eventBasedGateway",
    "race-join": "exclusiveGateway",
}
_SIZES = {"event": (36, 36), "gateway": (50, 50), "task": (100, 80)}
_PAD, _TITLE = 20, 24


def _q(prefix: str, tag: str) -> str:
    return f"{{{NS[prefix]}}}{tag}"


def _size_class(tag: str) -> str:
    if tag.endswith("Event"):
        return "event"
    return "gateway" if tag.endswith("Gateway") else "task"


@dataclass(frozen=True)
class _Flow:
    id: str
    source: str
    target: str
    name: str = ""


class _Writer:
    def __init__(self, graph: FlowGraph) -> None:
        self.graph = graph
        self.boxes: dict[str, Box] = {}
        self.flows: list[_Flow] = []
        self.tags: dict[str, str] = {}
        self.members: dict[str, list[str]] = {}  # scope → its elements, start and end events included
        self.status = {n.id: n.status for n in graph.nodes}

    # ---- semantic model

    def scope(self, container: ET.Element, parent: str) -> tuple[float, float]:
        """Write one scope's elements into `container`; lay it out; answer its size."""
        key = parent or "flow"
        start_id, end_id = f"{key}_start", f"{key}_end"
        members = [start_id]
        sizes: dict[str, tuple[float, float]] = {start_id: _SIZES["event"], end_id: _SIZES["event"]}
        self.tags[start_id], self.tags[end_id] = "startEvent", "endEvent"
        inner_sizes: dict[str, tuple[float, float]] = {}
        elements: dict[str, ET.Element] = {}
        for node in self.graph.children(parent):
            tag = _ELEMENTS[node.kind]
            self.tags[node.id] = tag
            element = ET.Element(_q("bpmn", tag), {"id": node.id})
            name = title(node)
            if name:
                element.set("name", name)
            elements[node.id] = element
            members.append(node.id)
            if node.kind == "subflow":
                inner_sizes[node.id] = self.scope(element, node.id)
                sizes[node.id] = inner_sizes[node.id]
            else:
                sizes[node.id] = _SIZES[_size_class(tag)]
        members.append(end_id)
        flows = self.scope_flows(parent, start_id, end_id)
        self.flows.extend(flows)
        # Element order inside a container: events and nodes (with their flow refs), then the flows.
        container.append(ET.Element(_q("bpmn", "startEvent"), {"id": start_id}))
        for node in self.graph.children(parent):
            container.append(self.finished(elements[node.id], node, flows))
        container.append(ET.Element(_q("bpmn", "endEvent"), {"id": end_id}))
        self.refs(container, start_id, end_id, flows)
        for flow in flows:
            attrs = {"id": flow.id, "sourceRef": flow.source, "targetRef": flow.target}
            if flow.name:
                attrs["name"] = flow.name
            container.append(ET.Element(_q("bpmn", "sequenceFlow"), attrs))
        layout = layered(members, sizes, [(f.source, f.target) for f in flows])
        for member, box in layout.boxes.items():
            self.boxes[member] = box
        self.members[parent] = members
        return layout.width + 2 * _PAD, layout.height + 2 * _PAD + _TITLE

    def scope_flows(self, parent: str, start_id: str, end_id: str) -> list[_Flow]:
        scope = self.graph.scopes[parent]
        key = parent or "flow"
        flows = [
            _Flow(e.id, e.source, e.target, e.label)
            for e in self.graph.edges_within(parent)
            if e.style == "flow"
        ]
        if scope.start is None or scope.end is None:
            return [_Flow(f"{key}_through", start_id, end_id), *flows]
        return [_Flow(f"{key}_in", start_id, scope.start), *flows, _Flow(f"{key}_out", scope.end, end_id)]

    def finished(self, element: ET.Element, node: GraphNode, flows: list[_Flow]) -> ET.Element:
        # Flow-node children in schema order: incoming, outgoing, then what the kind carries.
        subprocess_body = list(element)
        for child in subprocess_body:
            element.remove(child)
        painted = progress_lines(node)
        if painted:
            # The colour says the state; the counts, the stop code and the error need words: BPMN's own
            # place for words about an element (Camunda Modeler shows it; the console badges from JSON).
            ET.SubElement(element, _q("bpmn", "documentation")).text = "\n".join(painted)
        for flow in flows:
            if flow.target == node.id:
                ET.SubElement(element, _q("bpmn", "incoming")).text = flow.id
        for flow in flows:
            if flow.source == node.id:
                ET.SubElement(element, _q("bpmn", "outgoing")).text = flow.id
        if node.kind in ("loop", "loop_on"):
            ET.SubElement(element, _q("bpmn", "standardLoopCharacteristics"))
        elif node.kind == "foreach":
            sequential = "true" if node.concurrency == 1 else "false"
            ET.SubElement(
                element, _q("bpmn", "multiInstanceLoopCharacteristics"), {"isSequential": sequential}
            )
        elif node.kind == "sleep":
            timer = ET.SubElement(element, _q("bpmn", "timerEventDefinition"), {"id": f"{node.id}_timer"})
            duration = ET.SubElement(
                timer, _q("bpmn", "timeDuration"), {_q("xsi", "type"): "bpmn:tFormalExpression"}
            )
            duration.text = _iso_seconds(node.duration)
        element.extend(subprocess_body)
        return element

    def refs(self, container: ET.Element, start_id: str, end_id: str, flows: list[_Flow]) -> None:
        for event in container:
            if event.get("id") == start_id:
                for flow in flows:
                    if flow.source == start_id:
                        ET.SubElement(event, _q("bpmn", "outgoing")).text = flow.id
            elif event.get("id") == end_id:
                for flow in flows:
                    if flow.target == end_id:
                        ET.SubElement(event, _q("bpmn", "incoming")).text = flow.id

    # ---- diagram interchange

    def place(self, parent: str, dx: float, dy: float, plane: ET.Element) -> None:
        for member in self.members[parent]:
            box = self.boxes[member].moved(dx, dy)
            self.boxes[member] = box
            attrs = {"id": f"{member}_di", "bpmnElement": member}
            if self.tags[member] == "subProcess":
                attrs["isExpanded"] = "true"
            if self.tags[member].endswith("Gateway"):
                attrs["isMarkerVisible"] = "true"
            status = self.status.get(member, "")
            if status:
                attrs[_q("color", "background-color")] = colour(status)
                attrs[_q("color", "border-color")] = "#333333"
            shape = ET.SubElement(plane, _q("bpmndi", "BPMNShape"), attrs)
            ET.SubElement(shape, _q("dc", "Bounds"), _bounds(box))
            if self.tags[member] == "subProcess":
                self.place(member, box.x + _PAD, box.y + _PAD + _TITLE, plane)

    def edges(self, plane: ET.Element) -> None:
        for flow in self.flows:
            edge = ET.SubElement(
                plane, _q("bpmndi", "BPMNEdge"), {"id": f"{flow.id}_di", "bpmnElement": flow.id}
            )
            # A flow runs inside one scope: its route keeps clear of that scope's other elements.
            scope = next(ms for ms in self.members.values() if flow.source in ms)
            obstacles = [self.boxes[m] for m in scope if m not in (flow.source, flow.target)]
            for x, y in waypoints(self.boxes[flow.source], self.boxes[flow.target], obstacles):
                ET.SubElement(edge, _q("di", "waypoint"), {"x": str(x), "y": str(y)})


def _iso_seconds(duration: str) -> str:
    """graph durations are shown as "1h30m"; BPMN wants ISO 8601 ("PT1H30M")."""
    days, _, rest = duration.partition("d") if "d" in duration else ("", "", duration)
    text = "P" + (f"{days}D" if days else "")
    return text + ("T" + rest.upper() if rest else "") if (days or rest) else "PT0S"


def _bounds(box: Box) -> dict[str, str]:
    return {"x": f"{box.x:g}", "y": f"{box.y:g}", "width": f"{box.width:g}", "height": f"{box.height:g}"}


def render(graph: FlowGraph) -> str:
    definitions = ET.Element(
        _q("bpmn", "definitions"),
        {
            "id": "definitions",
            "targetNamespace": "https://flowdeck.dev/bpmn",
            "exporter": "Flowdeck",
            "exporterVersion": "1",
        },
    )
    process = ET.SubElement(definitions, _q("bpmn", "process"), {"id": "flow", "isExecutable": "true"})
    if graph.name:
        process.set("name", graph.name)
    writer = _Writer(graph)
    writer.scope(process, "")
    diagram = ET.SubElement(definitions, _q("bpmndi", "BPMNDiagram"), {"id": "diagram"})
    plane = ET.SubElement(diagram, _q("bpmndi", "BPMNPlane"), {"id": "plane", "bpmnElement": "flow"})
    writer.place("", 40, 40, plane)
    writer.edges(plane)
    ET.indent(definitions)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(definitions, encoding="unicode") + "\n"
