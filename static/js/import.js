// The import form shows only the parts the chosen kind reads (no inline scripts: the CSP
// forbids them). Each part is a <fieldset data-kinds="kind kind …">; the others are hidden and
// disabled, so a file chosen before switching kinds is not sent. Without this script every
// part shows, and the server refuses a file in a part the kind does not read.
(function () {
  "use strict";

  function show(form) {
    var chosen = form.querySelector("input[name=kind]:checked");
    var kind = chosen ? chosen.value : "";
    form.querySelectorAll("fieldset[data-kinds]").forEach(function (part) {
      var reads = (part.getAttribute("data-kinds") || "").split(" ").indexOf(kind) >= 0;
      part.hidden = !reads;
      part.disabled = !reads;
    });
  }

  function init() {
    document.querySelectorAll("form[data-import-form]").forEach(show);
  }

  document.addEventListener("change", function (event) {
    var form = event.target.name === "kind" && event.target.closest("form[data-import-form]");
    if (form) { show(form); }
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else { init(); }
})();
