// The Run page's live part: follow the API's Server-Sent Event stream of this Run.
//
// The page asks for a stream token (POST, with the page's CSRF token) because an
// EventSource cannot send credentials of its own; each event is appended to the list as
// text (never as HTML), and the live part (status, stage timeline, progress, problems,
// actions) and the items table are re-rendered by the server at most every 300 ms while
// events arrive, and once more when the Run ends. A stream the server ends after its
// time is resumed by the browser with Last-Event-ID; one refused (an expired token) is
// resumed with a new token, after the last event seen.
(function () {
  "use strict";
  var script = document.currentScript;
  var lastSeq = parseInt(script.dataset.lastSeq, 10) || 0;
  var events = document.getElementById("events");
  var streamState = document.getElementById("stream-state");
  var source = null;
  var refreshTimer = null;
  var ended = false;
  var failures = 0;

  function isActive() {
    var live = document.getElementById("live");
    return live !== null && live.dataset.active === "true";
  }

  function swap(url, holderId) {
    return fetch(url, { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error(holderId + ": " + response.status); }
        return response.text();
      })
      .then(function (html) { document.getElementById(holderId).innerHTML = html; });
  }

  function refresh() {
    refreshTimer = null;
    Promise.all([swap(script.dataset.live, "live-holder"), swap(script.dataset.items, "items-holder")])
      .catch(function () { streamState.textContent = "could not refresh; reload the page"; });
  }

  function scheduleRefresh() {
    if (refreshTimer === null) { refreshTimer = setTimeout(refresh, 300); }
  }

  function append(data) {
    if (typeof data.seq !== "number" || data.seq <= lastSeq) { return; }
    lastSeq = data.seq;
    var item = document.createElement("li");
    item.dataset.seq = String(data.seq);
    var seq = document.createElement("span");
    seq.className = "seq";
    seq.textContent = String(data.seq);
    item.appendChild(seq);
    if (typeof data.created_at === "string") {
      var at = document.createElement("time");
      at.className = "muted";
      at.dateTime = data.created_at;
      at.textContent = new Date(data.created_at).toISOString().substring(11, 19);
      item.appendChild(at);
    }
    var text = " " + data.stage + " · " + data.type + (data.message ? ": " + data.message : "");
    item.appendChild(document.createTextNode(text));
    events.appendChild(item);
  }

  function retryLater() {
    if (ended) { return; }
    failures += 1;
    streamState.textContent = "reconnecting";
    setTimeout(connect, Math.min(30000, 1000 * failures));
  }

  function connect() {
    fetch(script.dataset.stream, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRF-Token": script.dataset.csrf },
    })
      .then(function (response) {
        if (!response.ok) { throw new Error("stream token: " + response.status); }
        return response.json();
      })
      .then(function (body) {
        source = new EventSource(body.url + "&after_seq=" + lastSeq);
        source.onopen = function () {
          failures = 0;
          streamState.textContent = "following";
        };
        source.onmessage = function (message) {
          append(JSON.parse(message.data));
          scheduleRefresh();
        };
        source.addEventListener("end", function () {
          ended = true;
          source.close();
          streamState.textContent = "ended";
          refresh();
        });
        source.addEventListener("error", function () {
          if (source.readyState === EventSource.CLOSED) { retryLater(); }
        });
      })
      .catch(retryLater);
  }

  if (isActive()) { connect(); }
})();
