// Filters the report by status. The filter lives in the page's hash
// (#all, #passed, #failed, #error, #skipped, #inconclusive) so a link can open the report filtered;
// any other hash is a scenario or turn anchor and shows it.
// The scenarios that did not fail sit in a folded <details>: it opens when they are
// asked for (their filter, or an anchor inside), and disappears when none is shown.
(function () {
  "use strict";
  var FILTERS = ["all", "passed", "failed", "error", "skipped", "inconclusive"];
  var FOLDED = ["passed", "skipped", "inconclusive"];
  var current = "all";

  function apply() {
    var items = document.querySelectorAll(".scenario, .nav-item");
    for (var i = 0; i < items.length; i++) {
      var show = current === "all" || items[i].getAttribute("data-status") === current;
      if (show) {
        items[i].removeAttribute("hidden");
      } else {
        items[i].setAttribute("hidden", "");
      }
    }
    var folded = document.querySelector("details.passing");
    if (folded) {
      var shown = folded.querySelectorAll(".scenario:not([hidden])").length;
      if (shown) {
        folded.removeAttribute("hidden");
      } else {
        folded.setAttribute("hidden", "");
      }
      if (FOLDED.indexOf(current) >= 0) {
        folded.open = true;
      }
    }
    var links = document.querySelectorAll("[data-filter]");
    for (var j = 0; j < links.length; j++) {
      var pressed = links[j].getAttribute("data-filter") === current;
      links[j].setAttribute("aria-pressed", pressed ? "true" : "false");
    }
    document.body.setAttribute("data-filter", current);
  }

  function fromHash() {
    var name = decodeURIComponent(location.hash.slice(1));
    var target = null;
    if (FILTERS.indexOf(name) >= 0) {
      current = name;
    } else if (name) {
      target = document.getElementById(name);
      if (target && target.closest(".scenario[hidden]")) {
        current = "all";
      }
    }
    apply();
    if (target) {
      var fold = target.closest("details");
      if (fold) {
        fold.open = true;
      }
      target.scrollIntoView();
    }
  }

  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
