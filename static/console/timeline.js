/* The execution page's timeline: loads the server-made waterfall fragment, keeps its filters (event kind,
 * node) and page in the fragment's URL, and fetches it again, debounced, when the live socket hears of the
 * execution (console.js dispatches `flowdeck:live`). The fragment is our own server-escaped HTML.
 */
(function () {
  "use strict";

  const DEBOUNCE_MS = 300;

  function setup(holder) {
    const base = holder.dataset.timeline;
    let query = new URLSearchParams();
    let timer = null, inflight = null, again = false;

    function editing() {
      const active = document.activeElement;
      return active && holder.contains(active) && active.matches("input[name=node]");
    }

    async function load(force) {
      if (inflight) { again = true; return; }
      if (!force && editing()) { holder.dataset.stale = "1"; return; }
      const url = `${base}?${query}`;
      inflight = fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } });
      try {
        const response = await inflight;
        const html = await response.text();
        if (!response.ok) throw new Error(`${response.status}`);
        const focused = document.activeElement && holder.contains(document.activeElement) ? document.activeElement.name : null;
        holder.innerHTML = html;
        delete holder.dataset.stale;
        holder.dataset.loaded = String(Date.now());
        if (focused) holder.querySelector(`[name="${focused}"]`)?.focus();
      } catch (e) {
        holder.dataset.failed = "1"; // the next event tries again
      } finally {
        inflight = null;
        if (again) { again = false; load(); }
      }
    }

    function soon() {
      clearTimeout(timer);
      timer = setTimeout(load, DEBOUNCE_MS);
    }

    function filter(page) {
      const form = holder.querySelector("form[data-tl-filters]");
      query = new URLSearchParams();
      const kind = form?.querySelector("[name=kind]")?.value || "";
      const node = form?.querySelector("[name=node]")?.value.trim() || "";
      if (kind) query.set("kind", kind);
      if (node) query.set("node", node);
      if (page) query.set("page", String(page));
      load(true);
    }

    holder.addEventListener("change", (e) => { if (e.target.closest("form[data-tl-filters]")) filter(0); });
    holder.addEventListener("submit", (e) => { e.preventDefault(); filter(0); });
    holder.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-tl-page]");
      if (button) filter(Number(button.dataset.tlPage));
    });
    holder.addEventListener("focusout", () => setTimeout(() => { if (holder.dataset.stale && !editing()) load(); }, 0));
    document.addEventListener("flowdeck:live", soon);
    load();
  }

  document.addEventListener("DOMContentLoaded", () => {
    const holder = document.getElementById("timeline");
    if (holder && holder.dataset.timeline) setup(holder);
  });
})();
