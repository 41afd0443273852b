// The training form shows only the options the chosen level reads (no inline scripts: the CSP
// forbids them). A field read at some levels only is a <div data-levels="char …">; at other
// levels it is hidden and its control disabled, so it is not sent (the server renders the
// same for the level it was given, and the algorithm's options come back whole through htmx).
(function () {
  "use strict";

  function follow(select) {
    var options = select.closest("#options");
    if (!options) { return; }
    options.querySelectorAll("[data-levels]").forEach(function (field) {
      var reads = field.getAttribute("data-levels").split(" ").indexOf(select.value) >= 0;
      field.hidden = !reads;
      field.querySelectorAll("input, select, textarea").forEach(function (control) { control.disabled = !reads; });
    });
  }

  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("#options select[name='opt-level']")) { follow(event.target); }
  });
})();
