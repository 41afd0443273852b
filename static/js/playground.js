// The playground's behaviours (no inline scripts: the CSP forbids them).
// - Hovering or focusing a token span highlights its ids, and an id highlights its span.
// - Clicking a span (or Enter/Space on it) loads the token inspector through htmx.
// - Buttons with data-copy="#selector" copy that element's value or text.
(function () {
  "use strict";

  function scopeOf(el) { return el.closest(".encode-result, .compare-col") || document; }

  function linked(el) {
    var scope = scopeOf(el);
    var indices = (el.getAttribute("data-t") || "").split(" ").filter(Boolean);
    var found = [];
    indices.forEach(function (i) {
      scope.querySelectorAll('.tid[data-t="' + i + '"], .tok[data-t~="' + i + '"]').forEach(function (n) {
        found.push(n);
      });
    });
    return found;
  }

  var lit = [];
  function clear() { lit.forEach(function (n) { n.classList.remove("lit"); }); lit = []; }
  function light(event) {
    var el = event.target.closest && event.target.closest(".tok[data-t], .tid[data-t]");
    clear();
    if (!el) { return; }
    lit = linked(el);
    lit.forEach(function (n) { n.classList.add("lit"); });
  }
  document.addEventListener("mouseover", light);
  document.addEventListener("focusin", light);

  function inspect(span) {
    var box = span.closest("[data-inspect-base]");
    if (!box || !window.htmx) { return; }
    var ids = (span.getAttribute("data-ids") || "").split(" ").filter(Boolean);
    var url = box.getAttribute("data-inspect-base") + ids[0] + "?group=" + encodeURIComponent(ids.join(" "));
    document.querySelectorAll(".tok.selected").forEach(function (n) { n.classList.remove("selected"); });
    span.classList.add("selected");
    window.htmx.ajax("GET", url, { target: "#inspector", swap: "outerHTML" });
  }
  document.addEventListener("click", function (event) {
    var span = event.target.closest && event.target.closest(".tok[data-ids]");
    if (span) { inspect(span); }
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (button) {
      var source = document.querySelector(button.getAttribute("data-copy"));
      if (!source) { return; }
      var text = source.value !== undefined ? source.value : source.textContent;
      var done = function () { button.textContent = "Copied"; setTimeout(function () { button.textContent = "Copy"; }, 1500); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { source.select && source.select(); });
      } else if (source.select) {
        source.select(); document.execCommand("copy"); done();
      }
    }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" && event.key !== " ") { return; }
    var span = event.target.closest && event.target.closest(".tok[data-ids]");
    if (span) { event.preventDefault(); inspect(span); }
  });
})();
