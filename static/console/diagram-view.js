/* Flowdeck console: the diagram viewer.
 *
 * console.js draws a diagram (Mermaid, DOT→SVG, ELK drawn as SVG, or BPMN in bpmn-js) and hands the drawing
 * to `flowdeckDiagram.show`; this file makes it legible and navigable: it opens fitted to its card with no
 * text smaller than MIN_TEXT_PX (a drawing too large for that is shown at that size centred on the node
 * that matters most, the container's `data-focus`, or from its start when there is none), drag pans, the wheel and the toolbar zoom, Fit shows it whole, 1:1 is the drawing's own size,
 * and full screen gives it the screen. SVG drawings move with svg-pan-zoom, BPMN with bpmn-js's own canvas.
 *
 * A live repaint of the same format keeps the operator's view; a drag never ends in a click, while a plain
 * click on a node reaches whatever listens for it. After each render, `onRender` callbacks are called with
 * the diagram container and the format (and the drawing's SVG or bpmn-js viewer), for decorations such as a
 * node panel: `window.flowdeckDiagram.onRender((container, format, drawing) => { ... })`.
 */
(function () {
  "use strict";

  const MIN_TEXT_PX = 11;     // no label is drawn smaller than this when the diagram opens
  const MAX_TEXT_PX = 15;     // ... nor is a small diagram blown up past this
  const PAD = 18;             // room around the drawing (count badges sit on node corners)
  const STEP = 1.25;          // one zoom button press
  const MIN_HEIGHT = 220;
  const SCALE_LIMITS = [0.05, 4];
  const DRAG_PX = 4;          // a press that moves further than this is a drag, not a click

  const callbacks = [];
  const views = new WeakMap(); // diagram container → { adapter, format, saved: {format: view} }

  function readPalette() {
    const el = document.getElementById("diagram-palette");
    try { return el ? JSON.parse(el.textContent) : {}; } catch (e) { return {}; }
  }

  // ------------------------------------------------------------------------------ text sizes

  function scaleOf(el) {
    const m = el.getScreenCTM && el.getScreenCTM();
    return m ? Math.hypot(m.a, m.b) : 0;
  }

  function ownText(el) {
    return [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
  }

  /** The smallest label on screen, in CSS px: SVG text by its CTM, HTML labels (Mermaid's foreignObject)
   * by the foreignObject's. */
  function smallestText(root) {
    let least = Infinity;
    root.querySelectorAll("text, tspan, foreignObject *").forEach((el) => {
      if (!ownText(el)) return;
      const size = parseFloat(getComputedStyle(el).fontSize);
      const host = el.closest("foreignObject") || el;
      const k = scaleOf(host);
      if (size > 0 && k > 0 && el.getClientRects().length) least = Math.min(least, size * k);
    });
    return least;
  }

  // -------------------------------------------------------------------------------- adapters
  // Each adapter shows its drawing as screen = content × s + (x, y), in px from the container's corner.

  function stripLegend(svg) {
    // The HTML legend above is the one legend; a drawing's own (DOT's cluster, Mermaid's row) goes.
    const drawn = [...svg.querySelectorAll("g.cluster, g.node, g.edge, g.edgePath, path, g.edgeLabel")];
    drawn.forEach((g) => {
      const title = g.querySelector(":scope > title");
      const name = (title && title.textContent) || g.id || "";
      // DOT titles its clusters and nodes; Mermaid 11 ids read <svg id>-flowchart-legend_<status>-<n>
      if (/^(cluster_legend$|legend_)/.test(name) || /(^|-)(flowchart-legend|L_legend)/.test(name)) g.remove();
    });
    const background = svg.querySelector("g.graph > polygon:first-of-type");
    if (background && background.getAttribute("fill") === "white") background.remove();
  }

  function svgAdapter(target, svg) {
    stripLegend(svg);
    const box = svg.getBBox();
    if (box.width > 0 && box.height > 0) svg.setAttribute("viewBox", `${box.x} ${box.y} ${box.width} ${box.height}`);
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.style.maxWidth = "none";
    svg.classList.add("fd-svg");
    let notify = () => {};
    const pz = window.svgPanZoom(svg, {
      fit: false, contain: false, center: false, dblClickZoomEnabled: false, zoomScaleSensitivity: 0.15,
      minZoom: 0.001, maxZoom: 1000, onUpdatedCTM: () => notify(),
    });
    const base = () => pz.getSizes().realZoom / pz.getZoom(); // svg-pan-zoom's zoom is relative to this
    return {
      kind: "svg",
      drawing: svg,
      content: () => pz.getSizes().viewBox,
      get: () => ({ s: pz.getSizes().realZoom, ...pz.getPan() }),
      set: (v) => { pz.zoom(v.s / base()); pz.pan({ x: v.x, y: v.y }); },
      resize: () => pz.resize(),
      onChange: (fn) => { notify = fn; },
      destroy: () => pz.destroy(),
    };
  }

  /** The drawing's box with its overlays (status and count badges sit above the shapes' top corners),
   * so a view fitted to it keeps them inside the frame. */
  function withOverlays(holder, canvas) {
    const vb = canvas.viewbox();
    const inner = vb.inner;
    let [x0, y0, x1, y1] = [inner.x, inner.y, inner.x + inner.width, inner.y + inner.height];
    const origin = holder.getBoundingClientRect();
    holder.querySelectorAll(".djs-overlay").forEach((el) => {
      const r = el.getBoundingClientRect();
      if (!r.width && !r.height) return;
      x0 = Math.min(x0, (r.left - origin.left) / vb.scale + vb.x);
      y0 = Math.min(y0, (r.top - origin.top) / vb.scale + vb.y);
      x1 = Math.max(x1, (r.right - origin.left) / vb.scale + vb.x);
      y1 = Math.max(y1, (r.bottom - origin.top) / vb.scale + vb.y);
    });
    return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
  }

  function bpmnAdapter(target, holder, viewer) {
    const canvas = viewer.get("canvas");
    const size = () => ({ w: holder.clientWidth, h: holder.clientHeight });
    holder.addEventListener("wheel", (e) => {
      // The wheel zooms here as it does on the SVG formats (bpmn-js would scroll without Ctrl).
      e.preventDefault();
      e.stopPropagation();
      const r = holder.getBoundingClientRect();
      zoomAt(adapter, Math.pow(1.0015, -e.deltaY * (e.deltaMode === 1 ? 32 : 1)), e.clientX - r.left, e.clientY - r.top);
    }, { capture: true, passive: false });
    holder.addEventListener("scroll", (e) => {
      // bpmn-js maps the pointer through its viewbox alone: a container scrolled by anything else
      // (focus, scrollIntoView) would leave shapes drawn where they are not hit. Capture: scroll does not bubble.
      if (e.target.scrollLeft || e.target.scrollTop) { e.target.scrollLeft = 0; e.target.scrollTop = 0; }
    }, true);
    const adapter = {
      kind: "bpmn",
      drawing: viewer,
      content: () => withOverlays(holder, canvas),
      get: () => { const vb = canvas.viewbox(); return { s: vb.scale, x: -vb.x * vb.scale, y: -vb.y * vb.scale }; },
      set: (v) => { const { w, h } = size(); canvas.viewbox({ x: -v.x / v.s, y: -v.y / v.s, width: w / v.s, height: h / v.s }); },
      resize: () => canvas.resized(),
      onChange: (fn) => viewer.on("canvas.viewbox.changed", fn),
      destroy: () => {},
    };
    return adapter;
  }

  // ------------------------------------------------------------------------------- the views

  function clampScale(s) { return Math.min(SCALE_LIMITS[1], Math.max(SCALE_LIMITS[0], s)); }

  function zoomAt(adapter, factor, px, py) {
    const v = adapter.get();
    const s = clampScale(v.s * factor);
    const k = s / v.s;
    adapter.set({ s, x: px - (px - v.x) * k, y: py - (py - v.y) * k });
  }

  function maxHeight(target) {
    const frame = target.closest("[data-diagram-view]");
    if (isFull(frame)) return target.clientHeight;
    return Math.max(320, Math.min(Math.round(window.innerHeight * 0.72), 760));
  }

  /** Where the drawing opens: as large as the card allows, never with text under MIN_TEXT_PX. */
  function legible(target, adapter, unitFont, fixedHeight) {
    const box = adapter.content();
    const width = target.clientWidth;
    const limit = fixedHeight ? target.clientHeight : maxHeight(target);
    const least = unitFont > 0 && isFinite(unitFont) ? MIN_TEXT_PX / unitFont : 0;
    const most = unitFont > 0 && isFinite(unitFont) ? Math.max(least, MAX_TEXT_PX / unitFont) : 1;
    let s = Math.max(least, Math.min((width - 2 * PAD) / box.width, most));
    let height = box.height * s + 2 * PAD;
    if (height > limit) {
      s = Math.max(least, Math.min(s, (limit - 2 * PAD) / box.height));
      height = limit;
    }
    height = fixedHeight ? target.clientHeight : Math.max(MIN_HEIGHT, Math.ceil(height));
    return { height, view: placed(box, s, width, height) };
  }

  function placed(box, s, width, height) {
    // Centred when it fits; else from its start (top left), where a flow begins.
    const x = box.width * s + 2 * PAD <= width ? (width - box.width * s) / 2 - box.x * s : PAD - box.x * s;
    const y = box.height * s + 2 * PAD <= height ? (height - box.height * s) / 2 - box.y * s : PAD - box.y * s;
    return { s, x, y };
  }

  // ------------------------------------------------------------------- the node that matters

  /** The drawn parts of graph node `id` in an SVG drawing: DOT's `g#fd-<id>`, ELK's `data-id`, Mermaid's
   * `…flowchart-<id>-<n>` (live-paint.js finds them the same way). */
  function partsOf(svg, id) {
    const dot = svg.querySelector(`g#${CSS.escape("fd-" + id)}, g#${CSS.escape("fd-cluster-" + id)}`);
    if (dot) return [dot];
    const elk = svg.querySelectorAll(`g.node[data-id="${CSS.escape(id)}"]`);
    if (elk.length) return [...elk];
    const tail = new RegExp(`(?:^|-)flowchart-${id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-\\d+$`);
    return [...svg.querySelectorAll("g.node[id]")].filter((g) => tail.test(g.id));
  }

  /** The box of drawn `parts` in the drawing's own units (the adapter's content box), or null. SVG parts
   * are measured against svg-pan-zoom's viewport group, both read from the DOM at once, so a transform
   * it has not applied yet (it paints on the next frame) cannot skew it; bpmn-js applies its at once. */
  function partsBox(target, adapter, parts) {
    let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
    const add = (x, y) => { [x0, y0, x1, y1] = [Math.min(x0, x), Math.min(y0, y), Math.max(x1, x), Math.max(y1, y)]; };
    if (adapter.kind === "bpmn") {
      const origin = target.getBoundingClientRect();
      const v = adapter.get();
      parts.map((el) => el.getBoundingClientRect()).filter((r) => r.width || r.height).forEach((r) => {
        add((r.left - origin.left - v.x) / v.s, (r.top - origin.top - v.y) / v.s);
        add((r.right - origin.left - v.x) / v.s, (r.bottom - origin.top - v.y) / v.s);
      });
    } else {
      const viewport = adapter.drawing.querySelector("g.svg-pan-zoom_viewport");
      if (!viewport) return null;
      const back = viewport.getScreenCTM().inverse();
      parts.filter((el) => el.getBBox && el.getScreenCTM).forEach((el) => {
        const b = el.getBBox();
        if (!b.width && !b.height) return;
        const m = back.multiply(el.getScreenCTM());
        [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]].forEach(([x, y]) => {
          const p = new DOMPoint(x, y).matrixTransform(m);
          add(p.x, p.y);
        });
      });
    }
    return isFinite(x0) ? { x: x0, y: y0, width: x1 - x0, height: y1 - y0 } : null;
  }

  /** Where the node that matters most (the container's `data-focus`, a graph id: engine/focus.py; or the
   * first part `data-focus-css` selects) lies, in the drawing's own units; null when there is none. */
  function focusBox(target, adapter) {
    const id = target.dataset.focus;
    const css = target.dataset.focusCss; // a server-marked part instead (the parked page's first change)
    if (!id && !css) return null;
    if (adapter.kind === "bpmn") {
      const el = id && adapter.drawing.get("elementRegistry").get(id);
      return el && el.width ? { x: el.x, y: el.y, width: el.width, height: el.height } : null;
    }
    const svg = adapter.drawing;
    const parts = id ? partsOf(svg, id) : [...svg.querySelectorAll(css)].slice(0, 1);
    return parts.length ? partsBox(target, adapter, parts) : null;
  }

  /** One axis of a view centred on the focus, kept so the drawing covers the frame where it can (no
   * blank beyond its edge while more of it is off the other side). */
  function centredOn(start, size, f0, fSize, s, frame) {
    if (size * s + 2 * PAD <= frame) return (frame - size * s) / 2 - start * s;
    const wanted = frame / 2 - (f0 + fSize / 2) * s;
    return Math.min(PAD - start * s, Math.max(frame - PAD - (start + size) * s, wanted));
  }

  function onFocus(box, focus, view, width, height) {
    const { s } = view;
    return {
      s,
      x: centredOn(box.x, box.width, focus.x, focus.width, s, width),
      y: centredOn(box.y, box.height, focus.y, focus.height, s, height),
    };
  }

  function fitAll(target, adapter) {
    const box = adapter.content();
    const s = clampScale(Math.min((target.clientWidth - 2 * PAD) / box.width, (target.clientHeight - 2 * PAD) / box.height));
    adapter.set(placed(box, s, target.clientWidth, target.clientHeight));
  }

  function setHeight(target, height, adapter) {
    if (Math.abs(target.clientHeight - height) < 1) return;
    target.style.height = `${height}px`;
    adapter.resize();
  }

  function showZoom(target, adapter) {
    const label = target.closest("[data-diagram-view]")?.querySelector("[data-view-zoom]");
    if (label) label.textContent = `${Math.round(adapter.get().s * 100)}%`;
  }

  /** Opens the drawing fitted with legible text, or, when it is too large for that, at the legible scale
   * centred on the node that matters most (from its start when the page names none). */
  function open(target, state, fixedHeight) {
    const { adapter } = state;
    const plan = legible(target, adapter, state.unitFont, fixedHeight);
    if (!fixedHeight) setHeight(target, plan.height, adapter);
    const box = adapter.content();
    const [width, height] = [target.clientWidth, target.clientHeight];
    const whole = box.width * plan.view.s + 2 * PAD <= width && box.height * plan.view.s + 2 * PAD <= height;
    const focus = whole ? null : focusBox(target, adapter);
    adapter.set(focus ? onFocus(box, focus, plan.view, width, height) : plan.view);
    target.dataset.opened = focus ? "focus" : whole ? "whole" : "start";
    target.dataset.opens = String(Number(target.dataset.opens || 0) + 1); // a test waits on it, never a clock
  }

  /** Takes over a fresh drawing in `target` (console.js calls it after each render). */
  function show(target, holder, format, options) {
    const opts = options || {};
    const previous = views.get(target);
    const saved = (previous && previous.saved) || {};
    if (previous && previous.adapter.kind === "svg" && !previous.adapter.drawing.isConnected) {
      try { previous.adapter.destroy(); } catch (e) { /* already gone with its drawing */ }
    }
    let adapter;
    try {
      adapter = format === "bpmn" ? bpmnAdapter(target, holder, opts.viewer) : svgAdapter(target, holder.querySelector("svg"));
    } catch (error) {
      return; // a drawing we cannot steer is still a drawing
    }
    const before = adapter.get().s;
    const state = { adapter, format, saved, unitFont: smallestText(holder) / before, restoring: true };
    views.set(target, state);
    adapter.onChange(() => {
      if (!state.restoring) saved[format] = { view: adapter.get(), height: target.clientHeight, touched: Boolean(saved[format] && saved[format].touched) };
      showZoom(target, adapter);
    });
    const kept = saved[format];
    if (kept && (opts.live || kept.touched)) {
      if (!isFull(target.closest("[data-diagram-view]"))) setHeight(target, kept.height, adapter);
      adapter.set(kept.view);
    } else {
      open(target, state, isFull(target.closest("[data-diagram-view]")));
      alongside(target);
    }
    holder.classList.add("fd-ready");
    showZoom(target, adapter);
    requestAnimationFrame(() => {
      state.restoring = false;
      saved[format] = { view: adapter.get(), height: target.clientHeight, touched: Boolean(kept && kept.touched) };
      target.dataset.viewed = format;
      target.dataset.renders = String(Number(target.dataset.renders || 0) + 1);
      const drawing = format === "bpmn" ? opts.viewer : holder.querySelector("svg");
      callbacks.forEach((fn) => { try { fn(target, format, drawing); } catch (e) { console.error(e); } });
    });
  }

  /** A live repaint painted the drawing in place (live-paint.js): the view stays; hooks run as after a render. */
  function painted(target, format) {
    const state = views.get(target);
    if (!state) return;
    target.dataset.renders = String(Number(target.dataset.renders || 0) + 1);
    const drawing = state.adapter.drawing;
    callbacks.forEach((fn) => { try { fn(target, format, drawing); } catch (e) { console.error(e); } });
  }

  function touched(target) {
    const state = views.get(target);
    if (!state) return null;
    const record = () => {
      state.saved[state.format] = { view: state.adapter.get(), height: target.clientHeight, touched: true };
      follow(target);
    };
    return { state, record };
  }

  // ------------------------------------------------------------ drawings that move together
  // Stages of one `data-view-group` (the parked page's version pair) show the same part of the plan: the
  // operator's pan and zoom of one moves the others, and one that has nothing to open on opens where
  // another of its group did.

  function group(target) {
    const name = target.dataset.viewGroup;
    if (!name) return [];
    return [...document.querySelectorAll(`.diagram[data-view-group="${CSS.escape(name)}"]`)]
      .filter((other) => other !== target && views.get(other));
  }

  function follow(target) {
    if (isFull(target.closest("[data-diagram-view]"))) return;
    const view = views.get(target).adapter.get();
    group(target).forEach((other) => {
      const state = views.get(other);
      state.adapter.set(view);
      state.saved[state.format] = { view, height: other.clientHeight, touched: true };
    });
  }

  function alongside(target) {
    const others = group(target);
    if (target.dataset.opened === "focus") {
      others.filter((o) => o.dataset.opened === "start").forEach((o) => views.get(o).adapter.set(views.get(target).adapter.get()));
      return;
    }
    const leader = others.find((o) => o.dataset.opened === "focus");
    if (leader && target.dataset.opened === "start") views.get(target).adapter.set(views.get(leader).adapter.get());
  }

  // ------------------------------------------------------------------ beside the node panel

  /** The part of the frame a person sees: on a narrow screen the node panel lies over the drawing's
   * right side, and a node is only in view left of it (unless too little is left to be worth it). */
  function clearArea(target) {
    const r = target.getBoundingClientRect();
    let right = r.right;
    const panel = document.getElementById("node-panel");
    if (panel && !panel.hidden) {
      const p = panel.getBoundingClientRect();
      const over = p.left < r.right && p.right > r.left && p.top < r.bottom && p.bottom > r.top;
      if (over && p.left - r.left >= 160) right = p.left;
    }
    return { left: r.left, top: r.top, width: right - r.left, height: r.height };
  }

  /** The frame's width changed with the node panel: the drawing follows, re-fitted to the space left
   * unless the operator zoomed or panned it (then the view is kept, and given back when the panel closes). */
  function besidePanel(target, opening) {
    const state = views.get(target);
    if (!state) return;
    const frame = target.closest("[data-diagram-view]");
    const kept = state.saved[state.format];
    state.adapter.resize();
    if (opening && !state.beforePanel) state.beforePanel = { view: state.adapter.get(), touched: Boolean(kept && kept.touched) };
    const before = state.beforePanel;
    if (!opening) state.beforePanel = null;
    if (!(kept && kept.touched) || isFull(frame)) {
      open(target, state, isFull(frame));
    } else if (!opening && before && before.touched) {
      state.adapter.set(before.view);
    }
  }

  /** Pans `elements` (a node's drawn parts) into the part of the frame a person sees: centred when any
   * of it is out of sight (or `centre`), the zoom kept unless the node would not fit at it. */
  function reveal(target, elements, centre) {
    const state = views.get(target);
    const box = state && partsBox(target, state.adapter, [...elements]);
    if (!box) return false;
    const { adapter } = state;
    let v = adapter.get(); // the view as set, which the DOM may not show yet: measured in content units
    const area = clearArea(target);
    const origin = target.getBoundingClientRect();
    let [x0, x1] = [box.x * v.s + v.x, (box.x + box.width) * v.s + v.x];
    let [y0, y1] = [box.y * v.s + v.y, (box.y + box.height) * v.s + v.y];
    const [aw, ah, ax, ay] = [area.width, area.height, area.left - origin.left, area.top - origin.top];
    const inside = x0 >= ax + PAD / 2 && x1 <= ax + aw - PAD / 2 && y0 >= ay + PAD / 2 && y1 <= ay + ah - PAD / 2;
    if (inside && !centre) return true;
    const k = Math.min(1, (aw - 2 * PAD) / Math.max(x1 - x0, 1), (ah - 2 * PAD) / Math.max(y1 - y0, 1));
    if (k < 1) {
      const s = clampScale(v.s * k), f = s / v.s;
      [x0, x1, y0, y1] = [v.x + (x0 - v.x) * f, v.x + (x1 - v.x) * f, v.y + (y0 - v.y) * f, v.y + (y1 - v.y) * f];
      v = { s, x: v.x, y: v.y };
    }
    const dx = ax + aw / 2 - (x0 + x1) / 2, dy = ay + ah / 2 - (y0 + y1) / 2;
    adapter.set({ s: v.s, x: v.x + dx, y: v.y + dy });
    return true;
  }

  // ---------------------------------------------------------------------- drag versus click

  function guardClicks(target) {
    let down = null, dragged = false;
    target.addEventListener("pointerdown", (e) => { down = { x: e.clientX, y: e.clientY }; dragged = false; }, true);
    target.addEventListener("pointermove", (e) => {
      if (!down || dragged || !e.buttons) return;
      if (Math.hypot(e.clientX - down.x, e.clientY - down.y) > DRAG_PX) {
        dragged = true;
        target.classList.add("fd-dragging");
      }
    }, true);
    window.addEventListener("pointerup", () => {
      if (down && dragged) { const t = touched(target); if (t) t.record(); }
      down = null;
      target.classList.remove("fd-dragging");
    }, true);
    target.addEventListener("click", (e) => {
      if (!dragged) return;
      dragged = false;
      // bpmn-js traps a drag's click itself, and would trap the next real one if this one never reached it.
      if (views.get(target)?.adapter.kind === "bpmn") return;
      e.stopPropagation(); // the end of a drag
      e.preventDefault();
    }, true);
    target.addEventListener("wheel", () => { requestAnimationFrame(() => { const t = touched(target); if (t) t.record(); }); }, { passive: true });
  }

  // ----------------------------------------------------------------------- toolbar, screen

  function isFull(frame) {
    return Boolean(frame) && (document.fullscreenElement === frame || frame.classList.contains("fd-full"));
  }

  async function toggleFull(frame) {
    if (document.fullscreenElement === frame) { await document.exitFullscreen(); return; }
    if (frame.classList.contains("fd-full")) { frame.classList.remove("fd-full"); refit(frame); return; }
    try {
      await frame.requestFullscreen();
    } catch (e) {
      frame.classList.add("fd-full"); // no Fullscreen API here: the page's whole window instead
      refit(frame);
    }
  }

  function refit(frame) {
    const target = frame.querySelector(".diagram");
    const state = views.get(target);
    frame.querySelector("[data-view=full]")?.setAttribute("aria-pressed", String(isFull(frame)));
    if (!state) return;
    if (!isFull(frame)) target.style.height = "";
    requestAnimationFrame(() => {
      state.adapter.resize();
      open(target, state, isFull(frame));
      const t = touched(target);
      if (t) t.record();
    });
  }

  function act(target, what) {
    const state = views.get(target);
    if (what === "full") { toggleFull(target.closest("[data-diagram-view]")); return; }
    if (!state) return;
    const { adapter } = state;
    const cx = target.clientWidth / 2, cy = target.clientHeight / 2;
    if (what === "zoom-in") zoomAt(adapter, STEP, cx, cy);
    else if (what === "zoom-out") zoomAt(adapter, 1 / STEP, cx, cy);
    else if (what === "actual") zoomAt(adapter, 1 / adapter.get().s, cx, cy);
    else if (what === "fit") fitAll(target, adapter);
    const t = touched(target);
    if (t) t.record();
  }

  function setUp(frame) {
    const target = frame.querySelector(".diagram");
    if (!target || frame.dataset.viewerReady) return;
    frame.dataset.viewerReady = "1";
    guardClicks(target);
    frame.querySelector(".fd-tools").addEventListener("click", (e) => {
      const button = e.target.closest("button[data-view]");
      if (button) act(target, button.dataset.view);
    });
    frame.querySelector(".tabs")?.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-format]");
      if (!button) return;
      frame.querySelectorAll(".tabs button").forEach((b) => b.setAttribute("aria-selected", String(b === button)));
    });
  }

  document.addEventListener("fullscreenchange", () => {
    document.querySelectorAll("[data-diagram-view]").forEach((frame) => refit(frame));
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape") return;
    document.querySelectorAll("[data-diagram-view].fd-full").forEach((frame) => { frame.classList.remove("fd-full"); refit(frame); });
  });
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => document.querySelectorAll("[data-diagram-view] .diagram").forEach((target) => {
      const state = views.get(target);
      if (state) state.adapter.resize();
    }), 150);
  });

  /** Sets up the stages under `root`: their toolbars, their legends' swatches, and the drawings the
   * server drew into them (`.diagram[data-static]`, Graphviz's SVG: the parked page). */
  function scan(root) {
    root.querySelectorAll("[data-diagram-view] .legend .sw[data-colour]").forEach((sw) => {
      sw.style.background = sw.dataset.colour; // the palette's colour: no inline style in the template (CSP)
    });
    const frames = [...(root.matches && root.matches("[data-diagram-view]") ? [root] : []), ...root.querySelectorAll("[data-diagram-view]")];
    frames.forEach((frame) => {
      setUp(frame);
      const target = frame.querySelector(".diagram[data-static]");
      const holder = target && target.querySelector(":scope > .drawing");
      if (!holder || views.get(target) || !holder.querySelector("svg")) return;
      show(target, holder, "dot", {});
    });
  }

  scan(document);
  // Fragments swapped in later (the parked page's progress and resume previews) bring stages of their own.
  new MutationObserver((changes) => changes.forEach((c) => c.addedNodes.forEach((n) => {
    if (n.nodeType === 1 && (n.matches("[data-diagram-view]") || n.querySelector("[data-diagram-view]"))) scan(n);
  }))).observe(document.body, { childList: true, subtree: true });

  window.flowdeckDiagram = {
    /** Status → colour, the palette the page's legend was drawn from (engine/render/common.py). */
    palette: readPalette(),
    /** Called after each render with (container, format, drawing): the SVG element, or the bpmn-js viewer. */
    onRender(fn) { callbacks.push(fn); },
    show,
    painted,
    /** The drawing shown in the container: the SVG element, or the bpmn-js viewer; null before the first. */
    drawing(target) { const state = views.get(target); return state ? state.adapter.drawing : null; },
    /** The container's current view: { s, x, y } (screen = content × s + (x, y)), or null. */
    view(target) { const state = views.get(target); return state ? state.adapter.get() : null; },
    act,
    /** The node panel opened (`opening`) or closed beside or over the drawing in `target`. */
    besidePanel,
    /** Brings a node's drawn `elements` into view (see `reveal`); false when there is nothing drawn yet. */
    reveal,
    /** The smallest label's size in the drawing's own units: what a decoration's text needs to be as legible. */
    textUnit(target) { const state = views.get(target); return state && isFinite(state.unitFont) ? state.unitFont : null; },
  };
})();
