/* Flowdeck node panel: click a node of the diagram, see what happened there, in a side panel.
 *
 * Generic: everything page-specific comes from the panel container's data attributes, so the execution
 * page and the workflow page share it:
 *   data-node-url   the fragment URL the node's durable key (URL-encoded) is appended to
 *   data-graph-url  the diagram in the JSON format: each node's drawn `id` and its `path` (durable key)
 *   data-diagram    the id of the element the diagram is drawn into
 *   data-places     set where a node key names a place: a durable path that several drawn nodes carry
 *                   (a race's arms all producing `decision`) is selected as `decision@n14`, and a
 *                   gateway (a fork or join, which has no path) as `@n6`; elsewhere a key is the path
 * The selection lives in the URL (`#node=payment~charge_id`, the key URL-encoded), so a link opens it; the
 * panel's fragment names the key it shows (`data-node-key`), so a link by path lands on its place.
 *
 * A click is mapped to a node in every format by walking up from the clicked element to the first one
 * that names a drawn node id: BPMN's `data-element-id`, ELK's `data-id`, an `id` (Mermaid's prefixed ids,
 * ids given to DOT's groups) or an SVG `<title>` (DOT's). An id or title naming two graph nodes is an edge
 * and selects nothing. Listeners sit on the diagram container, so a re-render loses none of them.
 *
 * The fragment is server-rendered and escaped there; it is the only HTML this file writes.
 */
(function () {
  "use strict";

  const panel = document.getElementById("node-panel");
  if (!panel) return;
  const content = panel.querySelector(".node-panel-content");
  const diagram = document.getElementById(panel.dataset.diagram || "diagram");
  const keyOf = new Map(); // drawn node id → the key selecting it
  const places = Boolean(panel.dataset.places);
  const GATEWAYS = new Set(["fork", "race-fork", "join", "race-join"]);
  let selected = null;
  let pendingReveal = null; // the panel opened before the drawing: bring the node into view once drawn
  let lastHtml = "";
  let ticket = 0;

  // ------------------------------------------------------------------------------- the graph

  const graphLoaded = (async () => {
    if (!panel.dataset.graphUrl) return;
    try {
      const response = await fetch(panel.dataset.graphUrl, { credentials: "same-origin" });
      if (!response.ok) return;
      const graph = await response.json();
      const drawn = (graph.nodes || []).filter((n) => n.kind !== "branch");
      const carriers = new Map(); // durable path → how many drawn nodes carry it
      drawn.forEach((n) => { if (n.path) carriers.set(n.path, (carriers.get(n.path) || 0) + 1); });
      drawn.forEach((n) => {
        const id = String(n.id);
        if (n.path) keyOf.set(id, places && carriers.get(n.path) > 1 ? `${n.path}@${id}` : String(n.path));
        else if (places && GATEWAYS.has(n.kind)) keyOf.set(id, `@${id}`);
      });
    } catch (e) { /* no graph: clicks select nothing, links and the URL still work */ }
  })();

  function named(text, exact) {
    // The graph node id `text` names: itself, or (ids and titles) its one token that is a node id.
    if (!text) return null;
    if (keyOf.has(text)) return text;
    if (exact) return null;
    const hits = text.split(/[^A-Za-z0-9]+/).filter((t) => keyOf.has(t));
    return new Set(hits).size === 1 ? hits[0] : null;
  }

  function ownId(el) {
    if (!el || el.nodeType !== 1) return null;
    const title = el.querySelector ? el.querySelector(":scope > title") : null;
    return named(el.getAttribute("data-element-id"), true) ||
      named(el.getAttribute("data-id"), true) ||
      named(el.getAttribute("id"), false) ||
      (title ? named(title.textContent.trim(), false) : null);
  }

  function resolve(target) {
    for (let el = target; el && el !== diagram && el !== document.body; el = el.parentElement || el.parentNode) {
      const id = ownId(el);
      if (id) return id;
    }
    return null;
  }

  function mark() {
    if (!diagram) return;
    diagram.querySelectorAll(".fd-selected").forEach((el) => el.classList.remove("fd-selected"));
    if (selected === null) return;
    diagram.querySelectorAll("g, [data-element-id], [data-id], [id]").forEach((el) => {
      const id = ownId(el);
      if (id && keyOf.get(id) === selected && !el.parentElement.closest(".fd-selected")) {
        el.classList.add("fd-selected");
      }
    });
  }

  function reveal() {
    // The selected node into the part of the drawing the panel leaves in view (diagram-view.js).
    const view = window.flowdeckDiagram;
    if (!diagram || !view || typeof view.reveal !== "function" || pendingReveal === null) return;
    const parts = diagram.querySelectorAll(".fd-selected");
    if (parts.length && view.reveal(diagram, parts, pendingReveal.centre)) {
      pendingReveal = null;
      diagram.dataset.revealed = selected || "";
    }
  }

  function markAndReveal() { mark(); reveal(); }

  // ----------------------------------------------------------------------------- the panel

  function keyInHash() {
    const found = /^#node=(.+)$/.exec(location.hash);
    if (!found) return null;
    try { return decodeURIComponent(found[1]); } catch (e) { return null; }
  }

  function openDetails() {
    const kept = {};
    content.querySelectorAll("details[data-keep]").forEach((d) => { kept[d.dataset.keep] = d.open; });
    return kept;
  }

  function typing() {
    const active = document.activeElement;
    return content.contains(active) && active.matches("input, textarea, select");
  }

  async function load(force) {
    if (selected === null) return;
    if (!force && typing()) { panel.dataset.stale = "1"; return; }
    const mine = ++ticket;
    const url = panel.dataset.nodeUrl + encodeURIComponent(selected);
    let html;
    try {
      const response = await fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } });
      html = await response.text(); // a 404 is a styled fragment of its own
    } catch (e) { return; } // the next event tries again
    if (mine !== ticket || selected === null) return;
    delete panel.dataset.stale;
    if (html === lastHtml) return; // nothing changed: leave the panel (and what the operator opened) alone
    const kept = force ? {} : openDetails();
    lastHtml = html;
    content.innerHTML = html; // our own server-escaped fragment
    settle(content.querySelector("[data-node-key]"));
    content.querySelectorAll("details[data-keep]").forEach((d) => {
      if (Object.prototype.hasOwnProperty.call(kept, d.dataset.keep)) d.open = kept[d.dataset.keep];
    });
    if (window.htmx) window.htmx.process(content);
    panel.dataset.loadedKey = selected;
  }

  function settle(body) {
    // A path that several places carry opens the place its record is (the server's choice): select that
    // place, so the drawing marks it alone and the URL says which.
    const shown = body ? body.dataset.nodeKey : null;
    if (!shown || shown === selected || !shown.includes("@") || !shown.startsWith(`${selected}@`)) return;
    selected = shown;
    panel.dataset.key = shown;
    if (location.hash.startsWith("#node=")) {
      history.replaceState(null, "", `${location.pathname}${location.search}#node=${encodeURIComponent(shown)}`);
    }
    pendingReveal = pendingReveal || { centre: false };
    graphLoaded.then(markAndReveal);
  }

  function open(key, centre) {
    if (key === selected && !panel.hidden) return;
    const opening = panel.hidden;
    selected = key;
    lastHtml = "";
    content.replaceChildren();
    panel.hidden = false;
    panel.dataset.key = key;
    document.body.classList.add("node-panel-open");
    // The page narrowed (wide screens) or the panel lies over the drawing (narrow): the drawing follows.
    if (opening && diagram && window.flowdeckDiagram?.besidePanel) window.flowdeckDiagram.besidePanel(diagram, true);
    window.dispatchEvent(new Event("resize"));
    pendingReveal = { centre: Boolean(centre) };
    graphLoaded.then(markAndReveal);
    load(true);
  }

  function close() {
    selected = null;
    ticket++;
    panel.hidden = true;
    delete panel.dataset.key;
    delete panel.dataset.loadedKey;
    document.body.classList.remove("node-panel-open");
    pendingReveal = null;
    if (diagram && window.flowdeckDiagram?.besidePanel) window.flowdeckDiagram.besidePanel(diagram, false);
    window.dispatchEvent(new Event("resize"));
    if (location.hash.startsWith("#node=")) history.replaceState(null, "", location.pathname + location.search);
    mark();
  }

  function select(key) {
    // replaceState: back/forward reload pages afresh here (htmx history "reload"), so no entry per click
    history.replaceState(null, "", `${location.pathname}${location.search}#node=${encodeURIComponent(key)}`);
    open(key);
  }

  // --------------------------------------------------------------------------------- wiring

  if (diagram) {
    // Capture phase: a drawing library's own handlers (bpmn-js's canvas) may stop the click on its way
    // up. A press that moved is a pan, not a click.
    let down = null;
    diagram.addEventListener("pointerdown", (e) => { down = [e.clientX, e.clientY]; }, true);
    diagram.addEventListener("click", async (e) => {
      const moved = down && Math.hypot(e.clientX - down[0], e.clientY - down[1]) > 5;
      down = null;
      if (moved) return;
      await graphLoaded;
      const id = resolve(e.target);
      if (id) select(keyOf.get(id));
    }, true);
    diagram.addEventListener("flowdeck:rendered", markAndReveal);
  }
  if (window.flowdeckDiagram && typeof window.flowdeckDiagram.onRender === "function") {
    window.flowdeckDiagram.onRender(markAndReveal);
  }
  panel.addEventListener("click", (e) => {
    if (e.target.closest(".node-panel-close")) close();
  });
  window.addEventListener("hashchange", () => {
    const key = keyInHash();
    if (key === null) { if (selected !== null) close(); } else open(key, true);
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && selected !== null && !e.defaultPrevented) close();
  });

  // Live: the socket names the execution, not the node, so any event of the page's scope asks again;
  // debounced, and swapped in only when the fragment changed.
  let timer = null;
  document.addEventListener("flowdeck:live", () => {
    if (selected === null) return;
    clearTimeout(timer);
    timer = setTimeout(() => load(false), 120);
  });
  document.addEventListener("focusout", () => setTimeout(() => { if (panel.dataset.stale && !typing()) load(false); }, 0));
  document.body.addEventListener("htmx:after:swap", () => { if (selected !== null) load(false); });

  const initial = keyInHash();
  if (initial !== null) open(initial, true); // a link: the node centred, once drawn
})();
