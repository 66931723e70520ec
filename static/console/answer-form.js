// The answer form's hint follows the chosen node: its declared type, how the text is read, an example
// (the server writes them on each <option>; the CSP allows no inline script). Delegated, so a panel
// swapped in by a live refresh needs nothing more.
(() => {
  "use strict";
  document.addEventListener("change", (e) => {
    const select = e.target.closest("select[data-answer-node]");
    if (!select) return;
    const option = select.selectedOptions[0];
    const form = select.closest("form");
    if (!option || !form) return;
    const hint = form.querySelector("[data-answer-hint]");
    if (hint) hint.textContent = option.dataset.hint || "";
    const value = form.querySelector("textarea[name=value]");
    if (value) value.placeholder = option.dataset.example || "";
  });
})();
