// wfctl ui: the runs page follows running runs by reading the same page again every few
// seconds while any run on it is running, and replacing the table; a page shown while the
// whole listing is still being read reloads itself once it is (no inline script: the
// page's Content-Security-Policy allows this file only).
"use strict";

(function () {
  const INTERVAL_MS = 3000;

  function follow() {
    if (!document.querySelector("[data-live]")) {
      return;
    }
    window.setTimeout(async function () {
      try {
        const answer = await fetch(window.location.href, { credentials: "same-origin" });
        if (!answer.ok) {
          return;
        }
        const page = new DOMParser().parseFromString(await answer.text(), "text/html");
        if (document.getElementById("partial") && !page.getElementById("partial")) {
          window.location.reload(); // the whole listing is read: the page is whole now
          return;
        }
        const table = document.getElementById("runs");
        const fresh = page.getElementById("runs");
        const count = page.getElementById("count");
        if (table && fresh) {
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
