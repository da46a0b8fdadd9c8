// Slugline dashboard: copy buttons. Everything else works without script; these buttons stay hidden without it.
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
