/* The execution page's timeline: loads the server-made waterfall fragment, keeps its filters (event kind,
 * node) and page in the fragment's URL, and follows the execution when the live socket hears of it
 * (console.js dispatches `flowdeck:live`): debounced, it asks for the delta after the last seq it has
 * (`after=SEQ`) and swaps in only the rows of the lanes that changed, moving the tracks' window; the rows
 * left alone are the same elements. A delta it cannot place (a lane it has never seen the position of,
 * another page count) is answered by loading the fragment whole. The delta also says every lane's state
 * (its pill) and the history's kinds (the kind filter), which may change with no change to a lane's bars.
 *
 * The filters apply to the history table beside it too: the table is loaded again with them, and a row
 * appended later (console.js appends live rows unfiltered) is hidden unless they select it.
 * The fragments are our own server-escaped HTML; the filter note is set as text.
 */
(function () {
  "use strict";

  const DEBOUNCE_MS = 300;

  function setup(holder) {
    const base = holder.dataset.timeline;
    const table = document.getElementById("history");
    const note = document.getElementById("history-filter");
    let query = new URLSearchParams();
    let timer = null, inflight = null, again = false, againWhole = false;

    function editing() {
      const active = document.activeElement;
      return active && holder.contains(active) && active.matches("input[name=node]");
    }

    // ------------------------------------------------------------------------- the history table

    function selects(row) {
      const kind = query.get("kind"), node = query.get("node");
      return (!kind || row.dataset.kind === kind) && (!node || row.dataset.lane === node);
    }

    function hideUnselected(rows) {
      rows.forEach((row) => { if (row.dataset && row.dataset.seq) row.hidden = !selects(row); });
    }

    async function filterTable() {
      if (!table || !table.dataset.historyBase) return;
      const params = new URLSearchParams();
      ["kind", "node"].forEach((k) => { if (query.get(k)) params.set(k, query.get(k)); });
      const response = await fetch(`${table.dataset.historyBase}?${params}`, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } });
      if (!response.ok) return;
      table.innerHTML = await response.text(); // our own server-escaped rows
      if (window.htmx) window.htmx.process(table);
      const words = [query.get("kind") && `kind ${query.get("kind")}`, query.get("node") && `node ${query.get("node")}`].filter(Boolean);
      if (note) { note.hidden = !words.length; note.textContent = words.length ? `filtered by the timeline: ${words.join(" · ")}` : ""; }
    }

    if (table) {
      new MutationObserver((changes) => {
        if (!query.get("kind") && !query.get("node")) return;
        changes.forEach((c) => hideUnselected([...c.addedNodes].filter((n) => n.nodeType === 1)));
      }).observe(table, { childList: true });
    }

    // ------------------------------------------------------------------------------- the waterfall

    function merge(delta) {
      const grid = holder.querySelector(".tl-grid");
      if (!grid || grid.dataset.tlPages !== delta.dataset.tlPages) return false;
      const order = JSON.parse(delta.dataset.tlOrder || "[]");
      const have = new Map([...grid.querySelectorAll(":scope > [data-tl-lane]")].map((r) => [r.dataset.tlLane, r]));
      const fresh = new Map();
      const rows = delta.querySelector("template[data-tl-part=rows]").content;
      [...rows.querySelectorAll("[data-tl-lane]")].forEach((r) => fresh.set(r.dataset.tlLane, r));
      if (order.some((name) => !have.has(name) && !fresh.has(name))) return false;
      let prev = grid.querySelector(":scope > .tl-head");
      order.forEach((name) => {
        let row = have.get(name);
        if (fresh.has(name)) {
          const next = fresh.get(name);
          if (row) row.replaceWith(next);
          row = next;
        }
        if (prev.nextElementSibling !== row) prev.after(row);
        prev = row;
        have.delete(name);
      });
      have.forEach((row) => row.remove());
      const box = delta.dataset.tlViewbox;
      if (box !== grid.dataset.tlViewbox) {
        grid.querySelectorAll("svg.tl-track").forEach((svg) => svg.setAttribute("viewBox", box));
        grid.dataset.tlViewbox = box;
      }
      [["summary", holder.querySelector("[data-tl-part=summary]")], ["axis", grid.querySelector("[data-tl-part=axis]")]].forEach(([part, old]) => {
        const made = delta.querySelector(`template[data-tl-part=${part}]`).content.firstElementChild;
        if (old && made) old.replaceWith(made);
      });
      said(grid, delta.querySelector("template[data-tl-part=states]"));
      kinds(delta.querySelector("template[data-tl-part=kinds]"));
      grid.dataset.tlSeq = delta.dataset.tlSeq;
      return true;
    }

    // A node's state may change with no event on its lane (a foreach compensated by its items' handlers,
    // an arm that lost when another won): the delta says every lane's state, each row takes its own.
    function said(grid, part) {
      if (!part) return;
      part.content.querySelectorAll("[data-tl-said-of]").forEach((entry) => {
        const row = [...grid.querySelectorAll(":scope > [data-tl-lane]")].find((r) => r.dataset.tlLane === entry.dataset.tlSaidOf);
        const made = entry.querySelector("[data-tl-said]");
        const old = row && row.querySelector("[data-tl-said]");
        if (!old || !made) return;
        if (old.outerHTML !== made.outerHTML) old.replaceWith(made);
        row.dataset.tlState = made.querySelector(".tl-state")?.dataset.state || "";
      });
    }

    // The kind filter offers every kind of the history: a kind first seen live joins it (unless in use).
    function kinds(part) {
      const old = holder.querySelector("select[data-tl-kind]");
      const made = part && part.content.querySelector("select[data-tl-kind]");
      if (!old || !made || document.activeElement === old) return;
      const words = (select) => [...select.options].map((o) => o.value).join("\u0000");
      if (words(old) === words(made)) return;
      made.value = old.value;
      old.replaceWith(made);
    }

    async function fetchFragment(params) {
      const response = await fetch(`${base}?${params}`, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } });
      const html = await response.text();
      if (!response.ok) throw new Error(`${response.status}`);
      return html;
    }

    async function load(force, whole) {
      if (inflight) { again = true; againWhole = againWhole || Boolean(whole); return; }
      if (!force && editing()) { holder.dataset.stale = "1"; return; }
      const seq = holder.querySelector(".tl-grid")?.dataset.tlSeq;
      const params = new URLSearchParams(query);
      if (!whole && seq !== undefined) params.set("after", seq);
      inflight = fetchFragment(params);
      try {
        const html = await inflight;
        const focused = document.activeElement && holder.contains(document.activeElement) ? document.activeElement.name : null;
        const made = document.createElement("div");
        made.innerHTML = html;
        const delta = made.querySelector(":scope > [data-tl-delta]");
        if (delta && !merge(delta)) { inflight = null; await load(true, true); return; }
        if (!delta) holder.replaceChildren(...made.childNodes);
        delete holder.dataset.stale;
        holder.dataset.loaded = String(Date.now());
        holder.dataset.updates = String(Number(holder.dataset.updates || 0) + 1);
        if (focused && !delta) holder.querySelector(`[name="${focused}"]`)?.focus();
      } catch (e) {
        holder.dataset.failed = "1"; // the next event tries again
      } finally {
        inflight = null;
        if (again) { const w = againWhole; again = false; againWhole = false; load(w, w); }
      }
    }

    function soon() {
      clearTimeout(timer);
      timer = setTimeout(() => load(false, false), DEBOUNCE_MS);
    }

    function filter(page) {
      const form = holder.querySelector("form[data-tl-filters]");
      const before = `${query.get("kind") || ""}\u0000${query.get("node") || ""}`;
      query = new URLSearchParams();
      const kind = form?.querySelector("[name=kind]")?.value || "";
      const node = form?.querySelector("[name=node]")?.value.trim() || "";
      if (kind) query.set("kind", kind);
      if (node) query.set("node", node);
      if (page) query.set("page", String(page));
      load(true, true);
      if (`${kind}\u0000${node}` !== before) filterTable();
    }

    holder.addEventListener("change", (e) => { if (e.target.closest("form[data-tl-filters]")) filter(0); });
    holder.addEventListener("submit", (e) => { e.preventDefault(); filter(0); });
    holder.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-tl-page]");
      if (button) filter(Number(button.dataset.tlPage));
    });
    holder.addEventListener("focusout", () => setTimeout(() => { if (holder.dataset.stale && !editing()) load(); }, 0));
    document.addEventListener("flowdeck:live", soon);
    load(true, true);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const holder = document.getElementById("timeline");
    if (holder && holder.dataset.timeline) setup(holder);
  });
})();
