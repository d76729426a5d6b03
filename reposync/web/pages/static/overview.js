// The Overview's live rows: the server renders the table body again (as filtered and
// sorted by the page's own query string) and this swaps it in, every 5 s while a Run is
// queued or running, every 30 s otherwise (a schedule or a webhook may start one), and
// not at all while the tab is hidden. No row is built here: the server's HTML is the
// only rendering, so a live row reads exactly as a reloaded one.
(function () {
  "use strict";
  var script = document.currentScript;
  var body = document.getElementById("overview-rows");
  var timer = null;

  function busy() {
    return body.querySelector('tr[data-state="running"], tr[data-state="queued"]') !== null;
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, busy() ? 5000 : 30000);
  }

  function refresh() {
    if (document.hidden) { schedule(); return; }
    fetch(script.dataset.rows, { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("rows: " + response.status); }
        return response.text();
      })
      .then(function (html) { body.innerHTML = html; body.dataset.refreshed = String(Date.now()); })
      .catch(function () { /* the next round tries again; the rows shown stay as they were */ })
      .then(schedule);
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) { refresh(); }
  });
  schedule();
})();
