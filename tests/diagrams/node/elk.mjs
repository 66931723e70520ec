// elkjs lays out each ELK JSON graph; answers {ok, unplaced, labels} (nodes left without coordinates).
import ELK from "elkjs/lib/elk.bundled.js";
import { eachItem } from "./stdin.mjs";

const elk = new ELK();

function visit(node, out) {
  for (const child of node.children || []) {
    out.nodes.push(child);
    out.within[child.id] = node.id === "root" ? "" : node.id;
    for (const label of child.labels || []) out.labels.push(label.text);
    visit(child, out);
  }
  for (const edge of node.edges || []) for (const label of edge.labels || []) out.labels.push(label.text);
  return out;
}

await eachItem(async (text) => {
  const laid = await elk.layout(JSON.parse(text));
  const { nodes, labels, within } = visit(laid, { nodes: [], labels: [], within: {} });
  const unplaced = nodes.filter((n) => typeof n.x !== "number" || typeof n.y !== "number").map((n) => n.id);
  // Per node id, as elkjs laid it out: its label texts and the properties it kept.
  const placed = {};
  for (const n of nodes) {
    placed[n.id] = { labels: (n.labels || []).map((l) => l.text), properties: n.properties || {}, within: within[n.id], x: n.x, y: n.y };
  }
  return { ok: unplaced.length === 0 && typeof laid.width === "number", unplaced, labels, nodes: nodes.length, placed };
});
