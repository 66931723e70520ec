// bpmn-moddle reads each BPMN document; answers {ok, warnings, missing} where `missing` lists the flow
// elements (in the process and nested subProcesses) with no BPMNShape / BPMNEdge in the diagram.
import { BpmnModdle } from "bpmn-moddle";
import { eachItem } from "./stdin.mjs";

const moddle = new BpmnModdle();

function flowElements(container, out, within = new Map()) {
  for (const element of container.flowElements || []) {
    out.push(element);
    if (container.$type === "bpmn:SubProcess") within.set(element.id, container.id);
    if (element.$type === "bpmn:SubProcess") flowElements(element, out, within);
  }
  return out;
}

await eachItem(async (xml) => {
  const { rootElement, warnings } = await moddle.fromXML(xml, "bpmn:Definitions");
  const processes = rootElement.rootElements.filter((e) => e.$type === "bpmn:Process");
  const within = new Map();
  const elements = processes.flatMap((p) => flowElements(p, [], within));
  const drawn = new Map();
  for (const diagram of rootElement.diagrams || []) {
    for (const shape of diagram.plane.planeElement || []) drawn.set(shape.bpmnElement && shape.bpmnElement.id, shape);
  }
  const missing = [];
  const broken = [];
  for (const element of elements) {
    const shape = drawn.get(element.id);
    const wanted = element.$type === "bpmn:SequenceFlow" ? "bpmndi:BPMNEdge" : "bpmndi:BPMNShape";
    if (!shape || shape.$type !== wanted) missing.push(element.id);
    else if (wanted === "bpmndi:BPMNShape" && !shape.bounds) broken.push(element.id);
    else if (wanted === "bpmndi:BPMNEdge" && (!shape.waypoint || shape.waypoint.length < 2)) broken.push(element.id);
    if (element.$type === "bpmn:SequenceFlow" && (!element.sourceRef || !element.targetRef)) broken.push(element.id);
  }
  // Per element id, as bpmn-moddle read it: type, name, documentation and the colour extension's fill.
  const painted = {};
  for (const element of elements) {
    const shape = drawn.get(element.id);
    painted[element.id] = {
      type: element.$type,
      name: element.name,
      documentation: (element.documentation || []).map((d) => d.text),
      fill: shape && shape.get ? shape.get("color:background-color") : undefined,
      within: within.get(element.id) || "",
    };
  }
  const names = elements.filter((e) => e.name !== undefined).map((e) => e.name);
  return {
    ok: warnings.length === 0 && missing.length === 0 && broken.length === 0 && elements.length > 0,
    warnings: warnings.map((w) => w.message),
    missing,
    broken,
    elements: elements.length,
    names,
    processNames: processes.map((p) => p.name),
    painted,
  };
});
