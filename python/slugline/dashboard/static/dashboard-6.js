// Slugline dashboard: copy buttons, the period controls kept consistent, and the focus on a field in error. Everything
// works without script; the copy buttons stay hidden without it.
"use strict";
document.querySelectorAll("button[data-copy]").forEach(function (button) {
  button.hidden = false;
  button.addEventListener("click", function () {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    var text = "value" in source ? source.value : source.textContent;
    var label = button.textContent;
    var done = function (message) {
      button.textContent = message;
      setTimeout(function () { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done("Copied"); }, function () { done("Copy failed"); });
    } else if (source.select) {
      source.select();
      done(document.execCommand("copy") ? "Copied" : "Select and copy");
    } else {
      done("Select and copy");
    }
  });
});
// Dates, when filled, win over the period (see dashboard/figures.py): picking a period clears them, and a date
// filled picks "Custom range", so the form shows what it will send.
document.querySelectorAll("form[data-period]").forEach(function (form) {
  var days = form.elements.namedItem("days");
  var dates = [form.elements.namedItem("from"), form.elements.namedItem("to")];
  if (!days) return;
  days.addEventListener("change", function () {
    if (days.value) dates.forEach(function (input) { if (input) input.value = ""; });
  });
  dates.forEach(function (input) {
    if (input) input.addEventListener("input", function () { if (input.value) days.value = ""; });
  });
});
// A form sent back with its messages: its first field in error takes the focus, and so comes into view, wherever on
// a long page it is (the account's deletion, a link's rules).
(function () {
  var invalid = document.querySelector('[aria-invalid="true"]');
  if (invalid) invalid.focus();
})();
