// agentos console: live rows on the runs list (server-sent events). Every
// page works without it.
(function () {
  "use strict";
  var table = document.getElementById("runs");
  if (!table || table.dataset.paged || !window.EventSource) return;
  var body = table.tBodies[0];
  var es = new EventSource(table.dataset.live);
  es.addEventListener("run", function (ev) {
    var r = JSON.parse(ev.data);
    var row = document.getElementById("run-" + r.id);
    var fresh = !row;
    if (fresh) {
      row = document.createElement("tr");
      row.id = "run-" + r.id;
      var empty = body.querySelector("tr.empty");
      if (empty) empty.remove();
      body.insertBefore(row, body.firstChild);
    }
    row.textContent = "";
    var link = document.createElement("a");
    link.href = "/runs/" + encodeURIComponent(r.id);
    link.textContent = r.id;
    var status = document.createElement("span");
    status.className = "status " + r.status;
    status.textContent = r.status;
    [link, r.kind, r.tool, status, r.started, r.duration, String(r.calls), r.node].forEach(function (v) {
      var td = document.createElement("td");
      if (typeof v === "string") td.textContent = v; else td.appendChild(v);
      row.appendChild(td);
    });
    row.className = "new";
  });
})();
