/* Flowdeck console: the live websocket, fragment refreshes, countdowns and the diagram views.
 *
 * Every piece of user text that reaches the DOM from here goes through textContent (never innerHTML),
 * except server-made SVG (Graphviz escapes labels) and Mermaid's own output (strict security level).
 */
(function () {
  "use strict";

  const STATIC = document.body.dataset.static || "/static/"; // the project's STATIC_URL (base.html)
  // Where the console is mounted decides the websocket's address (console.mount.live_path).
  const LIVE_PATH = document.body.dataset.livePath || "/ws/live/";
  const PALETTE = document.getElementById("diagram-palette"); // the view's engine/render/common.COLOURS
  const COLOURS = PALETTE ? JSON.parse(PALETTE.textContent) : {
    completed: "#90EE90", running: "#FFD700", pending: "#D3D3D3", waiting: "#87CEEB",
    sleeping: "#DDA0DD", failed: "#FF6B6B", compensated: "#F4A460", stopped: "#FFA500",
    won: "#45B36B", lost: "#A9A9A9", answered: "#7FD8C8", interrupted: "#C9B3A6", // paint: a race's arms (engine/render/common.COLOURS is the source)
  };
  const STATUS_OF_COLOUR = Object.fromEntries(Object.entries(COLOURS).map(([k, v]) => [v.toLowerCase(), k]));

  if (window.htmx) window.htmx.config.history = "reload"; // back/forward load the URL's page afresh

  // ------------------------------------------------------------------------------------ helpers

  function throttle(fn, ms) {
    let timer = null, again = false;
    return function run() {
      if (timer) { again = true; return; }
      fn();
      timer = setTimeout(() => { timer = null; if (again) { again = false; run(); } }, ms);
    };
  }

  // For a refetch on live changes: runs `fn` (async) at once, never twice at a time; calls meanwhile make one
  // more run, which starts `ms` after the last began at the earliest and no sooner than the last took. A
  // busy engine costs a page one fetch per `ms`; a slow server is asked at most half the time, however
  // many pages are open, instead of being sent the next fetch before it answered the last.
  function paced(fn, ms) {
    let busy = false, again = false;
    return async function run() {
      if (busy) { again = true; return; }
      busy = true;
      const began = performance.now();
      try { await fn(); } catch (e) { /* the next change tries again */ }
      const took = performance.now() - began;
      setTimeout(() => { busy = false; if (again) { again = false; run(); } }, Math.max(ms - took, took));
    };
  }

  async function fetchText(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } });
    if (!response.ok) {
      const said = (await response.text()).slice(0, 200);
      throw new Error(response.headers.get("content-type")?.startsWith("text/plain") ? said : `${response.status} ${url}`);
    }
    return response.text();
  }

  const loaded = {};
  function loadScript(path) {
    loaded[path] ||= new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = STATIC + path;
      s.onload = resolve;
      s.onerror = () => reject(new Error("could not load " + path));
      document.head.appendChild(s);
    });
    return loaded[path];
  }

  function svgFrom(text, html) {
    // Parsed as its own document: scripts in it never run; then adopted into the page. Mermaid writes
    // HTML-flavoured SVG (`<br>`), which only the HTML parser reads.
    const doc = new DOMParser().parseFromString(text, html ? "text/html" : "image/svg+xml");
    const svg = html ? doc.body.querySelector("svg") : doc.documentElement;
    if (!svg) throw new Error("not an SVG drawing");
    if (svg.nodeName !== "svg") throw new Error("not an SVG drawing");
    // Mermaid draws labels as HTML in foreignObject, already sanitised (strict level); others have none.
    svg.querySelectorAll(html ? "script" : "script, foreignObject").forEach((el) => el.remove());
    return document.importNode(svg, true);
  }

  function showError(target, error) {
    target.replaceChildren();
    const p = document.createElement("p");
    p.className = "message error";
    p.textContent = String(error.message || error);
    target.appendChild(p);
  }

  // ------------------------------------------------------------------------------ live socket

  const listeners = [], progressListeners = [], openListeners = [];
  function onLive(fn) { listeners.push(fn); }
  function onProgress(fn) { progressListeners.push(fn); } // an execution's progress, pushed with its events
  function onReopen(fn) { openListeners.push(fn); } // the socket is back: what it missed is to be fetched

  function startLive(scope) {
    const state = document.getElementById("live-state");
    if (state) state.classList.add("armed"); // only pages that listen show the live light
    let after = Number(document.body.dataset.liveAfter || 0);
    let delay = 250, opened = false;
    function connect() {
      const proto = location.protocol === "https:" ? "wss" : "ws";
      const params = new URLSearchParams(scope);
      params.set("after", String(after));
      const socket = new WebSocket(`${proto}://${location.host}${LIVE_PATH}?${params}`);
      socket.onopen = () => {
        delay = 250;
        if (state) { state.classList.add("on"); state.title = "live"; }
        if (opened) openListeners.forEach((fn) => fn());
        opened = true;
      };
      socket.onmessage = (message) => {
        const said = JSON.parse(message.data);
        if (said.type === "progress") { progressListeners.forEach((fn) => fn(said)); return; }
        if (said.type === "changes") { // a page of many executions: which ids changed, not each event
          after = Math.max(after, said.last);
          document.body.dataset.liveLast = String(after);
          const event = { type: "event", id: said.last, changes: said.ids };
          listeners.forEach((fn) => fn(event));
          document.dispatchEvent(new CustomEvent("flowdeck:live", { detail: event }));
          return;
        }
        if (said.type !== "events") return;
        said.events.forEach((event) => { // one read of the server's feed: its events, oldest first
          after = Math.max(after, event.id);
          document.body.dataset.liveLast = String(after);
          listeners.forEach((fn) => fn(event));
          document.dispatchEvent(new CustomEvent("flowdeck:live", { detail: event })); // for page scripts of their own (timeline.js, node-panel.js)
        });
      };
      socket.onclose = (closed) => {
        if (closed.code === 4400 || closed.code === 4401) { // a refused filter, or the session ended: asking again cannot help
          if (state) { state.classList.remove("on"); state.title = closed.code === 4401 ? "not live: the session ended; log in again" : `not live: ${closed.reason}`; }
          return;
        }
        if (state) { state.classList.remove("on"); state.title = "reconnecting"; }
        setTimeout(connect, delay); // resumes from `after`: nothing heard before the drop is lost
        delay = Math.min(delay * 2, 5000);
      };
    }
    connect();
  }

  // ------------------------------------------------------------------------------- countdowns

  function tickCountdowns() {
    const now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach((el) => {
      const left = Math.round((Date.parse(el.dataset.deadline) - now) / 1000);
      if (!el.classList.contains("countdown")) return;
      if (left <= 0) { el.textContent = "due now"; return; }
      const d = Math.floor(left / 86400), h = Math.floor((left % 86400) / 3600);
      const m = Math.floor((left % 3600) / 60), s = left % 60;
      el.textContent = "in " + (d ? `${d}d ` : "") + `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}`;
    });
  }

  // ---------------------------------------------------------------------------- executions page

  // Relative times ("3 min ago") as the server wrote them (console_tags.ago), kept true as time passes:
  // measured against the server's now (data-now), so a skewed browser clock does not shift them.
  function agoWords(seconds) {
    const s = Math.abs(Math.trunc(seconds));
    if (s < 1) return "just now";
    let words = `${s} s`;
    if (s >= 86400) words = `${Math.floor(s / 86400)} d`;
    else if (s >= 3600) words = `${Math.floor(s / 3600)} h`;
    else if (s >= 60) words = `${Math.floor(s / 60)} min`;
    return seconds > 0 ? `${words} ago` : `in ${words}`;
  }

  function tickAgo(root) {
    const grid = root.querySelector("table[data-now]");
    if (!grid || !grid.dataset.rendered) { if (grid) grid.dataset.rendered = String(Date.now()); return; }
    const now = Date.parse(grid.dataset.now) + (Date.now() - Number(grid.dataset.rendered));
    root.querySelectorAll("time[data-ago]").forEach((el) => {
      el.textContent = agoWords((now - Date.parse(el.getAttribute("datetime"))) / 1000);
    });
  }

  /** What htmx does with a fragment's `hx-swap-oob` parts, for a fragment we fetched ourselves: each
   *  replaces the page's element of its id (the replica notice rides along with the list's rows). */
  function swapOutOfBand(root) {
    root.querySelectorAll("[hx-swap-oob]").forEach((part) => {
      part.remove();
      part.removeAttribute("hx-swap-oob");
      const current = document.getElementById(part.id);
      if (current) current.replaceWith(part);
    });
  }

  function executionsPage() {
    const table = document.getElementById("table");
    const refresh = paced(async () => {
      const checked = new Set([...table.querySelectorAll("input[name=ids]:checked")].map((i) => i.value));
      const params = new URLSearchParams(location.search);
      params.set("partial", "rows");
      try {
        const html = await fetchText(`${location.pathname}?${params}`);
        table.innerHTML = html; // our own server-escaped fragment
        swapOutOfBand(table);
        table.querySelectorAll("input[name=ids]").forEach((i) => { i.checked = checked.has(i.value); });
        if (window.htmx) window.htmx.process(table);
        tickCountdowns();
        tickAgo(table);
      } catch (e) { /* the next event tries again */ }
    }, 150);
    onLive(() => refresh());
    // A saved view keeps the list as it is now: htmx has pushed every filter change into the URL.
    document.addEventListener("submit", (e) => {
      e.target.querySelectorAll("[data-current-query]").forEach((i) => { i.value = location.search.replace(/^\?/, ""); });
    }, true);
    tickAgo(table);
    table.addEventListener("htmx:afterSwap", () => tickAgo(table));
    setInterval(() => tickAgo(table), 15000);
    document.addEventListener("change", (e) => {
      if (e.target.matches("[data-select-all]")) {
        table.querySelectorAll("input[name=ids]").forEach((i) => { i.checked = e.target.checked; });
      }
    });
    startLive({});
  }

  // ----------------------------------------------------------------------------- execution page

  function busy(el) {
    // A fragment the operator is typing into, or has opened a form in, is left alone.
    return (el.contains(document.activeElement) && document.activeElement !== document.body) ||
      el.querySelector("details[open]") !== null;
  }

  async function refreshFragment(el) {
    if (busy(el)) { el.dataset.stale = "1"; return; }
    try {
      el.innerHTML = await fetchText(el.dataset.liveFragment);
      delete el.dataset.stale;
      if (window.htmx) window.htmx.process(el);
      tickCountdowns();
    } catch (e) { /* next event */ }
  }

  async function appendHistory() {
    const body = document.getElementById("history");
    if (!body || body.querySelector("tr.more")) return; // the "load more" row covers what follows
    const rows = body.querySelectorAll("tr[data-seq]");
    const last = rows.length ? rows[rows.length - 1].dataset.seq : "0";
    try {
      const html = await fetchText(`${body.dataset.historyBase}?offset=${last}`);
      const holder = document.createElement("tbody");
      holder.innerHTML = html;
      const seen = new Set([...body.querySelectorAll("tr[data-seq]")].map((r) => r.dataset.seq));
      [...holder.children].forEach((tr) => { if (!tr.dataset.seq || !seen.has(tr.dataset.seq)) body.appendChild(tr); });
      if (window.htmx) window.htmx.process(body);
    } catch (e) { /* next event */ }
  }

  function executionPage() {
    // Looked up at each event: a fragment an action added (the resume's outcome) follows too.
    const fragments = () => [...document.querySelectorAll("[data-live-fragment]")];
    const diagram = document.getElementById("diagram");
    // W10: the socket brings the execution's progress after its events (console/live_progress.py), and
    // it is painted on the drawing at once, no fetch; the newest wins (`seq`), never an older over it.
    // The fetch path stays for what comes without it: a replayed event, a reconnect, a progress the
    // server could not build. Its redraws go one at a time, the next one after it.
    let pushed = null; // the newest pushed progress: {seq, graph, at}
    let drawingLive = false, drawAgain = false;
    function paintPushed() {
      // Nothing drawn yet, or another format on its way: its `flowdeck:rendered` paints this over it.
      if (!diagram.dataset.drawn || diagram.dataset.drawn !== diagram.dataset.format) return;
      const painted = Boolean(window.flowdeckPaint) && window.flowdeckPaint.paintWith(diagram, pushed.graph);
      if (!painted) redraw(true);
    }
    async function redraw(full) {
      if (drawingLive) { drawAgain = true; return; }
      drawingLive = true;
      const began = performance.now();
      try {
        // live-paint.js repaints the drawing in place from the progress JSON; a redraw only when it cannot.
        let painted = false;
        if (!full) {
          try { painted = Boolean(window.flowdeckPaint) && await window.flowdeckPaint.paint(diagram); } catch (e) { painted = false; }
        }
        if (!painted) await drawDiagram(diagram, diagram.dataset.format, true);
      } finally {
        drawingLive = false;
        // A progress pushed while this one was fetched is newer than what it showed.
        if (pushed && pushed.at > began && window.flowdeckPaint) window.flowdeckPaint.paintWith(diagram, pushed.graph);
        if (drawAgain) { drawAgain = false; redraw(); }
      }
    }
    // The fragments (panel, history) follow the diagram's paint: their renders queue on the same server.
    const later = paced(() => Promise.all([...fragments().map(refreshFragment), appendHistory()]), 100);
    const refresh = throttle(() => {
      // The fetched progress first: the fragments follow its paint, or 150 ms, whichever is sooner.
      Promise.race([redraw(), new Promise((resolve) => setTimeout(resolve, 150))]).then(later, later);
    }, 100);
    onLive((event) => { if (!event.progress_follows) refresh(); });
    onProgress((message) => {
      if (!message.progress) { refresh(); return; } // the server could not build it: fetched instead
      if (pushed && message.seq < pushed.seq) { later(); return; }
      pushed = { seq: message.seq, graph: message.progress, at: performance.now() };
      paintPushed();
      later();
    });
    onReopen(() => refresh());
    // A drawing fetched afresh (another format) shows the state of its fetch: a newer push goes over it.
    diagram.addEventListener("flowdeck:rendered", (e) => {
      if (e.detail.painted || !pushed || !window.flowdeckPaint) return;
      if (pushed.at > (diagram.drawStarted || 0)) window.flowdeckPaint.paintWith(diagram, pushed.graph);
    });
    // A stale fragment catches up once the operator leaves it.
    document.addEventListener("focusout", () => setTimeout(() => {
      fragments().filter((f) => f.dataset.stale && !busy(f)).forEach(refreshFragment);
    }, 0));
    document.body.addEventListener("htmx:after:swap", () => {
      // An action went through: fold its form and let the fragments it touched catch up.
      document.querySelectorAll("#panel details.action[open]").forEach((d) => { d.open = false; });
      if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
      fragments().filter((f) => f.dataset.stale).forEach(refreshFragment);
      tickCountdowns();
    });
    setupFormats(diagram);
    startLive({ execution: document.body.dataset.executionId });
  }

  // ------------------------------------------------------------------------------------ diagrams

  function setupFormats(diagram) {
    const tabs = document.getElementById("diagram-formats");
    tabs.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-format]");
      if (!button) return;
      tabs.querySelectorAll("button").forEach((b) => b.classList.toggle("active", b === button));
      drawDiagram(diagram, button.dataset.format, false);
    });
    drawDiagram(diagram, diagram.dataset.format, false);
  }

  /** The node a drawing too large to show whole opens on (diagram-view.js reads `data-focus`): the
   * progress document's `focus` (engine/focus.py), fetched beside the first drawing; live-paint.js keeps
   * it current from each pushed progress. */
  async function learnFocus(target) {
    const frame = document.querySelector(`[data-graph-url][data-diagram="${CSS.escape(target.id)}"]`);
    const url = target.dataset.progressUrl || (frame && frame.dataset.graphUrl);
    if (!url || target.dataset.focus !== undefined) return;
    try {
      target.dataset.focus = JSON.parse(await fetchText(url)).focus || "";
    } catch (e) { /* no focus: the drawing opens from its start */ }
  }

  let drawing = 0;
  async function drawDiagram(target, format, live) {
    const ticket = ++drawing;
    target.drawStarted = performance.now(); // of the newest drawing: only that one is shown
    target.dataset.format = format;
    const url = target.dataset.diagramBase.replace("FORMAT", format);
    try {
      const [text] = await Promise.all([fetchText(url), learnFocus(target)]);
      if (ticket !== drawing) return;
      const holder = document.createElement("div");
      holder.className = "drawing";
      holder.dataset.format = format;
      if (format === "dot") holder.appendChild(svgFrom(text));
      else if (format === "mermaid") await drawMermaid(holder, text);
      else if (format === "elk") await drawElk(holder, JSON.parse(text));
      else if (format === "bpmn") {
        target.appendChild(holder);
        const viewer = await drawBpmn(holder, text);
        if (ticket !== drawing) { holder.remove(); return; } // a newer drawing is on its way
        shown(target, holder, format, live, viewer);
        return;
      }
      if (ticket !== drawing) return;
      target.replaceChildren(holder);
      shown(target, holder, format, live);
    } catch (error) {
      if (!live) showError(target, error);
    }
  }

  function shown(target, holder, format, live, viewer) {
    // The new drawing replaces the old only now (a BPMN one is built in place): no blank frame between.
    [...target.children].forEach((child) => { if (child !== holder) child.remove(); });
    target.dataset.drawn = format;
    if (window.flowdeckDiagram) window.flowdeckDiagram.show(target, holder, format, { live, viewer });
    target.dispatchEvent(new CustomEvent("flowdeck:rendered", { detail: { format } }));
  }

  let mermaidCount = 0;
  async function drawMermaid(holder, text) {
    await loadScript("flowdeck/vendor/mermaid/mermaid.min.js");
    if (!window.__fdMermaid) {
      window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "neutral" });
      window.__fdMermaid = true;
    }
    const { svg } = await window.mermaid.render(`fd-mermaid-${++mermaidCount}`, text);
    holder.appendChild(svgFrom(svg, true));
  }

  async function drawBpmn(holder, xml) {
    await loadScript("flowdeck/vendor/bpmn-js/bpmn-navigated-viewer.production.min.js");
    holder.classList.add("bpmn");
    const viewer = new window.BpmnJS({ container: holder });
    await viewer.importXML(xml);
    const canvas = viewer.get("canvas");
    const overlays = viewer.get("overlays");
    viewer.get("elementRegistry").forEach((element) => {
      const di = element.di;
      // an external label (a gateway's or an event's name) shares its element's DI: one badge per element
      if (!di || !di.get || element.type === "label") return;
      const fill = (di.get("color:background-color") || di.get("bioc:fill") || "").toLowerCase();
      const status = STATUS_OF_COLOUR[fill];
      if (!status || status === "pending") return;
      canvas.addMarker(element.id, `fd-${status}`);
      const badge = document.createElement("span");
      badge.className = `bpmn-status st-${status}`;
      badge.textContent = status;
      overlays.add(element.id, { position: { top: -10, right: 10 }, html: badge });
    });
    canvas.zoom("fit-viewport");
    return viewer;
  }

  const ELK_GATEWAYS = new Set(["fork", "race-fork", "join", "race-join", "join-dispatch"]);

  async function drawElk(holder, graph) {
    await loadScript("flowdeck/vendor/elkjs/elk.bundled.js");
    const laid = await new window.ELK().layout(graph);
    const NS = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("width", laid.width + 20);
    svg.setAttribute("height", laid.height + 20);
    svg.setAttribute("viewBox", `0 0 ${laid.width + 20} ${laid.height + 20}`);
    svg.setAttribute("class", "elk");
    const defs = document.createElementNS(NS, "defs");
    defs.innerHTML = '<marker id="fd-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#555"/></marker>';
    svg.appendChild(defs);
    function draw(node, dx, dy, parent) {
      (node.children || []).forEach((child) => {
        const x = dx + child.x, y = dy + child.y;
        const g = document.createElementNS(NS, "g");
        g.setAttribute("class", "node");
        g.dataset.id = child.id;
        // A gateway is a diamond, as Mermaid and BPMN draw it; every other node a rounded box.
        const gateway = ELK_GATEWAYS.has(child.properties && child.properties.nodeType);
        const rect = document.createElementNS(NS, gateway ? "polygon" : "rect");
        const status = child.properties && child.properties.status;
        if (gateway) {
          const [cx, cy] = [x + child.width / 2, y + child.height / 2];
          rect.setAttribute("points", `${cx},${y} ${x + child.width},${cy} ${cx},${y + child.height} ${x},${cy}`);
        } else {
          Object.entries({ x, y, width: child.width, height: child.height, rx: 6 }).forEach(([k, v]) => rect.setAttribute(k, v));
        }
        rect.setAttribute("fill", COLOURS[status] || (child.children ? "#fafafa" : "#ffffff"));
        if (child.children && COLOURS[status]) rect.setAttribute("fill-opacity", "0.25"); // paint: the subflow's own status, tinted under its children
        rect.setAttribute("stroke", "#555");
        g.appendChild(rect);
        const lines = ((child.labels || [])[0] || { text: "" }).text.split("\n");
        lines.forEach((line, i) => {
          const t = document.createElementNS(NS, "text");
          t.setAttribute("x", x + (child.children ? 8 : child.width / 2));
          t.setAttribute("y", y + (child.children ? 16 : child.height / 2 - (lines.length - 1) * 7 + i * 14 + 4));
          t.setAttribute("text-anchor", child.children ? "start" : "middle");
          t.textContent = line;
          g.appendChild(t);
        });
        parent.appendChild(g);
        draw(child, x, y, parent);
      });
      (node.edges || []).forEach((edge) => {
        (edge.sections || []).forEach((s) => {
          const points = [s.startPoint, ...(s.bendPoints || []), s.endPoint];
          const path = document.createElementNS(NS, "path");
          path.setAttribute("d", points.map((p, i) => `${i ? "L" : "M"}${dx + p.x},${dy + p.y}`).join(" "));
          path.setAttribute("fill", "none");
          path.setAttribute("stroke", "#555");
          path.setAttribute("marker-end", "url(#fd-arrow)");
          parent.appendChild(path);
        });
        (edge.labels || []).forEach((label) => {
          const t = document.createElementNS(NS, "text");
          t.setAttribute("x", dx + (label.x || 0));
          t.setAttribute("y", dy + (label.y || 0) + 10);
          t.setAttribute("class", "edge-label");
          t.textContent = label.text;
          parent.appendChild(t);
        });
      });
    }
    const root = document.createElementNS(NS, "g");
    root.setAttribute("transform", "translate(10,10)");
    svg.appendChild(root);
    draw(laid, 0, 0, root);
    holder.appendChild(svg);
  }

  // ------------------------------------------------------------------------------ workflow page

  function workflowPage() {
    const target = document.getElementById("workflow-diagram");
    const ids = JSON.parse(document.getElementById("graph-ids").textContent || "{}");
    let svg = null, viewer = null, latest = {};
    const NS = "http://www.w3.org/2000/svg";

    function mainStatus(by) {
      return Object.entries(by).sort((a, b) => b[1] - a[1])[0][0];
    }

    function drawnId(g) { // DOT: the <title>; ELK: data-id; Mermaid: flowchart-<id>-<n>
      const title = g.querySelector(":scope > title");
      return g.dataset.id || (title && title.textContent) || ((g.id || "").match(/flowchart-(.+)-\d+$/) || [])[1];
    }

    function annotateSvg(counts) {
      svg.querySelectorAll(".fd-count").forEach((el) => el.remove());
      svg.querySelectorAll("g.node").forEach((g) => {
        const path = ids[drawnId(g)];
        const by = path && counts[path];
        if (!by) return;
        const total = Object.values(by).reduce((a, b) => a + b, 0);
        const box = g.getBBox();
        const unit = Math.max(11, (window.flowdeckDiagram && window.flowdeckDiagram.textUnit(target)) || 11);
        const badge = document.createElementNS(NS, "g");
        badge.setAttribute("class", "fd-count");
        badge.dataset.path = path;
        const circle = document.createElementNS(NS, "circle");
        circle.setAttribute("cx", box.x + box.width);
        circle.setAttribute("cy", box.y);
        circle.setAttribute("r", unit * 0.9); // as legible as the labels, whatever the format's units
        circle.setAttribute("fill", COLOURS[mainStatus(by)] || "#ffd700");
        circle.setAttribute("stroke", "#333");
        const text = document.createElementNS(NS, "text");
        text.setAttribute("x", box.x + box.width);
        text.setAttribute("y", box.y + unit * 0.36);
        text.style.fontSize = `${unit}px`;
        text.setAttribute("text-anchor", "middle");
        text.textContent = String(total);
        const tip = document.createElementNS(NS, "title");
        tip.textContent = Object.entries(by).map(([s, n]) => `${s}: ${n}`).join(", ");
        badge.append(circle, text, tip);
        g.appendChild(badge);
      });
    }

    function annotateBpmn(counts) {
      const overlays = viewer.get("overlays");
      const registry = viewer.get("elementRegistry");
      overlays.remove({ type: "fd-count" });
      Object.entries(ids).forEach(([id, path]) => {
        const by = counts[path];
        if (!by || !registry.get(id)) return;
        const badge = document.createElement("span");
        badge.className = `bpmn-count st-${mainStatus(by)}`;
        badge.dataset.path = path;
        badge.title = Object.entries(by).map(([s, n]) => `${s}: ${n}`).join(", ");
        badge.textContent = String(Object.values(by).reduce((a, b) => a + b, 0));
        overlays.add(id, "fd-count", { position: { top: -12, right: 12 }, html: badge });
      });
    }

    function annotate(counts) {
      latest = counts;
      if (target.dataset.drawn !== "bpmn" && svg) annotateSvg(counts);
      if (target.dataset.drawn === "bpmn" && viewer) annotateBpmn(counts);
    }

    // Per-node numbers (issue 13 point 6): now, failures by kind, completions, p50/p95; see node_numbers.html.
    function table(nodes) {
      const body = document.querySelector("#node-counts tbody");
      body.replaceChildren();
      const entries = Object.entries(nodes).sort();
      if (!entries.length) {
        const tr = body.insertRow();
        const td = tr.insertCell();
        td.colSpan = 6; td.className = "empty"; td.textContent = "No execution at a node now, and none lately.";
        return;
      }
      const badges = (cell, by, cls, word) => Object.entries(by).forEach(([key, n]) => {
        const span = document.createElement("span");
        span.className = `badge ${cls(key)}`;
        span.textContent = `${word(key)} ${n}`;
        cell.append(span, " ");
      });
      entries.forEach(([path, n]) => {
        const tr = body.insertRow();
        tr.dataset.path = path;
        const code = document.createElement("code");
        code.textContent = path;
        tr.insertCell().appendChild(code);
        badges(tr.insertCell(), n.now, (st) => `st-${st}`, (st) => st);
        const failed = tr.insertCell();
        badges(failed, n.failures, () => "st-failed", (kind) => kind || "untyped");
        // a race arm's failure lost the race by design: grey, never counted among failures
        badges(failed, n.lost || {}, () => "st-lost", (kind) => `lost: ${kind || "untyped"}`);
        [String(n.completions), n.p50, n.p95].forEach((text) => {
          const td = tr.insertCell();
          td.className = "num"; td.textContent = text;
        });
      });
    }

    async function counts() {
      try {
        const data = JSON.parse(await fetchText(target.dataset.counts));
        annotate(data.counts);
        table(data.nodes || {});
      } catch (e) { /* next event */ }
    }

    async function draw(format) {
      const text = await fetchText(target.dataset.diagramBase.replace("FORMAT", format));
      svg = null; viewer = null;
      const holder = document.createElement("div");
      holder.className = "drawing";
      if (format === "bpmn") {
        target.appendChild(holder);
        viewer = await drawBpmn(holder, text);
      } else {
        if (format === "dot") holder.appendChild(svgFrom(text));
        else if (format === "mermaid") await drawMermaid(holder, text);
        else await drawElk(holder, JSON.parse(text));
        svg = holder.querySelector("svg");
        target.replaceChildren(holder);
      }
      shown(target, holder, format, false, viewer);
      annotate(latest);
      counts();
    }

    const tabs = document.getElementById("workflow-formats");
    tabs.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-format]");
      if (!button) return;
      tabs.querySelectorAll("button").forEach((b) => b.classList.toggle("active", b === button));
      draw(button.dataset.format).catch((error) => showError(target, error));
    });
    draw(target.dataset.format).catch((error) => showError(target, error));
    onLive(paced(counts, 1000)); // leading edge: the first change shows at once; a busy workflow costs one count a second
    startLive({ workflow: document.body.dataset.workflowId });
  }

  // ------------------------------------------------------------------------------------ startup

  document.addEventListener("DOMContentLoaded", () => {
    tickCountdowns();
    setInterval(tickCountdowns, 1000);
    const pageName = document.body.dataset.page;
    if (pageName === "executions") executionsPage();
    else if (pageName === "execution") executionPage();
    else if (pageName === "workflow") workflowPage();
  });
})();
