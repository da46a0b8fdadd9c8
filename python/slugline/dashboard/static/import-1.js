// Slugline dashboard, import page: the chosen file's first rows shown before it is sent (read in the browser, the
// first 64 KiB only). CSV formats as a table of their header and rows, NDJSON as a table of each object's fields,
// Kutt's JSON and YOURLS's SQL dump as their first lines. The import works the same without script.
"use strict";
(function () {
  var input = document.getElementById("f-file");
  var format = document.getElementById("f-format");
  var box = document.getElementById("import-preview");
  var table = document.getElementById("import-preview-table");
  var text = document.getElementById("import-preview-text");
  var ROWS = 10;
  if (!input || !box) return;

  function csvRecords(source, limit) {
    var records = [], row = [], cell = "", quoted = false, i = 0;
    for (; i < source.length && records.length <= limit; i++) {
      var c = source[i];
      if (quoted) {
        if (c === '"' && source[i + 1] === '"') { cell += '"'; i++; }
        else if (c === '"') quoted = false;
        else cell += c;
      } else if (c === '"') quoted = true;
      else if (c === ",") { row.push(cell); cell = ""; }
      else if (c === "\n" || c === "\r") {
        if (c === "\r" && source[i + 1] === "\n") i++;
        row.push(cell); records.push(row); row = []; cell = "";
      } else cell += c;
    }
    return records.filter(function (r) { return r.length > 1 || r[0] !== ""; }).slice(0, limit + 1);
  }

  function ndjsonRecords(source, limit) {
    var objects = source.split("\n").filter(function (l) { return l.trim(); }).slice(0, limit).map(function (line) {
      try { var value = JSON.parse(line); return value && typeof value === "object" ? value : { value: line }; }
      catch (e) { return { "not JSON": line }; }
    });
    var names = [];
    objects.forEach(function (o) { Object.keys(o).forEach(function (k) { if (names.indexOf(k) < 0) names.push(k); }); });
    return [names].concat(objects.map(function (o) {
      return names.map(function (k) { var v = o[k]; return v == null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v); });
    }));
  }

  function show(records) {
    table.textContent = "";
    records.forEach(function (record, n) {
      var tr = document.createElement("tr");
      record.forEach(function (value) {
        var cell = document.createElement(n === 0 ? "th" : "td");
        if (n === 0) cell.scope = "col";
        cell.textContent = value.length > 80 ? value.slice(0, 79) + "…" : value;
        tr.appendChild(cell);
      });
      (n === 0 ? table.createTHead() : table.tBodies[0] || table.createTBody()).appendChild(tr);
    });
  }

  function kind(name) {
    var chosen = format.value;
    if (chosen) return chosen;
    name = name.toLowerCase();
    if (/\.(ndjson|jsonl)$/.test(name)) return "ndjson";
    if (/\.json$/.test(name)) return "kutt";
    if (/\.sql$/.test(name)) return "yourls-sql";
    return "csv";
  }

  function preview() {
    var file = input.files && input.files[0];
    box.hidden = !file;
    if (!file) return;
    file.slice(0, 65536).text().then(function (source) {
      var how = kind(file.name);
      var lines = /^\s*(insert\s+into|create\s+table|--\s|\/\*|set\s)/i.test(source) ? "yourls-sql" : how;
      table.hidden = lines === "kutt" || lines === "yourls-sql";
      text.hidden = !table.hidden;
      if (!table.hidden) show(how === "ndjson" ? ndjsonRecords(source, ROWS) : csvRecords(source, ROWS));
      else text.textContent = source.split("\n").slice(0, ROWS * 2).join("\n");
    });
  }

  input.addEventListener("change", preview);
  format.addEventListener("change", preview);
}());
