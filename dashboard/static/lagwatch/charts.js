// Draws the Plotly figures of a page: each <div data-figure="ID"> takes its figure from the
// JSON block with that id (written by Django's json_script, so names arrive escaped).
// window.lagwatchCharts.update(figures) redraws them from a live update.
(function () {
  "use strict";
  var config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  function draw(el, fig) {
    if (!fig || !window.Plotly) return;
    window.Plotly.react(el, fig.data || [], fig.layout || {}, config);
  }

  function drawAll() {
    document.querySelectorAll("[data-figure]").forEach(function (el) {
      var source = document.getElementById(el.dataset.figure);
      if (source) draw(el, JSON.parse(source.textContent));
    });
  }

  window.lagwatchCharts = {
    update: function (figures) {
      Object.keys(figures || {}).forEach(function (key) {
        var el = document.getElementById("fig-" + key);
        if (el && figures[key]) draw(el, figures[key]);
      });
    },
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawAll);
  else drawAll();
})();
