// The playground's behaviours (no inline scripts: the CSP forbids them).
// - Hovering or focusing a token span highlights its ids, and an id highlights its span.
// - A token span's hover text (title) comes from its group's data-lines when first reached, and
//   the ids pane, sent as plain text, gets one element per id when first needed: the server
//   leaves both out of the thousands of elements each keystroke lays out (spans_html.py).
// - Clicking a span (or Enter/Space on it) loads the token inspector through htmx.
// - The spans of one encoding are one tab stop (roving tabindex: the server gives the first
//   token tabindex="0"); arrow keys move it between tokens, Home/End to the ends.
// - An answer to a keystroke draws only the spans and ids that fill their boxes; the rest wait in
//   data blocks, <script type="text/html" data-rest> (never run; spans_html.py), and are drawn
//   here: when typing pauses, when a box is scrolled near its end, or at once when something
//   needs them all.
// - Buttons with data-copy="#selector" copy that element's link, value or text.
// - The encode form's answers replace the result block's contents directly (see below).
(function () {
  "use strict";

  function scopeOf(el) { return el.closest(".encode-result, .compare-col") || document; }

  // The rest of the spans and ids (see the top). Laying out thousands of spans was most of a 20 KB
  // keystroke, so a keystroke draws a screenful; the rest follow a data block at a time (~10-20 ms
  // each, so a key pressed meanwhile barely waits), and stop while a newer text is on its way.
  // Until a box has all its children it is aria-busy, so screen readers wait for the whole.
  var PAUSE_MS = 400, pending = null, REST = ":scope > script[data-rest]";
  function draw(block) {  // one block of the rest, drawn in its place
    var box = block.parentNode;
    block.insertAdjacentHTML("beforebegin", block.textContent);
    box.removeChild(block);
    if (!box.querySelector(REST)) { box.removeAttribute("aria-busy"); }
  }
  function drawAll(scope) { scope.querySelectorAll("script[data-rest]").forEach(draw); }
  function nearEnd(box, screens) {  // within `screens` box heights of the end (a box not laid out is not)
    return box.clientHeight > 0 && box.scrollTop + (1 + screens) * box.clientHeight >= box.scrollHeight;
  }
  function restOf(box) { return box.querySelector ? box.querySelector(REST) : null; }
  function drawLater(delay) {  // after a new answer: top up short boxes now, draw the rest when typing pauses
    clearTimeout(pending);
    var boxes = [];
    document.querySelectorAll("script[data-rest]").forEach(function (block) {
      if (boxes.indexOf(block.parentNode) < 0) { boxes.push(block.parentNode); }
    });
    boxes.forEach(function (box) { box.setAttribute("aria-busy", "true"); });
    requestAnimationFrame(function () {
      setTimeout(function () {
        boxes.forEach(function (box) {
          while (restOf(box) && nearEnd(box, 0)) { draw(restOf(box)); }
        });
      }, 0);
    });
    pending = setTimeout(function step() {
      var block = document.querySelector("script[data-rest]");
      if (!block) { return; }
      draw(block);
      pending = setTimeout(step, 0);
    }, delay);
  }
  document.addEventListener("scroll", function (event) {  // element scrolls do not bubble: capture
    var block = restOf(event.target);
    if (block && nearEnd(event.target, 1)) { draw(block); }
  }, true);
  document.addEventListener("htmx:beforeRequest", function () { clearTimeout(pending); });
  ["htmx:afterSettle", "htmx:historyRestore"].forEach(function (name) {
    document.addEventListener(name, function () { drawLater(PAUSE_MS); });
  });
  drawLater(PAUSE_MS);

  function splitIds(box) {  // "257 32 257" -> <span class="tid" data-t="0">257</span> …, once
    if (box.hasAttribute("data-split")) { return; }
    box.setAttribute("data-split", "");
    drawAll(box);
    box.normalize();  // the drawn ids and their rest in one text node
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
    var find = function () {
      var found = [];
      indices.forEach(function (i) {
        scope.querySelectorAll('.tid[data-t="' + i + '"], .tok[data-t~="' + i + '"]').forEach(function (n) {
          found.push(n);
        });
      });
      return found;
    };
    var found = find();
    if (!found.some(function (n) { return n.classList.contains("tok"); }) && scope.querySelector("script[data-rest]")) {
      drawAll(scope);  // an id whose span is not drawn yet
      found = find();
    }
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
    drawLater(PAUSE_MS);
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
    if ((key === "End" || at === tokens.length - 1) && restOf(span.parentNode)) {
      drawAll(span.parentNode);
      tokens = span.parentNode.querySelectorAll(".tok[data-ids]");
    }
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
