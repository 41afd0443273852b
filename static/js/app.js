// Tokenforge's only script besides htmx: small behaviours that must not be inline (CSP).
// - Forms with data-confirm ask before submitting (deleting a corpus).
// - htmx does not swap error responses; show their message in #request-errors instead.
(function () {
  "use strict";

  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  document.addEventListener("htmx:responseError", function (event) {
    var box = document.getElementById("request-errors");
    if (!box) { return; }
    var xhr = event.detail.xhr;
    var doc = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
    var message = doc.querySelector(".error-message");
    box.textContent = message ? message.textContent
      : "The server answered with an error (" + xhr.status + "). Please try again.";
  });

  document.addEventListener("htmx:sendError", function () {
    var box = document.getElementById("request-errors");
    if (box) { box.textContent = "The server could not be reached. Check your connection; the page will retry."; }
  });
})();
