// The playground's behaviours (no inline scripts: the CSP forbids them).
// - Hovering or focusing a token span highlights its ids, and an id highlights its span.
// - A token span's hover text (title) comes from its group's data-lines when first reached, and
//   the ids pane, sent as plain text, gets one element per id when first needed: the server
//   leaves both out of the thousands of elements each keystroke lays out (spans_html.py).
// - Clicking a span (or Enter/Space on it) loads the token inspector through htmx.
// - The spans of one encoding are one tab stop (roving tabindex: the server gives the first
//   token tabindex="0"); arrow keys move it between tokens, Home/End to the ends.
// - Buttons with data-copy="#selector" copy that element's link, value or text.
// - The encode form's answers replace the result block's contents directly (see below).
(function () {
  "use strict";

  function scopeOf(el) { return el.closest(".encode-result, .compare-col") || document; }

  function splitIds(box) {  // "257 32 257" -> <span class="tid" data-t="0">257</span> …, once
    if (box.hasAttribute("data-split")) { return; }
    box.setAttribute("data-split", "");
    var text = box.firstChild;
    if (!text || text.nodeType !== Node.TEXT_NODE) { return; }
    var part = document.createDocumentFragment();
    text.data.trim().split(/\s+/).forEach(function (id, i) {
      if (i) { part.appendChild(document.createTextNode(" ")); }
      var span = document.createElement("span");
      span.className = "tid";
      span.setAttribute("data-t", String(i));
      span.textContent = id;
      part.appendChild(span);
    });
    box.replaceChild(part, text);
  }

  function titled(span) {  // the hover text of a token span, from its group's one line per id
    if (span.hasAttribute("title")) { return; }
    var group = span.closest("[data-lines]");
    if (!group) { return; }
    if (!group.hoverLines) {
      try { group.hoverLines = JSON.parse(group.getAttribute("data-lines")); } catch (e) { group.hoverLines = {}; }
    }
    var lines = group.hoverLines;
    span.setAttribute("title", (span.getAttribute("data-ids") || "").split(" ").filter(Boolean).map(function (id) {
      return lines[id] || id;
    }).join("\n"));
  }

  function linked(el) {
    var scope = scopeOf(el);
    scope.querySelectorAll(".ids:not([data-split])").forEach(splitIds);
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
    if (!event.target.closest) { return; }
    var box = event.target.closest(".ids:not([data-split])");
    if (box) { splitIds(box); }
    var el = event.target.closest(".tok[data-t], .tid[data-t]");
    clear();
    if (!el) { return; }
    if (el.classList.contains("tok")) { titled(el); }
    lit = linked(el);
    lit.forEach(function (n) { n.classList.add("lit"); });
  }
  // The encode form's answer (spans, counts and ids, nothing with hx- attributes) goes straight
  // into #encode-result: htmx's own swap sends an event through every old and new element, which
  // for thousands of token spans took longer than the request on every keystroke.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (!event.detail.shouldSwap || !target || target.id !== "encode-result") { return; }
    event.detail.shouldSwap = false;
    lit = [];
    target.innerHTML = event.detail.serverResponse;
  });
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
    if (span) { makeStop(span); inspect(span); }
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (button) { copy(button); }
  });
  function copy(button) {
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) { return; }
    var text = source.href || (source.value !== undefined ? source.value : source.textContent.trim());
    if (!button.hasAttribute("data-label")) { button.setAttribute("data-label", button.textContent); }
    var label = button.getAttribute("data-label");
    var done = function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallback(text) && done(); });
    } else if (fallback(text)) { done(); }
  }
  function fallback(text) {  // plain http on another host: no clipboard API, copy through a selection
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "visually-hidden";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok;
  }
  var MOVES = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
  function rove(span, key) {
    var tokens = span.parentNode.querySelectorAll(".tok[data-ids]");
    var at = Array.prototype.indexOf.call(tokens, span);
    var next = key === "Home" ? 0 : key === "End" ? tokens.length - 1 : at + MOVES[key];
    if (next < 0 || next >= tokens.length || next === at) { return; }
    makeStop(tokens[next]);
    tokens[next].focus();
    tokens[next].scrollIntoView({ block: "nearest" });
  }
  function makeStop(span) {  // only the current token of a group stays a tab stop
    span.parentNode.querySelectorAll('.tok[tabindex="0"]').forEach(function (n) { n.removeAttribute("tabindex"); });
    span.setAttribute("tabindex", "0");
  }
  document.addEventListener("keydown", function (event) {
    var span = event.target.closest && event.target.closest(".tok[data-ids]");
    if (!span || event.altKey || event.ctrlKey || event.metaKey) { return; }
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault(); inspect(span);
    } else if (MOVES[event.key] || event.key === "Home" || event.key === "End") {
      event.preventDefault(); rove(span, event.key);
    }
  });
})();
