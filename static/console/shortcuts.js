/* Keyboard shortcuts of every console page: `/` moves the focus to the page's search box (the first
 * `input[type=search]` in main), as on most consoles; never while the operator is typing in a field, where
 * `/` is a character, and never with a modifier held (the browser's own shortcuts keep theirs). */
(function () {
  "use strict";

  function typing(target) {
    if (!(target instanceof Element)) return false;
    return target.isContentEditable || target.closest("input, textarea, select, [contenteditable]") !== null;
  }

  function searchBox() { return document.querySelector("main input[type=search]"); }

  // Said to assistive technology and in the box's tooltip, so the key is found without documentation.
  document.addEventListener("DOMContentLoaded", () => {
    const search = searchBox();
    if (!search) return;
    search.setAttribute("aria-keyshortcuts", "/");
    if (!search.title) search.title = "Press / to search from anywhere on the page";
  });

  document.addEventListener("keydown", (event) => {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
    if (typing(event.target)) return;
    const search = searchBox();
    if (!search) return;
    event.preventDefault(); // the `/` is a command here, not text for the box
    search.focus();
    search.select();
  });
})();
