// The prompt debugger's page: search the fixtures, keep prompt edits as drafts
// across pages, replay through the JSON API (reading the job's events as they
// come), show the result, and save only when asked.
(function () {
  "use strict";
  var DRAFT = "harness-ui-draft:";
  var body = document.body;
  var statusLine = document.getElementById("status");
  var progress = document.getElementById("progress");
  var editors = Array.prototype.slice.call(document.querySelectorAll("textarea.prompt"));
  var basedOn = {};
  var busy = false;

  function say(text, kind) {
    statusLine.textContent = text;
    statusLine.setAttribute("data-kind", kind || "");
  }

  // -- the fixture list -------------------------------------------------------
  var search = document.getElementById("search");
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr.fixture"));
  function filter() {
    var terms = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (row) {
      var text = row.getAttribute("data-search");
      var match = terms.every(function (t) { return text.indexOf(t) >= 0; });
      row.hidden = !match;
      if (match) { shown++; }
    });
    document.getElementById("no-match").hidden = shown > 0;
  }
  search.addEventListener("input", filter);
  document.getElementById("pick-all").addEventListener("change", function (event) {
    rows.forEach(function (row) {
      var box = row.querySelector(".pick");
      if (!row.hidden && !box.disabled) { box.checked = event.target.checked; }
    });
  });
  function picked() {
    return rows.filter(function (row) {
      var box = row.querySelector(".pick");
      return !row.hidden && box.checked && !box.disabled;
    }).map(function (row) { return Number(row.getAttribute("data-id")); });
  }

  // -- the editor: drafts survive moving between fixtures ---------------------
  function mark(editor) {
    var name = editor.getAttribute("data-name");
    var dirty = editor.value !== editor.defaultValue;
    var label = document.querySelector('label[for="' + editor.id + '"] .dirty');
    if (label) { label.hidden = !dirty; }
    editor.setAttribute("data-dirty", dirty ? "true" : "false");
    try {
      if (dirty) {
        sessionStorage.setItem(DRAFT + name, JSON.stringify({ text: editor.value, based_on: basedOn[name] }));
      } else {
        sessionStorage.removeItem(DRAFT + name);
      }
    } catch (e) { /* storage refused: the edit just won't follow to the next page */ }
  }
  editors.forEach(function (editor) {
    var name = editor.getAttribute("data-name");
    basedOn[name] = editor.getAttribute("data-digest");
    var draft = null;
    try { draft = JSON.parse(sessionStorage.getItem(DRAFT + name) || "null"); } catch (e) { draft = null; }
    if (draft && typeof draft.text === "string") {
      editor.value = draft.text;
      basedOn[name] = draft.based_on || basedOn[name];
    }
    mark(editor);
    editor.addEventListener("input", function () { mark(editor); });
  });
  function prompts() {
    var found = {};
    editors.forEach(function (editor) { found[editor.getAttribute("data-name")] = editor.value; });
    return found;
  }

  function setBusy(value) {
    busy = value;
    Array.prototype.forEach.call(document.querySelectorAll("button"), function (b) { b.disabled = value; });
  }

  function api(method, url, data) {
    var init = { method: method, headers: {} };
    if (data !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(data);
    }
    return fetch(url, init).then(function (response) {
      return response.json().then(function (json) {
        if (!response.ok) { throw new Error(json.error || response.statusText); }
        return json;
      });
    });
  }

  // -- replays -----------------------------------------------------------------
  function line(text) {
    var li = document.createElement("li");
    li.textContent = text;
    progress.appendChild(li);
  }

  function follow(job, after, onFinished) {
    return api("GET", "/api/replays/" + job + "?after=" + after + "&wait=20").then(function (snap) {
      snap.events.forEach(function (event) {
        if (event.kind === "started") {
          line("replaying " + event.name + " (" + event.at + " of " + snap.total + ")");
        } else if (event.kind === "finished") {
          line(event.name + ": " + event.status + (event.changed ? ", turns " + event.changed_turns.join(", ") + " changed" : ""));
          onFinished(event);
        } else if (event.kind === "error") {
          line("error: " + event.error);
        }
      });
      if (!snap.done) { return follow(job, snap.next, onFinished); }
      return snap;
    });
  }

  function start(ids, onFinished) {
    if (busy) { return; }
    setBusy(true);
    progress.textContent = "";
    say("replaying " + ids.length + " fixture" + (ids.length === 1 ? "" : "s") + "…");
    api("POST", "/api/replays", { fixtures: ids, prompts: prompts() })
      .then(function (answer) {
        body.setAttribute("data-job", answer.job);
        return follow(answer.job, 0, function (event) { onFinished(answer.job, event); });
      })
      .then(function () { say("replay done", "ok"); body.setAttribute("data-replay", "done"); })
      .catch(function (error) { say("replay failed: " + error.message, "error"); })
      .then(function () { setBusy(false); });
  }

  function invariantWords(event) {
    if (event.invariants_now === "none") { return "no invariants"; }
    if (event.invariants_now === "error") { return "not checked (" + (event.error || "no conversation") + ")"; }
    return "invariants " + event.invariants_before + " → " + event.invariants_now;
  }

  var replayOne = document.getElementById("replay");
  if (replayOne) {
    replayOne.addEventListener("click", function () {
      var id = Number(body.getAttribute("data-fixture"));
      body.removeAttribute("data-replay");
      start([id], function (job, event) {
        var verdict = document.getElementById("verdict");
        var changed = event.changed_turns.length;
        verdict.textContent = event.status.toUpperCase() + ": " +
          (changed ? changed + " turn" + (changed === 1 ? "" : "s") + " changed (" + event.changed_turns.join(", ") + ")" : "no turn changed") +
          "; " + invariantWords(event) + (event.error ? "; " + event.error : "");
        verdict.setAttribute("data-changed", changed ? "true" : "false");
        var list = document.getElementById("violations");
        list.textContent = "";
        event.violations.concat(event.divergences).forEach(function (text) {
          var li = document.createElement("li");
          li.textContent = text;
          list.appendChild(li);
        });
        document.getElementById("result").hidden = false;
        var frame = document.getElementById("chat");
        frame.title = "The recording beside the replay";
        if (event.invariants_now !== "error") { // a conversation came out: show it beside the recording
          frame.src = "/replays/" + job + "/" + event.fixture + "/diff";
        }
      });
    });
  }

  document.getElementById("replay-all").addEventListener("click", function () {
    var ids = picked();
    if (!ids.length) { say("no fixture selected", "error"); return; }
    var table = document.querySelector("#all-results tbody");
    table.textContent = "";
    document.getElementById("all").hidden = false;
    var counts = { changed: 0, failing: 0, done: 0 };
    body.removeAttribute("data-replay");
    start(ids, function (job, event) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-fixture", event.fixture);
      tr.setAttribute("data-status", event.status);
      tr.setAttribute("data-changed", event.changed ? "true" : "false");
      tr.setAttribute("data-newly-failing", event.newly_failing ? "true" : "false");
      var cells = [
        event.scenario || event.name,
        event.status,
        event.changed ? event.changed_turns.join(", ") : "none",
        invariantWords(event) + (event.violations.length ? ": " + event.violations.join("; ") : ""),
      ];
      cells.forEach(function (text) {
        var td = document.createElement("td");
        td.textContent = text;
        tr.appendChild(td);
      });
      var open = document.createElement("td");
      var link = document.createElement("a");
      link.href = "/replays/" + job + "/" + event.fixture + "/diff";
      link.target = "_blank";
      link.textContent = "side by side";
      open.appendChild(link);
      tr.appendChild(open);
      table.appendChild(tr);
      counts.done++;
      if (event.changed) { counts.changed++; }
      if (event.newly_failing) { counts.failing++; }
      document.getElementById("all-summary").textContent =
        counts.done + " replayed: " + counts.changed + " changed, " + counts.failing + " now fail an invariant";
    });
  });

  // -- saving: the only thing that writes -------------------------------------
  function saveAll() {
    var dirty = editors.filter(function (e) { return e.value !== e.defaultValue; });
    if (!dirty.length) { say("nothing to save: the prompts are as on disk"); return; }
    setBusy(true);
    var saved = [];
    dirty.reduce(function (chain, editor) {
      var name = editor.getAttribute("data-name");
      return chain.then(function () {
        return api("POST", "/api/prompts/" + encodeURIComponent(name), { text: editor.value, based_on: basedOn[name] })
          .then(function (answer) {
            editor.defaultValue = editor.value;
            basedOn[name] = answer.digest;
            editor.setAttribute("data-digest", answer.digest);
            mark(editor);
            saved.push(answer.path + (answer.backup ? " (previous version in " + answer.backup + ")" : ""));
          });
      });
    }, Promise.resolve())
      .then(function () { say("saved " + saved.join("; "), "ok"); body.setAttribute("data-saved", "true"); })
      .catch(function (error) { say("not saved: " + error.message, "error"); })
      .then(function () { setBusy(false); });
  }
  var saveButton = document.getElementById("save");
  if (saveButton) { saveButton.addEventListener("click", saveAll); }
  var revert = document.getElementById("revert");
  if (revert) {
    revert.addEventListener("click", function () {
      editors.forEach(function (editor) {
        editor.value = editor.defaultValue;
        basedOn[editor.getAttribute("data-name")] = editor.getAttribute("data-digest");
        mark(editor);
      });
      say("back to the prompts on disk");
    });
  }
})();
