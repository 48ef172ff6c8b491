// Keeps the diff's two panes in step. A turn's row gets the height of the
// taller side in both panes, so corresponding turns sit side by side; then
// scrolling one pane scrolls the other to the same place. The hash picks
// the view (#all, #changed) or a turn to scroll to (#turn-3, #turn-3-b).
(function () {
  "use strict";
  var panes = document.querySelectorAll(".pane");
  if (panes.length !== 2) {
    return;
  }
  var a = panes[0];
  var b = panes[1];
  var rowsA = a.querySelectorAll(".row");
  var rowsB = b.querySelectorAll(".row");
  var VIEWS = ["all", "changed"];

  function align() {
    var i;
    var heights = [];
    for (i = 0; i < rowsA.length; i++) {
      rowsA[i].style.minHeight = "";
      rowsB[i].style.minHeight = "";
    }
    // all reads, then all writes: one layout pass
    for (i = 0; i < rowsA.length; i++) {
      heights.push(Math.max(rowsA[i].offsetHeight, rowsB[i].offsetHeight));
    }
    for (i = 0; i < rowsA.length; i++) {
      rowsA[i].style.minHeight = heights[i] + "px";
      rowsB[i].style.minHeight = heights[i] + "px";
    }
    document.body.setAttribute("data-aligned", "true");
  }

  // The row at the top of a pane, recorded on the pane as data-top-row.
  function markTop(pane, rows) {
    var head = pane.querySelector(".pane-head");
    var top = pane.scrollTop + (head ? head.offsetHeight : 0) + 1; // 1px: fractional scrolling
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].offsetParent !== null && rows[i].offsetTop + rows[i].offsetHeight > top) {
        pane.setAttribute("data-top-row", rows[i].getAttribute("data-row"));
        return;
      }
    }
  }

  // Scroll handler: the other pane follows. Its own scroll event then finds
  // the two equal and stops, so the panes never chase each other.
  function follow(source, target) {
    return function () {
      if (Math.abs(target.scrollTop - source.scrollTop) >= 1) {
        target.scrollTop = source.scrollTop;
      }
      if (Math.abs(target.scrollLeft - source.scrollLeft) >= 1) {
        target.scrollLeft = source.scrollLeft;
      }
      markTop(a, rowsA);
      markTop(b, rowsB);
    };
  }

  function show() {
    var name = decodeURIComponent(location.hash.slice(1));
    var target = VIEWS.indexOf(name) >= 0 ? null : document.getElementById(name);
    var row = target && target.closest(".row");
    var view = name === "changed" ? "changed" : "all";
    if (row && row.getAttribute("data-status") === "same") {
      view = "all";
    }
    document.body.setAttribute("data-view", view);
    var links = document.querySelectorAll(".view");
    for (var i = 0; i < links.length; i++) {
      var pressed = links[i].getAttribute("data-view") === view;
      links[i].setAttribute("aria-pressed", pressed ? "true" : "false");
    }
    align();
    if (row) {
      var pane = row.parentNode;
      var head = pane.querySelector(".pane-head");
      // only this pane moves here; the other follows through its scroll
      // handler, told now rather than at the next frame
      pane.scrollTop = row.offsetTop - (head ? head.offsetHeight : 0);
      pane.dispatchEvent(new Event("scroll"));
    }
    markTop(a, rowsA);
    markTop(b, rowsB);
  }

  a.addEventListener("scroll", follow(a, b));
  b.addEventListener("scroll", follow(b, a));
  window.addEventListener("hashchange", show);
  window.addEventListener("resize", align);
  window.addEventListener("load", show);
  show();
})();
