// The chat page's message list (no inline scripts: the CSP forbids them).
// Without this script, "Add message" and "Remove" are submit buttons that the server answers
// with the changed form. With it, they add or remove a row in place and ask htmx to count
// again, so the text being typed keeps its focus. Each row's Remove button posts its index,
// so the indices are renumbered after every change.
(function () {
  "use strict";

  function renumber(list) {
    list.querySelectorAll("[data-chat-message]").forEach(function (row, index) {
      var button = row.querySelector("[data-chat-remove]");
      if (button) {
        button.value = String(index);
        button.setAttribute("aria-label", "Remove message " + (index + 1));
      }
    });
  }

  function recount(form) {
    form.dispatchEvent(new Event("change", { bubbles: true }));
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-chat-add], [data-chat-remove]");
    var form = button && button.closest("[data-chat-form]");
    var list = form && form.querySelector("[data-chat-messages]");
    if (!list) { return; }
    event.preventDefault();
    var rows = list.querySelectorAll("[data-chat-message]");
    if (button.hasAttribute("data-chat-remove")) {
      if (rows.length > 1) { button.closest("[data-chat-message]").remove(); }
    } else {
      if (rows.length >= Number(list.getAttribute("data-max") || 100)) { return; }
      var last = rows[rows.length - 1];
      var row = last.cloneNode(true);
      var role = row.querySelector("input[name=role]");
      var lastRole = last.querySelector("input[name=role]").value;
      role.value = lastRole === "user" ? "assistant" : "user";
      row.querySelector("textarea[name=content]").value = "";
      list.appendChild(row);
      row.querySelector("textarea[name=content]").focus();
    }
    renumber(list);
    recount(form);
  });
})();
