/* Flowdeck console: a live event repaints the execution's diagram in place (bench W10).
 *
 * A version's structure does not change while it runs, so a live event needs only the progress: the
 * diagram's JSON format (no Graphviz, no Mermaid or ELK layout, no BPMN import) gives each graph node's
 * status and label lines, and the elements already drawn are painted by graph id — DOT's `<g id="fd-<id>">`
 * (and `fd-cluster-<id>` for a subflow), Mermaid's `…flowchart-<id>-<n>`, ELK's `data-id`, BPMN's element
 * id. The <svg> (or bpmn-js viewer) stays, and with it the operator's zoom, pan and node selection.
 *
 * The live socket brings the progress with it (console/live_progress.py):
 * `flowdeckPaint.paintWith(container, graph)` paints it at once; `flowdeckPaint.paint(container)` fetches
 * it first (a replayed event, a reconnect, a progress the server could not build). Each is true when
 * painted (or nothing was left to do), false when the caller must redraw: a graph node the drawing lacks
 * (another version's graph), or a label whose lines cannot change in place (a line more or fewer; Mermaid's and BPMN's text is laid out with the shape).
 * A graph id that a format never draws costs one redraw per page, not one per event.
 */
(function () {
  "use strict";

  // engine/render/common.OUTLINES, as Graphviz draws each style.
  const OUTLINES = { lost: "dashed", won: "bold", stopped: "bold", failed: "bold", compensated: "dotted", answered: "bold", interrupted: "dashed" };
  const DASHES = { dashed: "5,2", dotted: "1,5" };
  const STATUSES = ["completed", "running", "pending", "waiting", "sleeping", "failed", "compensated", "stopped", "won", "lost", "answered", "interrupted"];
  const checked = new WeakMap(); // container → {format: the graph's ids that a redraw already showed}

  function palette() { return (window.flowdeckDiagram && window.flowdeckDiagram.palette) || {}; }

  async function progress(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } });
    if (!response.ok) throw new Error(`${response.status} ${url}`);
    return response.json();
  }

  function graphUrl(target) {
    const frame = document.querySelector(`[data-graph-url][data-diagram="${CSS.escape(target.id)}"]`);
    return target.dataset.progressUrl || (frame && frame.dataset.graphUrl) || "";
  }

  const squeezed = (text) => text.replace(/\s+/g, "");

  function setText(texts, lines) {
    // Only a label with as many lines as drawn changes in place; another count needs Graphviz's layout.
    if (texts.length !== lines.length) return false;
    texts.forEach((t, i) => { if (t.textContent !== lines[i]) t.textContent = lines[i]; });
    return true;
  }

  // ---------------------------------------------------------------------------------- SVG formats

  function mermaidNodes(svg) {
    const byId = new Map();
    svg.querySelectorAll("g.node[id]").forEach((g) => {
      const m = /(?:^|-)flowchart-(.+)-\d+$/.exec(g.id);
      if (m) byId.set(m[1], g);
    });
    return byId;
  }

  function paintDot(svg, node, colour) {
    const g = svg.querySelector(`g#${CSS.escape("fd-" + node.id)}`);
    const cluster = g ? null : svg.querySelector(`g#${CSS.escape("fd-cluster-" + node.id)}`);
    const el = g || cluster;
    if (!el) return null;
    const shape = el.querySelector("polygon, path, ellipse, rect");
    if (shape && colour) {
      shape.setAttribute("fill", cluster ? colour + "40" : colour); // a subflow tinted under its children
      const style = OUTLINES[node.status];
      if (DASHES[style]) shape.setAttribute("stroke-dasharray", DASHES[style]); else shape.removeAttribute("stroke-dasharray");
      if (style === "bold") shape.setAttribute("stroke-width", "2"); else shape.removeAttribute("stroke-width");
    }
    if (cluster) return true;
    return setText([...el.querySelectorAll("text")], node.lines || []);
  }

  function paintElk(svg, node, colour) {
    const g = svg.querySelector(`g.node[data-id="${CSS.escape(node.id)}"]`);
    if (!g) return null;
    const shape = g.querySelector(":scope > rect, :scope > polygon"); // a box, or a gateway's diamond
    if (shape && colour) shape.setAttribute("fill", colour);
    return setText([...g.querySelectorAll("text")], (node.lines || [""]).join("\n").split("\n"));
  }

  function paintMermaid(g, node, colour) {
    if (colour) {
      g.querySelectorAll("rect, polygon, circle, ellipse, path").forEach((shape) => {
        if (shape.closest(".label")) return;
        shape.style.setProperty("fill", colour, "important");
      });
    }
    // Mermaid sizes the shape to its label: a new text is a new layout.
    return squeezed(g.textContent) === squeezed((node.lines || []).join(""));
  }

  // --------------------------------------------------------------------------------------- BPMN

  const badgeOf = (o) => (o.html instanceof Element ? (o.html.matches(".bpmn-status") ? o.html : o.html.querySelector(".bpmn-status")) : null);

  function mark(viewer, element, status) {
    // As console.js's drawBpmn marks it: a marker for the CSS outline and a status badge.
    const canvas = viewer.get("canvas");
    const overlays = viewer.get("overlays");
    STATUSES.forEach((s) => { if (s !== status) canvas.removeMarker(element, `fd-${s}`); });
    const badges = overlays.get({ element }).filter(badgeOf);
    if (!status || status === "pending") { badges.forEach((o) => overlays.remove(o.id)); return; }
    canvas.addMarker(element, `fd-${status}`);
    let badge = badges.length ? badgeOf(badges[0]) : null;
    if (!badge) {
      badge = document.createElement("span");
      overlays.add(element.id, { position: { top: -10, right: 10 }, html: badge });
    }
    badge.className = `bpmn-status st-${status}`;
    badge.textContent = status;
  }

  function paintBpmn(viewer, node, colour) {
    const registry = viewer.get("elementRegistry");
    const element = registry.get(node.id);
    if (!element) return null;
    const gfx = viewer.get("canvas").getGraphics(element);
    const visual = gfx && gfx.querySelector(".djs-visual > :first-child");
    if (visual && colour) visual.style.fill = colour;
    mark(viewer, element, node.status);
    const label = registry.get(`${node.id}_label`); // an event's or gateway's name, drawn beside it, badged too
    if (label) mark(viewer, label, node.status);
    return true; // BPMN names an element by its title alone (engine/render/bpmn.py): no progress text
  }

  // ------------------------------------------------------------------------------------ painting

  function paintAll(target, format, drawing, graph) {
    const colours = palette();
    const mermaid = format === "mermaid" ? mermaidNodes(drawing) : null;
    const missing = [];
    let inPlace = true;
    (graph.nodes || []).forEach((node) => {
      const id = String(node.id);
      const colour = node.status ? colours[node.status] || colours.pending : "";
      let done;
      if (format === "dot") done = paintDot(drawing, node, colour);
      else if (format === "elk") done = paintElk(drawing, node, colour);
      else if (format === "mermaid") done = mermaid.has(id) ? paintMermaid(mermaid.get(id), node, colour) : null;
      else if (format === "bpmn") done = paintBpmn(drawing, node, colour);
      if (done === null) missing.push(id);
      else if (!done) inPlace = false;
    });
    return { missing, inPlace };
  }

  /** Paints `target`'s drawing from `graph`, the execution's progress (the diagram's JSON document), at
   * once: true when painted (or nothing was left to do), false when the caller must redraw. */
  function paintWith(target, graph) {
    if (graph && typeof graph.focus === "string") target.dataset.focus = graph.focus; // where a refit opens
    const format = target.dataset.drawn;
    const view = window.flowdeckDiagram;
    if (!format || !view || format !== target.dataset.format || !graph) return false;
    const drawing = view.drawing(target);
    if (!drawing) return false;
    if (format !== "bpmn" && !drawing.isConnected) return false;
    const { missing, inPlace } = paintAll(target, format, drawing, graph);
    const ids = (graph.nodes || []).map((n) => String(n.id)).join(" ");
    const known = checked.get(target) || {};
    if (missing.length && known[format] !== ids) {
      checked.set(target, { ...known, [format]: ids }); // redrawn once: what is still missing is not drawn
      return false;
    }
    if (!inPlace) return false;
    view.painted(target, format);
    target.dispatchEvent(new CustomEvent("flowdeck:rendered", { detail: { format, painted: true } }));
    return true;
  }

  /** Fetches the execution's progress, then paints as `paintWith` (the path when none was pushed). */
  async function paint(target) {
    const format = target.dataset.drawn;
    const url = graphUrl(target);
    if (!format || !window.flowdeckDiagram || !url || format !== target.dataset.format) return false;
    const graph = await progress(url);
    if (target.dataset.drawn !== format || !window.flowdeckDiagram.drawing(target)) return true; // another format was drawn meanwhile: fresh
    return paintWith(target, graph);
  }

  window.flowdeckPaint = { paint, paintWith };
})();
