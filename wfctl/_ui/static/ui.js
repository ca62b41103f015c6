// wfctl ui: the runs page follows running runs by reading the same page again every few
// seconds while any run on it is running (or while the whole listing is still being read),
// and replacing the table (no inline script: the
// page's Content-Security-Policy allows this file only).
"use strict";

(function () {
  const INTERVAL_MS = 3000;

  function follow() {
    const table = document.getElementById("runs");
    if (!table || table.dataset.live !== "1") {
      return;
    }
    window.setTimeout(async function () {
      try {
        const answer = await fetch(window.location.href, { credentials: "same-origin" });
        if (!answer.ok) {
          return;
        }
        const page = new DOMParser().parseFromString(await answer.text(), "text/html");
        if (document.getElementById("by-id") && !page.getElementById("by-id")) {
          window.location.reload(); // the whole listing is read: its filters and orders work
          return;
        }
        const fresh = page.getElementById("runs");
        const count = page.getElementById("count");
        if (fresh) {
          table.replaceWith(document.adoptNode(fresh));
        }
        if (count && document.getElementById("count")) {
          document.getElementById("count").replaceWith(document.adoptNode(count));
        }
      } catch (error) {
        return; // the server stopped: the page stays as it was
      }
      follow();
    }, INTERVAL_MS);
  }

  document.addEventListener("DOMContentLoaded", follow);
})();
