// Parked versions (issue 13 point 7). The parked and the newest diagram of one version pair scroll
// together, so the same part of the plan stays one above the other; each pair opens scrolled to its
// first difference (a wide plan's change is often past the right edge); "Fit to width" shows it whole.
(function () {
  "use strict";
  // The script comes with every version pair (a page's or a resume report's): set up once.
  if (window.flowdeckParkedVersions) { return; }
  window.flowdeckParkedVersions = true;

  function panels(pair) { return Array.from(pair.querySelectorAll("[data-sync-scroll]")); }

  // A panel moved to follow another fires a scroll event of its own, later; when the other panel could
  // not go as far (a narrower drawing), following that echo back would pull the leader back too.
  document.addEventListener("scroll", function (event) {
    const panel = event.target;
    if (!(panel instanceof Element) || !panel.matches(".version-pair [data-sync-scroll]")) { return; }
    if (panel.dataset.echo === String(panel.scrollLeft)) { delete panel.dataset.echo; return; }
    panels(panel.closest(".version-pair")).forEach(function (other) {
      if (other === panel || other.scrollLeft === panel.scrollLeft) { return; }
      other.scrollLeft = panel.scrollLeft;
      other.dataset.echo = String(other.scrollLeft);
    });
  }, true);

  function toFirstChange(pair) {
    const mark = pair.querySelector("g.node.diff-removed, g.node.diff-changed, g.node.diff-added");
    const panel = mark && mark.closest("[data-sync-scroll]");
    if (!panel) { return; }
    const box = mark.getBoundingClientRect();
    const frame = panel.getBoundingClientRect();
    const centre = box.left - frame.left + panel.scrollLeft + box.width / 2;
    panel.scrollLeft = Math.max(0, centre - panel.clientWidth / 2);
    panel.dispatchEvent(new Event("scroll"));
  }

  function arm(root) {
    root.querySelectorAll(".version-pair:not([data-armed])").forEach(function (pair) {
      pair.setAttribute("data-armed", "1");
      const fit = pair.querySelector("button.fit-toggle");
      if (fit) {
        fit.addEventListener("click", function () {
          const fitted = pair.classList.toggle("fitted");
          fit.textContent = fitted ? "Actual size" : "Fit to width";
          fit.setAttribute("aria-pressed", fitted ? "true" : "false");
        });
      }
      toFirstChange(pair);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { arm(document); });
  } else {
    arm(document);
  }
  document.addEventListener("htmx:afterSettle", function (event) { arm(event.target); });
})();
