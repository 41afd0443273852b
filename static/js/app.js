// Tokenforge's only script besides htmx: small behaviours that must not be inline (CSP).
// - Forms with data-confirm ask before submitting (deleting a corpus).
// - Forms with data-submit-once send once per page: a second click while the first is on its way
//   (a slow connection, an impatient user) would start a second training, board or upload.
// - htmx does not swap error responses; show their message in #request-errors instead.
// - Forms with data-submit-on-change send themselves when a select in them changes (the header's
//   team switcher); their submit button stays for keyboards and browsers without script.
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

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (event.defaultPrevented || !form.hasAttribute || !form.hasAttribute("data-submit-once")) { return; }
    if (form.hasAttribute("data-submitting")) {
      event.preventDefault();
      return;
    }
    form.setAttribute("data-submitting", "");
  });

  document.addEventListener("change", function (event) {
    var select = event.target;
    var form = select.tagName === "SELECT" && select.closest("form[data-submit-on-change]");
    if (form) { form.requestSubmit ? form.requestSubmit() : form.submit(); }
  });

  // A page the browser shows again from its history (Back) may be sent again.
  window.addEventListener("pageshow", function () {
    document.querySelectorAll("form[data-submitting]").forEach(function (form) {
      form.removeAttribute("data-submitting");
    });
  });

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
