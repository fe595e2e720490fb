(function () {
  function sortTable(t, col, desc) {
    var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col], y = b.cells[col], c;
      if (x.dataset.v !== undefined && y.dataset.v !== undefined) c = parseFloat(x.dataset.v) - parseFloat(y.dataset.v);
      else c = x.textContent.localeCompare(y.textContent);
      return desc ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    t.dataset.sorted = col + (desc ? ':desc' : ':asc');
  }
  document.querySelectorAll('table.sortable').forEach(function (t) {
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th, i) {
      th.title = 'click to sort';
      th.addEventListener('click', function () { sortTable(t, i, t.dataset.sorted === i + ':asc'); });
    });
  });
  // #sort=TABLE:COL[:desc] sorts on load (a link can point at a sorted table; the browser test uses it).
  var m = /sort=([\w-]+):(\d+)(:desc)?/.exec(location.hash);
  if (m && document.getElementById(m[1])) sortTable(document.getElementById(m[1]), +m[2], !!m[3]);
  // Where each chart landed on the page, for the browser test's screenshot check.
  document.querySelectorAll('figure.chart svg').forEach(function (s) {
    var r = s.getBoundingClientRect();
    s.dataset.rect = [r.left + scrollX, r.top + scrollY, r.width, r.height].map(Math.round).join(',');
  });
  document.body.dataset.ready = '1';
})();
