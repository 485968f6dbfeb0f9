/* django-workflows admin: ask before destructive commands; keep the operations panel live.
 *
 * The instance page polls its own JSON view (under the admin, guarded by the view
 * permission) and updates statuses, attempts, progress bars and log lines in place.
 * When the instance's revision moves on, a notice offers to reload the page.
 */
(function () {
  "use strict";

  function text(node, value) { if (node) { node.textContent = value; } }

  function setBadge(node, status, label) {
    if (!node) { return; }
    node.className = node.className.replace(/\bdwf-status-[\w-]+/g, "").trim() + " dwf-status-" + status;
    node.textContent = label || status;
  }

  function number(value) {
    return Math.round(value * 100) / 100;
  }

  function updateOperation(row, op) {
    setBadge(row.querySelector(".dwf-op-status"), op.status);
    text(row.querySelector(".dwf-op-attempt"), op.attempt + (op.max_attempts ? " of " + op.max_attempts : ""));
    // Shown by its feedback phase: a bar only while it runs, with a value once it has one.
    var phase = (op.feedback || {}).phase || "none";
    row.setAttribute("data-phase", phase);
    var bar = row.querySelector("progress.dwf-progress");
    if (bar) {
      bar.hidden = phase !== "determinate" && phase !== "indeterminate";
      if (phase === "determinate") { bar.value = op.feedback.percent; }
      else { bar.removeAttribute("value"); }
    }
    var activity = row.querySelector(".dwf-activity");
    if (activity) { activity.hidden = phase !== "activity"; }
    var progress = op.progress;
    var words = "";
    if (progress) {
      words = String(number(progress.current));
      if (progress.total) { words += " / " + number(progress.total); }
      if (progress.message) { words += " · " + progress.message; }
    }
    text(row.querySelector(".dwf-progress-text"), words);
    text(row.querySelector(".dwf-logs"), (op.logs || []).join("\n"));
    text(row.querySelector(".dwf-op-error"), op.error || "");
  }

  function startPolling(root) {
    var url = root.getAttribute("data-live-url");
    var revision = root.getAttribute("data-revision");
    var interval = 1000;
    function poll() {
      if (document.hidden) { window.setTimeout(poll, interval); return; }
      fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (data) {
          if (!data) { window.setTimeout(poll, interval * 5); return; }
          setBadge(document.getElementById("dwf-status"), data.status, data.status_label);
          (data.operations || []).forEach(function (op) {
            var row = root.querySelector('tr.dwf-operation[data-operation="' + CSS.escape(op.id) + '"]');
            if (row) { updateOperation(row, op); }
          });
          (data.parallel || []).forEach(function (branch) {
            var row = root.querySelector('tr.dwf-branch[data-branch="' + CSS.escape(branch.step + ":" + branch.id) + '"]');
            if (row) { setBadge(row.querySelector(".dwf-branch-status"), branch.status); }
          });
          if (String(data.revision) !== revision) {
            var notice = document.getElementById("dwf-changed");
            if (notice) { notice.hidden = false; }
          }
          if (data.finished) { return; }
          window.setTimeout(poll, interval);
        })
        .catch(function () { window.setTimeout(poll, interval * 5); });
    }
    window.setTimeout(poll, interval);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-confirm]").forEach(function (button) {
      button.addEventListener("click", function (event) {
        if (!window.confirm(button.getAttribute("data-confirm"))) { event.preventDefault(); }
      });
    });
    var root = document.querySelector(".dwf-instance[data-live-url]");
    if (root && root.getAttribute("data-finished") !== "true") { startPolling(root); }
  });
})();
