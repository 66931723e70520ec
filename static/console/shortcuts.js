/* Keyboard shortcuts of every console page: `/` moves the focus to the page's search box (the first
 * `input[type=search]` in main), as on most consoles; never while the operator is typing in a field, where
 * `/` is a character, and never with a modifier held (the browser's own shortcuts keep theirs). */
(function () {
  "use strict";

  function typing(target) {
    if (!(target instanceof Element)) return false;
    return target.isContentEditable || target.closest("input, textarea, select, [contenteditable]") !== null;
  }

  document.addEventListener("keydown", (event) => {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
    if (typing(event.target)) return;
    const search = document.querySelector("main input[type=search]");
    if (!search) return;
    event.preventDefault(); // the `/` is a command here, not text for the box
    search.focus();
    search.select();
  });
})();
