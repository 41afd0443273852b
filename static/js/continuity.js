// Keeps the text you type across the playground: the tokenizer picker, reloads and Compare.
// (No inline scripts: the CSP forbids them. Without this script the pages still work; the text
// then travels only through ?text= in the links the server writes.)
// - Each textarea[data-keep-text] saves its text in session storage as you type, and writes it
//   into the address bar as ?text= when short (at most <body data-url-text-limit> characters
//   URL-encoded: the server's text_links.URL_TEXT_LIMIT), so a reload or a copied URL keeps it;
//   a longer text leaves the URL and lives in session storage only.
// - A page whose text is the sample (data-text-from="default") takes the kept text instead.
// - Links with data-carry-text get ?text= (or lose it, when the text is long) as the text changes.
// - The tokenizer picker opens the chosen tokenizer as soon as it changes, with the text.
// - Toggles, and Compare's chosen tokenizers, are written into the address bar as they change.
(function () {
  "use strict";

  var KEY = "tokenforge:text";

  function kept() {
    try { return window.sessionStorage.getItem(KEY); } catch (e) { return null; }
  }
  function keep(text) {
    try { window.sessionStorage.setItem(KEY, text); } catch (e) { /* storage off or full */ }
  }
  function short(text) {  // the text if it fits a URL, else null
    var limit = parseInt(document.body.getAttribute("data-url-text-limit"), 10) || 0;
    return text && encodeURIComponent(text).length <= limit ? text : null;
  }
  function withText(href, text) {
    var url = new URL(href, window.location.href);
    if (text === null) { url.searchParams.delete("text"); } else { url.searchParams.set("text", text); }
    return url.toString();
  }

  function carry(text) {
    var value = short(text);
    document.querySelectorAll("a[data-carry-text]").forEach(function (link) {
      link.href = withText(link.href, value);
    });
    var hidden = document.querySelector("[data-picker-text]");
    if (hidden) { hidden.value = value === null ? "" : value; }
  }

  function remember(area) {
    var text = area.value;
    keep(text);
    var address = area.getAttribute("data-address") || window.location.href;
    if (area.getAttribute("data-address")) {  // a fixed shared text: edits belong to the link's page
      area.removeAttribute("data-address");
    }
    window.history.replaceState(window.history.state, "", withText(address, short(text)));
    carry(text);
  }

  document.addEventListener("input", function (event) {
    var area = event.target;
    if (area.matches && area.matches("textarea[data-keep-text]")) { remember(area); }
  });

  document.addEventListener("change", function (event) {
    var input = event.target;
    if (input.id === "picker-select") {
      var area = document.querySelector("textarea[data-keep-text]");
      if (area) { keep(area.value); carry(area.value); }
      input.form.submit();
    } else if (input.type === "checkbox" && input.form && input.form.querySelector("textarea[data-keep-text]")) {
      toggled(input);
    }
  });

  // A toggle (or Compare's choice of tokenizers) goes into the address bar too, so a reload or
  // a copied URL shows the same encoding; the server reads flags from the URL only by name.
  function toggled(box) {
    var url = new URL(window.location.href);
    if (box.name === "ids") {
      url.searchParams.delete("ids");
      box.form.querySelectorAll('input[name="ids"]:checked').forEach(function (b) { url.searchParams.append("ids", b.value); });
    } else {
      url.searchParams.set(box.name, box.checked ? "on" : "0");
    }
    window.history.replaceState(window.history.state, "", url.toString());
  }

  // After htmx has set itself up (its DOMContentLoaded listener was added first), so the
  // restored text's input event re-encodes it.
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-picker-open]").forEach(function (b) { b.hidden = true; });
    var area = document.querySelector("textarea[data-keep-text]");
    var text = kept();
    if (!area) {
      if (text !== null) { carry(text); }
      return;
    }
    if (area.getAttribute("data-text-from") !== "default") {
      keep(area.value);  // a text from the URL or a shared text is the one to keep now
    } else if (text !== null && text !== area.value) {
      area.value = text;
      if (wanted(area.form)) { area.dispatchEvent(new Event("input", { bubbles: true })); }
      else { remember(area); }
    }
    if (text !== null || area.getAttribute("data-text-from") !== "default") { carry(area.value); }
  });

  // Re-encode a restored text, except on Compare before two tokenizers are chosen (that
  // would only show "choose between 2 and 4").
  function wanted(form) {
    if (!form || !form.querySelector('input[name="ids"]')) { return true; }
    return form.querySelectorAll('input[name="ids"]:checked').length >= 2;
  }
})();
