// Live updates without a full reload: every few seconds the page asks its own URL with
// ?live=1 and swaps in the regions (<... data-live-region="NAME">) the server re-rendered;
// every few rounds it also asks ?live=charts for fresh figures. The server escapes every
// name in those regions exactly as in the page itself. Pause/resume is kept in localStorage,
// so it holds across pages and reloads; updates also stop while the tab is hidden. A round
// that gets no answer is given up after a deadline, so one lost request (a server restarted,
// a proxy that dropped it) cannot stop the page's updates for good.
(function () {
  "use strict";
  var KEY = "lagwatch.live.paused";
  var CHART_EVERY = 3;
  var body = document.body;
  var every = parseInt(body.dataset.liveEvery || "0", 10) * 1000;
  var regions = document.querySelectorAll("[data-live-region]");
  var button = document.getElementById("live-toggle");
  var state = document.getElementById("live-state");
  if (!every || !regions.length || !button) return;

  var round = 0;
  var busy = false;
  // Two refresh periods, and never less than 30 s: a loaded server is slow, not gone.
  var deadline = Math.max(2 * every, 30000);

  function paused() {
    try { return localStorage.getItem(KEY) === "1"; } catch (e) { return false; }
  }

  function show(text) { if (state) state.textContent = text; }

  function render() {
    var p = paused();
    button.textContent = p ? "Resume live updates" : "Pause live updates";
    button.setAttribute("aria-pressed", p ? "true" : "false");
    show(p ? "paused" : "live");
  }

  function urlWith(mode) {
    var url = new URL(window.location.href);
    url.searchParams.set("live", mode);
    return url.toString();
  }

  function fetchJson(mode) {
    var abort = window.AbortController ? new AbortController() : null;
    var timer = abort ? window.setTimeout(function () { abort.abort(); }, deadline) : null;
    return fetch(urlWith(mode), {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
      redirect: "manual",
      signal: abort ? abort.signal : undefined,
    }).then(function (r) {
      if (r.type === "opaqueredirect" || r.status === 302) throw new Error("session expired: reload to log in");
      if (!r.ok) throw new Error("update failed (HTTP " + r.status + ")");
      return r.json();
    }).then(function (doc) {
      if (timer) window.clearTimeout(timer);
      return doc;
    }, function (err) {
      if (timer) window.clearTimeout(timer);
      if (err && err.name === "AbortError") throw new Error("update timed out: retrying");
      throw err;
    });
  }

  function tick() {
    if (busy || paused() || document.hidden) return;
    busy = true;
    round += 1;
    var withCharts = body.dataset.liveCharts === "1" && round % CHART_EVERY === 0 && window.lagwatchCharts;
    fetchJson("1")
      .then(function (doc) {
        // Paused while this round was in flight: drop it, so "paused" stays true on screen.
        if (paused()) { render(); return null; }
        Object.keys(doc.regions || {}).forEach(function (name) {
          var el = document.querySelector('[data-live-region="' + name + '"]');
          if (el) el.innerHTML = doc.regions[name];
        });
        show("live · updated " + new Date().toLocaleTimeString());
        return withCharts ? fetchJson("charts") : null;
      })
      .then(function (doc) {
        if (doc) window.lagwatchCharts.update(doc.figures);
      })
      .catch(function (err) { show(String(err.message || err)); })
      .then(function () { busy = false; });
  }

  button.addEventListener("click", function () {
    try { localStorage.setItem(KEY, paused() ? "0" : "1"); } catch (e) { /* private mode */ }
    render();
    if (!paused()) tick();
  });
  window.addEventListener("storage", function (e) { if (e.key === KEY) render(); });
  render();
  window.setInterval(tick, every);
})();
