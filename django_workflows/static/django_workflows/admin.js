/* django-workflows admin: ask before destructive commands; keep the instance page live.
 *
 * The instance page polls its own JSON view (under the admin, guarded by the view
 * permission) with the revision it shows. While the revision stays, it updates the
 * operations' statuses, progress and log lines in place (a worker reports those on its
 * attempt's row). Once the revision moved on, the view sends every live part of the page
 * drawn anew (status, step, times, diagram, commands, work, state, events), and the page
 * swaps them all at once: the whole page is current, or none of it is. While an attempt
 * runs, the journal of its durable code grows without a new revision: the view sends it,
 * and the page draws it under the operation's row. Only an unsaved
 * edit (of the state, or a reason typed for a command) holds the swap back; then a notice
 * says the page is behind.
 */
(function () {
  "use strict";

  function text(node, value) { if (node) { node.textContent = value; } }

  function setBadge(node, status, label) {
    if (!node) { return; }
    node.className = node.className.replace(/\bdwf-status-[\w-]+/g, "").trim() + " dwf-status-" + status;
    node.textContent = label || status;
  }

  function updateOperation(row, op) {
    // The server's words: "running" for an attempt after the first, with its number beside.
    var badge = row.querySelector(".dwf-op-status");
    setBadge(badge, op.status_class || op.status, op.status_label);
    if (badge) { badge.setAttribute("data-status", op.status); }
    text(row.querySelector(".dwf-op-attempt"), op.attempt + (op.max_attempts ? " of " + op.max_attempts : ""));
    // In flight: shown by its feedback phase, a bar only while that says so (with a value
    // once it has one). Finished: its outcome, and no bar.
    var phase = (op.feedback || {}).phase || "none";
    var outcome = op.outcome || "";
    row.setAttribute("data-phase", phase);
    row.setAttribute("data-outcome", outcome);
    var bar = row.querySelector("progress.dwf-progress");
    if (bar) {
      bar.hidden = Boolean(outcome) || (phase !== "determinate" && phase !== "indeterminate");
      if (phase === "determinate") { bar.value = op.feedback.percent; }
      else { bar.removeAttribute("value"); }
    }
    var activity = row.querySelector(".dwf-activity");
    if (activity) { activity.hidden = Boolean(outcome) || phase !== "activity"; }
    var shown = row.querySelector(".dwf-outcome");
    if (shown) {
      shown.hidden = !outcome;
      shown.className = "dwf-outcome dwf-outcome-" + outcome.replace(/ /g, "-");
      shown.textContent = outcome;
    }
    text(row.querySelector(".dwf-progress-text"), op.progress_text || "");
    text(row.querySelector(".dwf-logs"), (op.logs || []).join("\n"));
    text(row.querySelector(".dwf-op-error"), op.error || "");
  }

  function updateInPlace(root, data) {
    (data.operations || []).forEach(function (op) {
      var row = root.querySelector('tr.dwf-operation[data-operation="' + CSS.escape(op.id) + '"]');
      if (row) { updateOperation(row, op); }
    });
    (data.parallel || []).forEach(function (branch) {
      var row = root.querySelector('tr.dwf-branch[data-branch="' + CSS.escape(branch.step + ":" + branch.id) + '"]');
      if (row) { setBadge(row.querySelector(".dwf-branch-status"), branch.status); }
    });
  }

  // What a swap would throw away: a state edit not saved (or posted back with errors), or
  // a reason typed beside a command.
  function unsavedEdit(root) {
    var form = root.querySelector("#dwf-state-form");
    if (form) {
      if (form.hasAttribute("data-dwf-unsaved")) { return "state"; }
      var area = form.querySelector("textarea");
      if (area && area.value !== area.defaultValue) { return "state"; }
    }
    var typed = Array.prototype.some.call(root.querySelectorAll("#dwf-commands input[type=text]"),
      function (input) { return input.value !== input.defaultValue; });
    return typed ? "reason" : null;
  }

  function swapParts(root, parts) {
    // The sections folded open stay open; everything else is as the server drew it.
    var open = Array.prototype.map.call(root.querySelectorAll("details[open][id]"),
      function (node) { return node.id; });
    root.querySelectorAll("[data-dwf-part]").forEach(function (holder) {
      var html = parts[holder.getAttribute("data-dwf-part")];
      if (html !== undefined) { holder.innerHTML = html; }
    });
    open.forEach(function (id) {
      var node = document.getElementById(id);
      if (node) { node.open = true; }
    });
  }

  function swapJournals(root, journals) {
    // While an attempt runs, its code records entries between two revisions: its journal
    // is drawn anew under its row, with what was unfolded kept unfolded.
    Object.keys(journals).forEach(function (operation) {
      var row = root.querySelector('tr.dwf-journal-row[data-journal-of="' + CSS.escape(operation) + '"]');
      var holder = row ? row.querySelector(".dwf-journal-holder") : null;
      if (!holder) { return; }
      var open = Array.prototype.map.call(holder.querySelectorAll("details[id]"),
        function (node) { return [node.id, node.open]; });
      holder.innerHTML = journals[operation];
      open.forEach(function (pair) {
        var node = document.getElementById(pair[0]);
        if (node) { node.open = pair[1]; }
      });
      row.hidden = false;
    });
  }

  function startPolling(root) {
    var url = root.getAttribute("data-live-url");
    var interval = 1000;
    var page = new URLSearchParams(window.location.search).get("events_page");
    function poll() {
      if (document.hidden) { window.setTimeout(poll, interval); return; }
      var query = "?revision=" + encodeURIComponent(root.getAttribute("data-revision")) +
        (page ? "&events_page=" + encodeURIComponent(page) : "");
      fetch(url + query, {credentials: "same-origin", headers: {"Accept": "application/json"}})
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (data) {
          if (!data) { window.setTimeout(poll, interval * 5); return; }
          var notice = document.getElementById("dwf-changed");
          if (data.parts) {
            var unsaved = unsavedEdit(root);
            if (unsaved) {  // behind, and says so; the swap waits until nothing would be lost
              if (notice) {
                notice.hidden = false;
                var words = notice.querySelector(".dwf-changed-unsaved");
                if (words) { words.hidden = unsaved !== "state"; }
              }
              window.setTimeout(poll, interval);
              return;
            }
            swapParts(root, data.parts);
            root.setAttribute("data-revision", String(data.revision));
            root.setAttribute("data-status", data.status);
            root.setAttribute("data-finished", data.finished ? "true" : "false");
          }
          if (notice) { notice.hidden = true; }
          if (data.timeline && !data.parts) {  // work runs: its bars grow up to now
            var timeline = root.querySelector('[data-dwf-part="timeline"]');
            if (timeline) { timeline.innerHTML = data.timeline; }
          }
          if (data.journals && !data.parts) { swapJournals(root, data.journals); }
          updateInPlace(root, data);
          if (data.finished) { return; }
          window.setTimeout(poll, interval);
        })
        .catch(function () { window.setTimeout(poll, interval * 5); });
    }
    window.setTimeout(poll, interval);
  }

  document.addEventListener("click", function (event) {
    // Delegated: the live page redraws its buttons.
    var button = event.target.closest ? event.target.closest("[data-confirm]") : null;
    if (button && !window.confirm(button.getAttribute("data-confirm"))) { event.preventDefault(); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    var root = document.querySelector(".dwf-instance[data-live-url]");
    if (root && root.getAttribute("data-finished") !== "true") { startPolling(root); }
  });
})();
