// Mermaid's own parser on each diagram text; answers {ok, error?, type?, labels?}.
import { JSDOM } from "jsdom";
import { eachItem } from "./stdin.mjs";

const dom = new JSDOM("<!DOCTYPE html><html><body></body></html>", { pretendToBeVisual: true });
const globals = {
  window: dom.window,
  document: dom.window.document,
  navigator: dom.window.navigator,
  DOMParser: dom.window.DOMParser,
  Element: dom.window.Element,
  HTMLElement: dom.window.HTMLElement,
};
for (const [name, value] of Object.entries(globals)) {
  Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
}
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

await eachItem(async (text) => {
  const parsed = await mermaid.parse(text);
  const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
  const labels = [];
  const db = diagram.db;
  if (db.getVertices) for (const vertex of db.getVertices().values()) labels.push(vertex.text);
  if (db.getSubGraphs) for (const sub of db.getSubGraphs()) labels.push(sub.title);
  if (db.getEdges) for (const edge of db.getEdges()) if (edge.text) labels.push(edge.text);
  // Per node id, as Mermaid read them: its label and the declarations of its `style` statement; per
  // subgraph its title and the ids of the nodes inside it.
  const vertices = {};
  if (db.getVertices) for (const [id, v] of db.getVertices()) vertices[id] = { text: v.text, styles: v.styles || [] };
  const subgraphs = {};
  if (db.getSubGraphs) for (const sub of db.getSubGraphs()) subgraphs[sub.id] = { title: sub.title, nodes: sub.nodes };
  return { ok: true, type: parsed.diagramType, labels, vertices, subgraphs };
});
