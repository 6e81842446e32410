/* srezero report: sortable tables and the task filter. Vanilla JS, no network. */
(function () {
  "use strict";

  function cellValue(row, idx) {
    var cell = row.cells[idx];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.trim() : v;
  }

  function compare(a, b) {
    var x = parseFloat(a), y = parseFloat(b);
    var xn = a !== "" && !isNaN(x), yn = b !== "" && !isNaN(y);
    if (xn && yn) { return x - y; }
    if (xn !== yn) { return xn ? -1 : 1; }  // numbers before blanks and text
    return a < b ? -1 : (a > b ? 1 : 0);
  }

  function sortTable(table, idx, dir) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var c = compare(cellValue(r1, idx), cellValue(r2, idx));
      return dir === "ascending" ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });  // stable: Array.sort is stable
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      if (i === idx) { th.setAttribute("aria-sort", dir); } else { th.removeAttribute("aria-sort"); }
    });
    table.setAttribute("data-sorted-by", table.tHead.rows[0].cells[idx].getAttribute("data-key") || String(idx));
    table.setAttribute("data-sort-dir", dir);
  }

  function initSortable(table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, idx) {
      th.setAttribute("tabindex", "0");
      th.addEventListener("click", function () {
        var dir = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
        sortTable(table, idx, dir);
      });
    });
  }

  function sortFromHash() {
    // #sort=<table id>.<column key>[.asc] lets a link (or a test) open a table sorted.
    var m = /sort=([\w-]+)\.([\w-]+)(\.asc)?/.exec(window.location.hash);
    if (!m) { return; }
    var table = document.getElementById(m[1]);
    if (!table) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, idx) {
      if (th.getAttribute("data-key") === m[2]) { sortTable(table, idx, m[3] ? "ascending" : "descending"); }
    });
  }

  function initFilter(input) {
    var table = document.getElementById(input.getAttribute("data-table"));
    if (!table) { return; }
    input.addEventListener("input", function () {
      var q = input.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        r.classList.toggle("hidden", q !== "" && r.textContent.toLowerCase().indexOf(q) < 0);
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), initSortable);
    Array.prototype.forEach.call(document.querySelectorAll("input[data-table]"), initFilter);
    sortFromHash();
    document.body.setAttribute("data-ready", "1");
  });
})();
