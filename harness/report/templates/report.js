// Filters the report by status. The filter lives in the page's hash
// (#all, #passed, #failed, #error, #skipped) so a link can open the report filtered;
// any other hash is a scenario or turn anchor and shows it.
(function () {
  "use strict";
  var FILTERS = ["all", "passed", "failed", "error", "skipped"];
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
      target.scrollIntoView();
    }
  }

  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
