// Live progress of the reports list: polls a small JSON endpoint while any report is
// queued or running. Text only (textContent): nothing from the server becomes HTML.
(function () {
  "use strict";
  var table = document.getElementById("reports");
  if (!table) return;
  var url = table.dataset.progressUrl;
  var downloadTemplate = table.dataset.downloadUrl;

  function active() {
    return Array.prototype.filter.call(table.querySelectorAll("tbody tr"), function (tr) {
      return tr.dataset.status === "queued" || tr.dataset.status === "running";
    });
  }

  function update(doc) {
    var tr = table.querySelector('tr[data-id="' + Number(doc.id) + '"]');
    if (!tr) return;
    tr.dataset.status = doc.status;
    var status = tr.querySelector(".status");
    status.textContent = doc.status + (doc.error ? " " + doc.error : "");
    tr.querySelector("progress").value = doc.progress;
    tr.querySelector(".rows").textContent = String(doc.rows);
    var cell = tr.querySelector(".download");
    if (doc.downloadable && !cell.querySelector("a")) {
      var link = document.createElement("a");
      link.href = downloadTemplate.replace("/0/", "/" + Number(doc.id) + "/");
      link.textContent = "Download";
      cell.appendChild(link);
    }
  }

  function poll() {
    var rows = active();
    if (!rows.length) return;
    var ids = rows.map(function (tr) { return tr.dataset.id; }).join(",");
    fetch(url + "?ids=" + encodeURIComponent(ids), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : { reports: [] }; })
      .then(function (body) { body.reports.forEach(update); })
      .catch(function () {})
      .then(function () { window.setTimeout(poll, 2000); });
  }
  window.setTimeout(poll, 1000);
})();
